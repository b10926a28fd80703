//! The command line: flags of the bridge and duration parsing (the binary's `Cli` adds its
//! subcommands, `src/main.rs`).
//!
//! Owns the mapping from argv to [`crate::bridge::Config`]. Invariant: everything after
//! `--` is the agent command, passed on untouched.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::logging::LogFormat;

/// A way of asking the bridge offers the agent (`--no-opt-in`): `form`
/// (`clientCapabilities.elicitation.form`) or a vendor's opt-in by its name
/// (`crate::questions::sources::OptIn::name`).
fn opt_in(name: &str) -> Result<String, String> {
    let vendors = crate::questions::sources::VENDORS
        .iter()
        .filter_map(|v| v.opt_in.as_ref().map(|o| o.name));
    let known: Vec<&str> = std::iter::once("form").chain(vendors).collect();
    if known.contains(&name) {
        Ok(name.to_owned())
    } else {
        Err(format!("expected one of: {}", known.join(", ")))
    }
}

/// Flags of the bridge itself.
#[derive(Debug, Args)]
pub struct BridgeArgs {
    /// Longest accepted line in bytes; longer lines are discarded up to their newline.
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_line_bytes: usize,
    /// How long to wait for the agent after its stdin closes or a signal, before SIGTERM
    /// (and again before SIGKILL). Accepts `500ms`, `3s`, `2m`.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,
    /// Log level or filter (`info`, `debug`, `acp_question_bridge=trace`); RUST_LOG overrides.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    pub log_level: String,
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
    /// Reject a question not answered within this time (`timeout`); a request's
    /// `timeoutMs` may shorten it. Default: no timeout.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub question_timeout: Option<Duration>,
    /// Most questions one session may have pending; one more gets error -32000.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_pending_per_session: u32,
    /// Most requests in flight in each direction, and most pending questions in all
    /// sessions; one more is refused at once with error -32000.
    #[arg(long, value_name = "N", default_value_t = 16_384, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_in_flight: u32,
    /// How questions reach the client: `auto` picks from its `initialize` (the extension
    /// when advertised, else an `elicitation/create` form when it renders forms, else a
    /// `session/request_permission` prompt); the others force one. `control`: the client is
    /// never shown a question (not even the agent's own permission requests and forms);
    /// each waits on the control server, the page and the CLI.
    #[arg(long, value_enum, value_name = "DIALECT", default_value_t = ClientDialect::Auto)]
    pub client_dialect: ClientDialect,
    /// How a question reaches a client that shows only permission prompts: `binary`, one
    /// yes/no prompt per decision ("Which database? → SQLite", then "→ Postgres"), which
    /// every client answers correctly; `list`, every option by name in one prompt. By
    /// default, `list` for clients known to show every option (agentic.nvim), `binary` for
    /// every other (docs/CLIENTS.md).
    #[arg(long, value_enum, value_name = "STYLE")]
    pub permission_prompts: Option<crate::questions::prompts::Style>,
    /// Send the client `$/cancel_request` for a question it shows that ended elsewhere. By
    /// default only clients known to handle it get one (none yet: real clients crash or
    /// exit on it); the others see the question's tool call marked done in the chat.
    #[arg(long)]
    pub client_cancel_requests: bool,
    /// Offer the agent forms even where no surface could take a question the client cannot
    /// show (with --no-control and a client without forms). Offering them is the default
    /// wherever one can (see --no-opt-in).
    #[arg(long)]
    pub advertise_elicitation: bool,
    /// Do not offer the agent these ways of asking. By default the bridge adds each to the
    /// `initialize` the agent sees when the client lacks it, since it can show them
    /// anywhere: `form` (`elicitation.form`: agents' forms reach a client without forms as
    /// the extension or a permission prompt), `gemini` (`_meta["geminiCli.hostInput"]`),
    /// `opencode` (`_meta["opencode/question"]`). Comma-separated or repeated.
    #[arg(long, value_parser = opt_in, value_delimiter = ',', value_name = "OPT_IN")]
    pub no_opt_in: Vec<String>,
    /// The control server's address. It runs by default, on a free loopback port
    /// (`127.0.0.1:0`), with a random token: the Questions page at `/`, JSON-RPC over HTTP
    /// and WebSocket, the `questions` CLI, and this bridge in the user's `inbox`. Its URL and
    /// token are printed on stderr. Loopback only, unless --control-allow-remote.
    #[arg(long, value_name = "ADDR", conflicts_with = "no_control")]
    pub control: Option<String>,
    /// Run no control server: no page, no CLI, not in the inbox. A question the client
    /// cannot show then has nowhere to wait: the agent gets its "unsupported" ending, and
    /// agents are offered forms and the vendors' opt-ins only when the client itself renders
    /// forms or the extension.
    #[arg(long)]
    pub no_control: bool,
    /// Let --control listen on a non-loopback address (anyone who can reach it and has the
    /// token can answer questions; there is no TLS).
    #[arg(long, requires = "control")]
    pub control_allow_remote: bool,
    /// Write the control token to this file (mode 0600). The token is random unless
    /// $ACP_QUESTION_BRIDGE_TOKEN is set. Inside the wall (--sandbox), only beneath
    /// $XDG_STATE_HOME/acp-question-bridge or $XDG_RUNTIME_DIR/acp-question-bridge, which
    /// every bridge's wall hides from its agent.
    #[arg(long, value_name = "PATH", conflicts_with = "no_control")]
    pub control_token_file: Option<PathBuf>,
    /// Do not list this bridge in the per-user registry that `inbox` reads (it is listed
    /// while its control server runs, by default).
    #[arg(long)]
    pub no_register: bool,
    /// Also publish this bridge's pending questions to this NATS server (JetStream), for an
    /// inbox on another machine (`inbox --nats`), and take answers from there (needs the
    /// control server). `nats://HOST:PORT` or `tls://...`; NATS down never holds up a
    /// question.
    #[arg(long, value_name = "URL", conflicts_with = "no_control")]
    pub nats: Option<String>,
    /// NATS credentials file (`.creds`). Inside the wall (--sandbox), only beneath
    /// $XDG_STATE_HOME/acp-question-bridge or $XDG_RUNTIME_DIR/acp-question-bridge, as
    /// --control-token-file.
    #[arg(long, value_name = "FILE", requires = "nats")]
    pub nats_creds: Option<PathBuf>,
    /// Prefix of the NATS buckets and subjects, so one NATS serves many users.
    #[arg(long, value_name = "PREFIX", default_value = "acpqb")]
    pub nats_prefix: String,
    /// Replicas of the NATS buckets and stream (1 to 5). Default: 3 on a cluster, 1 on a
    /// single server; an existing one with fewer is raised to it.
    #[arg(long, value_name = "N", requires = "nats", value_parser = clap::value_parser!(u8).range(1..=5))]
    pub nats_replicas: Option<u8>,
    /// Append every question event (requested, delivered, answered/rejected and by whom,
    /// late answers with their content) to this file as JSON lines, synced to disk.
    #[arg(long, value_name = "PATH")]
    pub journal: Option<PathBuf>,
    /// Run this command for every question, with the question as JSON on its stdin and
    /// ACP_QUESTION_URL set to the Questions page (without its token). Split into words like
    /// a shell would, but run without one (write `sh -c '...'` for one). Runs inside the
    /// agent's wall when the agent does. Killed after 10 s.
    #[arg(long, value_name = "COMMAND")]
    pub on_question: Option<String>,
    /// Also give the --on-question command the page's token (ACP_QUESTION_TOKEN), which
    /// answers questions: only for a command that runs nothing the agent could have written.
    #[arg(long, requires = "on_question")]
    pub on_question_token: bool,
    #[command(flatten)]
    pub ring: RingArgs,
    /// Working directory of the agent.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// An approval policy file (TOML, docs/POLICY.md), in the user's tier before the user's
    /// own $XDG_CONFIG_HOME/acp-question-bridge/policy.toml; repeatable. It must exist.
    #[arg(long = "policy", value_name = "FILE", conflicts_with = "no_policy")]
    pub policy: Vec<PathBuf>,
    /// Apply no approval policy at all: every tool approval is asked.
    #[arg(long)]
    pub no_policy: bool,
    /// The wall around the agent (docs/SECURITY.md, "The agent itself"): `own-files` (on
    /// Linux, where the kernel can) runs the agent and all it starts where the bridge's
    /// files cannot be changed or read and its process not reached; `off` runs it as the
    /// user, able to do all the user can.
    /// `workspace` walls the agent in further: it writes only in the session's folder, the
    /// temp folders, its own state folders and `--sandbox-write` paths, and the policy's
    /// `Read(…)` and `Edit(…)` denies of a file or a whole folder are kept by the kernel.
    #[arg(long, value_enum, default_value_t = crate::wall::Mode::OwnFiles)]
    pub sandbox: crate::wall::Mode,
    /// With `--sandbox workspace`: one more folder or file the agent may write; repeatable.
    #[arg(long, value_name = "PATH")]
    pub sandbox_write: Vec<PathBuf>,
    /// Run this agent of the ACP Registry, by its id (`acp-question-bridge agents` lists
    /// them), instead of a command after `--`; what follows `--` is added to its arguments
    /// (options only: a program there is a usage error).
    /// Its binary is downloaded once into the cache (checked, then unpacked); npx and uvx
    /// packages run as the registry gives them.
    #[arg(long = "agent", value_name = "ID")]
    pub agent_id: Option<String>,
    /// The registry --agent reads: a file, or an https:// URL (cached; used from the cache
    /// when offline) [default: the official ACP Registry]
    #[arg(long, value_name = "FILE|URL")]
    pub agent_registry: Option<String>,
    /// Keep the agent and its sessions for DURATION when no client is attached (the editor
    /// quit, crashed, reloaded, or lost its SSH connection): the agent's turn goes on, its
    /// questions wait on the page, the CLI, the inbox and the phone, and the editor started
    /// again with the same command line in the same folder takes its sessions back with
    /// `session/load` (docs/GUIDE.md, "Close the editor, answer on the phone, come back").
    /// The process the editor starts is then a front: the agent is held by a process in a
    /// session of its own. `0` ends the agent as soon as the client leaves.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub linger: Option<Duration>,
    /// Internal: run as the holder that a `--linger` front started, listening here.
    #[arg(long, value_name = "SOCKET", hide = true, requires = "linger")]
    pub hold_socket: Option<PathBuf>,
    /// The agent command and its arguments, after `--`.
    #[arg(last = true, value_name = "AGENT")]
    pub agent: Vec<String>,
}

/// `--client-dialect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientDialect {
    Auto,
    Extension,
    Elicitation,
    Permission,
    /// Never show questions to the client: they wait on the control server, the page and
    /// the CLI (not with --no-control).
    Control,
}

impl ClientDialect {
    /// The forced dialect, or `None` for auto.
    pub fn forced(self) -> Option<crate::questions::Dialect> {
        use crate::questions::Dialect;
        match self {
            ClientDialect::Auto => None,
            ClientDialect::Extension => Some(Dialect::Extension),
            ClientDialect::Elicitation => Some(Dialect::Elicitation),
            ClientDialect::Permission => Some(Dialect::Permission),
            ClientDialect::Control => Some(Dialect::Control),
        }
    }
}

/// The bridge's runtime: one thread, with I/O and timers, as `cat` is one thread. A line
/// goes from the read to the router to the write on the thread that read it, with no
/// other thread to wake and no lock between them: two workers handed each read across
/// threads, at several futex calls and context switches per MiB relayed (docs/BENCHMARKS.md,
/// "Counts"). What may take long runs elsewhere already: the policy on its own thread, files
/// written on the blocking pool.
pub fn bridge_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// The inbox's runtime: two workers whatever the number of cores, so its threads (and
/// memory) do not grow with the machine; with I/O and timers.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// Parses `500ms`, `3s`, `2m`, `1h` (and combinations such as `1m30s`).
/// When a question rings (docs/GUIDE.md, "When each surface rings"): the bridge's and the
/// inbox's.
#[derive(clap::Args, Debug, Clone)]
pub struct RingArgs {
    /// Ring for a question (the --on-question command, the page's notifications, Web Push)
    /// only once it has waited this long: one answered, rejected or withdrawn before never
    /// rings. `0` rings at once. The listing, the journal and the events show it at once.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration)]
    pub notify_after: Duration,
    /// Ring again every DURATION while the question is still pending, at most 10 times
    /// (off by default).
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub remind_every: Option<Duration>,
    /// Ring nothing while the user is at the desk: for DURATION after they answered a
    /// question or sent a prompt in the editor (or an editor that came back was shown the
    /// questions waiting), and while the Questions page is open and
    /// visible on this machine. A question still pending then rings when they leave. `0`:
    /// only the page counts.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub quiet_at_desk: Duration,
}

impl RingArgs {
    pub fn config(&self) -> crate::ring::RingConfig {
        crate::ring::RingConfig {
            after: self.notify_after,
            remind_every: self.remind_every,
            quiet_at_desk: self.quiet_at_desk,
        }
    }
}

/// A duration over zero.
fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("`{s}`: must be more than 0")),
        d => Ok(d),
    }
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| format!("invalid duration `{s}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("soon").is_err());
    }

    /// The bridge's flags alone (the binary's `Cli` adds the subcommands).
    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        bridge: BridgeArgs,
    }

    #[test]
    fn agent_after_double_dash() {
        use clap::Parser as _;
        let cli = Cli::try_parse_from([
            "acp-question-bridge",
            "--shutdown-grace",
            "500ms",
            "--",
            "agent",
            "--flag",
        ])
        .unwrap();
        assert_eq!(cli.bridge.agent, vec!["agent", "--flag"]);
        assert_eq!(cli.bridge.shutdown_grace, Duration::from_millis(500));
        assert_eq!(cli.bridge.max_line_bytes, 64 << 20);
        assert_eq!(cli.bridge.max_in_flight, 16_384);
        let cli = Cli::try_parse_from(["acp-question-bridge", "--max-in-flight", "10", "--", "a"]);
        assert_eq!(cli.unwrap().bridge.max_in_flight, 10);
        let zero = Cli::try_parse_from(["acp-question-bridge", "--max-in-flight", "0", "--", "a"]);
        assert!(zero.is_err(), "a cap of 0 would refuse everything");
    }

    #[test]
    fn cli_is_consistent() {
        <Cli as clap::CommandFactory>::command().debug_assert();
        // The binary's whole command line: `src/main.rs`.
    }
}
