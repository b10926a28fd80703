//! Logging setup: `tracing` to stderr (or `--log-file`), never to stdout.
//!
//! Owns the subscriber. Invariants: nothing here writes to stdout, which carries protocol
//! only; a write to stderr that fails (a closed pipe, a full disk) loses that line and
//! nothing else: no panic, no retry, no report of the failure on the same broken stderr.
//! `RUST_LOG` overrides `--log-level`.

use std::path::Path;

use tracing_subscriber::EnvFilter;

/// A one-line, user-facing message on stderr from the command `who` (stdout is protocol
/// or output only). A broken stderr loses the line and nothing else.
pub fn say(who: &str, msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{who}: {msg}");
}

/// [`say`]s `msg` and returns exit code `code`: how a command line ends on an error.
pub fn fail(who: &str, code: u8, msg: &str) -> std::process::ExitCode {
    say(who, msg);
    std::process::ExitCode::from(code)
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Keeps the log's stderr writer running; dropped at the end of `main`, it writes what is
/// still queued (waiting a second at most).
#[must_use]
pub struct Guard {
    _worker: Option<tracing_appender::non_blocking::WorkerGuard>,
}

/// Lines of the log queued for a stderr that takes nothing before new ones are dropped.
const QUEUED_LINES: usize = 4096;

/// Installs the global subscriber. Fails only when `--log-file` cannot be opened. Lines for
/// stderr are written by a thread of their own through a bounded queue: a stderr that is
/// never read fills the queue, and further lines are dropped, never waited for.
pub fn init(level: &str, format: LogFormat, file: Option<&Path>) -> std::io::Result<Guard> {
    // At `info`, the NATS client's own lines (one per failed reconnection attempt, every
    // 1-3 s of an outage) are left out: the bridge and the inbox say each change once.
    let level = match level {
        "info" => "info,async_nats=warn",
        l => l,
    };
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let (writer, guard) = match file {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            let w = tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::sync::Mutex::new(f));
            (w, None)
        }
        None => {
            let (w, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
                .lossy(true)
                .buffered_lines_limit(QUEUED_LINES)
                .thread_name("log-stderr")
                .finish(std::io::stderr());
            (
                tracing_subscriber::fmt::writer::BoxMakeWriter::new(w),
                Some(guard),
            )
        }
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .with_target(false)
        // Its report of a failed write goes through `eprintln!`, which panics when stderr
        // is the thing that failed.
        .log_internal_errors(false);
    // A second init (tests) is not an error worth failing for.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    Ok(Guard { _worker: guard })
}
