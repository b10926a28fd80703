//! The fake's loopback HTTP/1.1 server: it reads each request (`Content-Length` or chunked
//! bodies, keep-alive), lets the dialect classify and answer it, and keeps the log of every
//! request, which a test waits on. Minimal test code, not a general server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::{Answer, Dialect, Kind, Request};
use crate::common::WAIT;

/// A running server; it stops when this is dropped.
pub(super) struct Server {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<Request>>>,
    count: watch::Receiver<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Handler = dyn Fn(&mut Request) -> Answer + Send + Sync;

impl Server {
    /// Listens on 127.0.0.1 (a free port); `answer` classifies (sets the request's `kind`)
    /// and answers each request.
    pub(super) async fn start(
        dialect: Dialect,
        answer: impl Fn(&mut Request) -> Answer + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (count_tx, count) = watch::channel(0);
        let answer: Arc<Handler> = Arc::new(answer);
        let (kept, count_tx) = (log.clone(), Arc::new(count_tx));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (answer, kept, count) = (answer.clone(), kept.clone(), count_tx.clone());
                tokio::spawn(serve(stream, dialect, answer, kept, count));
            }
        });
        Self {
            addr,
            log,
            count,
            task,
        }
    }

    pub(super) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in arrival order.
    pub(super) fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }

    /// Waits (up to [`WAIT`]) for a request that satisfies `pred`, received so far or later.
    pub(super) async fn wait_for(&self, what: &str, pred: impl Fn(&Request) -> bool) -> Request {
        let mut count = self.count.clone();
        let found = tokio::time::timeout(WAIT, async {
            loop {
                if let Some(r) = self.log.lock().unwrap().iter().find(|r| pred(r)) {
                    return r.clone();
                }
                count.changed().await.expect("the fake's server stopped");
            }
        })
        .await;
        found.unwrap_or_else(|_| {
            let paths: Vec<String> = self.requests().iter().map(Request::line).collect();
            panic!("the fake model never got {what}; paths: {paths:?}")
        })
    }
}

/// Serves one connection: requests one after another (keep-alive) until EOF, an error, or
/// an answer that closes it.
async fn serve(
    stream: TcpStream,
    dialect: Dialect,
    answer: Arc<Handler>,
    log: Arc<Mutex<Vec<Request>>>,
    count: Arc<watch::Sender<usize>>,
) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    while let Some((mut request, close)) = read_request(&mut read, dialect).await {
        let head_only = request.method == "HEAD";
        let a = answer(&mut request);
        let close = close || a.close;
        let head = format!(
            "HTTP/1.1 {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n\
             request-id: req_rig\r\nx-request-id: req_rig\r\nconnection: {}\r\n\r\n",
            a.status,
            a.content_type,
            a.body.len(),
            if close { "close" } else { "keep-alive" }
        );
        log.lock().unwrap().push(request);
        count.send_modify(|n| *n += 1);
        let mut out = head.into_bytes();
        if !head_only {
            out.extend_from_slice(a.body.as_bytes());
        }
        if write.write_all(&out).await.is_err() || write.flush().await.is_err() || close {
            return;
        }
    }
}

/// Reads one request; `None` at EOF or on a malformed request. The flag: close after it.
async fn read_request<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    dialect: Dialect,
) -> Option<(Request, bool)> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await.ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).await.ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2]; // the data and its CRLF
            r.read_exact(&mut chunk).await.ok()?;
            if size == 0 {
                break; // (no trailers expected)
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = header("content-length") {
        body = vec![0; len.parse().ok()?];
        r.read_exact(&mut body).await.ok()?;
    }
    let close = header("connection").is_some_and(|v| v == "close");
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = Request {
        method,
        path,
        body,
        kind: Kind::Other,
        dialect,
    };
    Some((request, close))
}
