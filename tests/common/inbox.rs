//! A running `acp-question-bridge inbox` from a test: its page URL, token and stderr.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};
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
    /// `acp-question-bridge inbox ARGS...`, once it has printed its page URL.
    pub async fn start(args: &[&str]) -> Inbox {
        let mut child = Command::new(BRIDGE)
            .arg("inbox")
            .args(args)
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn inbox");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = stderr.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut tx = Some(tx);
            while let Ok(Some(l)) = lines.next_line().await {
                sink.lock().unwrap().push_str(&format!("{l}\n"));
                if let Some(page) = l.strip_prefix("acp-question-bridge: questions page: ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(page.to_owned());
                    }
                }
            }
        });
        let page = tokio::time::timeout(WAIT, rx)
            .await
            .expect("the inbox prints its page in time")
            .expect("the inbox prints its page");
        let (base, token) = page.split_once("#token=").unwrap();
        Inbox {
            child,
            base: base.to_owned(),
            token: token.to_owned(),
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
