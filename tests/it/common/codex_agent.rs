//! The offline Codex rig: codex-acp 2.6 (npm `@agentclientprotocol/codex-acp`, which runs
//! the native Codex CLI 0.166 of `@openai/codex` as its app server) behind the real bridge,
//! its model a [`FakeOpenAi`] on loopback, its `HOME`, `CODEX_HOME` and project folder
//! thrown away afterwards. It starts the three and records the client's side of the wire;
//! what to ask and what to assert is each test's.
//!
//! Nothing leaves the machine: Codex's model provider is the fake, the curated plugins'
//! sync (which reaches github.com and chatgpt.com) is off, and every HTTP(S) proxy variable
//! points at the fake, which refuses and logs any `CONNECT` that is still tried.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tokio::process::Command;

use super::fake_openai::{FakeOpenAi, Reply};
use super::{Bridge, Dir, BRIDGE};

pub const PACKAGE: &str = "@agentclientprotocol/codex-acp";
pub const VERSION: &str = "2.6.0";
/// The Codex CLI, installed first so that codex-acp's `^0.166.0` resolves to exactly it.
pub const CODEX: &str = "@openai/codex";
pub const CODEX_VERSION: &str = "0.166.0";
/// A model of Codex's own catalog (an unknown one makes Codex warn in the chat).
pub const MODEL: &str = "gpt-5.5";

/// Client capabilities of an IDE with no file system, terminal or forms.
pub fn plain_client() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false})
}

/// A running rig. Dropping it kills whatever is left of the agent's process group.
pub struct Codex {
    pub model: FakeOpenAi,
    /// The client's side: every line sent and received is recorded.
    pub bridge: Bridge,
    /// The session's working directory, `<temp>/project`: a git repository (no commits)
    /// with an empty `build/` folder.
    pub cwd: PathBuf,
    root: PathBuf,
    /// The agent's pid, which is also its process group's id, until it has been reaped.
    agent: Option<u32>,
}

impl Drop for Codex {
    fn drop(&mut self) {
        if let Some(pgid) = self.agent.take() {
            use nix::sys::signal::{killpg, Signal};
            let _ = killpg(nix::unistd::Pid::from_raw(pgid as i32), Signal::SIGKILL);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Installs Codex, then codex-acp; returns codex-acp's folder.
async fn install() -> Result<PathBuf, String> {
    super::try_npm_package(CODEX, CODEX_VERSION).await?;
    super::try_npm_package(PACKAGE, VERSION).await
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
fn config(model: &FakeOpenAi) -> String {
    format!(
        "model = \"{MODEL}\"\nmodel_provider = \"rig\"\ncheck_for_update_on_startup = false\n\n\
         [features]\n# The curated plugins' sync reaches github.com and chatgpt.com.\n\
         plugins = false\n\n[analytics]\nenabled = false\n\n\
         [model_providers.rig]\nname = \"Rig\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n\
         env_key = \"RIG_OPENAI_API_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
        model.base_url()
    )
}

impl Codex {
    /// Starts the fake model playing `script`, then the bridge with `bridge_args` around
    /// codex-acp. `None`, after a loud message on stderr, when the packages cannot be
    /// installed (npm or its registry out of reach): the caller then skips its test.
    pub async fn start(name: &str, script: Vec<Reply>, bridge_args: &[&str]) -> Option<Self> {
        // One attempt for all the tests of a binary (each install takes the tests' install
        // lock, so other binaries wait for it too).
        static INSTALL: tokio::sync::OnceCell<Result<PathBuf, String>> =
            tokio::sync::OnceCell::const_new();
        let package = match INSTALL.get_or_init(install).await.clone() {
            Ok(dir) => dir,
            Err(why) => {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!(
                        "\n!!!!!!!! SKIPPED {name}: cannot install {PACKAGE}@{VERSION} with \
                         {CODEX}@{CODEX_VERSION}: {why}\n"
                    );
                }
                return None;
            }
        };
        let entry = package.join("dist/index.js");
        assert!(entry.is_file(), "{PACKAGE}@{VERSION} has no {entry:?}");
        check_codex(&package);

        let model = FakeOpenAi::start(script).await;
        let root = super::temp_dir(name);
        let (home, codex_home, cwd) = (root.join("home"), root.join("codex"), root.join("project"));
        for dir in [&home, &codex_home, &cwd.join("build")] {
            std::fs::create_dir_all(dir).expect("create the rig's folders");
        }
        std::fs::write(codex_home.join("config.toml"), config(&model)).expect("config.toml");
        let git = std::process::Command::new("git")
            .args(["-c", "init.defaultBranch=main", "init", "--quiet"])
            .current_dir(&cwd)
            .env("HOME", &home)
            .status()
            .expect("run git");
        assert!(git.success(), "git init failed");

        let mut cmd = Command::new(BRIDGE);
        cmd.args(bridge_args).arg("--").arg("node").arg(&entry);
        cmd.current_dir(&root).env("RUST_LOG", "debug");
        // Nothing of the host's own Codex or OpenAI setup may leak in.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if key.starts_with("OPENAI_") || key.starts_with("CODEX_") {
                cmd.env_remove(&*key);
            }
        }
        let proxy = model.proxy_url();
        for key in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
            cmd.env(key, &proxy).env(key.to_ascii_lowercase(), &proxy);
        }
        cmd.env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .env("HOME", &home)
            .env("CODEX_HOME", &codex_home)
            .env("RIG_OPENAI_API_KEY", "dummy")
            // On-request approvals, a read-only sandbox, and the user (not a reviewer
            // model) answers: so Codex asks about what the model runs outside the sandbox.
            .env("INITIAL_AGENT_MODE", "read-only")
            .env("NO_BROWSER", "1");
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

    /// `initialize` with `client_caps`, then `session/new` in [`Codex::cwd`]; returns the
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
