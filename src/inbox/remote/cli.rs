//! What the person sees of pairing: the link and its QR code when `inbox --remote` starts
//! and on `inbox pair`, and `inbox devices list|revoke`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use super::devices::Store;

/// `inbox pair` and `inbox devices`: beside a running inbox (they share its state folder).
#[derive(Debug, clap::Subcommand)]
pub enum InboxCommand {
    /// Print a fresh pairing link and its QR code for the running inbox's --remote listener.
    Pair {
        /// How long the code is good for (once).
        #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::cli::parse_duration)]
        ttl: std::time::Duration,
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

fn fail(code: u8, msg: &str) -> ExitCode {
    crate::logging::fail("acp-question-bridge inbox", code, msg)
}

/// The pairing link for a fresh code on `base` (`https://HOST:PORT/`).
pub fn link(base: &str, code: &str) -> String {
    format!("{base}pair#code={code}")
}

/// The link as a QR code of terminal characters (two rows of modules per line).
pub fn qr(link: &str) -> String {
    use qrcode::render::unicode::Dense1x2;
    match qrcode::QrCode::new(link.as_bytes()) {
        Ok(code) => code
            .render::<Dense1x2>()
            .dark_color(Dense1x2::Light)
            .light_color(Dense1x2::Dark)
            .quiet_zone(true)
            .build(),
        Err(e) => format!("(no QR code: {e})"),
    }
}

/// Prints on stderr the listener, the certificate's fingerprint, and a pairing link (on
/// its own line) with its QR code, for a code good for `ttl`.
pub fn announce(
    store: &Store,
    base: &str,
    fingerprint: &str,
    ttl: Duration,
) -> std::io::Result<()> {
    let code = store.new_code(SystemTime::now(), ttl)?;
    let link = link(base, &code);
    let minutes = ttl.as_secs().div_ceil(60);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "acp-question-bridge: remote listener (TLS) on {base}\n\
         acp-question-bridge: certificate SHA-256 fingerprint: {fingerprint}\n\
         acp-question-bridge: pair a phone: scan the code below or open this link (once, within {minutes} min):\n\
         {link}\n{}",
        qr(&link)
    );
    Ok(())
}

/// `inbox pair` and `inbox devices ...`.
pub fn main(command: InboxCommand, state: &Path) -> ExitCode {
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
            match announce(&store, base, fingerprint, ttl) {
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
                crate::logging::say("acp-question-bridge inbox", &format!("revoked {name:?}"));
                ExitCode::SUCCESS
            }
            Ok(false) => fail(1, &format!("no device named {name:?}")),
            Err(e) => fail(1, &format!("cannot revoke: {e}")),
        },
    }
}
