//! `acp-question-bridge inbox`: its flags, turned into the library's [`InboxConfig`] and
//! run; and `inbox pair`, `inbox devices list|revoke` beside a running inbox (they share
//! its state folder).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use acp_question_bridge::control::{self, ControlConfig};
use acp_question_bridge::inbox::remote::devices::Store;
use acp_question_bridge::inbox::remote::{self, pairing, push};
use acp_question_bridge::inbox::{nats, roster, run, state_dir, InboxConfig};
use acp_question_bridge::{cli, logging, notify};

/// `inbox` and its flags.
#[derive(Debug, clap::Args)]
pub struct InboxArgs {
    /// Serve the Questions page and the control API here (`127.0.0.1:0` picks a free
    /// port). Loopback only, unless --allow-remote.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Let --listen be a non-loopback address (anyone who can reach it and has the token
    /// can answer every agent's questions; there is no TLS).
    #[arg(long)]
    pub allow_remote: bool,
    /// Write the token to this file (mode 0600). Random unless $ACP_QUESTION_BRIDGE_TOKEN
    /// is set. Only beneath $XDG_STATE_HOME/acp-question-bridge or
    /// $XDG_RUNTIME_DIR/acp-question-bridge, which every bridge's wall hides from its agent.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Run this command for every new question of any bridge (as a bridge's
    /// --on-question: the question as JSON on stdin, with its `bridge`).
    #[arg(long, value_name = "COMMAND")]
    pub on_question: Option<String>,
    /// Also give the --on-question command the inbox's token (ACP_QUESTION_TOKEN), which
    /// answers every bridge's questions: only for a command that runs nothing an agent
    /// could have written.
    #[arg(long, requires = "on_question")]
    pub on_question_token: bool,
    #[command(flatten)]
    pub ring: cli::RingArgs,
    /// The folder of running bridges to read, not the ACP Registry of agents (default:
    /// $ACP_QUESTION_BRIDGE_REGISTRY, else $XDG_RUNTIME_DIR/acp-question-bridge, else
    /// ~/.local/state/acp-question-bridge/bridges).
    #[arg(long, value_name = "DIR")]
    pub registry: Option<PathBuf>,
    /// Follow the bridges over this NATS server (with JetStream) instead of the local
    /// registry: `nats://HOST:PORT` or `tls://...`.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// NATS credentials file (`.creds`).
    #[arg(long, value_name = "FILE", requires = "nats")]
    pub nats_creds: Option<PathBuf>,
    /// Prefix of the NATS buckets and subjects (as the bridges').
    #[arg(long, value_name = "PREFIX", default_value = "acpqb")]
    pub nats_prefix: String,
    /// Replicas of the NATS buckets and stream (as the bridges').
    #[arg(long, value_name = "N", requires = "nats", value_parser = clap::value_parser!(u8).range(1..=5))]
    pub nats_replicas: Option<u8>,
    /// Log level or filter; RUST_LOG overrides.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    pub log_level: String,
    /// Also serve the page and the API to paired devices (a phone) on this address, over
    /// TLS only, e.g. `0.0.0.0:8443` (port 0 picks a free one). Prints a pairing link and
    /// its QR code when stderr is a terminal (elsewhere: `inbox pair`, in a terminal). The
    /// loopback listener stays as it is.
    #[arg(long, value_name = "ADDR:PORT")]
    pub remote: Option<String>,
    /// The host name or address the pairing link uses (default: this machine's first
    /// non-loopback address when --remote is 0.0.0.0, else its address).
    #[arg(long, value_name = "HOST", requires = "remote")]
    pub remote_host: Option<String>,
    /// Your own certificate for --remote (PEM; e.g. from mkcert, or your private network's).
    /// Without it, a self-signed one is made once and kept in the state folder.
    #[arg(long, value_name = "PEM", requires_all = ["remote", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires_all = ["remote", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// The contact a push service may write to about this inbox's pushes (the VAPID
    /// `sub`: a `mailto:` or `https:` URL; Apple's push service wants a real one).
    #[arg(
        long,
        value_name = "URL",
        requires = "remote",
        default_value = "mailto:acp-question-bridge@example.com"
    )]
    pub push_contact: String,
    /// Also send pushes to this push service (`HOST` or `HOST:PORT`, as in its endpoints),
    /// beside the browsers' own (FCM, Mozilla, Apple, Microsoft). Repeatable.
    #[arg(long, value_name = "HOST[:PORT]", requires = "remote")]
    pub push_service: Vec<String>,
    /// Also trust these root certificates (PEM) for push services.
    #[arg(long, value_name = "PEM", requires = "remote")]
    pub push_ca: Option<PathBuf>,
    /// Where paired devices, pairing codes and the made certificate are kept (default:
    /// $XDG_STATE_HOME/acp-question-bridge/inbox, else ~/.local/state/acp-question-bridge/inbox).
    #[arg(long, value_name = "DIR", global = true)]
    pub state_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<InboxCommand>,
}

/// `inbox pair` and `inbox devices`: beside a running inbox (they share its state folder).
#[derive(Debug, clap::Subcommand)]
pub enum InboxCommand {
    /// Print a fresh pairing link and its QR code for the running inbox's --remote listener.
    Pair {
        /// How long the code is good for (once).
        #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = cli::parse_duration)]
        ttl: Duration,
    },
    /// The paired devices.
    Devices {
        #[command(subcommand)]
        what: DevicesCommand,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum DevicesCommand {
    /// Each paired device's name and when it was paired.
    List,
    /// Unpair a device: refused at its next request, its open connection closed.
    Revoke { name: String },
}

/// Why the inbox's token file may not be at `path`, if it may not: its token answers every
/// bridge's questions, so it is kept only beneath a folder every bridge's wall hides from
/// its agent (on Linux, where bridges build walls).
fn exposed_token_file(path: &std::path::Path) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let folders = acp_question_bridge::wall::state_folders();
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let beneath = folder.canonicalize().is_ok_and(|f| {
        folders
            .iter()
            .filter_map(|d| d.canonicalize().ok())
            .any(|d| f.starts_with(d))
    });
    (!beneath).then(|| {
        format!(
            "--token-file {}: the inbox's token answers every bridge's questions, so it is kept only where every bridge's wall hides it from its agent; put it beneath {} (made 0700), or give the token in $ACP_QUESTION_BRIDGE_TOKEN",
            path.display(),
            folders.first().map(|d| d.display().to_string()).unwrap_or_default()
        )
    })
}

/// A one-line error of `inbox` on stderr, and its exit code.
fn fail(code: u8, msg: &str) -> ExitCode {
    logging::fail("acp-question-bridge inbox", code, msg)
}

/// Runs `inbox`: exit code 0 when stopped by a signal, 1 when it cannot start, 2 on a
/// command line that cannot work.
pub fn main(a: InboxArgs) -> ExitCode {
    let _log = match logging::init(&a.log_level, logging::LogFormat::Text, None) {
        Ok(guard) => guard,
        Err(e) => return fail(2, &format!("cannot set up logging: {e}")),
    };
    if let Some(command) = a.command {
        return beside(command, &state_dir(a.state_dir));
    }
    if let Some(why) = a.token_file.as_deref().and_then(exposed_token_file) {
        return fail(2, &why);
    }
    if let Some(Err(e)) = a.nats.as_deref().map(nats::parse_servers) {
        return fail(2, &e);
    }
    let addr = match control::parse_addr(&a.listen, a.allow_remote) {
        Ok(addr) => addr,
        Err(e) => {
            return fail(
                2,
                &e.to_string()
                    .replace("--control-allow-remote", "--allow-remote"),
            )
        }
    };
    let token = match std::env::var(control::TOKEN_ENV) {
        Ok(t) if !t.trim().is_empty() => t.trim().to_owned(),
        _ => match control::random_token() {
            Ok(t) => t,
            Err(e) => return fail(1, &e.to_string()),
        },
    };
    let on_question = match a.on_question.as_deref().map(notify::parse_command) {
        None => None,
        Some(Ok(argv)) => Some(argv),
        Some(Err(e)) => return fail(2, &e),
    };
    let remote = match a.remote.as_deref().map(|r| control::parse_addr(r, true)) {
        None => None,
        Some(Err(e)) => return fail(2, &e.to_string().replace("--control", "--remote")),
        Some(Ok(addr)) => Some(remote::RemoteConfig {
            addr,
            host: a.remote_host,
            own_cert: a.tls_cert.zip(a.tls_key),
            state: state_dir(a.state_dir),
            push: push::PushConfig {
                contact: a.push_contact,
                services: a.push_service,
                ca: a.push_ca,
            },
        }),
    };
    let cfg = InboxConfig {
        remote,
        control: ControlConfig {
            addr,
            allow_remote: a.allow_remote,
            token,
            token_file: a.token_file,
            token_hint: control::INBOX_TOKEN_HINT,
            implicit: false,
        },
        roster: a.registry.unwrap_or_else(roster::dir),
        on_question,
        on_question_token: a.on_question_token,
        ring: a.ring.config(),
        nats: a.nats.map(|url| nats::NatsConfig {
            url,
            creds: a.nats_creds,
            prefix: a.nats_prefix.clone(),
            replicas: a.nats_replicas.map(usize::from),
        }),
    };
    if let Err(e) = nats::check_prefix(&a.nats_prefix) {
        return fail(2, &e);
    }
    let runtime = match cli::runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(1, &format!("cannot start runtime: {e}")),
    };
    match runtime.block_on(run(cfg)) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => fail(1, &e.to_string()),
    }
}

/// `inbox pair` and `inbox devices ...`.
fn beside(command: InboxCommand, state: &Path) -> ExitCode {
    let store = match Store::open(state) {
        Ok(s) => s,
        Err(e) => return fail(1, &format!("the state folder {}: {e}", state.display())),
    };
    match command {
        InboxCommand::Pair { ttl } => {
            let remote = std::fs::read(state.join("remote.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
            let Some(remote) = remote else {
                return fail(
                    1,
                    &format!(
                        "no inbox with --remote is running with the state folder {} (start `acp-question-bridge inbox --remote ADDR:PORT`)",
                        state.display()
                    ),
                );
            };
            let base = remote["base"].as_str().unwrap_or_default();
            let fingerprint = remote["fingerprint"].as_str().unwrap_or_default();
            match pairing::announce(&store, base, fingerprint, ttl) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(1, &format!("cannot make a pairing code: {e}")),
            }
        }
        InboxCommand::Devices {
            what: DevicesCommand::List,
        } => match store.devices() {
            Ok(devices) => {
                let mut out = std::io::stdout().lock();
                for d in devices {
                    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(d.paired_at);
                    let _ = writeln!(
                        out,
                        "{}\tpaired {}",
                        d.name,
                        humantime::format_rfc3339_seconds(at)
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(1, &format!("cannot read the devices: {e}")),
        },
        InboxCommand::Devices {
            what: DevicesCommand::Revoke { name },
        } => match store.revoke(&name) {
            Ok(true) => {
                logging::say("acp-question-bridge inbox", &format!("revoked {name:?}"));
                ExitCode::SUCCESS
            }
            Ok(false) => fail(1, &format!("no device named {name:?}")),
            Err(e) => fail(1, &format!("cannot revoke: {e}")),
        },
    }
}
