//! A test "phone" for the inbox's remote listener: HTTPS with its own cookie jar, trusting
//! exactly the certificate whose fingerprint the inbox printed (as a person does who checks
//! it once on the phone), plain HTTP/1.1 requests and a WebSocket handshake.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::WAIT;

/// Trusts one certificate, by its SHA-256 fingerprint (`AB:CD:...`).
#[derive(Debug)]
struct Pinned {
    fingerprint: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let d = ring::digest::digest(&ring::digest::SHA256, end_entity.as_ref());
        let seen: Vec<String> = d.as_ref().iter().map(|b| format!("{b:02X}")).collect();
        if seen.join(":") == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "not the certificate the inbox printed".into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A TLS client configuration that trusts `fingerprint` only, for the given versions.
pub fn client_config(
    fingerprint: &str,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned {
            fingerprint: fingerprint.to_owned(),
            provider,
        }))
        .with_no_client_auth();
    Arc::new(config)
}

/// An HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

pub struct Phone {
    pub addr: SocketAddr,
    /// `HOST:PORT`, as in `Host` and `Origin`.
    pub authority: String,
    config: Arc<rustls::ClientConfig>,
    /// The source address it connects from.
    pub from: std::net::IpAddr,
    /// The device cookie (`aqb_device=...`), once paired.
    pub cookie: Option<String>,
}

impl Phone {
    /// A phone for the listener at `base` (`https://HOST:PORT/`).
    pub fn new(base: &str, fingerprint: &str) -> Phone {
        let authority = base
            .strip_prefix("https://")
            .and_then(|b| b.strip_suffix('/'))
            .expect("https://HOST:PORT/")
            .to_owned();
        Phone {
            addr: authority.parse().expect("an IP:PORT"),
            authority,
            config: client_config(fingerprint, &[&rustls::version::TLS13]),
            from: "127.0.0.1".parse().unwrap(),
            cookie: None,
        }
    }

    /// A TCP connection from [`Phone::from`].
    pub async fn tcp(&self) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(self.from, 0)).unwrap();
        tokio::time::timeout(WAIT, socket.connect(self.addr))
            .await
            .expect("connects in time")
            .expect("connects")
    }

    /// A TLS connection with `config`.
    pub async fn tls_with(
        &self,
        config: Arc<rustls::ClientConfig>,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = self.tcp().await;
        let name = ServerName::try_from(self.addr.ip().to_string()).unwrap();
        tokio::time::timeout(
            WAIT,
            tokio_rustls::TlsConnector::from(config).connect(name, tcp),
        )
        .await
        .expect("the handshake ends in time")
    }

    fn head(&self, method: &str, path: &str, extra: &[(&str, &str)], len: Option<usize>) -> String {
        let mut h = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n",
            self.authority
        );
        if let Some(c) = &self.cookie {
            h.push_str(&format!("cookie: {c}\r\n"));
        }
        for (k, v) in extra {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(n) = len {
            h.push_str(&format!("content-length: {n}\r\n"));
        }
        h.push_str("\r\n");
        h
    }

    /// One request on a connection of its own; a `Set-Cookie` of the device is kept.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&str>,
        extra: &[(&str, &str)],
    ) -> Reply {
        let mut tls = self.tls_with(self.config.clone()).await.expect("TLS");
        let mut req = self.head(method, path, extra, body.map(str::len));
        req.push_str(body.unwrap_or(""));
        tls.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        let _ = tokio::time::timeout(WAIT, tls.read_to_end(&mut raw))
            .await
            .expect("a reply in time");
        let reply = parse(&raw);
        for line in reply.head.lines() {
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("set-cookie: ") {
                let pair = v.split(';').next().unwrap_or("").trim().to_owned();
                if pair.starts_with("aqb_device=") {
                    // Keep the original case of the token.
                    let at = line.to_ascii_lowercase().find("aqb_device=").unwrap();
                    let rest = &line[at..];
                    self.cookie = Some(rest.split(';').next().unwrap().to_owned());
                }
            }
        }
        reply
    }

    /// The listener's own origin, as a browser sends it.
    pub fn origin(&self) -> String {
        format!("https://{}", self.authority)
    }

    /// Trades a pairing code for a device cookie.
    pub async fn pair(&mut self, code: &str, name: &str) -> Reply {
        let body = serde_json::json!({"code": code, "name": name}).to_string();
        let origin = self.origin();
        self.request(
            "POST",
            "/pair",
            Some(&body),
            &[("content-type", "application/json"), ("origin", &origin)],
        )
        .await
    }

    /// A JSON-RPC call over HTTPS: the reply, and its JSON when it is 200.
    pub async fn rpc(&mut self, method: &str, params: Value) -> (Reply, Option<Value>) {
        let body =
            serde_json::json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}).to_string();
        let origin = self.origin();
        let r = self
            .request(
                "POST",
                "/",
                Some(&body),
                &[("content-type", "application/json"), ("origin", &origin)],
            )
            .await;
        let v = (r.status == 200).then(|| serde_json::from_str(&r.body).unwrap());
        (r, v)
    }

    /// `questions.list` until it has `n` questions (within [`WAIT`]).
    pub async fn list_until(&mut self, n: usize) -> Vec<Value> {
        tokio::time::timeout(WAIT, async {
            loop {
                let (r, v) = self.rpc("questions.list", serde_json::json!([])).await;
                assert_eq!(r.status, 200, "{r:?}");
                let list = v.unwrap()["result"].as_array().cloned().unwrap_or_default();
                if list.len() == n {
                    return list;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the questions reach the inbox in time")
    }

    /// Opens a WebSocket (the page's connection): the stream once the server said 101, or
    /// the status it answered.
    pub async fn websocket(&self) -> Result<tokio_rustls::client::TlsStream<TcpStream>, u16> {
        let mut tls = self.tls_with(self.config.clone()).await.expect("TLS");
        let origin = self.origin();
        let head = self
            .head(
                "GET",
                "/",
                &[
                    ("upgrade", "websocket"),
                    ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
                    ("sec-websocket-version", "13"),
                    ("origin", &origin),
                ],
                None,
            )
            .replace("connection: close", "connection: Upgrade");
        tls.write_all(head.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let mut byte = [0u8; 1];
        while !got.ends_with(b"\r\n\r\n") {
            let n = tokio::time::timeout(WAIT, tls.read(&mut byte))
                .await
                .expect("the handshake reply in time")
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            got.push(byte[0]);
        }
        let status = parse(&got).status;
        if status == 101 {
            Ok(tls)
        } else {
            Err(status)
        }
    }
}

/// Parses an HTTP/1.1 response (chunked or not).
pub fn parse(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 || after.len() < n {
                break;
            }
            out.push_str(&after[..n]);
            rest = after[n..].trim_start_matches("\r\n");
        }
        out
    } else {
        body.to_owned()
    };
    Reply {
        status,
        head: head.to_owned(),
        body,
    }
}
