//! `--on-question <COMMAND>`: run a command when a question is asked.
//!
//! COMMAND is split like a shell would split words (quotes, backslashes) but never run by a
//! shell unless it names one (`sh -c '...'`). The process gets the question as JSON on its
//! stdin and `ACP_QUESTION_URL` (the Questions page without its token, when the control
//! server runs); `ACP_QUESTION_TOKEN` (the token) only with `--on-question-token`. The agent
//! can make the bridge run the command whenever it asks a question, and what the command
//! runs may be what the agent wrote (`xdg-open` reads `~/.config/mimeapps.list`): so a
//! bridge whose agent is walled runs the command inside the same wall (its launcher), where
//! no registry, token file or process of the bridge's is reached, and the token, which
//! answers questions, is given only when asked for. It runs in its own session (no
//! terminal of the bridge's), with stdout discarded (the bridge's stdout is protocol only)
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
    /// The page's address, without its token; the token, when it is given.
    page: Option<(String, Option<String>)>,
    /// The wall's launcher the command runs through (the agent's), if any.
    launcher: Option<Arc<[String]>>,
    running: Arc<Semaphore>,
}

impl Notifier {
    /// `page_url`: the page's URL with its `#token=`; `token`: whether the command gets
    /// it too (`--on-question-token`); `launcher`: the wall's launcher to run it through.
    pub fn new(
        argv: Vec<String>,
        page_url: Option<String>,
        token: bool,
        launcher: Option<Vec<String>>,
    ) -> Self {
        let page = page_url.map(|u| match u.split_once("#token=") {
            Some((base, t)) => (base.to_owned(), token.then(|| t.to_owned())),
            None => (u, None),
        });
        Self {
            argv: argv.into(),
            page,
            launcher: launcher.map(Into::into),
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
        // Through the launcher, a program that is not there fails inside it: said here.
        if self.launcher.is_some() && crate::child::startable(&self.argv[0]).is_err() {
            tracing::warn!(command = ?self.argv[0], question = label, error = "not found, or not executable", "--on-question: cannot start the command");
            return;
        }
        let argv: Vec<&String> = self
            .launcher
            .iter()
            .flat_map(|l| l.iter())
            .chain(self.argv.iter())
            .collect();
        let mut cmd = tokio::process::Command::new(argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env("ACP_QUESTION_RING", reminder.to_string())
            .kill_on_drop(true);
        // A session of its own (a group of its own too, killed whole below): no terminal
        // of the bridge's to type into (`TIOCSTI`), as the agent has none.
        crate::child::own_session(&mut cmd);
        cmd.env_remove("ACP_QUESTION_URL")
            .env_remove("ACP_QUESTION_TOKEN");
        // None of the bridge's own variables (its token, a holder's).
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("ACP_QUESTION_BRIDGE_") {
                cmd.env_remove(k);
            }
        }
        if let Some((url, token)) = &self.page {
            cmd.env("ACP_QUESTION_URL", url);
            if let Some(t) = token {
                cmd.env("ACP_QUESTION_TOKEN", t);
            }
        }
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
