//! The offline real-agent rig: a real agent from npm behind the real bridge, its model a
//! [`FakeModel`] on loopback speaking the agent's API, its `HOME` and project folder thrown
//! away afterwards. It starts the three and records the client's side of the wire; what to
//! ask and what to assert is each test's. `docs/REAL-AGENTS.md` says how to run it.
//!
//! - [`Agent::Claude`]: claude-agent-acp 0.100, its model the Anthropic Messages API.
//! - [`Agent::Codex`]: codex-acp 2.6 (npm `@agentclientprotocol/codex-acp`, which runs the
//!   native Codex CLI 0.166 of `@openai/codex` as its app server), its model the OpenAI
//!   Responses API, its `CODEX_HOME` thrown away too. Nothing leaves the machine: Codex's
//!   model provider is the fake, the curated plugins' sync (which reaches github.com and
//!   chatgpt.com) is off, and every HTTP(S) proxy variable points at the fake, which
//!   refuses and logs any `CONNECT` that is still tried.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tokio::process::Command;

use super::fake_model::{Dialect, FakeModel, Reply};
use super::{Bridge, Dir, BRIDGE};

pub const CLAUDE_PACKAGE: &str = "@agentclientprotocol/claude-agent-acp";
pub const CLAUDE_VERSION: &str = "0.100.0";
pub const CODEX_ACP_PACKAGE: &str = "@agentclientprotocol/codex-acp";
pub const CODEX_ACP_VERSION: &str = "2.6.0";
/// The Codex CLI, installed first so that codex-acp's `^0.166.0` resolves to exactly it.
pub const CODEX: &str = "@openai/codex";
pub const CODEX_VERSION: &str = "0.166.0";
/// A model of Codex's own catalog (an unknown one makes Codex warn in the chat).
pub const CODEX_MODEL: &str = "gpt-5.5";

/// Client capabilities of an IDE that renders forms and offers no file system or terminal.
pub fn form_client() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false,
        "elicitation": {"form": {}}})
}

/// Client capabilities of an IDE with no file system, terminal or forms.
pub fn plain_client() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false})
}

/// The agent a rig runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
}

impl Agent {
    /// The API its model speaks.
    pub fn dialect(self) -> Dialect {
        match self {
            Agent::Claude => Dialect::Anthropic,
            Agent::Codex => Dialect::OpenAi,
        }
    }

    /// What is installed, for messages.
    fn packages(self) -> String {
        match self {
            Agent::Claude => format!("{CLAUDE_PACKAGE}@{CLAUDE_VERSION}"),
            Agent::Codex => {
                format!("{CODEX_ACP_PACKAGE}@{CODEX_ACP_VERSION} with {CODEX}@{CODEX_VERSION}")
            }
        }
    }

    /// Installs the agent's packages (Codex first, for codex-acp); returns the folder of the
    /// ACP agent's package. One attempt per agent for all the tests (each install takes the
    /// tests' install lock, so other test binaries wait for it too).
    async fn install(self) -> Result<PathBuf, String> {
        static CLAUDE: tokio::sync::OnceCell<Result<PathBuf, String>> =
            tokio::sync::OnceCell::const_new();
        static CODEX_ACP: tokio::sync::OnceCell<Result<PathBuf, String>> =
            tokio::sync::OnceCell::const_new();
        match self {
            Agent::Claude => {
                let install = || super::try_npm_package(CLAUDE_PACKAGE, CLAUDE_VERSION);
                CLAUDE.get_or_init(install).await.clone()
            }
            Agent::Codex => {
                let install = || async {
                    super::try_npm_package(CODEX, CODEX_VERSION).await?;
                    super::try_npm_package(CODEX_ACP_PACKAGE, CODEX_ACP_VERSION).await
                };
                CODEX_ACP.get_or_init(install).await.clone()
            }
        }
    }

    /// The prefixes of the host's own variables for this agent, which must not leak in.
    fn host_variables(self) -> [&'static str; 2] {
        match self {
            Agent::Claude => ["ANTHROPIC_", "CLAUDE"],
            Agent::Codex => ["OPENAI_", "CODEX_"],
        }
    }

    /// Makes the agent's own folders under `root` (`home` and the project `cwd` exist) and
    /// settings, and sets its environment on `cmd`: its model is `model`.
    fn prepare(self, model: &FakeModel, root: &Path, cwd: &Path, cmd: &mut Command) {
        match self {
            Agent::Claude => {
                cmd.env("IS_SANDBOX", "1") // the CLI refuses to run as root otherwise
                    .env("ANTHROPIC_API_KEY", "dummy")
                    .env("ANTHROPIC_BASE_URL", model.base_url())
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("DISABLE_TELEMETRY", "1");
            }
            Agent::Codex => {
                let codex_home = root.join("codex");
                for dir in [&codex_home, &cwd.join("build")] {
                    std::fs::create_dir_all(dir).expect("create the rig's folders");
                }
                std::fs::write(codex_home.join("config.toml"), codex_config(model))
                    .expect("config.toml");
                let git = std::process::Command::new("git")
                    .args(["-c", "init.defaultBranch=main", "init", "--quiet"])
                    .current_dir(cwd)
                    .env("HOME", root.join("home"))
                    .status()
                    .expect("run git");
                assert!(git.success(), "git init failed");
                let proxy = model.proxy_url();
                for key in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
                    cmd.env(key, &proxy).env(key.to_ascii_lowercase(), &proxy);
                }
                cmd.env("NO_PROXY", "127.0.0.1,localhost")
                    .env("no_proxy", "127.0.0.1,localhost")
                    .env("CODEX_HOME", &codex_home)
                    .env("RIG_OPENAI_API_KEY", "dummy")
                    // On-request approvals, a read-only sandbox, and the user (not a
                    // reviewer model) answers: so Codex asks about what the model runs
                    // outside the sandbox.
                    .env("INITIAL_AGENT_MODE", "read-only")
                    .env("NO_BROWSER", "1");
            }
        }
    }
}

/// The target of Codex's native binary on this machine, and the npm package that has it.
fn native_target() -> Option<(&'static str, &'static str)> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some(("codex-linux-x64", "x86_64-unknown-linux-musl")),
        ("linux", "aarch64") => Some(("codex-linux-arm64", "aarch64-unknown-linux-musl")),
        ("macos", "x86_64") => Some(("codex-darwin-x64", "x86_64-apple-darwin")),
        ("macos", "aarch64") => Some(("codex-darwin-arm64", "aarch64-apple-darwin")),
        _ => None,
    }
}

/// Checks that codex-acp in `package` runs the pinned Codex, with its native binary.
fn check_codex(package: &Path) {
    let top = package.ancestors().nth(2).expect("node_modules");
    let nested = package.join("node_modules/@openai/codex/package.json");
    let manifest = if nested.is_file() {
        nested
    } else {
        top.join("@openai/codex/package.json")
    };
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    let version = serde_json::from_str::<Value>(&text).unwrap_or_default()["version"].clone();
    assert_eq!(version, CODEX_VERSION, "codex-acp would run {manifest:?}");
    if let Some((platform, target)) = native_target() {
        let binary = top.join(format!("@openai/{platform}/vendor/{target}/bin/codex"));
        assert!(
            binary.is_file(),
            "{binary:?} is missing: npm left out Codex's optional dependency {platform}"
        );
    }
}

/// Codex's `config.toml`: the fake as its only model provider, no plugins.
fn codex_config(model: &FakeModel) -> String {
    format!(
        "model = \"{CODEX_MODEL}\"\nmodel_provider = \"rig\"\ncheck_for_update_on_startup = false\n\n\
         [features]\n# The curated plugins' sync reaches github.com and chatgpt.com.\n\
         plugins = false\n\n[analytics]\nenabled = false\n\n\
         [model_providers.rig]\nname = \"Rig\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n\
         env_key = \"RIG_OPENAI_API_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
        model.base_url()
    )
}

/// A running rig. Dropping it kills whatever is left of the agent's process group.
pub struct Rig {
    pub model: FakeModel,
    /// The client's side: every line sent and received is recorded.
    pub bridge: Bridge,
    /// The session's working directory, `<temp>/project` (for Codex a git repository, no
    /// commits, with an empty `build/` folder).
    pub cwd: PathBuf,
    root: PathBuf,
    /// The agent's pid, which is also its process group's id, until it has been reaped.
    agent: Option<u32>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(pgid) = self.agent.take() {
            use nix::sys::signal::{killpg, Signal};
            let _ = killpg(nix::unistd::Pid::from_raw(pgid as i32), Signal::SIGKILL);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Rig {
    /// Starts the fake model playing `script`, then the bridge with `bridge_args` around
    /// `agent`. `None`, after a loud message on stderr, when its packages cannot be
    /// installed (npm or its registry out of reach): the caller then skips its test.
    pub async fn start(
        agent: Agent,
        name: &str,
        script: Vec<Reply>,
        bridge_args: &[&str],
    ) -> Option<Self> {
        let package = match agent.install().await {
            Ok(dir) => dir,
            Err(why) => {
                #[allow(clippy::print_stderr)]
                {
                    let what = agent.packages();
                    eprintln!("\n!!!!!!!! SKIPPED {name}: cannot install {what}: {why}\n");
                }
                return None;
            }
        };
        let entry = package.join("dist/index.js");
        assert!(entry.is_file(), "{} has no {entry:?}", agent.packages());
        if agent == Agent::Codex {
            check_codex(&package);
        }

        let model = FakeModel::start(agent.dialect(), script).await;
        let root = super::temp_dir(name);
        let (home, cwd) = (root.join("home"), root.join("project"));
        std::fs::create_dir_all(&home).expect("create HOME");
        std::fs::create_dir_all(&cwd).expect("create the project directory");

        let mut cmd = Command::new(BRIDGE);
        cmd.args(bridge_args).arg("--").arg("node").arg(&entry);
        cmd.current_dir(&root).env("RUST_LOG", "debug");
        // Nothing of the host's own setup for the agent may leak in.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if agent.host_variables().iter().any(|p| key.starts_with(p)) {
                cmd.env_remove(&*key);
            }
        }
        cmd.env("HOME", &home);
        agent.prepare(&model, &root, &cwd, &mut cmd);
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

    /// `initialize` with `client_caps`, then `session/new` in [`Rig::cwd`]; returns the
    /// session id.
    pub async fn open(&mut self, client_caps: Value) -> String {
        self.bridge.initialize(client_caps).await;
        // The agent answered: it runs inside the wall (docs/SECURITY.md, "The agent
        // itself"), in user and mount namespaces of its own, as every agent does by default.
        // Looked for again now that it answered (a child seen at start may have been the
        // wall's probe).
        self.agent = super::agent_pid_of(self.bridge.pid()).or(self.agent);
        if let Some(pid) = self.agent {
            super::assert_walled(pid);
        }
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

    /// The `session/request_permission` requests the client got and its answers, in the
    /// fixture format (`{"bridge": msg}`, `{"client": msg}`), with the session id replaced by
    /// `<session>` and the working directory by `<cwd>`.
    pub fn permission_exchange(&self, session: &str) -> Vec<Value> {
        let cwd = self.cwd.to_string_lossy();
        let mut asked = Vec::new();
        let mut out = Vec::new();
        for (dir, line) in self.bridge.transcript() {
            let text = line.replace(session, "<session>").replace(&*cwd, "<cwd>");
            let Ok(msg) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            match dir {
                Dir::Bridge if msg["method"] == "session/request_permission" => {
                    asked.push(msg["id"].clone());
                    out.push(json!({ "bridge": msg }));
                }
                Dir::Client if msg.get("method").is_none() && asked.contains(&msg["id"]) => {
                    out.push(json!({ "client": msg }));
                }
                _ => {}
            }
        }
        out
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
