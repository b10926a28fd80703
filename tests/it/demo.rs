//! `acp-question-bridge demo`: the real binary playing an IDE around the bridge and the
//! built-in mock agent. Every run is bounded by a timeout.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_acp-question-bridge");
/// How long one demo run may take before the test fails.
const WAIT: Duration = Duration::from_secs(60);

/// What the demo gets on stdin.
enum Input<'a> {
    /// /dev/null (immediate EOF).
    Null,
    /// These bytes, then EOF.
    Piped(&'a str),
    /// A pipe kept open (never written) until the demo exits.
    Open,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn read_in_thread(mut r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}

/// A registry folder (0700) for the demo's bridges, not the user's.
fn registry() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("acp-qb-demo-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("registry");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("0700");
    dir
}

fn demo(args: &[&str], input: Input<'_>) -> Run {
    let mut child = Command::new(BIN)
        .arg("demo")
        .args(args)
        .env_remove("RUST_LOG")
        // The demo's bridge lists itself for the inbox: in a registry of the tests'.
        .env("ACP_QUESTION_BRIDGE_REGISTRY", registry())
        .stdin(match input {
            Input::Null => Stdio::null(),
            _ => Stdio::piped(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn demo");
    // Kept open (Input::Open) until the demo has exited.
    let mut stdin = child.stdin.take();
    if let Input::Piped(text) = input {
        let mut w = stdin.take().expect("stdin");
        w.write_all(text.as_bytes()).expect("write stdin");
    }
    let out = read_in_thread(child.stdout.take().expect("stdout"));
    let err = read_in_thread(child.stderr.take().expect("stderr"));
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("demo {args:?} did not exit within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_secs(5);
    let stdout = out.recv_timeout(left).expect("stdout not closed");
    let stderr = err.recv_timeout(left).expect("stderr not closed");
    Run {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

#[track_caller]
fn assert_ok(run: &Run, needle: &str) {
    assert_eq!(
        run.code, 0,
        "exit status; stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stdout.contains(needle),
        "stdout lacks {needle:?}:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout.contains("<- stopReason: end_turn"),
        "{}",
        run.stdout
    );
}

#[test]
fn answer_by_value() {
    let run = demo(&["--answer", "option-a"], Input::Null);
    assert_ok(&run, r#"<- agent: answered: [["option-a"]]"#);
    assert!(
        run.stdout.contains("questionBridge 0.1.0"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("1) Option A [option-a]"),
        "{}",
        run.stdout
    );
    // The bridge runs with --log-level warn: no info logs on the terminal.
    assert!(
        !run.stderr.contains(" INFO "),
        "bridge logs leaked: {}",
        run.stderr
    );
}

#[test]
fn answer_by_number() {
    let run = demo(&["--answer", "2"], Input::Null);
    assert_ok(&run, r#"<- agent: answered: [["option-b"]]"#);
}

#[test]
fn answer_by_label() {
    let run = demo(&["--answer", "Option B"], Input::Null);
    assert_ok(&run, r#"<- agent: answered: [["option-b"]]"#);
}

#[test]
fn reject() {
    let run = demo(&["--reject"], Input::Null);
    assert_ok(&run, "<- agent: rejected: declined");
}

#[test]
fn multi_question_form() {
    let run = demo(
        &[
            "--script",
            "questions",
            "--answer",
            "Postgres",
            "--answer",
            "auth,search",
            "--answer",
            "some notes",
        ],
        Input::Null,
    );
    assert_ok(
        &run,
        r#"<- agent: answered: [["Postgres"],["auth","search"],["some notes"]]"#,
    );
    assert!(run.stdout.contains("(multi-select)"), "{}", run.stdout);
    assert!(run.stdout.contains("(free text)"), "{}", run.stdout);
}

#[test]
fn answers_piped_on_stdin() {
    let run = demo(&[], Input::Piped("option-b\n"));
    assert_ok(&run, r#"<- agent: answered: [["option-b"]]"#);
    let run = demo(&["--script", "questions"], Input::Piped("2\n1, 3\nhello\n"));
    assert_ok(
        &run,
        r#"<- agent: answered: [["SQLite"],["auth","search"],["hello"]]"#,
    );
}

#[test]
fn invalid_piped_line_is_reprompted() {
    let run = demo(&[], Input::Piped("option-z\n1\n"));
    assert_ok(&run, r#"<- agent: answered: [["option-a"]]"#);
    assert!(run.stdout.contains("try again"), "{}", run.stdout);
}

#[test]
fn eof_and_empty_line_reject() {
    let run = demo(&[], Input::Null);
    assert_ok(&run, "<- agent: rejected: declined");
    let run = demo(&[], Input::Piped("\n"));
    assert_ok(&run, "<- agent: rejected: declined");
}

#[test]
fn invalid_answer_fails() {
    let run = demo(&["--answer", "option-z"], Input::Null);
    assert_eq!(
        run.code, 2,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    // The error is the demo's last line (the bridge may log a warning before it).
    let err = run.stderr.lines().last().unwrap_or_default();
    assert!(
        err.starts_with("acp-question-bridge demo: --answer"),
        "{err}"
    );
    assert!(err.contains("\"option-z\" is not an option"), "{err}");
    assert!(!run.stdout.contains("<- agent: answered"), "{}", run.stdout);
}

/// A permission prompt shows its options and waits for the user's choice, like a question.
#[test]
fn permission_waits_for_the_users_choice() {
    let run = demo(&["--script", "permission", "--answer", "1"], Input::Null);
    assert_ok(&run, "<- agent: permission: allow");
    let run = demo(&["--script", "approve", "--answer", "3"], Input::Null);
    assert_ok(&run, "command: rm -rf build");
    assert!(run.stdout.contains("1) Yes [allow]"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("approve: {\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"reject\"}}"),
        "{}",
        run.stdout
    );
    // Typed on stdin, as a person would.
    let run = demo(&["--script", "approve"], Input::Piped("2\n"));
    assert_ok(&run, "\"optionId\":\"allow_always\"");
    // No choice (end of input) is a no.
    let run = demo(&["--script", "approve"], Input::Null);
    assert_ok(&run, "\"optionId\":\"reject\"");
}

#[test]
fn question_timeout_withdraws_the_question() {
    let run = demo(&["--question-timeout", "300ms"], Input::Open);
    assert_ok(&run, "<- agent: rejected: timeout");
    assert!(run.stdout.contains("expires at "), "{}", run.stdout);
    assert!(
        run.stdout.contains("the question was withdrawn"),
        "{}",
        run.stdout
    );
}

#[test]
fn verbose_shows_raw_lines() {
    let run = demo(&["--verbose", "--answer", "1"], Input::Null);
    assert_ok(&run, r#"<- agent: answered: [["option-a"]]"#);
    assert!(
        run.stdout
            .contains(r#"-> {"jsonrpc":"2.0","id":0,"method":"initialize""#),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(r#"<- {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#),
        "{}",
        run.stdout
    );
}

#[test]
fn r_is_text_and_colon_r_rejects() {
    // `r` is an ordinary answer (here the free-text item's); `:r` rejects; `\` quotes.
    let run = demo(&["--script", "questions"], Input::Piped("2\n1\nr\n"));
    assert_ok(&run, r#"<- agent: answered: [["SQLite"],["auth"],["r"]]"#);
    let run = demo(&["--script", "questions"], Input::Piped("2\n1\n\\:r\n"));
    assert_ok(&run, r#"<- agent: answered: [["SQLite"],["auth"],[":r"]]"#);
    let run = demo(&[], Input::Piped(":r\n"));
    assert_ok(&run, "<- agent: rejected: declined");
}

/// The `--script` examples of `demo --help`, each as written there.
fn script_examples() -> Vec<String> {
    let out = Command::new(BIN)
        .args(["demo", "--help"])
        .output()
        .expect("demo --help");
    // Lines wrapped to the terminal's width read as one.
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    help.split('`')
        .filter(|s| s.starts_with("--script "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn help_examples_work_when_pasted_into_a_shell() {
    let examples = script_examples();
    assert!(
        examples.iter().any(|e| e.contains("question-timeout")),
        "{examples:?}"
    );
    for example in examples {
        // As a user would paste it: through a shell, with --reject so any script ends.
        let line = format!("exec '{BIN}' demo {example} --reject");
        let mut child = Command::new("sh")
            .args(["-c", &line])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let out = read_in_thread(child.stdout.take().expect("stdout"));
        let err = read_in_thread(child.stderr.take().expect("stderr"));
        let stdout = out.recv_timeout(WAIT).expect("stdout not closed");
        let stderr = err.recv_timeout(WAIT).expect("stderr not closed");
        let code = child.wait().expect("wait").code();
        assert_eq!(
            code,
            Some(0),
            "{line}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        assert!(
            stdout.contains("<- stopReason: end_turn"),
            "{line}\n{stdout}"
        );
    }
}

/// Ctrl-C at the demo's prompt: to the demo's whole process group as a terminal sends it
/// (`group`), or to the demo alone. The demo exits 130 with one line on stderr, and only
/// after its bridge has exited.
fn interrupt_at_the_prompt(group: bool) {
    use nix::sys::signal::{kill, killpg, Signal};
    use nix::unistd::Pid;
    use std::os::unix::process::CommandExt as _;

    let mut child = Command::new(BIN)
        .arg("demo")
        .env_remove("RUST_LOG")
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn demo");
    let pid = Pid::from_raw(child.id() as i32);
    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take().expect("stdout");
    let err = read_in_thread(child.stderr.take().expect("stderr"));
    // Stream stdout until the question is shown.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stdout.read(&mut buf) {
            if tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + WAIT;
    let mut shown = Vec::new();
    while !String::from_utf8_lossy(&shown).contains("2) Option B") {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(chunk) => shown.extend(chunk),
            Err(e) => {
                let _ = child.kill();
                panic!(
                    "no question shown ({e}): {}",
                    String::from_utf8_lossy(&shown)
                );
            }
        }
    }
    if group {
        killpg(pid, Signal::SIGINT).expect("SIGINT to the group");
    } else {
        kill(pid, Signal::SIGINT).expect("SIGINT to the demo");
    }
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = killpg(pid, Signal::SIGKILL);
            let _ = child.wait();
            panic!("demo did not exit within {WAIT:?} after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The demo has exited and been reaped: no process of its group (the bridge) is left
    // to log anything.
    let alive = killpg(pid, None);
    let _ = killpg(pid, Signal::SIGKILL);
    drop(stdin);
    let stderr = err.recv_timeout(WAIT).expect("stderr not closed");
    assert_eq!(status.code(), Some(130), "stderr:\n{stderr}");
    assert!(
        alive.is_err(),
        "the bridge outlived the demo; stderr:\n{stderr}"
    );
    assert_eq!(stderr, "acp-question-bridge demo: interrupted\n");
}

#[test]
fn ctrl_c_waits_for_the_bridge() {
    interrupt_at_the_prompt(true);
}

#[test]
fn sigint_to_the_demo_alone_ends_the_bridge() {
    interrupt_at_the_prompt(false);
}

/// `demo --script <word>` shows how each agent's question looks and what the agent gets
/// back in its own shape.
#[test]
fn the_demo_shows_each_agents_shape() {
    for (word, answer, shown, got) in [
        (
            "ask-claude",
            "Postgres",
            "Database: Which database?",
            r#"{"action":"accept","content":{"question_0":"Postgres"}}"#,
        ),
        (
            "ask-cursor",
            "SQLite",
            "Which database?",
            r#""selectedOptionIds":["sqlite"]"#,
        ),
        (
            "ask-opencode",
            "SQLite",
            "Database: Which database?",
            r#"{"answers":[["SQLite"]]}"#,
        ),
    ] {
        let run = demo(&["--script", word, "--answer", answer], Input::Null);
        assert_ok(&run, shown);
        assert!(
            run.stdout.contains(&format!("<- agent: {word}: ")),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains(got), "{word}: {}", run.stdout);
    }
}
