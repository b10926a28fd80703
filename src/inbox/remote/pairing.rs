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
