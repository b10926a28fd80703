//! A running `acp-question-bridge inbox` from a test: its page URL, token and stderr.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::process::{Child, Command};

use super::{BRIDGE, WAIT};

pub struct Inbox {
    /// Killed when the test drops it.
    pub child: Child,
    /// `http://ADDR/`.
    pub base: String,
    pub token: String,
    /// Everything it wrote on stderr so far (at `RUST_LOG=debug`).
    pub stderr: Arc<Mutex<String>>,
}

impl Inbox {
    /// `acp-question-bridge inbox ARGS...`, once it has printed its page URL. Its stderr is
    /// not a terminal, so it prints no token: the test gives it one.
    pub async fn start(args: &[&str]) -> Inbox {
        let token = acp_question_bridge::control::random_token().expect("random bytes");
        let mut child = Command::new(BRIDGE)
            .arg("inbox")
            .args(args)
            .env("ACP_QUESTION_BRIDGE_TOKEN", &token)
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn inbox");
        let (stderr, _) = super::collect_stderr(child.stderr.take().unwrap());
        // Wait for the whole line with the page URL.
        let base = tokio::time::timeout(WAIT, async {
            loop {
                let text = stderr.lock().unwrap().clone();
                let page = super::whole_lines(&text).find_map(|l| {
                    l.strip_prefix("acp-question-bridge: questions page: ")
                        .and_then(|p| p.split(' ').next())
                        .map(str::to_owned)
                });
                if let Some(page) = page {
                    return page;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the inbox prints its page in time");
        assert!(!base.contains('#'), "no token on stderr: {base}");
        Inbox {
            child,
            base,
            token,
            stderr,
        }
    }

    /// The page URL with `#token=`.
    pub fn url(&self) -> String {
        format!("{}#token={}", self.base, self.token)
    }

    pub fn http(&self) -> jsonrpsee_http_client::HttpClient {
        super::control::http(&self.base, &self.token)
    }
}

/// A bridge (with `extra` options) around the mock agent, listed in `registry`, its client
/// past `session/new`.
pub async fn registered_bridge(registry: &std::path::Path, extra: &[&str]) -> super::Bridge {
    let argv: Vec<&str> = ["--control", "127.0.0.1:0"]
        .iter()
        .chain(extra)
        .chain(&["--", super::MOCK])
        .copied()
        .collect();
    let mut b = super::Bridge::spawn_env(
        &argv,
        &[("ACP_QUESTION_BRIDGE_REGISTRY", registry.to_str().unwrap())],
    );
    b.stderr_contains("control server on ").await;
    b.initialize(serde_json::json!({})).await;
    b.new_session(1).await;
    b
}

/// The last pairing link and certificate fingerprint printed in `text` (an inbox's stderr, or
/// `inbox pair`'s), of its whole lines: (`https://HOST:PORT/`, code, fingerprint).
pub fn pairing(text: &str) -> Option<(String, String, String)> {
    let lines: Vec<&str> = super::whole_lines(text).collect();
    let link = lines
        .iter()
        .rfind(|l| l.starts_with("https://") && l.contains("/pair#code="))?;
    let (base, code) = link.split_once("pair#code=")?;
    let fingerprint = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("acp-question-bridge: certificate SHA-256 fingerprint: "))?;
    Some((base.to_owned(), code.to_owned(), fingerprint.to_owned()))
}

impl Inbox {
    /// An inbox over `registry` with `--remote 127.0.0.2:0` and its state folder `state`,
    /// once it listens; with what [`pairing`] read of the link `inbox pair` printed.
    pub async fn start_remote(
        registry: &std::path::Path,
        state: &std::path::Path,
    ) -> (Inbox, (String, String, String)) {
        Self::start_remote_with(registry, state, &[]).await
    }

    /// [`Inbox::start_remote`] with more arguments.
    pub async fn start_remote_with(
        registry: &std::path::Path,
        state: &std::path::Path,
        extra: &[&str],
    ) -> (Inbox, (String, String, String)) {
        let mut args = vec![
            "--registry",
            registry.to_str().unwrap(),
            "--remote",
            "127.0.0.2:0",
            "--state-dir",
            state.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let inbox = Inbox::start(&args).await;
        // Its stderr is no terminal: it says where it listens, and how to pair, not the
        // code (any process of the user could read a log); `inbox pair` makes one.
        tokio::time::timeout(WAIT, async {
            loop {
                if inbox
                    .stderr
                    .lock()
                    .unwrap()
                    .contains("`acp-question-bridge inbox pair` in a terminal")
                {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the inbox says where it listens in time");
        assert!(
            !inbox.stderr.lock().unwrap().contains("pair#code="),
            "a pairing code where no terminal shows it"
        );
        let (code, _, err) =
            super::run_bridge(&["inbox", "pair", "--state-dir", state.to_str().unwrap()]).await;
        assert_eq!(code, 0, "{err}");
        let printed = pairing(&err).expect("`inbox pair` prints a link and the fingerprint");
        (inbox, printed)
    }
}
