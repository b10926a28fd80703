//! The front: the process the editor starts with `--linger`. It finds a holder of the same
//! command line and folder with no client attached, or starts one in a session of its own,
//! hands it its stdin, stdout and stderr, and waits: it exits with the code the holder
//! sends when it is done with this client, or non-zero when the holder is gone.
//!
//! Plain blocking code on the main thread: the front does nothing while it waits.

use std::io::{BufRead, BufReader, Read};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{Hello, Info, Reply};

/// How long a holder has to say it is ready, and to answer a hello. Far above what it
/// takes (a few milliseconds, plus the agent's spawn), for a busy machine.
const READY_WITHIN: Duration = Duration::from_secs(120);

/// Runs the front. `args` is the bridge's command line after the program name (the holder
/// gets the same); returns the exit code.
pub fn run(args: &[String]) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let key = super::key(&cwd, args);
    let folder = super::dir();
    if let Err(e) = crate::inbox::roster::ensure_dir(&folder) {
        return fail(&format!(
            "cannot use the holders' folder {}: {e}",
            folder.display()
        ));
    }
    // What bridges killed with SIGKILL left in the roster goes (their holders' files and
    // sockets go in `scan`, below, their sessions recorded as lost).
    let _ = crate::inbox::roster::scan(&crate::inbox::roster::dir());
    // The holders of this command line: the agents the editor left.
    let mut holders: Vec<Info> = super::scan(&folder)
        .into_iter()
        .filter(|i| i.key == key)
        .collect();
    // Which one has the session the client takes: the client says after its `initialize`,
    // which the front answers with a holder's result (it is the same for all of them). The
    // holders' files may not have it yet (they are written off the holders' loops): then
    // the holders are asked, by a hello none takes (it names no session it keeps).
    let mut first = First::default();
    let mut init = holders.iter().find_map(|h| h.init.clone());
    if init.is_none() {
        init = holders
            .iter()
            .find_map(|info| match attach(info, &first, true) {
                Ok(Attach::Busy(said)) => said,
                _ => None,
            });
    }
    if init.is_none() {
        // No holder lives, but one ended keeping sessions: the client's load is read, to
        // tell it if its session was one of them.
        init = super::ended::init_of(&folder, &key);
    }
    if let Some(init) = init {
        first = read_first(&init);
        if let Some(session) = &first.session {
            // The one that keeps the session first (as its file says), then the newest.
            holders.sort_by_key(|h| !h.sessions.contains(session));
        }
    }
    // A client that loads a session goes to the holder that keeps it, as the holder itself
    // decides, before any other: one session, one agent. A session whose holder ended is
    // not lost silently: the load is answered with what happened, once.
    let passes: &[bool] = match first.session {
        Some(_) => &[true, false],
        None => &[false],
    };
    for &kept_only in passes {
        if !kept_only {
            tell_if_lost(&folder, &key, &mut first);
        }
        for info in &holders {
            match attach(info, &first, kept_only) {
                Ok(Attach::Attached(stream)) => return wait(stream, info),
                Ok(Attach::Full(why)) => {
                    // The holder that keeps the session has no room for one more client:
                    // the load is refused, not given a second agent.
                    if let (Some(session), Some((id, _))) = (&first.session, &first.load) {
                        tracing::info!(%session, "the holder that keeps the session is full; told");
                        let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
                            "code": crate::jsonrpc::code::SERVER_ERROR,
                            "message": format!("session {session} cannot be opened here: {why}"),
                        }});
                        answer_load(&mut first, &error);
                    }
                }
                Ok(Attach::Busy(_)) => {
                    tracing::debug!(holder = info.pid, kept_only, "holder busy; trying the next")
                }
                Err(e) => {
                    tracing::warn!(holder = info.pid, error = %e, "cannot attach to a holder")
                }
            }
        }
    }
    // None: start one. A front that races another to it may find it busy: start another.
    for _ in 0..3 {
        let info = match start_holder(&folder, &key, args, &cwd) {
            Ok(info) => info,
            Err(code) => return code,
        };
        match attach(&info, &first, false) {
            Ok(Attach::Attached(stream)) => return wait(stream, &info),
            Ok(Attach::Busy(_) | Attach::Full(_)) => continue,
            Err(e) => return fail(&format!("cannot attach to the holder it started: {e}")),
        }
    }
    fail("every holder started was taken by another client")
}

/// What the front read of its client before it chose a holder.
#[derive(Default)]
struct First {
    /// Every byte read, in order: the holder reads them before the client's pipe.
    bytes: Vec<u8>,
    /// The first line was the client's `initialize`, and the front answered it.
    initialized: bool,
    /// The session the client's next request loads or resumes.
    session: Option<String>,
    /// That request's id, and where its line is in `bytes` (its newline included).
    load: Option<(serde_json::Value, std::ops::Range<usize>)>,
}

/// When the session the client loads is one whose holder ended (and no live holder took
/// it), answers the load with what happened (`-32002`): the rest of what was read goes to
/// a holder as a client that has no session yet.
fn tell_if_lost(folder: &Path, key: &str, first: &mut First) {
    let (Some(session), Some((id, _))) = (&first.session, &first.load) else {
        return;
    };
    let Some(ended) = super::ended::take(folder, key, session) else {
        return;
    };
    tracing::info!(%session, why = %ended.why, "the client loads a session that was lost; told");
    let error = super::ended::lost_error(id, session, &ended);
    answer_load(first, &error);
}

/// Answers the client's load (read first) with `error`; the rest of what was read goes to
/// a holder as a client that has no session yet.
fn answer_load(first: &mut First, error: &serde_json::Value) {
    use std::io::Write;
    let Some((_, range)) = &first.load else {
        return;
    };
    let mut line = serde_json::to_vec(error).expect("JSON serializes");
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    if out.write_all(&line).and_then(|()| out.flush()).is_err() {
        return;
    }
    // (The `initialize` before it stays: the holder knows the front answered it.)
    first.bytes.drain(range.clone());
    first.session = None;
    first.load = None;
}

/// Reads the client's `initialize`, answers it with `init` (a holder's result), and reads
/// the request after it, to learn the session it loads or resumes. Stops at anything else
/// (what was read goes to the holder as it is).
fn read_first(init: &str) -> First {
    use std::io::Write;
    let mut first = First::default();
    let Some(line) = read_line(&mut first.bytes, 0) else {
        return first;
    };
    let Ok(msg) = serde_json::from_slice::<serde_json::Value>(&line) else {
        return first;
    };
    if msg["method"] != crate::methods::INITIALIZE || msg.get("id").is_none() {
        return first;
    }
    let answer = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{init}}}"#, msg["id"]);
    let mut out = std::io::stdout().lock();
    if out
        .write_all(answer.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .is_err()
    {
        return first;
    }
    first.initialized = true;
    let line_len = line.len() + 1;
    let Some(line) = read_line(&mut first.bytes, line_len) else {
        return first;
    };
    if let Ok(next) = serde_json::from_slice::<serde_json::Value>(&line) {
        let takes = next["method"] == crate::methods::SESSION_LOAD
            || next["method"] == crate::methods::SESSION_RESUME;
        if takes {
            first.session = next["params"]["sessionId"].as_str().map(str::to_owned);
            if let Some(id) = next.get("id") {
                first.load = Some((id.clone(), line_len..line_len + line.len() + 1));
            }
        }
    }
    first
}

/// Reads our stdin into `bytes` until a whole line starts at `from`; that line. `None` at
/// EOF, an error, or past [`super::MAX_PREFIX`] (what was read stays in `bytes`).
fn read_line(bytes: &mut Vec<u8>, from: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::fd::AsFd;
    // Our stdin unbuffered (std's `Stdin` would keep what it read ahead).
    let mut input = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned().ok()?);
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = memchr::memchr(b'\n', bytes.get(from..)?) {
            return Some(bytes[from..from + end].to_vec());
        }
        if bytes.len() >= super::MAX_PREFIX {
            return None;
        }
        match input.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
}

fn fail(msg: &str) -> i32 {
    crate::logging::say("acp-question-bridge", msg);
    1
}

/// What a holder said to a hello.
enum Attach {
    /// It took our client: the connection (one reader for its whole life: the holder may
    /// send the exit code right after `attached`, in the same read).
    Attached(BufReader<UnixStream>),
    /// It has a client, or does not keep the session (`kept_only`); its `initialize` result.
    Busy(Option<String>),
    /// It keeps the session, and has no room for one more client there (why).
    Full(String),
}

/// Hands our stdio to the holder of `info`, which takes it unless it has a client, or,
/// `kept_only`, it does not keep the session the client loads.
fn attach(info: &Info, first: &First, kept_only: bool) -> std::io::Result<Attach> {
    let stream = UnixStream::connect(&info.socket)?;
    stream.set_read_timeout(Some(READY_WITHIN))?;
    let hello = Hello {
        token: info.token.clone(),
        pid: std::process::id(),
        prefix_len: first.bytes.len(),
        initialized: first.initialized,
        // The holder decides whether it keeps the session (its file, written off its loop,
        // may not say so yet).
        join: first.session.clone(),
        kept_only,
        stop: false,
    };
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    super::send_hello(
        &stream,
        &hello,
        [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()],
        &first.bytes,
    )?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    (&mut reader)
        .take(super::MAX_LINE as u64)
        .read_line(&mut line)?;
    match serde_json::from_str::<Reply>(line.trim_end()) {
        Ok(Reply::Attached { holder }) => {
            tracing::info!(holder, "attached to the holder that keeps the agent");
            // Only the holder keeps the editor's pipes open now: when it closes them, the
            // editor sees the end at once.
            let null = std::fs::File::options()
                .read(true)
                .write(true)
                .open("/dev/null")?;
            nix::unistd::dup2_stdin(&null)?;
            nix::unistd::dup2_stdout(&null)?;
            stream.set_read_timeout(None)?;
            Ok(Attach::Attached(reader))
        }
        Ok(Reply::Busy { init }) => Ok(Attach::Busy(init)),
        Ok(Reply::Full(why)) => Ok(Attach::Full(why)),
        Ok(Reply::Refused(why)) => Err(std::io::Error::other(format!("refused: {why}"))),
        Ok(Reply::Exit(code)) => Err(std::io::Error::other(format!("it is ending ({code})"))),
        Err(e) => Err(std::io::Error::other(format!(
            "unreadable reply {line:?}: {e}"
        ))),
    }
}

/// Waits for the holder to be done with our client; its code is ours.
fn wait(mut reader: BufReader<UnixStream>, info: &Info) -> i32 {
    let mut line = String::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(super::MAX_LINE as u64)
            .read_line(&mut line)
        {
            Ok(0) | Err(_) => {
                return fail(&format!(
                    "the holder (pid {}) that kept the agent is gone",
                    info.pid
                ))
            }
            Ok(_) => {
                if let Ok(Reply::Exit(code)) = serde_json::from_str::<Reply>(line.trim_end()) {
                    return code;
                }
            }
        }
    }
}

/// Starts a holder with our command line, in a session of its own, and waits until it
/// listens. `Err` is the exit code when it could not start (its own message is on our
/// stderr, which it shares until then).
fn start_holder(folder: &Path, key: &str, args: &[String], cwd: &Path) -> Result<Info, i32> {
    let token = crate::control::random_token().map_err(|e| fail(&e.to_string()))?;
    let name = &crate::control::random_token().map_err(|e| fail(&e.to_string()))?[..16];
    let socket = folder.join(format!("{name}.sock"));
    let exe = std::env::current_exe().map_err(|e| fail(&format!("cannot find myself: {e}")))?;
    let mut cmd = Command::new(exe);
    cmd.arg("--hold-socket")
        .arg(&socket)
        .args(args)
        .env(super::TOKEN_ENV, &token)
        .env(super::KEY_ENV, key)
        // The holder walls the program by the path the editor started, links and all.
        .env(
            crate::wall::INVOKED_ENV,
            crate::wall::invoked().unwrap_or_default(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    new_session(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| fail(&format!("cannot start the holder: {e}")))?;
    let mut ready = String::new();
    let said = child
        .stdout
        .take()
        .map(|out| BufReader::new(out).take(64).read_line(&mut ready));
    // The process we started only forked the holder and exited.
    let _ = child.wait();
    let said = match said {
        Some(Ok(n)) if n > 0 => ready.trim_end(),
        _ => "",
    };
    let pid = match said.strip_prefix("ready ").map(str::parse::<u32>) {
        Some(Ok(pid)) => pid,
        _ => {
            // It ended before it listened: its code (127 for an agent not found) is ours.
            return Err(said
                .strip_prefix("exit ")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1));
        }
    };
    Ok(Info {
        pid,
        key: key.to_owned(),
        socket,
        token,
        agent: Vec::new(),
        cwd: cwd.to_string_lossy().into_owned(),
        started_ms: 0,
        init: None,
        sessions: Vec::new(),
    })
}

/// Starts the holder as a daemon: forked once more (the child we start exits at once, so
/// the holder is not our child: an editor that kills the tree of processes it started,
/// by parent ids as acpx and many editors do, does not find it), in a new session (an
/// editor that kills the process group or the session it started does not reach it, nor
/// does a terminal's hangup).
#[allow(unsafe_code)]
fn new_session(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are allowed: `fork`, `_exit` and `setsid` are system calls,
    // and nothing here allocates or takes a lock. The grandchild goes on to exec; std's
    // check that the exec happened reads a close-on-exec pipe the grandchild holds.
    unsafe {
        cmd.pre_exec(|| {
            match nix::unistd::fork()? {
                nix::unistd::ForkResult::Parent { .. } => libc::_exit(0),
                nix::unistd::ForkResult::Child => {}
            }
            nix::unistd::setsid()?;
            Ok(())
        });
    }
}
