//! The remote listener's certificate: the user's own (`--tls-cert`/`--tls-key`, PEM), or one
//! made once and kept in the state folder (`remote-cert.pem`, `remote-key.pem`, 0600), whose
//! SHA-256 fingerprint the inbox prints so the person can check it on the phone.
//!
//! Invariant: TLS 1.3 only (rustls with ring, no OpenSSL): a client cannot be talked down to
//! an older version, because there is none to fall back to.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::devices::Store;

/// Why the certificate cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {0}: {1}")]
    Read(String, String),
    #[error("cannot make a certificate: {0}")]
    Generate(String),
    #[error("cannot keep the certificate in the state folder: {0}")]
    Keep(std::io::Error),
    #[error("the certificate and key do not make a TLS server: {0}")]
    Config(rustls::Error),
}

/// The server's TLS configuration and its certificate's SHA-256 fingerprint
/// (`AB:CD:...`, as browsers show it).
pub struct Identity {
    pub config: Arc<rustls::ServerConfig>,
    pub fingerprint: String,
}

/// The user's certificate and key, or the one kept in `store` (made on first use, for
/// `names`: the host names and addresses the phone may use).
pub fn identity(
    own: Option<(&Path, &Path)>,
    store: &Store,
    names: &[String],
) -> Result<Identity, TlsError> {
    let (cert_pem, key_pem) = match own {
        Some((cert, key)) => (read(cert)?, read(key)?),
        None => kept(store, names)?,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Read("the certificate".into(), e.to_string()))?;
    let Some(leaf) = certs.first() else {
        return Err(TlsError::Read(
            "the certificate".into(),
            "no PEM certificate in it".into(),
        ));
    };
    let fingerprint = fingerprint(leaf);
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| TlsError::Read("the key".into(), e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(TlsError::Config)?;
    Ok(Identity {
        config: Arc::new(config),
        fingerprint,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read(path.display().to_string(), e.to_string()))
}

/// The kept certificate and key, made now if there are none.
fn kept(store: &Store, names: &[String]) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    let (cert, key) = (
        store.dir().join("remote-cert.pem"),
        store.dir().join("remote-key.pem"),
    );
    if let (Ok(c), Ok(k)) = (std::fs::read(&cert), std::fs::read(&key)) {
        return Ok((c, k));
    }
    let made = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|e| TlsError::Generate(e.to_string()))?;
    let (c, k) = (made.cert.pem(), made.signing_key.serialize_pem());
    store
        .write("remote-key.pem", k.as_bytes())
        .map_err(TlsError::Keep)?;
    store
        .write("remote-cert.pem", c.as_bytes())
        .map_err(TlsError::Keep)?;
    tracing::info!(dir = %store.dir().display(), "made a self-signed certificate for the remote listener");
    Ok((c.into_bytes(), k.into_bytes()))
}

/// SHA-256 of a certificate's DER, as `AB:CD:...`.
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, cert.as_ref());
    d.as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}
