//! Clients of a control server (a bridge's or an inbox's): HTTP and WebSocket with the
//! bearer token and the server's own response bound. The `questions` command uses them
//! (`src/tools/questions.rs`), the inbox follows each bridge with [`ws_client`], and so do
//! tests.

use std::time::Duration;

use jsonrpsee_http_client::{HeaderMap, HeaderValue, HttpClient, HttpClientBuilder};
use jsonrpsee_ws_client::{WsClient, WsClientBuilder};

use super::MAX_RESPONSE;

fn headers(token: &str) -> Result<HeaderMap, String> {
    let mut h = HeaderMap::new();
    let v = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the token contains characters a header cannot carry".to_owned())?;
    h.insert("authorization", v);
    Ok(h)
}

/// An HTTP client with the token for the control server at `url` (`http://ADDR/`); each
/// call is given 30 s.
pub fn http_client(url: &str, token: &str) -> Result<HttpClient, String> {
    HttpClientBuilder::default()
        .set_headers(headers(token)?)
        .max_response_size(MAX_RESPONSE)
        .request_timeout(Duration::from_secs(30))
        .build(url)
        .map_err(|e| e.to_string())
}

/// A WebSocket client with the token (the CLI's `watch`, the inbox, and tests).
pub async fn ws_client(url: &str, token: &str) -> Result<WsClient, String> {
    WsClientBuilder::default()
        .set_headers(headers(token)?)
        .max_response_size(MAX_RESPONSE)
        .build(url)
        .await
        .map_err(|e| e.to_string())
}
