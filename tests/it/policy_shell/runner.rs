//! Runs a command the approval policy allowed under the real shells and says what it did
//! beyond its rule: the runner of the differential test (tests/it/policy_shell/mod.rs, in the
//! `it` test binary) and of the fuzz target `policy_shell`
//! (fuzz/fuzz_targets/policy_shell.rs includes this file by its path, so both check the same
//! way without a helper in the crate).
//!
//! Each run is `bash -c CMD` or `dash -c CMD` in a fresh folder holding a file `victim` and a
//! folder `victimdir`, with an empty environment but `HOME` (that folder) and `PATH`: only a
//! folder of recording stand-ins (`#!/bin/sh` scripts, the shell called by its absolute
//! path) for `cargo`, `git`, `npm`, `rm`, `touch`, ... Each stand-in writes, to a log outside
//! the folder, its argv (NUL-separated), its folder, its environment (as the kernel gave it,
//! from /proc) and what its stdin, stdout and stderr are, and does nothing else. stdin is
//! /dev/null, and a run is killed (its whole process group) after a timeout.
//!
//! The `cat` stand-in, started with no argument, then copies its stdin as `cat` does: the
//! shell makes a commit message's word with it (`"$(cat <<'EOF' ... EOF\n)"`).
//!
//! A run breaks the rule when:
//! - a program was started whose argv the policy does not allow on its own (decided as an
//!   argv `rawInput.command`);
//! - a program was started that is not one the policy read the command as starting: each
//!   program started must be one part of the plain command as the policy read it, its
//!   argv exactly the part's words (a `~` the policy read as its own `$HOME` is the run's
//!   `HOME` to the shell), or a `cat` the policy read a word as made by;
//! - a program was started with an environment other than a plain `cargo test` gets plus
//!   exactly the assignments the policy read before it (`X=1 cargo test`, `RUST_LOG=x
//!   cargo test`), or in another folder (`cd / && ...`), or with a stream that is a file or
//!   closed (`cargo test >x`, `<victim`, `>&-`; the run's own streams, /dev/null and pipes
//!   are fine: `cargo test 2>&1 | ls`; and a here-document for a `cat` the policy read);
//! - the shell tried to run or open something that is not there (`... command not found`);
//! - anything in the folder was created, removed or changed;
//! - it did not end within the timeout.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use acp_question_bridge::policy::shell::home as policy_home;
use acp_question_bridge::policy::{command, file, Call, Decision, Policy};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

/// The policy under test: allow rules around common prefixes, one of them exact.
pub const RULES: &str = r#"
[[rule]]
id = "tests"
decision = "allow"
command = ["cargo", "test"]

[[rule]]
id = "git-status"
decision = "allow"
command = ["git", "status"]

[[rule]]
id = "git-read"
decision = "allow"
command = ["git", ["diff", "log", "show", "commit"]]

[[rule]]
id = "npm-test"
decision = "allow"
command = ["npm", "run", "test"]

[[rule]]
id = "make-check"
decision = "allow"
command = ["make", "check"]
exact = true

[[rule]]
id = "echo-ls"
decision = "allow"
command = [["echo", "ls"]]
"#;

/// The commands the rules allow, that generated commands are built around (`make check`
/// only exactly). `echo` is a builtin of both shells, the others are stand-ins.
pub const PREFIXES: &[&str] = &[
    "cargo test",
    "git status",
    "git commit -m",
    "npm run test",
    "make check",
    "echo",
    "ls",
];

/// The real shells every allowed command runs under.
pub const SHELLS: &[&str] = &["/usr/bin/bash", "/usr/bin/dash"];

/// The programs on `PATH`: each a stand-in that records how it was started.
pub const STAND_INS: &[&str] = &[
    "cargo", "git", "npm", "npx", "make", "echo", "ls", "rm", "touch", "mkdir", "rmdir", "cp",
    "mv", "ln", "chmod", "curl", "wget", "sh", "bash", "dash", "zsh", "env", "sudo", "xargs",
    "find", "cat", "tee", "dd", "sed", "awk", "grep", "head", "tail", "python", "python3", "perl",
    "node", "ssh", "nc", "id", "whoami", "sleep", "nohup", "timeout", "kill", "true", "false",
    "test", "[", "printf", "pwd", "x", "p", "f", "pwned", "victim",
];

/// The policy of [`RULES`], built as the bridge builds it (the user's tier, no project).
pub fn policy() -> Policy {
    let rules = file::parse_rules(RULES, Path::new("policy_shell.toml"))
        .unwrap_or_else(|e| panic!("the test's rules do not load: {e}"));
    file::compose(rules, None, Vec::new()).0
}

/// The policy's decision on an `execute` tool call whose `rawInput.command` is `command` (a
/// shell string or an argv).
pub fn decide(policy: &Policy, command: Value) -> Decision {
    decide_in(policy, command, Path::new("/"))
}

/// [`decide`] in the folder `cwd`.
pub fn decide_in(policy: &Policy, command: Value, cwd: &Path) -> Decision {
    let call = Call::from_tool_call(
        &json!({"kind": "execute", "title": "x", "rawInput": {"command": command}}),
        "agent",
        cwd,
    );
    policy.decide(&call).decision
}

/// A folder holding what each run's folder holds before it runs ([`Sandbox::run`]), for a
/// policy to decide in; removed when dropped.
pub struct Twin(pub PathBuf);

impl Twin {
    pub fn new(dir: &Path) -> Twin {
        fs::create_dir_all(dir.join("victimdir")).expect("the twin folder");
        fs::write(dir.join("victim"), "the victim's content\n").expect("victim");
        fs::write(dir.join("victimdir/keep"), "keep\n").expect("victimdir/keep");
        Twin(dir.to_path_buf())
    }
}

impl Drop for Twin {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One program a shell started (one stand-in's record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    /// Its name (the stand-in's) and arguments.
    pub argv: Vec<String>,
    /// Its folder (`pwd -P`).
    pub cwd: String,
    /// Its environment, sorted, the run's folder written `<folder>`, without `_` (bash sets
    /// it to the program's path) and `SHLVL` (bash lowers it for the command it runs last).
    pub env: Vec<String>,
    /// What its fds 0, 1 and 2 are (`closed` if not open).
    pub fds: [String; 3],
}

/// What one shell did with one command.
#[derive(Debug)]
pub struct Run {
    pub shell: &'static str,
    pub execs: Vec<Exec>,
    /// Files and folders created, removed or changed in the run's folder.
    pub changes: Vec<String>,
    pub stderr: String,
    pub status: Option<ExitStatus>,
    /// Killed at the timeout.
    pub hung: bool,
    /// The run's folder (canonical; removed since).
    pub folder: String,
    /// The shell's `HOME`: the run's folder as given (not canonical).
    pub home: String,
}

/// A program the policy read a command as starting.
#[derive(Debug, Clone)]
struct Expected {
    argv: Vec<String>,
    /// The assignments before it.
    env: Vec<(String, String)>,
    /// A `cat` making a word from a here-document.
    cat: bool,
}

/// The programs the policy read `cmd` as starting, if it is plain.
fn expected(cmd: &str) -> Vec<Expected> {
    let c = command::parse(cmd);
    let mut out = Vec::new();
    for p in c.parts().unwrap_or_default() {
        out.push(Expected {
            argv: p.words.clone(),
            env: p.env.clone(),
            cat: false,
        });
        for run in &p.runs {
            out.push(Expected {
                argv: run.clone(),
                env: Vec::new(),
                cat: true,
            });
        }
    }
    out
}

/// One way a run did more than its rule allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `bash` or `dash`.
    pub shell: &'static str,
    /// `ran`, `misread`, `environment`, `folder`, `streams`, `not there`, `files` or
    /// `hung`.
    pub kind: &'static str,
    pub what: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.shell, self.what)
    }
}

/// A folder of stand-ins and a log, and the runs made with them (one at a time).
pub struct Sandbox {
    dir: PathBuf,
    bin: PathBuf,
    log: PathBuf,
    out: PathBuf,
    err: PathBuf,
    timeout: Duration,
    runs: u64,
    /// Per shell of [`SHELLS`]: the environment a plain `cargo test` gets.
    baseline: Vec<Vec<String>>,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        remove(&self.dir);
    }
}

impl Sandbox {
    /// A sandbox in the new folder `dir` (its parent must exist); each shell run is killed
    /// after `timeout`. Panics if a shell of [`SHELLS`] is missing: the check cannot be made
    /// without the real thing.
    pub fn new(dir: PathBuf, timeout: Duration) -> Sandbox {
        for shell in SHELLS {
            assert!(
                Path::new(shell).is_file(),
                "{shell} is missing: the policy's differential test needs the real shell \
                 (install bash and dash)"
            );
        }
        let bin = dir.join("bin");
        let log = dir.join("log");
        fs::create_dir_all(&bin).expect("the stand-ins' folder");
        fs::create_dir_all(&log).expect("the log folder");
        let log_text = log.to_str().expect("a UTF-8 temporary folder");
        assert!(
            !log_text.contains('\''),
            "a temporary folder without quotes"
        );
        for name in STAND_INS {
            let script = format!(
                "#!/bin/sh\n\
                 # A stand-in for {name}: records how it was started, does nothing else.\n\
                 f='{log_text}/c'$$\n\
                 n=0\n\
                 set -C\n\
                 until {{ : >\"$f.$n\"; }} 2>/dev/null; do n=$((n+1)); done\n\
                 set +C\n\
                 f=\"$f.$n\"\n\
                 printf '%s\\000' '{name}' \"$@\" >|\"$f\"\n\
                 pwd -P >|\"$f.cwd\"\n\
                 /bin/cat /proc/$$/environ >|\"$f.env\"\n\
                 /usr/bin/find /proc/$$/fd -mindepth 1 -maxdepth 1 -fprintf \"$f.fd\" '%f\\t%l\\n'\n\
                 {then}\n",
                name = name.replace('\'', ""),
                then = if *name == "cat" {
                    "[ $# -eq 0 ] && exec /bin/cat\nexit 0"
                } else {
                    "exit 0"
                }
            );
            let path = bin.join(name);
            write_executable(&path, &script);
        }
        let mut sandbox = Sandbox {
            out: dir.join("stdout"),
            err: dir.join("stderr"),
            dir,
            bin,
            log,
            timeout,
            runs: 0,
            baseline: Vec::new(),
        };
        for shell in SHELLS {
            let run = sandbox.run(shell, "cargo test");
            let argvs: Vec<_> = run.execs.iter().map(|e| e.argv.clone()).collect();
            assert!(
                argvs == [["cargo", "test"]] && run.changes.is_empty() && !run.hung,
                "{shell} -c 'cargo test' with the stand-ins: {run:?}"
            );
            sandbox.baseline.push(run.execs[0].env.clone());
        }
        sandbox
    }

    /// Runs `cmd` under `shell` in a fresh folder.
    pub fn run(&mut self, shell: &'static str, cmd: &str) -> Run {
        self.runs += 1;
        let folder = self.dir.join(format!("box{}", self.runs));
        fs::create_dir(&folder).expect("the run's folder");
        fs::write(folder.join("victim"), "the victim's content\n").expect("victim");
        fs::create_dir(folder.join("victimdir")).expect("victimdir");
        fs::write(folder.join("victimdir/keep"), "keep\n").expect("victimdir/keep");
        for e in fs::read_dir(&self.log).expect("the log").flatten() {
            let _ = fs::remove_file(e.path());
        }
        let before = snapshot(&folder);
        let child = Command::new(shell)
            .arg("-c")
            .arg(cmd)
            .env_clear()
            .env("HOME", &folder)
            .env("PATH", &self.bin)
            .current_dir(&folder)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&self.out).expect("stdout file"))
            .stderr(fs::File::create(&self.err).expect("stderr file"))
            .process_group(0)
            .spawn();
        let (status, hung) = match child {
            Ok(mut child) => wait(&mut child, Instant::now() + self.timeout),
            // A command the OS refuses (a NUL byte): nothing ran.
            Err(_) => (None, false),
        };
        let after = snapshot(&folder);
        // The folder differs from run to run: the environment names it `<folder>`.
        let given = folder.to_string_lossy().into_owned();
        let real = canonical(&folder);
        let mut execs = self.execs();
        for e in &mut execs {
            for v in &mut e.env {
                *v = v.replace(&real, "<folder>").replace(&given, "<folder>");
            }
            e.env.sort();
        }
        let run = Run {
            shell,
            execs,
            changes: diff(&before, &after),
            stderr: String::from_utf8_lossy(&fs::read(&self.err).unwrap_or_default()).into(),
            status,
            hung,
            folder: canonical(&folder),
            home: given.clone(),
        };
        remove(&folder);
        run
    }

    /// What the stand-ins recorded in the last run.
    fn execs(&self) -> Vec<Exec> {
        let mut names: Vec<PathBuf> = fs::read_dir(&self.log)
            .expect("the log")
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| {
                    x.to_str()
                        .is_some_and(|x| x.bytes().all(|b| b.is_ascii_digit()))
                })
            })
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|p| {
                let read = |ext: &str| {
                    let mut q = p.clone().into_os_string();
                    q.push(ext);
                    String::from_utf8_lossy(&fs::read(q).unwrap_or_default()).into_owned()
                };
                let nul = |s: String| -> Vec<String> {
                    s.split('\0')
                        .filter(|w| !w.is_empty())
                        .map(str::to_owned)
                        .collect()
                };
                let mut argv: Vec<String> = read("").split('\0').map(str::to_owned).collect();
                // printf ends every word with a NUL: the last piece is empty.
                if argv.last().is_some_and(|w| w.is_empty()) {
                    argv.pop();
                }
                let mut env: Vec<String> = nul(read(".env"))
                    .into_iter()
                    .filter(|v| !v.starts_with("_=") && !v.starts_with("SHLVL="))
                    .collect();
                env.sort();
                let fd_text = read(".fd");
                let fd = |n: &str| {
                    fd_text
                        .lines()
                        .find_map(|l| l.strip_prefix(&format!("{n}\t")))
                        .unwrap_or("closed")
                        .to_owned()
                };
                Exec {
                    argv,
                    cwd: read(".cwd").trim_end_matches('\n').to_owned(),
                    env,
                    fds: [fd("0"), fd("1"), fd("2")],
                }
            })
            .collect()
    }

    /// Runs `cmd` under every shell of [`SHELLS`]; what any of them did beyond what
    /// `policy` allows.
    pub fn check(&mut self, policy: &Policy, cmd: &str) -> Vec<Violation> {
        let expected = expected(cmd);
        let mut found = Vec::new();
        for (i, shell) in SHELLS.iter().enumerate() {
            let run = self.run(shell, cmd);
            let name = shell.rsplit('/').next().unwrap_or(shell);
            found.extend(self.judge(policy, &run, i, name, &expected));
        }
        found
    }

    fn judge(
        &self,
        policy: &Policy,
        run: &Run,
        shell: usize,
        name: &'static str,
        expected: &[Expected],
    ) -> Vec<Violation> {
        let mut v = Vec::new();
        let mut say = |kind: &'static str, what: String| {
            v.push(Violation {
                shell: name,
                kind,
                what,
            })
        };
        if run.hung {
            say(
                "hung",
                format!("did not end within {:?} (killed)", self.timeout),
            );
        }
        let out = canonical(&self.out);
        let err = canonical(&self.err);
        // A `~` the policy read as its own home folder is the run's folder to the shell.
        let home = policy_home();
        let localize = |w: &String| match (&home, w.strip_prefix(&run.home)) {
            (Some(h), Some(rest)) if rest.is_empty() || rest.starts_with('/') => {
                format!("{h}{rest}")
            }
            _ => w.clone(),
        };
        let env_of = |x: &Expected| {
            let mut env = self.baseline[shell].clone();
            env.extend(x.env.iter().map(|(n, v)| format!("{n}={v}")));
            env.sort();
            env
        };
        let mut used = vec![false; expected.len()];
        for e in &run.execs {
            let argv = &e.argv;
            // The stand-in records its name for the program, however the shell found it.
            let read: Vec<String> = argv.iter().map(localize).collect();
            let same = |x: &Expected| {
                x.argv.len() == read.len()
                    && x.argv[0].rsplit('/').next() == Some(read[0].as_str())
                    && x.argv[1..] == read[1..]
            };
            let matched = (0..expected.len())
                .find(|&i| !used[i] && same(&expected[i]) && env_of(&expected[i]) == e.env)
                .or_else(|| (0..expected.len()).find(|&i| !used[i] && same(&expected[i])));
            if let Some(i) = matched {
                used[i] = true;
            }
            let x = matched.map(|i| &expected[i]);
            let cat = x.is_some_and(|x| x.cat);
            if !cat {
                let d = decide(policy, json!(argv));
                if d != Decision::Allow {
                    say(
                        "ran",
                        format!(
                            "ran {argv:?}, which the policy does not allow on its own ({})",
                            d.as_str()
                        ),
                    );
                } else if x.is_none() {
                    say(
                        "misread",
                        format!(
                            "ran {argv:?} (read as {read:?}), which is not a part of the command as the policy read it: {:?}",
                            expected.iter().map(|x| &x.argv).collect::<Vec<_>>()
                        ),
                    );
                }
            }
            let want = x.map_or_else(|| self.baseline[shell].clone(), env_of);
            if e.env != want {
                let added: Vec<_> = e.env.iter().filter(|v| !want.contains(v)).collect();
                let gone: Vec<_> = want.iter().filter(|v| !e.env.contains(v)).collect();
                say(
                    "environment",
                    format!(
                        "ran {argv:?} with an environment other than the policy read: added {added:?}, without {gone:?}"
                    ),
                );
            }
            if e.cwd != run.folder {
                say("folder", format!("ran {argv:?} in the folder {:?}", e.cwd));
            }
            // Streams are the run's own, /dev/null or a pipe: a pipe between two allowed
            // commands, and `2>&1`, `>&2`, `2>/dev/null`, are what the rule allows; a file,
            // or a stream closed (the next file opened becomes it), is not.
            let plain = |fd: &String| {
                *fd == out || *fd == err || fd == "/dev/null" || fd.starts_with("pipe:[")
            };
            // A here-document is a pipe, a file removed once open (bash, when large), or
            // /dev/null (bash, when empty).
            let heredoc = |fd: &String| {
                fd.starts_with("pipe:[") || fd.ends_with(" (deleted)") || fd == "/dev/null"
            };
            let streams_ok = if cat {
                heredoc(&e.fds[0]) && e.fds[1].starts_with("pipe:[") && plain(&e.fds[2])
            } else {
                e.fds.iter().all(plain)
            };
            if !streams_ok {
                say(
                    "streams",
                    format!("ran {argv:?} with stdin, stdout, stderr {:?}", e.fds),
                );
            }
        }
        for line in run.stderr.lines() {
            // bash sets the locale of `LC_NUMERIC=x cargo test` in its child before the exec
            // (with a redirection, or for a builtin), and warns when there is none: it
            // opened no file of the command's.
            if line.contains(": warning: setlocale: ") {
                continue;
            }
            if line.ends_with(": not found")
                || line.ends_with(": command not found")
                || line.ends_with(": No such file or directory")
                || line.ends_with(": Permission denied")
            {
                say(
                    "not there",
                    format!("tried to run or open what is not there: {line:?}"),
                );
            }
        }
        if !run.changes.is_empty() {
            say(
                "files",
                format!("changed its folder: {}", run.changes.join("; ")),
            );
        }
        v
    }
}

/// Waits for the shell, then for what it left running in its process group, until
/// `deadline`; then kills the group. Returns the shell's status and whether it was killed.
fn wait(child: &mut Child, deadline: Instant) -> (Option<ExitStatus>, bool) {
    let group = Pid::from_raw(child.id() as i32);
    let mut pause = Duration::from_micros(100);
    let mut nap = || {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    };
    let mut status = None;
    while status.is_none() && Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(s)) => status = Some(s),
            Ok(None) => nap(),
            Err(e) => panic!("waiting for the shell: {e}"),
        }
    }
    // A background job of the shell may still be running: it belongs to the run too.
    while status.is_some() && killpg(group, None).is_ok() && Instant::now() < deadline {
        nap();
    }
    let hung = status.is_none() || killpg(group, None).is_ok();
    if hung {
        let _ = killpg(group, Signal::SIGKILL);
        if status.is_none() {
            // SIGKILL cannot be ignored: this wait ends.
            status = child.wait().ok();
        }
    }
    (status, hung)
}

/// Every file and folder under `root` (itself as `.`): a folder's mode, a file's size,
/// content (hashed), mode and modification time, a link's target.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, path: &Path, out: &mut BTreeMap<String, String>) {
        let rel = path
            .strip_prefix(root)
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
            .map_or(".".to_owned(), |r| r.to_string_lossy().into_owned());
        let Ok(m) = fs::symlink_metadata(path) else {
            out.insert(rel, "gone while listed".into());
            return;
        };
        let ft = m.file_type();
        let mode = format!("mode {:o}", m.mode() & 0o7777);
        // A folder's own size and time change with its entries, which are listed anyway.
        let mut desc = if ft.is_symlink() {
            format!("a link to {:?}", fs::read_link(path).unwrap_or_default())
        } else if ft.is_file() {
            let content = fs::read(path).unwrap_or_default();
            format!(
                "a file of {} bytes (hash {:016x}), {mode}, modified {}.{:09}",
                content.len(),
                fnv(&content),
                m.mtime(),
                m.mtime_nsec()
            )
        } else if ft.is_dir() {
            format!("a folder, {mode}")
        } else {
            format!("{ft:?}, {mode}")
        };
        if ft.is_dir() {
            match fs::read_dir(path) {
                Ok(entries) => {
                    for e in entries.flatten() {
                        walk(root, &e.path(), out);
                    }
                }
                Err(e) => desc = format!("{desc}, unreadable: {e}"),
            }
        }
        out.insert(rel, desc);
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut changes = Vec::new();
    for (path, was) in before {
        match after.get(path) {
            None => changes.push(format!("removed {path:?}")),
            Some(now) if now != was => changes.push(format!("changed {path:?}: {was}, now {now}")),
            Some(_) => {}
        }
    }
    for (path, now) in after {
        if !before.contains_key(path) {
            changes.push(format!("created {path:?} ({now})"));
        }
    }
    changes
}

fn canonical(p: &Path) -> String {
    p.canonicalize()
        .unwrap_or_else(|_| p.to_owned())
        .to_string_lossy()
        .into_owned()
}

/// Removes `dir`, making what a run left unreadable or unwritable removable first.
fn remove(dir: &Path) {
    if fs::remove_dir_all(dir).is_ok() || !dir.exists() {
        return;
    }
    fn open_up(p: &Path) {
        if let Ok(m) = fs::symlink_metadata(p) {
            if m.is_dir() {
                let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
                for e in fs::read_dir(p).into_iter().flatten().flatten() {
                    open_up(&e.path());
                }
            }
        }
    }
    open_up(dir);
    let _ = fs::remove_dir_all(dir);
}

/// Writes an executable script (mode 0755) from a child process, so that the file is never
/// open for writing in this process: another test's child forked meanwhile would hold that
/// descriptor until its exec, and running the script then fails with "Text file busy".
pub fn write_executable(path: &std::path::Path, content: &str) {
    use std::io::Write;
    let mut sh = std::process::Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("sh writes the script");
    sh.stdin
        .take()
        .expect("piped")
        .write_all(content.as_bytes())
        .expect("the script is written");
    assert!(
        sh.wait().expect("sh ends").success(),
        "{} written",
        path.display()
    );
}
