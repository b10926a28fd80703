//! `acp-question-bridge sessions [list|stop ID]`: the sessions that `--linger` holders keep,
//! read from each holder's control server (`bridge.status`), those lost with a holder that
//! ended while no editor had them (`linger::ended`), and a holder stopped.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use jsonrpsee::core::client::ClientT;
use jsonrpsee::rpc_params;
use serde_json::{json, Value};

use acp_question_bridge::control::client::http_client;
use acp_question_bridge::inbox::roster;
use acp_question_bridge::{linger, methods};

/// How long one holder may take to answer, or to end once stopped.
const WAIT: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub action: Option<Action>,
    /// Print JSON (one object per holder) instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Action {
    /// List the held sessions: agent, folder, clients attached, pending questions, linger
    /// left (the default); and the lost ones, whose holder ended while no editor had them,
    /// until an editor that loads one is told.
    List,
    /// Stop the holder that keeps session ID (or the holder with process id ID): its agent
    /// gets the shutdown ladder, and what is pending ends as "client gone".
    Stop { id: String },
}

/// One holder, as the CLI sees it.
struct Held {
    info: linger::Info,
    /// Its `bridge.status` (`None`: no control server, or it did not answer).
    status: Option<Value>,
    /// Its Questions page (the control server's URL) and the token, from its registry entry.
    page: Option<(String, String)>,
}

impl Held {
    fn sessions(&self) -> Vec<&Value> {
        self.status
            .as_ref()
            .and_then(|s| s["held"]["sessions"].as_array())
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    }

    fn json(&self) -> Value {
        json!({
            "holderPid": self.info.pid,
            "agent": self.info.agent,
            "cwd": self.info.cwd,
            "clientAttached": self.status.as_ref().map(|s| s["linger"]["clientAttached"].clone()),
            "lingerLeftMs": self.status.as_ref().map(|s| s["linger"]["lingerLeftMs"].clone()),
            "page": self.page.as_ref().map(|(url, _)| url),
            "sessions": match &self.status {
                Some(_) => json!(self.sessions()),
                // No control server: its file says its sessions.
                None => self.info.sessions.iter().map(|s| json!({"sessionId": s})).collect(),
            },
        })
    }
}

pub fn main(args: SessionsArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(1, &format!("cannot start runtime: {e}")),
    };
    let held = rt.block_on(read_all());
    match args.action.unwrap_or(Action::List) {
        Action::List => {
            // After the scan, which records the holders it found dead.
            let lost = linger::ended::untold(&linger::dir());
            list(&held, &lost, args.json);
            ExitCode::SUCCESS
        }
        Action::Stop { id } => stop(&held, &id),
    }
}

/// Asks the holder of `info` to stop over its socket, so that its clients are told who
/// stopped it; `false` when it cannot be asked (then it gets SIGTERM).
fn ask_to_stop(info: &linger::Info) -> bool {
    use std::io::BufRead;
    use std::os::fd::AsFd;
    let asked = || -> std::io::Result<bool> {
        let stream = std::os::unix::net::UnixStream::connect(&info.socket)?;
        stream.set_read_timeout(Some(WAIT))?;
        let null = std::fs::File::options()
            .read(true)
            .write(true)
            .open("/dev/null")?;
        let hello = linger::Hello {
            token: info.token.clone(),
            pid: std::process::id(),
            prefix_len: 0,
            initialized: false,
            join: None,
            kept_only: false,
            stop: true,
        };
        linger::send_hello(
            &stream,
            &hello,
            [null.as_fd(), null.as_fd(), null.as_fd()],
            &[],
        )?;
        let mut line = String::new();
        std::io::Read::take(std::io::BufReader::new(&stream), linger::MAX_LINE as u64)
            .read_line(&mut line)?;
        Ok(matches!(
            serde_json::from_str::<linger::Reply>(line.trim_end()),
            Ok(linger::Reply::Exit(_))
        ))
    };
    asked().unwrap_or(false)
}

fn fail(code: u8, msg: &str) -> ExitCode {
    acp_question_bridge::logging::fail("acp-question-bridge sessions", code, msg)
}

/// Every live holder, with its status.
async fn read_all() -> Vec<Held> {
    let bridges = roster::scan(&roster::dir());
    let mut all = Vec::new();
    let folder = linger::dir();
    if let Err(e) = roster::ensure_dir(&folder) {
        acp_question_bridge::logging::say(
            "acp-question-bridge sessions",
            &format!("not reading {}: {e}", folder.display()),
        );
        return all;
    }
    for info in linger::scan(&folder) {
        let entry = bridges.iter().find(|b| b.pid == info.pid);
        let status = match entry {
            Some(e) => status_of(&e.url, &e.token).await,
            None => None,
        };
        let page = entry.map(|e| (e.url.clone(), e.token.clone()));
        all.push(Held { info, status, page });
    }
    all
}

async fn status_of(url: &str, token: &str) -> Option<Value> {
    let client = http_client(url, token).ok()?;
    let call = client.request::<Value, _>(methods::BRIDGE_STATUS, rpc_params![]);
    tokio::time::timeout(WAIT, call).await.ok()?.ok()
}

/// A holder that ended with sessions no client was told of, as `--json` lists it: its
/// sessions are `lost`, and `ended` says when and why.
fn lost_json(e: &linger::ended::Ended) -> Value {
    json!({
        "holderPid": e.holder,
        "agent": e.agent,
        "cwd": e.cwd,
        "ended": {"at": when(e), "why": e.why, "foundGone": e.found_gone},
        "sessions": e.sessions.iter().map(|s| json!({"sessionId": s, "lost": true})).collect::<Vec<_>>(),
    })
}

/// When `e` ended (or was found gone), in RFC 3339.
fn when(e: &linger::ended::Ended) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(e.at_ms);
    humantime::format_rfc3339_seconds(at).to_string()
}

fn list(held: &[Held], lost: &[linger::ended::Ended], as_json: bool) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if as_json {
        let all: Vec<Value> = held
            .iter()
            .map(Held::json)
            .chain(lost.iter().map(lost_json))
            .collect();
        let _ = writeln!(out, "{}", Value::from(all));
        return;
    }
    if held.is_empty() {
        let _ = writeln!(out, "no held sessions (no bridge runs with --linger here)");
        return list_lost(&mut out, lost);
    }
    let _ = writeln!(
        out,
        "{:<28} {:<20} {:<7} {:<7} {:<11} FOLDER",
        "SESSION", "AGENT", "CLIENTS", "PENDING", "LINGER LEFT"
    );
    for h in held {
        let agent = acp_question_bridge::child::agent_name(
            &h.info.agent.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let attached = h
            .status
            .as_ref()
            .and_then(|s| s["linger"]["clientAttached"].as_bool());
        let left = h
            .status
            .as_ref()
            .and_then(|s| s["linger"]["lingerLeftMs"].as_u64())
            .map(|ms| humantime::format_duration(Duration::from_secs(ms / 1000)).to_string());
        let rows: Vec<(String, String, String)> = match (&h.status, h.sessions()) {
            // No control server: its file says its sessions.
            (None, _) if !h.info.sessions.is_empty() => h
                .info
                .sessions
                .iter()
                .map(|s| (s.clone(), "?".into(), "?".into()))
                .collect(),
            (None, _) => vec![("(no control server)".into(), "?".into(), "?".into())],
            (Some(_), s) if s.is_empty() => vec![("(none yet)".into(), "-".into(), "0".into())],
            (Some(_), s) => s
                .iter()
                .map(|s| {
                    // The clients that have it: the attached one and those that joined.
                    let clients = s["clients"].as_u64().unwrap_or_else(|| {
                        u64::from(attached == Some(true) && s["clientHasIt"] == true)
                    });
                    (
                        s["sessionId"].as_str().unwrap_or("?").to_owned(),
                        clients.to_string(),
                        s["pendingQuestions"].to_string(),
                    )
                })
                .collect(),
        };
        if let Some((url, token)) = &h.page {
            // The token only to a terminal (never to a log or a pipe the agent could read).
            let _ = match std::io::IsTerminal::is_terminal(&out) {
                true => writeln!(out, "# holder {}: questions page {url}#token={token}", h.info.pid),
                false => writeln!(
                    out,
                    "# holder {}: questions page {url} (its token is printed only to a terminal; `acp-question-bridge inbox` shows every bridge's questions)",
                    h.info.pid
                ),
            };
        }
        for (session, client, pending) in rows {
            let _ = writeln!(
                out,
                "{:<28} {:<20} {:<7} {:<7} {:<11} {}",
                session,
                agent,
                client,
                pending,
                left.as_deref().unwrap_or("-"),
                h.info.cwd
            );
        }
    }
    list_lost(&mut out, lost);
}

/// The sessions of holders that ended while no client had them, until an editor loads
/// them and is told.
fn list_lost(out: &mut impl std::io::Write, lost: &[linger::ended::Ended]) {
    if lost.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "# lost: their holder ended while no editor had them; the next load of each is told why"
    );
    for e in lost {
        let agent = acp_question_bridge::child::agent_name(
            &e.agent.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        for s in &e.sessions {
            let _ = writeln!(
                out,
                "{s:<28} {agent:<20} lost {} ({}) {}",
                when(e),
                e.why,
                e.cwd
            );
        }
    }
}

fn stop(held: &[Held], id: &str) -> ExitCode {
    // (Its file says its sessions too, for a holder without a control server.)
    let found: Vec<&Held> = match held.iter().find(|h| h.info.pid.to_string() == id) {
        Some(h) => vec![h],
        None => held
            .iter()
            .filter(|h| {
                h.sessions().iter().any(|s| s["sessionId"] == id)
                    || h.info.sessions.iter().any(|s| s == id)
            })
            .collect(),
    };
    let h = match found.as_slice() {
        [h] => *h,
        [] => {
            return fail(
                1,
                &format!("no held session or holder {id:?} (see `sessions list`)"),
            )
        }
        many => {
            // Agents of other command lines or folders may name their sessions alike.
            let pids: Vec<String> = many.iter().map(|h| h.info.pid.to_string()).collect();
            return fail(
                1,
                &format!(
                    "session {id:?} is held by several holders ({}): stop one by its pid",
                    pids.join(", ")
                ),
            );
        }
    };
    let pid = nix::unistd::Pid::from_raw(h.info.pid as i32);
    if !ask_to_stop(&h.info) {
        if let Err(e) = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM) {
            return fail(1, &format!("cannot stop holder {}: {e}", h.info.pid));
        }
    }
    let deadline = std::time::Instant::now() + WAIT;
    while roster::alive(h.info.pid) {
        if std::time::Instant::now() > deadline {
            return fail(
                1,
                &format!("holder {} did not end within {WAIT:?}", h.info.pid),
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    acp_question_bridge::logging::say(
        "acp-question-bridge sessions",
        &format!("stopped holder {} and its agent", h.info.pid),
    );
    ExitCode::SUCCESS
}
