//! Test harness: runs the real `acp-question-bridge` binary (usually around the real
//! `acp-mock-agent`) and talks to it as an IDE client would. Every wait has a timeout.

pub mod control;
pub mod fake_model;
pub mod inbox;
pub mod install;
pub mod nats;
pub mod phone;
pub mod push_service;
pub mod real_agent;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub const BRIDGE: &str = env!("CARGO_BIN_EXE_acp-question-bridge");
pub const MOCK: &str = env!("CARGO_BIN_EXE_acp-mock-agent");
/// How long any single wait in a test may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);

pub struct Bridge {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Everything the bridge wrote to stderr so far.
    pub stderr: Arc<Mutex<String>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    /// Every line sent and received so far, when recording (see [`Bridge::record`]).
    transcript: Option<Vec<(Dir, String)>>,
    /// The registry it is listed in ([`control_of`] reads its token there).
    pub registry: PathBuf,
}

/// Which way a recorded line went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// The client (the test) sent it to the bridge.
    Client,
    /// The bridge sent it to the client.
    Bridge,
}

impl Bridge {
    /// The bridge with `args` around the mock agent.
    pub fn mock(args: &[&str]) -> Self {
        let mut argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        argv.push("--".into());
        argv.push(MOCK.into());
        Self::spawn(&argv)
    }

    /// The bridge with exactly these arguments.
    pub fn with_args(args: &[&str]) -> Self {
        let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Self::spawn(&argv)
    }

    /// The bridge with exactly `argv`.
    pub fn spawn(argv: &[String]) -> Self {
        Self::spawn_env(argv, &[])
    }

    /// The bridge with exactly `argv`, and `env` added to its environment.
    pub fn spawn_env(argv: &[impl AsRef<std::ffi::OsStr>], env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(BRIDGE);
        cmd.args(argv)
            .envs(env.iter().copied())
            .env("RUST_LOG", "debug");
        Self::from_command(cmd)
    }

    /// Runs `cmd` (the bridge, with whatever arguments, environment and directory it was
    /// given) with piped stdio.
    pub fn from_command(cmd: Command) -> Self {
        Self::with_stderr(cmd, None)
    }

    /// As [`Bridge::from_command`], with stderr going to `stderr` instead of a pipe the test
    /// reads (when given; [`Bridge::stderr`] then stays empty).
    pub fn with_stderr(mut cmd: Command, stderr: Option<Stdio>) -> Self {
        let own_stderr = stderr.is_none();
        // The control server runs by default and registers the bridge for the inbox: in the
        // tests' own registry, never the user's.
        let given = cmd
            .as_std()
            .get_envs()
            .find(|(k, _)| *k == REGISTRY_ENV)
            .and_then(|(_, v)| v.map(PathBuf::from));
        let registry = given.unwrap_or_else(|| {
            cmd.env(REGISTRY_ENV, test_registry());
            test_registry()
        });
        // The approval policy reads the user's config folder: the tests' own, empty one,
        // unless the test gives one.
        if !cmd.as_std().get_envs().any(|(k, _)| k == "XDG_CONFIG_HOME") {
            cmd.env("XDG_CONFIG_HOME", test_config_home());
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr.unwrap_or_else(Stdio::piped))
            .kill_on_drop(true)
            .spawn()
            .expect("spawn bridge");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (stderr, stderr_task) = match child.stderr.take() {
            Some(err) if own_stderr => {
                let (s, t) = collect_stderr(err);
                (s, Some(t))
            }
            _ => (Arc::default(), None),
        };
        Self {
            child,
            stdin,
            stdout,
            stderr,
            stderr_task,
            transcript: None,
            registry,
        }
    }

    /// From now on, keeps every line sent and received, for [`Bridge::transcript`].
    pub fn record(&mut self) {
        self.transcript.get_or_insert_with(Vec::new);
    }

    /// The lines recorded since [`Bridge::record`], in order, as sent or received.
    pub fn transcript(&self) -> &[(Dir, String)] {
        self.transcript.as_deref().unwrap_or_default()
    }

    fn note(&mut self, dir: Dir, bytes: &[u8]) {
        if let Some(t) = &mut self.transcript {
            let text = String::from_utf8_lossy(bytes);
            t.extend(text.lines().map(|l| (dir, l.to_owned())));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("pid")
    }

    /// Writes raw bytes to the bridge's stdin.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.note(Dir::Client, bytes);
        let stdin = self.stdin.as_mut().expect("stdin open");
        tokio::time::timeout(WAIT, async {
            stdin.write_all(bytes).await.expect("write");
            stdin.flush().await.expect("flush");
        })
        .await
        .expect("timed out writing to the bridge");
    }

    /// Sends one message (a line).
    pub async fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    /// Reads the next line from the bridge's stdout (without the newline).
    pub async fn line(&mut self) -> String {
        let mut line = String::new();
        let n = tokio::time::timeout(WAIT, self.stdout.read_line(&mut line))
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for a line; stderr:\n{}", self.stderr()))
            .expect("read");
        assert!(n > 0, "bridge stdout closed; stderr:\n{}", self.stderr());
        assert!(line.ends_with('\n'));
        line.pop();
        self.note(Dir::Bridge, line.as_bytes());
        line
    }

    /// The next message within `wait`, or `None` on timeout or end of output.
    pub async fn try_recv(&mut self, wait: Duration) -> Option<Value> {
        let mut line = String::new();
        match tokio::time::timeout(wait, self.stdout.read_line(&mut line)).await {
            Ok(Ok(n)) if n > 0 => {
                self.note(Dir::Bridge, line.as_bytes());
                serde_json::from_str(line.trim_end()).ok()
            }
            _ => None,
        }
    }

    pub async fn recv(&mut self) -> Value {
        let line = self.line().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON from bridge: {e}: {line}"))
    }

    /// Reads until a message satisfies `pred`, returning it and what came before.
    pub async fn recv_until(&mut self, pred: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let msg = self.recv().await;
            if pred(&msg) {
                return (msg, before);
            }
            before.push(msg);
        }
    }

    /// Reads until the response to `id`, returning it and the messages before it.
    pub async fn response(&mut self, id: Value) -> (Value, Vec<Value>) {
        self.recv_until(|m| m.get("id") == Some(&id) && m.get("method").is_none())
            .await
    }

    /// Sends a request and waits for its response; returns the response.
    pub async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        self.response(json!(id)).await.0
    }

    /// `initialize` + `session/new`; returns the session id.
    pub async fn open_session(&mut self) -> String {
        self.initialize(json!({})).await;
        self.new_session(1000).await
    }

    pub async fn initialize(&mut self, client_caps: Value) -> Value {
        let r = self
            .call(
                0,
                "initialize",
                json!({"protocolVersion":1,"clientCapabilities":client_caps}),
            )
            .await;
        assert!(r.get("result").is_some(), "initialize failed: {r}");
        r
    }

    pub async fn new_session(&mut self, id: i64) -> String {
        let r = self
            .call(id, "session/new", json!({"cwd":"/tmp","mcpServers":[]}))
            .await;
        r["result"]["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned()
    }

    /// Sends `session/prompt` with `text` (does not wait).
    pub async fn prompt(&mut self, id: i64, session: &str, text: &str) {
        self.send(
            &json!({"jsonrpc":"2.0","id":id,"method":"session/prompt","params":{
            "sessionId":session,"prompt":[{"type":"text","text":text}]}}),
        )
        .await;
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Waits for the bridge to exit; returns its exit code (128+N for signal N).
    pub async fn wait(&mut self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        let st = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("bridge did not exit; stderr:\n{}", self.stderr()))
            .expect("wait");
        // Everything it logged is in `stderr` once it has exited.
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(WAIT, task).await;
        }
        st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
    }

    /// Reads stdout to EOF, returning the remaining lines.
    pub async fn drain(&mut self) -> Vec<String> {
        let mut rest = String::new();
        tokio::time::timeout(WAIT, self.stdout.read_to_string(&mut rest))
            .await
            .expect("timed out draining stdout")
            .expect("read");
        self.note(Dir::Bridge, rest.as_bytes());
        rest.lines().map(str::to_owned).collect()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until the bridge's stderr contains `needle`.
    pub async fn stderr_contains(&self, needle: &str) {
        tokio::time::timeout(WAIT, async {
            while !self.stderr().contains(needle) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("stderr never contained {needle:?}:\n{}", self.stderr()));
    }
}

/// Text of an `agent_message_chunk` update, if `m` is one.
pub fn chunk_text(m: &Value) -> Option<&str> {
    (m["method"] == "session/update"
        && m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .then(|| m["params"]["update"]["content"]["text"].as_str())
        .flatten()
}

/// All chunk texts among `msgs`, concatenated.
/// Whether `msgs` tell the client that a question it shows is over the way every client
/// renders (docs/CLIENTS.md): a tool call marked done (completed or failed) or a note of
/// the bridge's in the chat. Fails if any is a `$/cancel_request`, which real clients crash
/// or exit on.
pub fn told_over(msgs: &[Value]) -> bool {
    assert!(
        msgs.iter().all(|m| m["method"] != "$/cancel_request"),
        "the client was sent $/cancel_request: {msgs:?}"
    );
    msgs.iter().any(|m| {
        let u = &m["params"]["update"];
        (u["sessionUpdate"] == "tool_call_update"
            && (u["status"] == "completed" || u["status"] == "failed"))
            || chunk_text(m).is_some_and(|t| t.contains("[acp-question-bridge]"))
    })
}

pub fn chunks(msgs: &[Value]) -> String {
    msgs.iter().filter_map(chunk_text).collect()
}

/// The client's side of the mock agent's question (`question` prompt, extension client):
/// initialize, open a session, get the question, answer `value`, and see the agent's turn
/// end with that answer. Returns the question request as the client got it.
pub async fn answer_the_mock_question(b: &mut Bridge, value: &str) -> Value {
    b.initialize(
        json!({"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}),
    )
    .await;
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "question").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "_sandboxagent/session/request_question")
        .await;
    b.send(
        &json!({"jsonrpc":"2.0","id":ask["id"],"result":{"status":"answered","answers":[[value]]}}),
    )
    .await;
    let (done, before) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let said = format!("answered: [[{value:?}]]");
    assert!(chunks(&before).contains(&said), "{before:?}");
    ask
}

/// Resident memory of a process in KiB (Linux).
/// Collects a child's stderr into a shared string, as it arrives, until EOF.
pub fn collect_stderr(
    mut err: tokio::process::ChildStderr,
) -> (Arc<Mutex<String>>, tokio::task::JoinHandle<()>) {
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = stderr.clone();
    let task = tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = err.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (stderr, task)
}

/// The pid of the bridge's child (the agent), if it has started: the children of every
/// thread of the bridge (the one that spawns it is a runtime worker, not the main thread).
#[allow(dead_code)]
pub fn agent_pid_of(bridge: u32) -> Option<u32> {
    // The wall's probe (the bridge's binary run once with `--version` as the agent, at
    // start) is a child too, for a moment: not the agent.
    let probe = |pid: &u32| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.ends_with(b"--version\0"))
    };
    std::fs::read_dir(format!("/proc/{bridge}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .collect::<String>()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .find(|p| !probe(p))
}

/// Waits until the bridge has started its agent; returns the agent's pid.
#[allow(dead_code)]
pub async fn wait_agent(bridge: u32) -> u32 {
    tokio::time::timeout(WAIT, async {
        loop {
            if let Some(pid) = agent_pid_of(bridge) {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the agent did not start")
}

/// Asserts that process `pid` runs inside the wall around the agent: the kernel shows it in
/// another user and mount namespace than this test's.
#[allow(dead_code)]
pub fn assert_walled(pid: u32) {
    for ns in ["user", "mnt"] {
        let of =
            |p: &str| std::fs::read_link(format!("/proc/{p}/ns/{ns}")).map_err(|e| e.to_string());
        let (agent, ours) = (of(&pid.to_string()), of("self"));
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        assert!(
            agent.is_ok() && agent != ours,
            "the agent {pid} is not walled in: its {ns} namespace is {agent:?}, ours {ours:?}\n{status}"
        );
    }
}

pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Where a bridge lists itself for the inbox.
pub const REGISTRY_ENV: &str = "ACP_QUESTION_BRIDGE_REGISTRY";

/// The user's config folder of every bridge of the tests that names none: empty, so no
/// approval policy of the user's is in force.
pub fn test_config_home() -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    let dir = std::env::temp_dir().join(format!("acp-qb-test-config-{uid}"));
    std::fs::create_dir_all(&dir).expect("the tests' config folder");
    dir
}

/// The registry folder (0700) shared by every bridge of the tests that names none: not the
/// user's.
pub fn test_registry() -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::PermissionsExt;
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    let dir = std::env::temp_dir().join(format!("acp-qb-test-registry-{uid}"));
    std::fs::create_dir_all(&dir).expect("the tests' registry");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("0700");
    dir
}

/// The pids, as this process sees them, of the live processes whose `argv[0]` is `name`
/// (a process inside a wall knows only its pid there, so it names itself: bash's
/// `exec -a NAME`).
pub fn pids_named(name: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).next() == Some(name.as_bytes()))
        })
        .collect()
}

/// The pid, as this process sees it, of the mock agent that said `said` (`pid: N@NS`, its
/// script's `pid`): inside a wall the agent knows only its pid in its own PID namespace,
/// so it says which namespace (its inode). `None`: not such a text, or the agent is gone.
pub fn mock_pid(said: &str) -> Option<u32> {
    let (inner, ns) = said.strip_prefix("pid: ")?.trim().split_once('@')?;
    let (inner, ns): (u32, u64) = (inner.parse().ok()?, ns.parse().ok()?);
    let link = format!("pid:[{ns}]");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                .is_ok_and(|l| l.as_os_str() == link.as_str())
                && std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|st| {
                    st.lines()
                        .find_map(|l| l.strip_prefix("NSpid:"))
                        .and_then(|l| l.split_whitespace().last()?.parse::<u32>().ok())
                        == Some(inner)
                })
        })
}

/// The pid, as this process sees it, of the process that is `inner` in the PID namespace of
/// a wall beneath `ancestor` (a bridge): a script inside knows only its pid there (`$$`).
/// `inner` itself where no such process is (no wall).
pub fn system_pid(inner: u32, ancestor: u32) -> u32 {
    let field = |pid: u32, name: &str| -> Option<String> {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
    };
    let beneath = |mut pid: u32| {
        for _ in 0..64 {
            match field(pid, "PPid:").and_then(|p| p.parse::<u32>().ok()) {
                Some(p) if p == ancestor => return true,
                Some(p) if p > 1 => pid = p,
                _ => return false,
            }
        }
        false
    };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| {
            field(pid, "NSpid:").is_some_and(|n| {
                let n: Vec<&str> = n.split_whitespace().collect();
                n.len() > 1 && n.last() == Some(&inner.to_string().as_str())
            }) && beneath(pid)
        })
        .unwrap_or(inner)
}

/// A temporary directory for one test. The first call of a test run removes the ones
/// earlier runs left (their process is gone): a failed test keeps its folder to be read,
/// and the npm peers' folders alone are about 100 MiB a run.
pub fn temp_dir(name: &str) -> PathBuf {
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(sweep_temp_dirs);
    let dir = std::env::temp_dir().join(format!(
        "acp-qb-{}-{}-{}",
        name,
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Removes `acp-qb-NAME-PID-NANOS` folders whose process has ended.
fn sweep_temp_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("acp-qb-")) else {
            continue;
        };
        let mut parts = rest.rsplitn(3, '-');
        let (Some(nanos), Some(pid), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let stamped = nanos.len() >= 18 && nanos.bytes().all(|b| b.is_ascii_digit());
        if let (true, Ok(pid)) = (stamped, pid.parse::<u32>()) {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// The lines of `text` that are whole (ended by a newline). A child's output read as it
/// comes may end inside a line: a bridge writes `control token: ` and the token in two
/// writes, and a reader between them would take a token that is not all there.
pub fn whole_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n'))
}

/// The control server a bridge started with `--control` announced on stderr, once its
/// lines are whole, and its token, from its entry in the registry (a bridge whose stderr is
/// not a terminal never prints it): (`http://ADDR/`, token).
pub async fn control_of(b: &Bridge) -> (String, String) {
    tokio::time::timeout(WAIT, async {
        loop {
            let err = b.stderr();
            let base = whole_lines(&err).find_map(|l| {
                l.split_once("control server on ")
                    .map(|(_, v)| v.trim().to_owned())
            });
            if let Some(token) = base.as_deref().and_then(|u| token_in(&b.registry, u)) {
                return (base.unwrap_or_default(), token);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "no control server on stderr, or not in the registry:\n{}",
            b.stderr()
        )
    })
}

/// The token of the bridge whose control server is `base` (`http://ADDR/`), from its entry
/// in `registry`, once it is there. An entry a killed bridge left behind may name the same
/// port: only a live process's counts (as the inbox reads the registry).
pub fn token_in(registry: &Path, base: &str) -> Option<String> {
    std::fs::read_dir(registry).ok()?.flatten().find_map(|e| {
        let text = std::fs::read_to_string(e.path()).ok()?;
        let entry: Value = serde_json::from_str(&text).ok()?;
        let alive = entry["pid"]
            .as_u64()
            .is_some_and(|pid| acp_question_bridge::inbox::roster::alive(pid as u32));
        (entry["url"] == base && alive).then(|| entry["token"].as_str().map(str::to_owned))?
    })
}

/// The directory of npm package `name`@`version` in the test cache, installed there first
/// if it is missing (needs Node.js and npm; see [`install`]).
pub async fn npm_package(name: &'static str, version: &'static str) -> PathBuf {
    try_npm_package(name, version)
        .await
        .unwrap_or_else(|why| panic!("{why}"))
}

/// As [`npm_package`], but says why when the package cannot be installed (no npm, no
/// registry) instead of failing.
pub async fn try_npm_package(name: &'static str, version: &'static str) -> Result<PathBuf, String> {
    install::npm_package(name, version).await
}

/// proptest's settings for `cases` cases, its regressions read from (and written to) the file
/// beside the test's source: `tests/it/NAME.proptest-regressions`. proptest's default looks
/// for them under a `proptest-regressions` folder beside the nearest folder with a `main.rs`
/// (`tests/proptest-regressions/NAME.txt`, now that the tests are one binary, `tests/it`),
/// where none are.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, FileFailurePersistence};
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}

/// Whether `got` holds everything `expected` says (objects: these members, recursively;
/// anything else: equal).
pub fn contains(got: &Value, expected: &Value) -> bool {
    match (got, expected) {
        (Value::Object(g), Value::Object(e)) => e
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|gv| contains(gv, v))),
        _ => got == expected,
    }
}

/// Runs `acp-question-bridge ARGS...` to its end (without the token variable of the
/// environment); returns (exit code, stdout, stderr).
pub async fn run_bridge(args: &[&str]) -> (i32, String, String) {
    let out = tokio::time::timeout(
        WAIT,
        Command::new(BRIDGE)
            .args(args)
            .env_remove("ACP_QUESTION_BRIDGE_TOKEN")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the command ends in time")
    .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How long a one-shot command of the bridge's (`policy`, `setup`, ...) may take in a test.
pub const COMMAND_WAIT: Duration = Duration::from_secs(120);

/// Runs `cmd` to its end like `Command::output` (stdin closed, stdout and stderr captured),
/// but kills it and fails the test if it is not done within [`COMMAND_WAIT`]: for plain
/// `#[test]`s and sync helpers, any command; async tests running the bridge have
/// [`run_bridge`].
pub fn output_within(cmd: &mut std::process::Command) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?} does not start: {e}"));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(COMMAND_WAIT) {
        Ok(out) => out.expect("the command's output is read"),
        Err(_) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("{cmd:?} did not end within {COMMAND_WAIT:?}");
        }
    }
}

/// (In `policy_shell::runner`, which the `policy_shell` fuzz target includes by path, so it
/// has no test helper of the crate to call.)
pub use crate::policy_shell::write_executable;
