//! acpx 0.19.1 (npm), a real terminal ACP client, in a pseudo-terminal in front of the real
//! bridge and mock agent, driven as a person would: it prints
//! `[permission] Allow <title> [<kind>]? (y/N)` and we type `y` or `n` (docs/CLIENTS.md).
//!
//! - A tool approval: `y` approves, the agent gets `allow`, acpx exits 0.
//! - A question's **second** option, chosen in acpx: its `y` can only send the first allow
//!   option, so the bridge asks yes/no per option: `n` to SQLite, `y` to Postgres.
//! - A question answered from the `questions` CLI while acpx shows it: the agent gets the
//!   answer and acpx exits 0 (it exits 5 when sent `$/cancel_request`, which the bridge no
//!   longer sends it).
//!
//! acpx prompts only when its stdin and stderr are terminals, so it runs on a pty's slave
//! side (no controlling terminal needed). It is installed into `.cache/npm` on first use,
//! under the tests' install lock.

use crate::common;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::common::{BRIDGE, MOCK};
use serde_json::Value;

const ACPX: &str = "acpx";
const ACPX_VERSION: &str = "0.19.1";
/// How long any wait on acpx may take (it starts node, the bridge and the agent).
const WAIT: Duration = Duration::from_secs(60);
const PROMPT_TAIL: &str = "? (y/N) ";

/// acpx with stdin, stdout and stderr on the slave side of a new pty.
struct Acpx {
    child: Child,
    master: File,
    output: Receiver<Vec<u8>>,
    raw: Vec<u8>,
    /// Where the next [`Acpx::expect`] starts looking, in the text without escapes.
    mark: usize,
    dir: PathBuf,
}

impl Acpx {
    /// `acpx --agent '<bridge --control ... -- mock>' exec <word>`, the bridge's stderr in
    /// `<dir>/bridge.stderr` (acpx swallows its agent's stderr).
    fn start(name: &str, cli: &Path, word: &str) -> Acpx {
        use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
        let dir = common::temp_dir(name);
        let (home, cwd) = (dir.join("home"), dir.join("cwd"));
        std::fs::create_dir_all(&home).expect("HOME");
        std::fs::create_dir_all(&cwd).expect("cwd");
        // Close-on-exec: the tests share one process, and a child another test starts
        // meanwhile must not hold the terminal's master.
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        let master = openpt(flags).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let slave_path = ptsname(&master, Vec::new()).expect("ptsname");
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(slave_path.to_str().expect("a path"))
            .expect("open the pty's slave");
        // Wide enough that a prompt is one line.
        let size = rustix::termios::Winsize {
            ws_row: 50,
            ws_col: 240,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&slave, size).expect("window size");
        let agent = format!(
            "sh -c 'exec \"$0\" --control 127.0.0.1:0 --no-register --control-token-file \"$3\" -- \"$1\" 2>>\"$2\"' \"{BRIDGE}\" \"{MOCK}\" \"{}\" \"{}\"",
            dir.join("bridge.stderr").display(),
            home.join(".local/state/acp-question-bridge/token").display()
        );
        let mut cmd = Command::new("node");
        cmd.arg(cli)
            .arg("--agent")
            .arg(agent)
            .arg("exec")
            .arg(word)
            .current_dir(&cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            // No cursor escapes from readline (colours stay; they are stripped below).
            .env("TERM", "dumb")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::from(slave.try_clone().expect("slave")))
            .stdout(Stdio::from(slave.try_clone().expect("slave")))
            .stderr(Stdio::from(slave));
        let child = cmd.spawn().expect("start acpx (needs node)");
        // The parent's copies of the slave are gone with `cmd`: the master reads EIO once
        // acpx and the bridge have exited.
        drop(cmd);
        let master = File::from(master);
        let mut reader = master.try_clone().expect("master");
        let (tx, output) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Acpx {
            child,
            master,
            output,
            raw: Vec::new(),
            mark: 0,
            dir,
        }
    }

    /// What acpx printed, without colours and carriage returns.
    fn text(&self) -> String {
        strip_escapes(&String::from_utf8_lossy(&self.raw))
    }

    /// Waits until `needle` is printed after the last match; the line it ends.
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let text = self.text();
            if let Some(pos) = text[self.mark..].find(needle) {
                let at = self.mark + pos;
                self.mark = at + needle.len();
                let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                return text[line_start..self.mark].to_owned();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "acpx never printed {needle:?}:\n{text}");
            match self
                .output
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(chunk) => self.raw.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("acpx exited before printing {needle:?}:\n{text}")
                }
            }
        }
    }

    /// Types `keys`.
    fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).expect("type");
    }

    /// acpx's exit code (it is killed after [`WAIT`]).
    fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                while let Ok(chunk) = self.output.recv_timeout(Duration::from_millis(300)) {
                    self.raw.extend_from_slice(&chunk);
                }
                return status.code();
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("acpx did not exit:\n{}", self.text());
            }
            if let Ok(chunk) = self.output.recv_timeout(Duration::from_millis(100)) {
                self.raw.extend_from_slice(&chunk);
            }
        }
    }

    /// The bridge's control URL, from its stderr's whole lines, and its token, from its
    /// `--control-token-file` (a stderr that is not a terminal gets no token).
    fn control(&self) -> (String, String) {
        let deadline = Instant::now() + WAIT;
        loop {
            let err = std::fs::read_to_string(self.dir.join("bridge.stderr")).unwrap_or_default();
            let url = common::whole_lines(&err).find_map(|l| {
                l.split_once("control server on ")
                    .map(|(_, v)| v.trim().to_owned())
            });
            let token = std::fs::read_to_string(
                self.dir.join("home/.local/state/acp-question-bridge/token"),
            )
            .unwrap_or_default();
            if let Some(url) = url.filter(|_| !token.trim().is_empty()) {
                return (url, token.trim().to_owned());
            }
            assert!(
                Instant::now() < deadline,
                "no control URL on stderr:\n{err}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Acpx {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Text without ANSI escape sequences and carriage returns.
fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' if chars.peek() == Some(&'[') => {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            '\x1b' => {
                chars.next();
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// acpx's command-line entry point, installed on first use.
fn acpx_cli() -> PathBuf {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = rt
        .block_on(common::install::npm_package(ACPX, ACPX_VERSION))
        .unwrap_or_else(|why| panic!("{why}"));
    let cli = dir.join("dist/cli.js");
    assert!(cli.is_file(), "{ACPX}@{ACPX_VERSION} has no {cli:?}");
    cli
}

/// The questions CLI (`acp-question-bridge questions ...`) against acpx's bridge.
fn questions_cli(args: &[&str]) -> std::process::Output {
    let mut child = Command::new(BRIDGE)
        .arg("questions")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the questions CLI");
    let deadline = Instant::now() + WAIT;
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "the questions CLI hung");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn a_tool_approval_is_approved_in_acpx() {
    let mut a = Acpx::start("acpx-approve", &acpx_cli(), "approve");
    assert_eq!(
        a.expect(PROMPT_TAIL),
        "[permission] Allow Bash [execute]? (y/N) "
    );
    a.type_keys("y\r");
    a.expect(r#"approve: {"outcome":{"outcome":"selected","optionId":"allow"}}"#);
    assert_eq!(a.exit_code(), Some(0), "{}", a.text());
}

#[test]
fn the_second_option_of_a_question_is_chosen_in_acpx() {
    let mut a = Acpx::start("acpx-second", &acpx_cli(), "ask-claude");
    assert_eq!(
        a.expect(PROMPT_TAIL),
        "[permission] Allow Which database? → SQLite (option 1 of 2) [other]? (y/N) "
    );
    a.type_keys("n\r");
    assert_eq!(
        a.expect(PROMPT_TAIL),
        "[permission] Allow Which database? → Postgres (option 2 of 2) [other]? (y/N) "
    );
    a.type_keys("y\r");
    a.expect(r#"ask-claude: {"action":"accept","content":{"question_0":"Postgres"}}"#);
    assert_eq!(a.exit_code(), Some(0), "{}", a.text());
}

#[test]
fn a_question_shown_in_acpx_is_answered_from_the_cli() {
    let mut a = Acpx::start("acpx-cli", &acpx_cli(), "ask-claude");
    a.expect(PROMPT_TAIL);
    let (url, token) = a.control();
    let list = questions_cli(&["list", "--json", "--control", &url, "--token", &token]);
    let listed: Value = serde_json::from_slice(&list.stdout).expect("JSON");
    let (sid, qid) = (
        listed[0]["sessionId"].as_str().expect("sessionId"),
        listed[0]["questionId"].as_str().expect("questionId"),
    );
    let answer = questions_cli(&[
        "answer",
        "--control",
        &url,
        "--token",
        &token,
        sid,
        qid,
        "Postgres",
    ]);
    assert!(answer.status.success(), "{answer:?}");
    a.expect(r#"ask-claude: {"action":"accept","content":{"question_0":"Postgres"}}"#);
    assert_eq!(a.exit_code(), Some(0), "{}", a.text());
    assert!(!a.text().contains("$/cancel_request"), "{}", a.text());
}

/// `--linger`: acpx keeps its agent in a queue owner that ends after `--ttl` idle seconds;
/// its next `prompt` in the saved session starts the bridge again, which finds the agent
/// the first left and loads the session there: the mock agent's pid is the same.
#[test]
fn with_linger_the_next_prompt_of_a_saved_session_reaches_the_same_agent_process() {
    use std::os::unix::fs::PermissionsExt;
    let cli = acpx_cli();
    let dir = common::temp_dir("acpx-linger");
    let (home, cwd, roster) = (dir.join("home"), dir.join("cwd"), dir.join("r"));
    for d in [&home, &cwd, &roster] {
        std::fs::create_dir_all(d).expect("folder");
    }
    std::fs::set_permissions(&roster, std::fs::Permissions::from_mode(0o700)).expect("0700");
    // The log file names this test's folder, so its fronts are told from others'.
    let log = dir.join("bridge.log");
    let agent = format!(
        "{BRIDGE} --linger 5m --no-policy --log-file {} -- {MOCK}",
        log.display()
    );
    let acpx = |args: &[&str]| {
        let mut cmd = Command::new("node");
        cmd.arg(&cli)
            .args(["--ttl", "1", "--agent", &agent])
            .args(args)
            .current_dir(&cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("ACP_QUESTION_BRIDGE_REGISTRY", &roster)
            .env("TERM", "dumb");
        let out = common::output_within(&mut cmd);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "acpx {args:?}: {text}");
        text
    };
    let pid_in = |text: &str| -> u32 {
        text.lines()
            .find_map(|l| crate::common::mock_pid(l.trim()))
            .unwrap_or_else(|| panic!("no pid in {text}"))
    };
    // The fronts of this test (the holder's command line has --hold-socket).
    let fronts = || -> usize {
        let me = log.display().to_string();
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(&me) && c.contains("--linger") && !c.contains("--hold-socket"))
            .count()
    };
    acpx(&["sessions", "new"]);
    let first = pid_in(&acpx(&["prompt", "pid"]));
    // The queue owner ends after its TTL, and with it the front: only the holder is left.
    let deadline = Instant::now() + WAIT;
    while fronts() > 0 {
        assert!(
            Instant::now() < deadline,
            "acpx's queue owner never let its agent go"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let second = pid_in(&acpx(&["prompt", "pid"]));
    assert_eq!(first, second, "one agent process for both prompts");
    // The holder ends with a signal, and takes the agent with it.
    for entry in std::fs::read_dir(roster.join("held"))
        .expect("held")
        .flatten()
    {
        let Ok(info) =
            serde_json::from_slice::<Value>(&std::fs::read(entry.path()).unwrap_or_default())
        else {
            continue;
        };
        if let Some(pid) = info["pid"].as_u64() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
    let deadline = Instant::now() + WAIT;
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(first as i32), None).is_ok()
        && !std::fs::read_to_string(format!("/proc/{first}/stat")).is_ok_and(|s| s.contains(") Z"))
    {
        assert!(
            Instant::now() < deadline,
            "the agent outlived its holder's end"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
