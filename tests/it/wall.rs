//! The wall around the agent (docs/SECURITY.md, "The agent itself"), tried by what an
//! agent's own test code could do: the agent is the mock, started by a shell that also
//! starts an attacker in the background (as `cargo test` would run the agent's code),
//! inside the wall like everything the agent starts. Once the mock's tool approval is
//! pending, the attacker tries to change the bridge's policy files, to read its secrets
//! and its process, and to answer the approval itself with any token it found; then does
//! an agent's ordinary work. Each attempt is judged by the real kernel.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::common::control::{call, http};
use crate::common::{
    chunk_text, control_of, pids_named, temp_dir, Bridge, BRIDGE, MOCK, REGISTRY_ENV,
};

/// What the test made for one bridge.
struct Setup {
    dir: PathBuf,
    config: PathBuf,
    project: PathBuf,
    registry: PathBuf,
    state: PathBuf,
    token_file: PathBuf,
    journal: PathBuf,
}

const TOKEN: &str = "wall-test-token-0123456789abcdef";

/// The attacker: waits for `go` (the session and question ids, and the control URL),
/// tries each attack and each ordinary task, writes one line each to `report`
/// (`NAME ok` or `NAME failed`), then `done`.
const ATTACKER: &str = r#"
D="$1"; PORT="$2"
i=0; while [ ! -s "$D/go" ]; do i=$((i+1)); [ $i -gt 2400 ] && exit 1; sleep 0.05; done
# The bridge's pid as the system knows it (inside the wall the agent's parent is not it).
read SID QID URL BPID < "$D/go"
try "work:project" sh -c "echo hi > '$PROJECT/work.txt'"
try "work:tmp" sh -c 'f=$(mktemp) && echo hi > "$f" && rm "$f"'
try "work:git" sh -c "cd '$PROJECT' && git init -q && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x"
try "work:tcp" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && echo ping >&3"
CONF="$XDG_CONFIG_HOME_SEEN/acp-question-bridge"
P="$PROJECT/.acp-question-bridge"
echo '[[rule]]' > "$D/evil.toml"
for F in "$CONF" "$P"; do
  n=$(basename "$(dirname "$F")")
  try "append:$n" sh -c "echo '# x' >> '$F/policy.toml'"
  try "replace:$n" mv -f "$D/evil.toml" "$F/policy.toml"
  cp "$D/evil.toml" "$D/evil2.toml" 2>/dev/null || echo '[[rule]]' > "$D/evil2.toml"
  try "delete:$n" sh -c "rm -f '$F/policy.toml' && cp '$D/evil2.toml' '$F/policy.toml'"
  try "link:$n" ln -f "$D/evil2.toml" "$F/policy.toml"
  try "new-file:$n" sh -c "echo x > '$F/trusted-folders.new'"
  try "move-folder:$n" mv "$F" "$F.moved"
  try "move-above:$n" mv "$(dirname "$F")" "$(dirname "$F").moved"
done
try "trust-list" sh -c "echo x >> '$CONF/trusted-folders'"
try "read:registry" sh -c "cat '$REGISTRY_SEEN'/*.json | grep -q token"
try "read:token-file" grep -q . "$TOKEN_FILE_SEEN"
try "read:inbox-state" cat "$STATE_SEEN/acp-question-bridge/inbox/devices.json"
try "read:journal" grep -q . "$JOURNAL_SEEN"
try "read:environ" grep -q ACP_QUESTION_BRIDGE /proc/$BPID/environ
try "read:fds" ls /proc/$BPID/fd/0
try "read:root" ls /proc/$BPID/root/
try "signal:bridge" kill -0 $BPID
try "env:token" test -n "$ACP_QUESTION_BRIDGE_TOKEN"
# The bridge's process, whose OOM score and autogroup niceness no ptrace check guards
# (each written back with its own value): with a PID namespace of the wall's own, the
# bridge is not there to see.
export BPID
try "see:bridge" test -e /proc/$BPID/status
try "oom:bridge" sh -c 'v=$(cat /proc/$BPID/oom_score_adj) && echo "$v" > /proc/$BPID/oom_score_adj'
try "autogroup:bridge" sh -c 'n=$(sed "s/.* nice //" /proc/$BPID/autogroup) && echo "$n" > /proc/$BPID/autogroup'
# A process that leaves the agent's group, to outlive the bridge (the test looks for it).
setsid bash -c 'exec -a "acpqb-escapee-$0" sleep 1000' "$D" </dev/null >/dev/null 2>&1 &
# The bridge's limits and priority, which need only the same user (set to what is harmless:
# a CPU limit of a day, its own niceness).
try "prlimit:bridge" prlimit --pid "$BPID" --cpu=86400:86400
try "renice:bridge" renice -n 0 -p "$BPID"
try "work:own-limits" sh -c 'ulimit -t 86400 && nice -n 5 true' 
# A kernel setting written (its own value back: the kernel runs core_pattern's program
# outside every namespace, with every capability), as root may inside its user namespace.
try "sysctl:write" sh -c 'v=$(cat /proc/sys/kernel/core_pattern) && printf "%s\n" "$v" > /proc/sys/kernel/core_pattern'
# A mount in a user and mount namespace of its own (an overlay over a walled folder, a
# FUSE file system, a bind): the Landlock domain refuses every mount.
try "mount:nested" unshare -Urm sh -c 'mount -t tmpfs x "$(mktemp -d)"'
# A setuid bit (a root agent's `chmod 4755` of a root-owned program), on a file of its own.
try "chmod:setuid" sh -c 'f=$(mktemp) && chmod 4755 "$f"'
# The agents' cache: what the next `--agent ID` runs.
try "agents-cache" sh -c 'echo x > "$XDG_CACHE_HOME/acp-question-bridge/planted"'
# A line in the kernel's log, which takes root's lines as the kernel's own.
try "kmsg:write" sh -c 'echo "acp-question-bridge: a wall test" > /dev/kmsg && grep -q . /dev/kmsg'
# The first policy of a bridge of another environment (its default config folder).
try "default-config" sh -c 'mkdir -p "$HOME/.config/acp-question-bridge" && echo x >> "$HOME/.config/acp-question-bridge/policy.toml"'
# A control group made, as freezing or killing one (the bridge's, the editor's) would write.
cg() { for m in $(awk '$5 ~ /^\/sys\/fs\/cgroup/ {print $5}' /proc/self/mountinfo); do if mkdir "$m/acpqb-wall-$$" 2>/dev/null; then rmdir "$m/acpqb-wall-$$"; return 0; fi; done; return 1; }
try "cgroup:write" cg
TOKENS="$ACP_QUESTION_BRIDGE_TOKEN $(cat "$TOKEN_FILE_SEEN" 2>/dev/null) $(cat "$REGISTRY_SEEN"/*.json 2>/dev/null | grep -o '"token":"[^"]*"' | cut -d'"' -f4) $(tr '\0' '\n' < /proc/$BPID/environ 2>/dev/null | sed -n 's/^ACP_QUESTION_BRIDGE_TOKEN=//p')"
answered=failed
for T in $TOKENS; do
  if "$BRIDGE_BIN" questions answer --control "$URL" --token "$T" "$SID" "$QID" allow >/dev/null 2>&1; then answered=ok; fi
done
echo "answer $answered" >> "$D/report"
touch "$D/done"
"#;

/// The shell function each agent script here reports an attempt with: `try NAME CMD...`
/// appends `NAME ok` or `NAME failed` to `$D/report`.
const TRY: &str = r#"try() { name="$1"; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$name ok" >> "$D/report"; else echo "$name failed" >> "$D/report"; fi; }"#;

/// Writes `script` to `DIR/agent.sh`; the agent that runs it beside the mock, as an
/// agent's own test code would run beside it (`bash -c` the bridge starts).
fn beside_the_mock(dir: &Path, script: &str) -> String {
    std::fs::write(dir.join("agent.sh"), script).unwrap();
    format!("bash {}/agent.sh & exec {MOCK}", dir.display())
}

/// Asserts that each of `attacks` failed, as the agent's script reported in `DIR/report`.
fn all_failed(dir: &Path, attacks: &[&str]) {
    let report = std::fs::read_to_string(dir.join("report")).unwrap_or_default();
    for attack in attacks {
        assert!(
            report.contains(&format!("{attack} failed")),
            "{attack}: {report}"
        );
    }
}

/// Waits until the agent's script made `done` (its last step).
async fn until_made(done: &Path, b: &Bridge) {
    tokio::time::timeout(Duration::from_secs(120), async {
        while !done.exists() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the agent's script did not finish:\n{}", b.stderr()));
}

fn setup(name: &str) -> Setup {
    let dir = temp_dir(name);
    let s = Setup {
        config: dir.join("config"),
        project: dir.join("project"),
        registry: dir.join("registry"),
        state: dir.join("state"),
        // Beneath the state folder, where every bridge's wall hides it (elsewhere the
        // bridge refuses a token file).
        token_file: dir.join("state/acp-question-bridge/token"),
        journal: dir.join("journal.jsonl"),
        dir,
    };
    let conf = s.config.join("acp-question-bridge");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("policy.toml"), "# the user's policy\n").unwrap();
    std::fs::write(conf.join("trusted-folders"), "").unwrap();
    let p = s.project.join(".acp-question-bridge");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("policy.toml"), "# the project's policy\n").unwrap();
    let inbox = s.state.join("acp-question-bridge/inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::write(inbox.join("devices.json"), "{\"secret\":1}\n").unwrap();
    std::fs::create_dir_all(&s.registry).unwrap();
    std::fs::set_permissions(
        &s.registry,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    std::fs::write(s.dir.join("attacker.sh"), format!("{TRY}\n{ATTACKER}")).unwrap();
    s
}

/// Runs the attack with `--sandbox MODE`: the report's lines, by name; the approval's
/// answer the agent streamed (if one was given); the lines the loopback server got.
async fn attack(mode: &str) -> (Setup, Vec<(String, bool)>, Option<String>, String) {
    let s = setup(&format!("wall-{mode}"));
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let got = std::thread::spawn(move || {
        // The attacker's connection, or nothing within the test's own bound.
        server.set_nonblocking(true).ok();
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let mut c = loop {
            match server.accept() {
                Ok((c, _)) => break c,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(_) => return None,
            }
        };
        c.set_nonblocking(false).ok();
        c.set_read_timeout(Some(Duration::from_secs(60))).ok();
        let mut text = String::new();
        c.read_to_string(&mut text).ok()?;
        Some(text)
    });
    let d = s.dir.display().to_string();
    // The agent: the attacker in the background, then the mock in the shell's place.
    let agent = format!("bash {d}/attacker.sh {d} {port} & exec {MOCK}",);
    let mut cmd = tokio::process::Command::new(BRIDGE);
    cmd.args([
        "--sandbox",
        mode,
        "--control",
        "127.0.0.1:0",
        "--control-token-file",
        &s.token_file.display().to_string(),
        "--journal",
        &s.journal.display().to_string(),
        "--cwd",
        &s.project.display().to_string(),
        "--",
        "bash",
        "-c",
        &agent,
    ])
    .env(REGISTRY_ENV, &s.registry)
    // A home of the test's own: its default config folder is another environment's.
    .env("HOME", s.dir.join("home"))
    .env("XDG_CONFIG_HOME", &s.config)
    .env("XDG_STATE_HOME", &s.state)
    .env("XDG_CACHE_HOME", s.dir.join("cache"))
    .env("ACP_QUESTION_BRIDGE_TOKEN", TOKEN)
    // What the attacker is told of where things are (as an agent would find them).
    .env("XDG_CONFIG_HOME_SEEN", &s.config)
    .env("PROJECT", &s.project)
    .env("REGISTRY_SEEN", &s.registry)
    .env("TOKEN_FILE_SEEN", &s.token_file)
    .env("STATE_SEEN", &s.state)
    .env("JOURNAL_SEEN", &s.journal)
    .env("BRIDGE_BIN", BRIDGE)
    .env("RUST_LOG", "info");
    let mut b = Bridge::from_command(cmd);
    let (base, token) = control_of(&b).await;
    assert_eq!(token, TOKEN);
    b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "permission").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let c = http(&base, &token);
    let list = call(&c, "questions.list", json!({})).await.unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    let qid = list[0]["questionId"].as_str().unwrap().to_owned();
    std::fs::write(
        s.dir.join("go"),
        format!("{sid} {qid} {base} {}\n", b.pid()),
    )
    .unwrap();
    until_made(&s.dir.join("done"), &b).await;
    let report: Vec<(String, bool)> = std::fs::read_to_string(s.dir.join("report"))
        .unwrap()
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(n, r)| (n.to_owned(), r == "ok"))
        .collect();
    // Answered by the attacker, or still pending: the test answers it then.
    let list = call(&c, "questions.list", json!({})).await.unwrap();
    if list.as_array().unwrap().len() == 1 {
        call(
            &c,
            "questions.answer",
            json!({"sessionId": sid, "questionId": qid, "answers": [["reject"]]}),
        )
        .await
        .unwrap();
    }
    let (m, _) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("permission:")))
        .await;
    let answer = chunk_text(&m).map(str::to_owned);
    b.close_stdin();
    b.drain().await;
    b.wait().await;
    let tcp = got.join().ok().flatten().unwrap_or_default();
    (s, report, answer, tcp)
}

/// The pids of the attacker's process that left the agent's group (`setsid`), by the name
/// it gave itself.
fn escapees(dir: &Path) -> Vec<u32> {
    pids_named(&format!("acpqb-escapee-{}", dir.display()))
}

fn policy_text(folder: &Path) -> String {
    std::fs::read_to_string(folder.join("policy.toml")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inside_the_wall_the_agent_cannot_change_read_or_answer_for_the_bridge() {
    let (s, report, answer, tcp) = attack("own-files").await;
    let succeeded: Vec<&String> = report
        .iter()
        .filter(|(n, ok)| *ok && !n.starts_with("work:"))
        .map(|(n, _)| n)
        .collect();
    assert!(
        succeeded.is_empty(),
        "attacks that worked: {succeeded:?}\n{report:?}"
    );
    let failed_work: Vec<&String> = report
        .iter()
        .filter(|(n, ok)| !*ok && n.starts_with("work:"))
        .map(|(n, _)| n)
        .collect();
    assert!(
        failed_work.is_empty(),
        "ordinary work that failed: {failed_work:?}"
    );
    assert!(report.len() >= 38, "{report:?}");
    assert_eq!(
        answer.as_deref(),
        Some("permission: reject"),
        "the approval stayed pending for the user"
    );
    assert_eq!(tcp, "ping\n");
    assert_eq!(
        policy_text(&s.config.join("acp-question-bridge")),
        "# the user's policy\n"
    );
    assert_eq!(
        policy_text(&s.project.join(".acp-question-bridge")),
        "# the project's policy\n"
    );
    assert!(s.project.join("work.txt").exists());
    // What left the agent's group ended with the wall's PID namespace, before the bridge.
    assert_eq!(escapees(&s.dir), Vec::<u32>::new());
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_wall_the_same_attacks_succeed() {
    let (s, report, answer, _) = attack("off").await;
    let ok = |name: &str| report.iter().any(|(n, ok)| n == name && *ok);
    for name in [
        "append:config",
        "read:registry",
        "read:token-file",
        "read:inbox-state",
        "read:journal",
        "read:environ",
        "env:token",
        "prlimit:bridge",
        "renice:bridge",
        "see:bridge",
        "oom:bridge",
        "chmod:setuid",
        "mount:nested",
        "answer",
    ] {
        assert!(ok(name), "{name} should work without the wall: {report:?}");
    }
    assert!(ok("default-config"), "{report:?}");
    // Whether the kernel lets a process of the user write another's autogroup niceness
    // (not where the process is in the default autogroup, or without the kernel's
    // autogroup): the same write, to the test's own process.
    let probe = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"n=$(sed "s/.* nice //" /proc/$P/autogroup) && echo "$n" > /proc/$P/autogroup"#)
        .env("P", std::process::id().to_string())
        .status()
        .is_ok_and(|s| s.success());
    if probe {
        assert!(ok("autogroup:bridge"), "{report:?}");
    }
    // Root may write the control groups and the kernel's settings; a user only a subtree
    // delegated to it, and none.
    if rustix::process::geteuid().is_root() {
        assert!(ok("cgroup:write"), "{report:?}");
        assert!(ok("sysctl:write"), "{report:?}");
    }
    assert_eq!(answer.as_deref(), Some("permission: allow"), "{report:?}");
    // Without the wall, a process that left the agent's group outlives the bridge.
    let left = escapees(&s.dir);
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(left.len(), 1, "{report:?}");
    let _ = std::fs::remove_dir_all(&s.dir);
}

/// A bridge started inside another's wall (an agent's own test running a bridge) meets a
/// kernel that refuses it a wall of its own when it is root (mapping root into a new user
/// namespace needs a capability the wall took): it says so once, with why, shows it in
/// `bridge.status`, and runs its agent all the same. As a user, the nested wall stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_the_kernel_refuses_the_wall_the_bridge_says_why_and_runs_without() {
    let root = rustix::process::geteuid().is_root();
    let mut cmd = tokio::process::Command::new(BRIDGE);
    cmd.args([
        "__wall",
        r#"{"read_only":[],"hidden":[]}"#,
        "--",
        BRIDGE,
        "--control",
        "127.0.0.1:0",
        "--",
        MOCK,
    ])
    .env("RUST_LOG", "info");
    let mut b = Bridge::from_command(cmd);
    let (base, token) = control_of(&b).await;
    b.initialize(json!({})).await;
    let status = call(&http(&base, &token), "bridge.status", json!({}))
        .await
        .unwrap();
    let warned = b.stderr().matches("runs without the wall").count();
    if root {
        assert_eq!(status["wall"]["mode"], "own-files");
        assert_eq!(status["wall"]["on"], false);
        let why = status["wall"]["whyNot"].as_str().unwrap_or_default();
        assert!(
            why.contains("user namespace") || why.contains("uid_map"),
            "{why}"
        );
        assert_eq!(warned, 1, "{}", b.stderr());
    } else {
        assert_eq!(status["wall"]["on"], true, "{status}");
        assert_eq!(warned, 0, "{}", b.stderr());
    }
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
}

/// `--sandbox workspace`: the agent's code writes only in the session's folder and the
/// temp folders, and the policy's `Read(…)` denies of a whole folder or a file are kept by
/// the kernel (`cat ~/.ssh/id_rsa`, `cat .env` fail), not only by the approvals. Its
/// folder is not under a temp folder, which a workspace may write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_workspace_wall_writes_stay_in_the_session_and_read_denies_hold() {
    // Not under a temp folder, which a workspace may write: the build's own (a checkout
    // may be under /tmp), else the home folder.
    let temp = |p: &Path| {
        [std::env::temp_dir(), "/tmp".into(), "/var/tmp".into()]
            .iter()
            .any(|t| p.starts_with(t))
    };
    let base = [
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        std::env::var_os("HOME").map(Into::into).unwrap_or_default(),
    ]
    .into_iter()
    .find(|b| b.is_absolute() && !temp(b))
    .expect("a folder outside the temp folders");
    let dir = base.join(format!("acp-qb-wall-workspace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (home, project, outside) = (dir.join("home"), dir.join("project"), dir.join("outside"));
    for d in [home.join(".ssh"), project.clone(), outside.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    std::fs::write(project.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(project.join("readme"), "hello\n").unwrap();
    let conf = home.join(".config/acp-question-bridge");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("policy.toml"),
        "[[rule]]\nid = \"ssh\"\ndecision = \"deny\"\nclaude = \"Read(~/.ssh/**)\"\n\n\
         [[rule]]\nid = \"env\"\ndecision = \"deny\"\nclaude = \"Read(./.env)\"\n",
    )
    .unwrap();
    let script = format!(
        r#"P={p}; D={p}; O={o}
{TRY}
try write:outside sh -c "echo x > '$O/x'"
try write:home sh -c "echo x > '$HOME/x'"
try read:ssh grep -q KEY "$HOME/.ssh/id_rsa"
try read:env grep -q SECRET "$P/.env"
try work:project sh -c "echo x > '$P/x' && rm '$P/x'"
try work:tmp sh -c 'f=$(mktemp) && echo x > "$f" && rm "$f"'
try work:read grep -q hello "$P/readme"
try work:devnull sh -c 'echo x > /dev/null'
touch "$D/done""#,
        p = project.display(),
        o = outside.display()
    );
    std::fs::write(dir.join("script.sh"), script).unwrap();
    let mut cmd = tokio::process::Command::new(BRIDGE);
    cmd.args([
        "--sandbox",
        "workspace",
        "--no-control",
        "--cwd",
        &project.display().to_string(),
        "--",
        "bash",
        "-c",
        &format!("bash {}/script.sh & exec {MOCK}", dir.display()),
    ])
    .env("HOME", &home)
    .env("XDG_CONFIG_HOME", home.join(".config"))
    .env("RUST_LOG", "info");
    let mut b = Bridge::from_command(cmd);
    b.initialize(json!({})).await;
    // The script writes where it may: the session's folder.
    until_made(&project.join("done"), &b).await;
    let report = std::fs::read_to_string(project.join("report")).unwrap();
    let wrong: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("work:") != l.ends_with(" ok"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:?} in\n{report}");
    assert_eq!(report.lines().count(), 8, "{report}");
    assert!(!outside.join("x").exists() && !home.join("x").exists());
    b.close_stdin();
    b.drain().await;
    assert_eq!(b.wait().await, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a client reads, writes or runs for the agent, it does outside the wall: an agent
/// inside is offered no client files or terminals, and its `fs/read_text_file` of the
/// bridge's token file never reaches the client; it gets an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inside_the_wall_the_client_reads_and_runs_nothing_for_the_agent() {
    let dir = temp_dir("wall-client-tools");
    let token_file = dir.join("acp-question-bridge/token");
    let mut b = Bridge::spawn_env(
        &[
            "--control",
            "127.0.0.1:0",
            "--control-token-file",
            &token_file.display().to_string(),
            "--",
            MOCK,
        ],
        &[("XDG_STATE_HOME", dir.to_str().unwrap())],
    );
    b.record();
    b.initialize(json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}))
        .await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, &format!("fs-read {}", token_file.display()))
        .await;
    let (m, _) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("fs-read:")))
        .await;
    let said = chunk_text(&m).unwrap_or_default().to_owned();
    assert!(
        said.starts_with("fs-read: error") && said.contains("inside the wall"),
        "{said}"
    );
    let (done, _) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    b.close_stdin();
    b.drain().await;
    assert!(
        !b.transcript()
            .iter()
            .any(|(_, l)| l.contains(r#""method":"fs/read_text_file""#)),
        "the request reached the client"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `script` as the agent of a bridge on a terminal of its own (`script`, as an editor
/// in a terminal would start it), with `--sandbox MODE`, until it writes `DIR/done`;
/// returns what it wrote to `DIR/report`.
fn on_a_terminal(mode: &str, dir: &Path, script: &str) -> String {
    std::fs::write(dir.join("agent.sh"), script).unwrap();
    let bridge = format!(
        "{BRIDGE} --no-control --sandbox {mode} -- bash {}/agent.sh {}",
        dir.display(),
        dir.display()
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &bridge, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("script runs");
    let done = dir.join("done");
    let started = std::time::Instant::now();
    while !done.exists() && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    std::fs::read_to_string(dir.join("report")).unwrap_or_default()
}

/// The agent gets a session of its own: no controlling terminal to type into the user's
/// shell with (`TIOCSTI`), and at most a few namespaces to make (so it cannot use up the
/// user's and make the next bridge's wall fail). Without the wall it has the terminal.
#[test]
fn inside_the_wall_the_agent_has_no_terminal_and_few_namespaces_to_make() {
    let script = r#"D="$1"
if (exec 3</dev/tty) 2>/dev/null; then echo "tty yes" >> "$D/report"; else echo "tty no" >> "$D/report"; fi
echo "namespaces $(cat /proc/sys/user/max_user_namespaces)" >> "$D/report"
touch "$D/done"
sleep 60
"#;
    let dir = temp_dir("wall-tty");
    let walled = on_a_terminal("own-files", &dir, script);
    assert!(walled.contains("tty no"), "{walled}");
    assert!(walled.contains("namespaces 64"), "{walled}");
    let dir = temp_dir("wall-tty-off");
    let off = on_a_terminal("off", &dir, script);
    assert!(
        off.contains("tty yes"),
        "the test's terminal is the agent's without the wall: {off}"
    );
}

/// A secret file with another name (a hard link made before the wall) would stay readable
/// there: the bridge refuses to start its agent rather than wall half of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_file_with_another_name_is_refused() {
    let dir = temp_dir("wall-linked-secret");
    let token = dir.join("state/acp-question-bridge/token");
    std::fs::create_dir_all(token.parent().unwrap()).unwrap();
    std::fs::write(&token, "").unwrap();
    std::fs::hard_link(&token, dir.join("planted")).unwrap();
    let mut b = Bridge::spawn_env(
        &[
            "--control-token-file",
            &token.display().to_string(),
            "--",
            MOCK,
        ],
        &[("XDG_STATE_HOME", dir.join("state").to_str().unwrap())],
    );
    assert_eq!(b.wait().await, 1);
    let err = b.stderr();
    assert!(err.contains("other names"), "{err}");
    // NATS credentials in a command line any process of the user reads: refused.
    let (code, _, err) =
        crate::common::run_bridge(&["--nats", "nats://user:secret@127.0.0.1:4222", "--", MOCK])
            .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--nats-creds"), "{err}");
}

/// A `--policy` file is walled by its folder: the user saves it from outside as editors do
/// (a new file renamed over the old), and inside the wall the new file is there to read and
/// still cannot be changed, replaced or removed. (A mount over the file alone is lost with
/// the rename: the agent could then write the new file.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_file_saved_by_a_rename_outside_stays_read_only_inside() {
    let dir = temp_dir("wall-policy-saved");
    let (folder, project) = (dir.join("policies"), dir.join("project"));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let file = folder.join("team.toml");
    std::fs::write(&file, "# before the save\n").unwrap();
    let script = format!(
        r#"D={d}; F={f}
touch "$D/ready"
i=0; while [ ! -e "$D/saved" ]; do i=$((i+1)); [ $i -gt 2400 ] && exit 1; sleep 0.05; done
{TRY}
try "read-new" grep -q "after the save" "$F"
try "append" sh -c "echo '# x' >> '$F'"
try "truncate" sh -c ": > '$F'"
echo '# evil' > "$D/evil.toml"
try "replace" mv -f "$D/evil.toml" "$F"
try "delete" rm -f "$F"
try "new-file" sh -c "echo x > '$(dirname "$F")/more.toml'"
touch "$D/done""#,
        d = dir.display(),
        f = file.display()
    );
    let agent = beside_the_mock(&dir, &script);
    let mut cmd = tokio::process::Command::new(BRIDGE);
    cmd.args([
        "--no-control",
        "--policy",
        &file.display().to_string(),
        "--cwd",
        &project.display().to_string(),
        "--",
        "bash",
        "-c",
        &agent,
    ]);
    let mut b = Bridge::from_command(cmd);
    b.initialize(json!({})).await;
    until_made(&dir.join("ready"), &b).await;
    // The user's editor saves the file: a new file, renamed over the old one.
    let tmp = folder.join(".team.toml.swp");
    std::fs::write(&tmp, "# after the save\n").unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    std::fs::write(dir.join("saved"), "").unwrap();
    until_made(&dir.join("done"), &b).await;
    let report = std::fs::read_to_string(dir.join("report")).unwrap_or_default();
    assert!(report.contains("read-new ok"), "{report}");
    all_failed(
        &dir,
        &["append", "truncate", "replace", "delete", "new-file"],
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# after the save\n"
    );
    b.close_stdin();
    b.drain().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bridge with `--sandbox MODE --policy POLICY --cwd PROJECT -- bash -c AGENT`, started
/// in a mount namespace of the test's own (as a user, with a user namespace too), after
/// `setup` (a shell line, `$0` being `at`) has mounted there.
fn bridge_after_mounting(
    setup: &str,
    at: &Path,
    mode: &str,
    policy: &Path,
    project: &Path,
    agent: &str,
) -> tokio::process::Command {
    let ns: &[&str] = if rustix::process::geteuid().is_root() {
        &["-m", "--propagation", "private"]
    } else {
        &["-Urm", "--propagation", "private"]
    };
    let mut cmd = tokio::process::Command::new("unshare");
    cmd.args(ns)
        .args(["sh", "-c", &format!(r#"{setup} && exec "$@""#)])
        .arg(at)
        .arg(BRIDGE)
        .args(["--no-control", "--sandbox", mode, "--policy"])
        .arg(policy)
        .arg("--cwd")
        .arg(project)
        .args(["--", "bash", "-c", agent]);
    cmd
}

/// A mount beneath a walled folder is read-only inside too (a read-only remount reaches the
/// top mount only: `binfmt_misc` beneath `/proc/sys` stayed writable, and its `register`
/// names a program the kernel runs outside every namespace, a seventh review of the wall):
/// a tmpfs mounted beneath the `--policy` file's folder, in a mount namespace of the
/// test's own, cannot be written by the agent; without the wall it can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mount_beneath_a_walled_folder_is_read_only_inside_too() {
    for mode in ["own-files", "off"] {
        let dir = temp_dir(&format!("wall-beneath-{mode}"));
        let (folder, project) = (dir.join("policies"), dir.join("project"));
        std::fs::create_dir_all(folder.join("beneath")).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let file = folder.join("team.toml");
        std::fs::write(&file, "# the team's policy\n").unwrap();
        let script = format!(
            r#"D={d}
{TRY}
try "write-beneath" sh -c "echo x > '{b}/f'"
try "sys:write" sh -c 'f=/sys/kernel/rcu_expedited; v=$(cat $f) && echo "$v" > $f'
touch "$D/done""#,
            d = dir.display(),
            b = folder.join("beneath").display()
        );
        let agent = beside_the_mock(&dir, &script);
        // A tmpfs beneath the policy's folder.
        let cmd = bridge_after_mounting(
            r#"mount -t tmpfs beneath "$0""#,
            &folder.join("beneath"),
            mode,
            &file,
            &project,
            &agent,
        );
        let mut b = Bridge::from_command(cmd);
        b.initialize(json!({})).await;
        until_made(&dir.join("done"), &b).await;
        let report = std::fs::read_to_string(dir.join("report")).unwrap_or_default();
        if mode == "off" {
            assert!(report.contains("write-beneath ok"), "{report}");
        } else {
            all_failed(&dir, &["write-beneath", "sys:write"]);
        }
        b.close_stdin();
        b.drain().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The bridge's folders where their file system is mounted again (a bind of `/`, as
/// Fedora Atomic shows its physical root at `/sysroot`) are walled there too: the agent
/// reads no token and writes no policy by the other path (a ninth review of the wall).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_mounted_again_elsewhere_are_walled_there_too() {
    for mode in ["own-files", "off"] {
        let dir = temp_dir(&format!("wall-again-{mode}"));
        let (folder, project, state) =
            (dir.join("policies"), dir.join("project"), dir.join("state"));
        let sysroot = dir.join("sysroot");
        for d in [
            &folder,
            &project,
            &sysroot,
            &state.join("acp-question-bridge"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let file = folder.join("team.toml");
        std::fs::write(&file, "# the team's policy\n").unwrap();
        let token = state.join("acp-question-bridge/token");
        std::fs::write(&token, "a-token-of-thirty-two-characters\n").unwrap();
        let again = |p: &Path| format!("{}{}", sysroot.display(), p.display());
        let script = format!(
            r#"D={d}
{TRY}
try "read-again" grep -q token "{t}"
try "write-again" sh -c "echo '# x' >> '{f}'"
touch "$D/done""#,
            d = dir.display(),
            t = again(&token),
            f = again(&file),
        );
        let agent = beside_the_mock(&dir, &script);
        let mut cmd = bridge_after_mounting(
            r#"mount --rbind / "$0""#,
            &sysroot,
            mode,
            &file,
            &project,
            &agent,
        );
        cmd.env("XDG_STATE_HOME", &state);
        let mut b = Bridge::from_command(cmd);
        b.initialize(json!({})).await;
        until_made(&dir.join("done"), &b).await;
        let report = std::fs::read_to_string(dir.join("report")).unwrap_or_default();
        if mode == "off" {
            assert!(report.contains("read-again ok"), "{report}");
            assert!(report.contains("write-again ok"), "{report}");
        } else {
            all_failed(&dir, &["read-again", "write-again"]);
            assert_eq!(
                std::fs::read_to_string(&file).unwrap(),
                "# the team's policy\n"
            );
        }
        b.close_stdin();
        b.drain().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A `--policy` file in a folder the agent works in (the session's folder) cannot be walled
/// by its folder: the bridge says so and where to keep it, and starts no agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_file_in_the_session_folder_is_refused_inside_the_wall() {
    let dir = temp_dir("wall-policy-in-session");
    let file = dir.join("policy.toml");
    std::fs::write(&file, "# a policy\n").unwrap();
    let (code, _, err) = crate::common::run_bridge(&[
        "--policy",
        &file.display().to_string(),
        "--cwd",
        &dir.display().to_string(),
        "--",
        MOCK,
    ])
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the session's folder") && err.contains("a folder of their own"),
        "{err}"
    );
    // Without the wall there is nothing to keep it from, and the bridge runs.
    let mut b = Bridge::with_args(&[
        "--sandbox",
        "off",
        "--no-control",
        "--policy",
        &file.display().to_string(),
        "--cwd",
        &dir.display().to_string(),
        "--",
        MOCK,
    ]);
    b.initialize(json!({})).await;
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The config folder reached through a link (a dotfiles manager's): the agent cannot point
/// the link elsewhere, nor replace it with a folder and a policy of its own (the link is
/// pinned: `EBUSY`), so the next bridge the user starts reads the user's policy, not the
/// agent's. The bridge itself reads the folder the wall keeps, as `bridge.status` shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_to_the_config_folder_cannot_be_pointed_elsewhere_by_the_agent() {
    let dir = temp_dir("wall-config-link");
    let (home, real) = (dir.join("config"), dir.join("dotfiles/acpqb"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(
        real.join("policy.toml"),
        "[[rule]]\nid = \"real\"\ndecision = \"deny\"\nclaude = \"Bash(rm:*)\"\n",
    )
    .unwrap();
    let link = home.join("acp-question-bridge");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let script = format!(
        r#"C={c}/acp-question-bridge; D={d}
mkdir -p "$D/evil" && printf '[[rule]]\nid = "evil"\ndecision = "allow"\nclaude = "Bash(rm:*)"\n' > "$D/evil/policy.toml"
{TRY}
try "repoint" ln -sfn "$D/evil" "$C"
try "replace" sh -c "rm '$C' && mkdir '$C' && cp '$D/evil/policy.toml' '$C/'"
try "rename-over" sh -c "ln -s '$D/evil' '$D/l2' && mv -fT '$D/l2' '$C'"
try "move-away" mv "$C" "$C.old"
touch "$D/done""#,
        c = home.display(),
        d = dir.display()
    );
    let agent = beside_the_mock(&dir, &script);
    let bridge = |agent: &str| {
        let mut cmd = tokio::process::Command::new(BRIDGE);
        cmd.args(["--control", "127.0.0.1:0", "--", "bash", "-c", agent])
            .env("XDG_CONFIG_HOME", &home)
            .env("RUST_LOG", "info");
        Bridge::from_command(cmd)
    };
    let mut b = bridge(&agent);
    b.initialize(json!({})).await;
    until_made(&dir.join("done"), &b).await;
    all_failed(&dir, &["repoint", "replace", "rename-over", "move-away"]);
    assert_eq!(std::fs::read_link(&link).unwrap(), real);
    // The next bridge of the user, started while the first one runs, reads the user's own
    // policy through the link.
    let next = bridge(MOCK);
    let (base, token) = control_of(&next).await;
    let status = call(&http(&base, &token), "bridge.status", json!({}))
        .await
        .unwrap();
    let files = status["policy"]["files"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let real_file = real.canonicalize().unwrap().join("policy.toml");
    assert!(
        files.len() == 1
            && files[0]["file"] == real_file.display().to_string()
            && files[0]["rules"] == 1,
        "{status}"
    );
    for mut b in [b, next] {
        b.close_stdin();
        b.drain().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A project's `.acp-question-bridge` that is a link (to a folder its team shares): the
/// agent cannot replace it with a folder of its own, whose missing deny rules would hold
/// for this bridge and the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_policy_folder_that_is_a_link_cannot_be_replaced_by_the_agent() {
    let dir = temp_dir("wall-project-link");
    let (project, shared) = (dir.join("project"), dir.join("shared/acpqb"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(
        shared.join("policy.toml"),
        "[[rule]]\nid = \"no-touch\"\ndecision = \"deny\"\nclaude = \"Bash(touch:*)\"\n",
    )
    .unwrap();
    let link = project.join(".acp-question-bridge");
    std::os::unix::fs::symlink("../shared/acpqb", &link).unwrap();
    let script = format!(
        r#"P={p}/.acp-question-bridge; D={d}
{TRY}
try "replace" sh -c "rm '$P' && mkdir '$P'"
try "repoint" sh -c "mkdir -p '$D/empty' && ln -sfn '$D/empty' '$P'"
touch "$D/done""#,
        p = project.display(),
        d = dir.display()
    );
    let agent = beside_the_mock(&dir, &script);
    let mut cmd = tokio::process::Command::new(BRIDGE);
    cmd.args([
        "--no-control",
        "--cwd",
        &project.display().to_string(),
        "--",
        "bash",
        "-c",
        &agent,
    ]);
    let mut b = Bridge::from_command(cmd);
    b.initialize(json!({})).await;
    until_made(&dir.join("done"), &b).await;
    all_failed(&dir, &["replace", "repoint"]);
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../shared/acpqb")
    );
    b.close_stdin();
    b.drain().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session folder given relative to where the bridge starts (`--cwd proj`) is where the
/// agent runs inside the wall too: the launcher enters it again by its whole path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_session_folder_is_where_the_walled_agent_runs() {
    let dir = temp_dir("wall-relative-cwd");
    std::fs::create_dir_all(dir.join("proj")).unwrap();
    let mut cmd = tokio::process::Command::new(BRIDGE);
    cmd.args([
        "--no-control",
        "--cwd",
        "proj",
        "--",
        "bash",
        "-c",
        &format!("pwd -P > where; exec {MOCK}"),
    ])
    .current_dir(&dir);
    let mut b = Bridge::from_command(cmd);
    b.initialize(json!({})).await;
    let wrote = std::fs::read_to_string(dir.join("proj/where")).unwrap_or_default();
    assert_eq!(
        wrote.trim(),
        dir.join("proj")
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    b.close_stdin();
    b.drain().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The user's policy file and trust list are links into a dotfiles folder (as GNU stow
/// makes them): inside the wall the agent can write neither through the links nor by their
/// real names, nor beside them, and the user's deny rule still holds for the next call. A
/// policy file with a second name (a hard link the wall cannot know) is refused, with what
/// to do, and no agent starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_file_that_is_a_link_cannot_be_rewritten_by_its_real_name() {
    let dir = temp_dir("wall-policy-file-link");
    let (config, real) = (
        dir.join("config/acp-question-bridge"),
        dir.join("dotfiles/acpqb"),
    );
    std::fs::create_dir_all(&config).unwrap();
    std::fs::create_dir_all(&real).unwrap();
    let deny = "[[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\nclaude = \"Bash(rm:*)\"\n";
    std::fs::write(real.join("policy.toml"), deny).unwrap();
    std::fs::write(real.join("trusted-folders"), "").unwrap();
    for f in ["policy.toml", "trusted-folders"] {
        std::os::unix::fs::symlink(real.join(f), config.join(f)).unwrap();
    }
    let script = format!(
        r#"C={c}; R={r}; D={d}
{TRY}
printf '[[rule]]\nid = "evil"\ndecision = "allow"\nclaude = "Bash(rm:*)"\n' > "$D/evil.toml"
try "through-link" sh -c "cat '$D/evil.toml' > '$C/policy.toml'"
try "real-name" sh -c "cat '$D/evil.toml' > '$R/policy.toml'"
try "replace-real" mv -f "$D/evil.toml" "$R/policy.toml"
try "trust-real" sh -c "echo 'sha256:00 /x' >> '$R/trusted-folders'"
try "beside-real" sh -c "echo x > '$R/more.toml'"
touch "$D/done""#,
        c = config.display(),
        r = real.display(),
        d = dir.display()
    );
    let agent = beside_the_mock(&dir, &script);
    let mut cmd = tokio::process::Command::new(BRIDGE);
    cmd.args(["--no-control", "--", "bash", "-c", &agent])
        .env("XDG_CONFIG_HOME", dir.join("config"));
    let mut b = Bridge::from_command(cmd);
    b.initialize(json!({})).await;
    until_made(&dir.join("done"), &b).await;
    all_failed(
        &dir,
        &[
            "through-link",
            "real-name",
            "replace-real",
            "trust-real",
            "beside-real",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(real.join("policy.toml")).unwrap(),
        deny
    );
    assert_eq!(
        std::fs::read_to_string(real.join("trusted-folders")).unwrap(),
        ""
    );
    b.close_stdin();
    b.drain().await;

    // A second name of the real file: refused before any agent starts.
    std::fs::hard_link(real.join("policy.toml"), dir.join("second-name.toml")).unwrap();
    let mut cmd = tokio::process::Command::new(BRIDGE);
    cmd.args(["--no-control", "--", MOCK])
        .env("XDG_CONFIG_HOME", dir.join("config"));
    let mut b = Bridge::from_command(cmd);
    assert_eq!(b.wait().await, 1);
    let err = b.stderr();
    assert!(err.contains("2 names (hard links)"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bridge's own program, started by a name on `PATH` that is a link (as `npm` and
/// `cargo binstall` make them): the agent can replace neither the link nor the program it
/// leads to, nor remove them, so the next bridge or front the editor starts runs the user's
/// program, not the agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridges_own_program_cannot_be_replaced_by_the_agent() {
    let dir = temp_dir("wall-own-program");
    let (bin, real, project) = (dir.join("bin"), dir.join("pkg"), dir.join("project"));
    for d in [&bin, &real, &project] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::copy(BRIDGE, real.join("acp-question-bridge")).unwrap();
    std::os::unix::fs::symlink(
        real.join("acp-question-bridge"),
        bin.join("acp-question-bridge"),
    )
    .unwrap();
    let script = format!(
        r#"B={b}; R={r}; D={d}
{TRY}
printf '#!/bin/sh\ntouch {d}/pwned\n' > "$D/evil"; chmod +x "$D/evil"
try "replace-link" mv -f "$D/evil" "$B/acp-question-bridge"
try "repoint-link" ln -sfn "$D/evil" "$B/acp-question-bridge"
try "replace-program" sh -c "cp '$D/evil' '$D/evil2' && mv -f '$D/evil2' '$R/acp-question-bridge'"
try "write-program" sh -c "cat '$D/evil' > '$R/acp-question-bridge'"
try "remove-program" rm -f "$R/acp-question-bridge"
try "move-folder" mv "$R" "$R.old"
touch "$D/done""#,
        b = bin.display(),
        r = real.display(),
        d = dir.display()
    );
    let agent = beside_the_mock(&dir, &script);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = tokio::process::Command::new("acp-question-bridge");
    cmd.args([
        "--no-control",
        "--cwd",
        &project.display().to_string(),
        "--",
        "bash",
        "-c",
        &agent,
    ])
    .env("PATH", &path);
    let mut b = Bridge::from_command(cmd);
    b.initialize(json!({})).await;
    until_made(&dir.join("done"), &b).await;
    all_failed(
        &dir,
        &[
            "replace-link",
            "repoint-link",
            "replace-program",
            "write-program",
            "remove-program",
            "move-folder",
        ],
    );
    assert_eq!(
        std::fs::read_link(bin.join("acp-question-bridge")).unwrap(),
        real.join("acp-question-bridge")
    );
    assert!(!dir.join("pwned").exists());
    b.close_stdin();
    b.drain().await;

    // Started by a name that is not on PATH (`exec -a`), with the session at the home
    // folder the program lies beneath: the program as it runs is walled all the same.
    std::fs::remove_file(dir.join("done")).unwrap();
    std::fs::remove_file(dir.join("report")).unwrap();
    let mut cmd = tokio::process::Command::new(real.join("acp-question-bridge"));
    cmd.arg0("acpqb-renamed")
        .args([
            "--no-control",
            "--cwd",
            &dir.display().to_string(),
            "--",
            "bash",
            "-c",
            &agent,
        ])
        .env("HOME", &dir);
    let mut b = Bridge::from_command(cmd);
    b.initialize(json!({})).await;
    until_made(&dir.join("done"), &b).await;
    all_failed(
        &dir,
        &["replace-program", "write-program", "remove-program"],
    );
    assert!(!dir.join("pwned").exists());
    b.close_stdin();
    b.drain().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program in the session's folder (a build of the agent's own) is the agent's to
/// replace; the bridge that runs from it still starts its launcher and its notification
/// command by its running image, never by that path: what the agent put there never runs
/// outside the wall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_the_agent_replaced_is_not_what_the_bridge_starts_next() {
    let dir = temp_dir("wall-own-build");
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("bin")).unwrap();
    let program = project.join("bin/acp-question-bridge");
    std::fs::copy(BRIDGE, &program).unwrap();
    let script = format!(
        r#"D={d}; P={p}
printf '#!/bin/sh\ntouch {d}/pwned\n' > "$D/evil"; chmod +x "$D/evil"
cp "$D/evil" "$P.new" && mv -f "$P.new" "$P" && echo replaced > "$D/report"
touch "$D/done""#,
        d = dir.display(),
        p = program.display()
    );
    std::fs::write(dir.join("agent.sh"), &script).unwrap();
    let agent = format!("bash {}/agent.sh; exec {MOCK}", dir.display());
    let rang = format!("touch {}/rang", dir.display());
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args([
        "--control",
        "127.0.0.1:0",
        "--notify-after",
        "0",
        "--quiet-at-desk",
        "0",
        "--on-question",
        &rang,
        "--cwd",
        &project.display().to_string(),
        "--",
        "bash",
        "-c",
        &agent,
    ]);
    let mut b = Bridge::from_command(cmd);
    b.initialize(json!({})).await;
    until_made(&dir.join("done"), &b).await;
    assert_eq!(
        std::fs::read_to_string(dir.join("report")).unwrap_or_default(),
        "replaced\n",
        "the agent may replace a build of its own"
    );
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "approve").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;
    until_made(&dir.join("rang"), &b).await;
    assert!(!dir.join("pwned").exists(), "the agent's program ran");
    b.close_stdin();
    b.drain().await;
    let _ = std::fs::remove_dir_all(&dir);
}
