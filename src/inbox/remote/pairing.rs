//! What the person sees of pairing: the link for a fresh pairing code and its QR code on
//! stderr, when `inbox --remote` starts and on `inbox pair` (`src/tools/inbox.rs`).

use std::io::Write;
use std::time::{Duration, SystemTime};

use super::devices::Store;

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
    say_link(&mut err, base, fingerprint, &link, minutes);
    Ok(())
}

/// What an inbox with `--remote` says as it starts: the listener and its fingerprint, and
/// the pairing link and code only when stderr is a terminal. Elsewhere (a service's
/// journal, an editor's log) any process of the user could read the code, pair a device
/// of its own and answer the questions (the agent's code among them): `inbox pair`, run in
/// a terminal, makes one.
pub fn announce_at_start(
    store: &Store,
    base: &str,
    fingerprint: &str,
    ttl: Duration,
) -> std::io::Result<()> {
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return announce(store, base, fingerprint, ttl);
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "acp-question-bridge: remote listener (TLS) on {base}\n\
         acp-question-bridge: certificate SHA-256 fingerprint: {fingerprint}\n\
         acp-question-bridge: pair a phone: run `acp-question-bridge inbox pair` in a terminal (the code is shown only on a terminal)"
    );
    Ok(())
}

/// The link, its QR code and the listener, to `err`.
fn say_link(err: &mut impl Write, base: &str, fingerprint: &str, link: &str, minutes: u64) {
    let _ = writeln!(
        err,
        "acp-question-bridge: remote listener (TLS) on {base}\n\
         acp-question-bridge: certificate SHA-256 fingerprint: {fingerprint}\n\
         acp-question-bridge: pair a phone: scan the code below or open this link (once, within {minutes} min):\n\
         {link}\n{}",
        qr(link)
    );
}
