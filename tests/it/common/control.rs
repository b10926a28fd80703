//! The control server from a test: its JSON-RPC over HTTP (`jsonrpsee`'s client) and the
//! `questions` CLI of the real binary.

use jsonrpsee::core::client::ClientT;
use jsonrpsee::core::params::ObjectParams;
use jsonrpsee_http_client::{HeaderMap, HeaderValue, HttpClient, HttpClientBuilder};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::WAIT;

/// An HTTP JSON-RPC client of the control server at `base`, with its token.
pub fn http(base: &str, token: &str) -> HttpClient {
    let mut h = HeaderMap::new();
    h.insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    HttpClientBuilder::default()
        .set_headers(h)
        .request_timeout(WAIT)
        .build(base)
        .unwrap()
}

/// JSON-RPC named params from a JSON object.
pub fn params(v: Value) -> ObjectParams {
    let mut p = ObjectParams::new();
    for (k, v) in v.as_object().expect("an object") {
        p.insert(k, v.clone()).unwrap();
    }
    p
}

/// `method` with `p` on the control server: its result, or its error's text.
pub async fn call(c: &HttpClient, method: &str, p: Value) -> Result<Value, String> {
    tokio::time::timeout(WAIT, c.request::<Value, _>(method, params(p)))
        .await
        .expect("the control server answers in time")
        .map_err(|e| e.to_string())
}

/// A WebSocket client of the control server at `base` (`http://ADDR/`), with its token.
pub async fn ws(base: &str, token: &str) -> jsonrpsee_ws_client::WsClient {
    let url = base.replacen("http://", "ws://", 1);
    tokio::time::timeout(
        WAIT,
        acp_question_bridge::control::client::ws_client(&url, token),
    )
    .await
    .expect("connects in time")
    .expect("connects")
}

/// A WebSocket client of the control server at `base`, subscribed to question events (keep
/// the client: the subscription ends with it).
pub async fn subscribed(
    base: &str,
    token: &str,
) -> (
    jsonrpsee_ws_client::WsClient,
    jsonrpsee::core::client::Subscription<Value>,
) {
    use jsonrpsee::core::client::SubscriptionClientT;
    let c = ws(base, token).await;
    let sub = tokio::time::timeout(
        WAIT,
        c.subscribe(
            "questions.subscribe",
            jsonrpsee::rpc_params![],
            "questions.unsubscribe",
        ),
    )
    .await
    .expect("subscribed in time")
    .expect("questions.subscribe");
    (c, sub)
}

/// `questions.list`.
pub async fn list(c: &HttpClient) -> Vec<Value> {
    let v = call(c, "questions.list", serde_json::json!({}))
        .await
        .expect("questions.list");
    serde_json::from_value(v).expect("a list")
}

/// Waits until `questions.list` holds `n` questions; returns them.
pub async fn list_until(c: &HttpClient, n: usize) -> Vec<Value> {
    list_until_within(c, n, WAIT).await
}

/// [`list_until`], waiting at most `bound`.
pub async fn list_until_within(c: &HttpClient, n: usize, bound: std::time::Duration) -> Vec<Value> {
    let start = std::time::Instant::now();
    loop {
        let l = list(c).await;
        if l.len() == n {
            return l;
        }
        assert!(
            start.elapsed() < bound,
            "questions.list never held {n} questions: {l:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `acp-question-bridge questions ARGS`: (exit code, stdout).
pub async fn cli(args: &[&str]) -> (i32, String) {
    let args: Vec<&str> = ["questions"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let (code, out, _) = super::run_bridge(&args).await;
    (code, out)
}

/// Sends one raw HTTP/1.1 request; returns the status line and the whole response.
pub async fn raw_http(base: &str, request: &str) -> (String, String) {
    let addr = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    tokio::time::timeout(WAIT, async {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(request.replace("{addr}", &addr).as_bytes())
            .await
            .unwrap();
        // Until the whole response is in: headers, then Content-Length bytes (or EOF).
        let mut out = Vec::new();
        let mut buf = [0u8; 16384];
        loop {
            let n = s.read(&mut buf).await.unwrap();
            out.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&out);
            let complete = text.split_once("\r\n\r\n").is_some_and(|(head, body)| {
                head.lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())
                            .flatten()
                    })
                    .is_some_and(|len| body.len() >= len)
            });
            if n == 0 || complete {
                break;
            }
        }
        let text = String::from_utf8_lossy(&out).into_owned();
        (text.lines().next().unwrap_or("").to_owned(), text)
    })
    .await
    .expect("the server answers in time")
}
