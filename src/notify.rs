//! `--on-question <COMMAND>`: run a command when a question is asked.
//!
//! COMMAND is split like a shell would split words (quotes, backslashes) but never run by a
//! shell unless it names one (`sh -c '...'`). The process gets the question as JSON on its
//! stdin, `ACP_QUESTION_URL` (the Questions page without its token, when the control server
//! runs) and `ACP_QUESTION_TOKEN` (the token). The token is kept out of the URL: a command
//! that passes the URL on (`xdg-open "$ACP_QUESTION_URL"`) puts it on a command line, which
//! every process of the user reads (the agent's, inside its wall, too), and the agent can
//! make the bridge run the command whenever it asks a question. An environment is read
//! only by the process's own user outside the wall. It runs
//! in its own process group, with stdout discarded (the bridge's stdout is protocol only)
//! and stderr logged.
//!
//! Invariants: at most one process per question; each is killed (its whole group) after
//! [`KILL_AFTER`]; at most [`MAX_RUNNING`] run at once (later ones wait their turn); a
//! failure is logged and never touches the question.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

/// How long a notification command may run.
pub const KILL_AFTER: Duration = Duration::from_secs(10);
/// How many notification commands run at once.
pub const MAX_RUNNING: usize = 8;
/// How much of a failed command's stderr is logged.
const STDERR_KEEP: usize = 4096;

/// Splits COMMAND into argv (no shell); `Err` when the quoting is unbalanced or it is empty.
pub fn parse_command(s: &str) -> Result<Vec<String>, String> {
    match shlex::split(s) {
        Some(argv) if !argv.is_empty() => Ok(argv),
        Some(_) => Err("--on-question: the command is empty".into()),
        None => Err(format!("--on-question: unbalanced quotes in {s:?}")),
    }
}

/// Starts notification commands.
#[derive(Debug, Clone)]
pub struct Notifier {
    argv: Arc<[String]>,
    /// The page's address, without its token; the token.
    page: Option<(String, String)>,
    running: Arc<Semaphore>,
}

impl Notifier {
    /// `page_url`: the page's URL with its `#token=`.
    pub fn new(argv: Vec<String>, page_url: Option<String>) -> Self {
        let page = page_url.map(|u| match u.split_once("#token=") {
            Some((base, token)) => (base.to_owned(), token.to_owned()),
            None => (u, String::new()),
        });
        Self {
            argv: argv.into(),
            page,
            running: Arc::new(Semaphore::new(MAX_RUNNING)),
        }
    }

    /// Runs the command once for `question` (a `requested` event's question) when it rings,
    /// in the background; `reminder` is 0 for its first ring, then 1, 2, ...
    /// (`ACP_QUESTION_RING`).
    pub fn question(&self, question: &Value, reminder: u32) {
        let this = self.clone();
        let mut input = question.to_string();
        input.push('\n');
        let label = format!(
            "{}/{}",
            question["sessionId"].as_str().unwrap_or(""),
            question["questionId"].as_str().unwrap_or("")
        );
        tokio::spawn(async move {
            let Ok(_permit) = this.running.acquire().await else {
                return;
            };
            this.run(input, &label, reminder).await;
        });
    }

    async fn run(&self, input: String, label: &str, reminder: u32) {
        let mut cmd = tokio::process::Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .env("ACP_QUESTION_RING", reminder.to_string())
            .kill_on_drop(true);
        match &self.page {
            Some((url, token)) => cmd
                .env("ACP_QUESTION_URL", url)
                .env("ACP_QUESTION_TOKEN", token),
            None => cmd
                .env_remove("ACP_QUESTION_URL")
                .env_remove("ACP_QUESTION_TOKEN"),
        };
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(command = ?self.argv[0], question = label, error = %e, "--on-question: cannot start the command");
                return;
            }
        };
        let pid = child.id();
        let mut stdin = child.stdin.take();
        let mut stderr = child.stderr.take();
        let work = async {
            if let Some(mut s) = stdin.take() {
                // A command that does not read its stdin is fine.
                let _ = s.write_all(input.as_bytes()).await;
                let _ = s.shutdown().await;
            }
            let mut err = Vec::new();
            if let Some(s) = stderr.as_mut() {
                let mut buf = [0u8; 1024];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let keep = STDERR_KEEP.saturating_sub(err.len()).min(n);
                    err.extend_from_slice(&buf[..keep]);
                }
            }
            (child.wait().await, err)
        };
        match tokio::time::timeout(KILL_AFTER, work).await {
            Ok((Ok(st), _)) if st.success() => {
                tracing::debug!(question = label, "--on-question command done");
            }
            Ok((Ok(st), err)) => tracing::warn!(
                question = label,
                status = %st,
                stderr = %String::from_utf8_lossy(&err).trim_end(),
                "--on-question command failed"
            ),
            Ok((Err(e), _)) => {
                tracing::warn!(question = label, error = %e, "--on-question: cannot wait for the command")
            }
            Err(_) => {
                tracing::warn!(
                    question = label,
                    "--on-question command still running after 10 s; killed"
                );
                // The command runs in a group of its own: end all of it.
                if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_without_a_shell() {
        assert_eq!(
            parse_command("notify-send 'A question' \"from $AGENT\"").unwrap(),
            vec!["notify-send", "A question", "from $AGENT"]
        );
        assert!(parse_command("  ").is_err());
        assert!(parse_command("echo 'open").is_err());
    }
}
