//! A Web Push service that a test owns: HTTPS on a loopback address, with a certificate of
//! its own (given to the inbox by `--push-ca`). It hands each request it receives to the
//! test and answers with the status the test sets; or, as a "dark" service, it takes
//! connections and never answers.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// One request the service received.
#[derive(Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The browser's side of a subscription: its key pair and auth secret.
pub struct Browser {
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Browser {
    pub fn new(seed: u8) -> Browser {
        Browser {
            secret: p256::SecretKey::from_slice(&[seed; 32]).unwrap(),
            auth: [seed ^ 0x5a; 16],
        }
    }

    /// `PushSubscription.toJSON()` for `endpoint`.
    pub fn subscription(&self, endpoint: &str) -> String {
        let public = self.secret.public_key().to_sec1_bytes();
        json!({"endpoint": endpoint, "expirationTime": null,
               "keys": {"p256dh": B64.encode(public), "auth": B64.encode(self.auth)}})
        .to_string()
    }

    /// What a push's body decrypts to.
    pub fn read(&self, push: &Received) -> Value {
        let plain = web_push_native::decrypt(
            push.body.clone(),
            &self.secret,
            web_push_native::Auth::from_slice(&self.auth),
        )
        .expect("the payload decrypts with the subscription's keys");
        serde_json::from_slice(&plain).expect("the payload is JSON")
    }
}

pub struct PushService {
    pub addr: SocketAddr,
    /// Its root certificate (PEM), for `--push-ca`.
    pub ca: PathBuf,
    pub received: mpsc::UnboundedReceiver<Received>,
    /// The status it answers with (201 at first).
    pub status: Arc<AtomicU16>,
}

impl PushService {
    /// `HOST:PORT`, for `--push-service`.
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// A service on `ip` (port 0), its certificate written into `dir`.
    pub async fn start(ip: &str, dir: &Path, dark: bool) -> PushService {
        let made = rcgen::generate_simple_self_signed(vec![ip.to_owned()]).unwrap();
        let ca = dir.join(format!("push-ca-{ip}.pem"));
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(&ca, made.cert.pem()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![made.cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, received) = mpsc::unbounded_channel();
        let status = Arc::new(AtomicU16::new(201));
        let answer = status.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((tcp, _)) = listener.accept().await {
                if dark {
                    // Taken, never read nor answered (until the test ends).
                    held.push(tcp);
                    continue;
                }
                let (acceptor, tx, answer) = (acceptor.clone(), tx.clone(), answer.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Some(req) = read_request(&mut tls).await else {
                        return;
                    };
                    let _ = tx.send(req);
                    let status = answer.load(Ordering::SeqCst);
                    let reply = format!(
                        "HTTP/1.1 {status} Whatever\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    );
                    let _ = tls.write_all(reply.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        PushService {
            addr,
            ca,
            received,
            status,
        }
    }

    /// The next request, within [`super::WAIT`].
    pub async fn next(&mut self) -> Received {
        tokio::time::timeout(super::WAIT, self.received.recv())
            .await
            .expect("a push reaches the service in time")
            .expect("the service runs")
    }
}

/// Reads what comes next onto `to`; `None` at the end of the stream or after [`super::WAIT`].
async fn more<S: AsyncReadExt + Unpin>(s: &mut S, buf: &mut [u8], to: &mut Vec<u8>) -> Option<()> {
    let n = tokio::time::timeout(super::WAIT, s.read(buf))
        .await
        .ok()?
        .ok()?;
    to.extend_from_slice(&buf[..n]);
    (n > 0).then_some(())
}

/// One HTTP/1.1 request with a `content-length` body.
async fn read_request<S: AsyncReadExt + Unpin>(s: &mut S) -> Option<Received> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        more(s, &mut buf, &mut raw).await?;
    };
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = raw[end + 4..].to_vec();
    while body.len() < len {
        more(s, &mut buf, &mut body).await?;
    }
    Some(Received {
        method,
        path,
        headers,
        body,
    })
}
