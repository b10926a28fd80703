//! The offline real-agent rig: claude-agent-acp 0.100 (from npm) behind the real bridge,
//! its model a [`FakeAnthropic`] on loopback, its `HOME` and working directory thrown away
//! afterwards. It starts the three and records the client's side of the wire; what to ask
//! and what to assert is each test's. `docs/REAL-AGENTS.md` says how to run it.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tokio::process::Command;

use super::fake_anthropic::{FakeAnthropic, Reply};
use super::{Bridge, Dir, BRIDGE};

pub const PACKAGE: &str = "@agentclientprotocol/claude-agent-acp";
pub const VERSION: &str = "0.100.0";

/// Client capabilities of an IDE that renders forms and offers no file system or terminal.
pub fn form_client() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false,
        "elicitation": {"form": {}}})
}

/// A running rig. Dropping it kills whatever is left of the agent's process group.
pub struct Claude {
    pub model: FakeAnthropic,
    /// The client's side: every line sent and received is recorded.
    pub bridge: Bridge,
    /// The session's working directory, `<temp>/project`.
    pub cwd: PathBuf,
    root: PathBuf,
    /// The agent's pid, which is also its process group's id, until it has been reaped.
    agent: Option<u32>,
}

impl Drop for Claude {
    fn drop(&mut self) {
        if let Some(pgid) = self.agent.take() {
            use nix::sys::signal::{killpg, Signal};
            let _ = killpg(nix::unistd::Pid::from_raw(pgid as i32), Signal::SIGKILL);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Claude {
    /// Starts the fake model playing `script`, then the bridge with `bridge_args` around
    /// claude-agent-acp. `None`, after a loud message on stderr, when the package cannot be
    /// installed (npm or its registry out of reach): the caller then skips its test.
    pub async fn start(name: &str, script: Vec<Reply>, bridge_args: &[&str]) -> Option<Self> {
        // One attempt for all the tests of a binary (the install itself takes the tests'
        // install lock, so other binaries wait for it too).
        static INSTALL: tokio::sync::OnceCell<Result<PathBuf, String>> =
            tokio::sync::OnceCell::const_new();
        let install = INSTALL.get_or_init(|| super::try_npm_package(PACKAGE, VERSION));
        let package = match install.await.clone() {
            Ok(dir) => dir,
            Err(why) => {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!(
                        "\n!!!!!!!! SKIPPED {name}: cannot install {PACKAGE}@{VERSION}: {why}\n"
                    );
                }
                return None;
            }
        };
        let entry = package.join("dist/index.js");
        assert!(entry.is_file(), "{PACKAGE}@{VERSION} has no {entry:?}");
        let model = FakeAnthropic::start(script).await;
        let root = super::temp_dir(name);
        let (home, cwd) = (root.join("home"), root.join("project"));
        std::fs::create_dir_all(&home).expect("create HOME");
        std::fs::create_dir_all(&cwd).expect("create the project directory");

        let mut cmd = Command::new(BRIDGE);
        cmd.args(bridge_args).arg("--").arg("node").arg(&entry);
        cmd.current_dir(&root).env("RUST_LOG", "debug");
        // Nothing of the host's own Claude setup may leak in.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if key.starts_with("ANTHROPIC_") || key.starts_with("CLAUDE") {
                cmd.env_remove(&*key);
            }
        }
        cmd.env("HOME", &home)
            .env("IS_SANDBOX", "1") // the CLI refuses to run as root otherwise
            .env("ANTHROPIC_API_KEY", "dummy")
            .env("ANTHROPIC_BASE_URL", model.base_url())
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1");
        let mut bridge = Bridge::from_command(cmd);
        bridge.record();
        let agent = Some(super::wait_agent(bridge.pid()).await);
        Some(Self {
            model,
            bridge,
            cwd,
            root,
            agent,
        })
    }

    /// `initialize` with `client_caps`, then `session/new` in [`Claude::cwd`]; returns the
    /// session id.
    pub async fn open(&mut self, client_caps: Value) -> String {
        self.bridge.initialize(client_caps).await;
        let params = json!({"cwd": self.cwd, "mcpServers": []});
        let r = self.bridge.call(1, "session/new", params).await;
        let session = r["result"]["sessionId"].as_str();
        let session = session.unwrap_or_else(|| panic!("session/new failed: {r}"));
        session.to_owned()
    }

    /// Closes the client's side and waits for the bridge, which reaps the agent; returns the
    /// bridge's exit code.
    pub async fn finish(&mut self) -> i32 {
        self.bridge.close_stdin();
        self.bridge.drain().await; // (recorded)
        let code = self.bridge.wait().await;
        self.agent = None;
        code
    }

    /// The recorded lines in the fixture format (`{"client": msg}`, `{"bridge": msg}`), with
    /// what varies between runs replaced: the session id by `<session>`, the working
    /// directory by `<cwd>`, the bridge's version by `<any>`, times by `<timestamp>`.
    pub fn transcript(&self, session: &str) -> Vec<Value> {
        let cwd = self.cwd.to_string_lossy();
        let version = format!("\"version\":\"{}\"", env!("CARGO_PKG_VERSION"));
        let lines = self.bridge.transcript().iter().map(|(dir, line)| {
            let text = line
                .replace(session, "<session>")
                .replace(&*cwd, "<cwd>")
                .replace(
                    &format!("\"questionBridge\":{{{version}}}"),
                    r#""questionBridge":{"version":"<any>"}"#,
                );
            let mut msg: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("not JSON after normalizing ({e}): {text}"));
            hide_timestamps(&mut msg);
            match dir {
                Dir::Client => json!({ "client": msg }),
                Dir::Bridge => json!({ "bridge": msg }),
            }
        });
        lines.collect()
    }
}

/// Replaces every RFC 3339 time inside `v` by `<timestamp>`.
fn hide_timestamps(v: &mut Value) {
    match v {
        Value::String(s) if s.contains('T') && humantime::parse_rfc3339(s).is_ok() => {
            *s = "<timestamp>".into();
        }
        Value::Object(m) => m.values_mut().for_each(hide_timestamps),
        Value::Array(a) => a.iter_mut().for_each(hide_timestamps),
        _ => {}
    }
}

/// `fixtures/real-agents/<name>.jsonl`: recorded real traffic, kept apart from the fixtures
/// `tests/it/fixtures.rs` replays against the mock agent.
pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/real-agents")
        .join(format!("{name}.jsonl"))
}

/// With `ACP_QB_RECORD` set, writes `transcript` (after a `comment` line) to the fixture
/// `name`. Returns the fixture's steps as stored (after writing, when recording).
pub fn record_or_load(name: &str, comment: &str, transcript: &[Value]) -> Vec<Value> {
    let path = fixture_path(name);
    if std::env::var_os("ACP_QB_RECORD").is_some() {
        let mut text = format!("{}\n", json!({ "comment": comment }));
        text.extend(transcript.iter().map(|v| format!("{v}\n")));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create fixtures dir");
        std::fs::write(&path, text).expect("write fixture");
    }
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} ({e}): record it with ACP_QB_RECORD=1", path.display()));
    let steps = text.lines().filter(|l| !l.trim().is_empty());
    let parse = |l: &str| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}: {l}"));
    steps.map(parse).collect()
}
