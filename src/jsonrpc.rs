//! Builders for the JSON-RPC messages the bridge itself creates.
//!
//! Owns the exact wire form of bridge-made messages. Everything here serializes a fresh
//! message; forwarded messages never pass through this module.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::envelope::RequestId;

/// JSON-RPC error codes the bridge uses.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const SERVER_ERROR: i64 = -32000;
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// ACP's "resource not found" (a session that is gone).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

fn to_line(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

/// An error response. `id` of `None` writes `"id":null`. The id is spliced as its exact
/// JSON text (`1e2` stays `1e2`), never re-serialized.
pub fn error(id: Option<&RequestId>, code: i64, message: &str, data: Option<Value>) -> Bytes {
    let data = data.map(|d| serde_json::to_string(&d).unwrap_or_else(|_| "null".into()));
    error_text(id, code, message, data.as_deref())
}

fn error_text(id: Option<&RequestId>, code: i64, message: &str, data: Option<&str>) -> Bytes {
    let id = id.map_or("null", RequestId::as_json);
    let message = crate::envelope::json_string(message);
    let mut out = Vec::with_capacity(64 + id.len() + message.len() + data.map_or(0, str::len));
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(format!(",\"error\":{{\"code\":{code},\"message\":").as_bytes());
    out.extend_from_slice(message.as_bytes());
    if let Some(data) = data {
        out.extend_from_slice(b",\"data\":");
        out.extend_from_slice(data.as_bytes());
    }
    out.extend_from_slice(b"}}");
    Bytes::from(out)
}

/// A success response carrying `result`.
pub fn result(id: &RequestId, result: &Value) -> Bytes {
    result_text(
        id,
        &serde_json::to_string(result).unwrap_or_else(|_| "null".into()),
    )
}

/// A success response whose result is already JSON text (spliced unchanged, as the id).
pub fn result_text(id: &RequestId, result: &str) -> Bytes {
    let mut out = Vec::with_capacity(40 + result.len());
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_json().as_bytes());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.as_bytes());
    out.push(b'}');
    Bytes::from(out)
}

/// An error response whose `data` is already JSON text (spliced unchanged).
pub fn error_with_raw_data(id: &RequestId, code: i64, message: &str, data: &str) -> Bytes {
    error_text(Some(id), code, message, Some(data))
}

/// A request the bridge sends.
pub fn request(id: &RequestId, method: &str, params: &Value) -> Bytes {
    let params = serde_json::to_string(params).unwrap_or_else(|_| "{}".into());
    let method = crate::envelope::json_string(method);
    Bytes::from(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":{method},\"params\":{params}}}",
        id.as_json()
    ))
}

/// A notification the bridge sends.
pub fn notification(method: &str, params: &Value) -> Bytes {
    to_line(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
}

/// `$/cancel_request` for a request the peer is still showing.
pub fn cancel_request(id: &RequestId) -> Bytes {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"");
    out.extend_from_slice(crate::methods::CANCEL_REQUEST.as_bytes());
    out.extend_from_slice(b"\",\"params\":{\"requestId\":");
    out.extend_from_slice(id.as_json().as_bytes());
    out.extend_from_slice(b"}}");
    Bytes::from(out)
}

/// A prefix for the bridge's own request ids that no agent can predict (random per process:
/// a clock, the pid and the std hasher's random keys).
pub fn bridge_id_prefix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("acp-question-bridge:{:016x}:", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_with_null_id() {
        let line = error(None, code::PARSE_ERROR, "Parse error", None);
        assert_eq!(
            &line[..],
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
        );
    }

    #[test]
    fn raw_data_is_spliced() {
        let line = error_with_raw_data(&RequestId::string("a"), -32603, "m", r#"{"n":1e400}"#);
        assert_eq!(
            &line[..],
            br#"{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"m","data":{"n":1e400}}}"#
        );
    }

    #[test]
    fn ids_keep_their_exact_text() {
        let raw = serde_json::value::RawValue::from_string("1e400".into()).unwrap();
        let id = RequestId::from_raw(&raw);
        assert_eq!(
            &error(Some(&id), -32603, "m", Some(json!({"a":1})))[..],
            br#"{"jsonrpc":"2.0","id":1e400,"error":{"code":-32603,"message":"m","data":{"a":1}}}"#
        );
    }

    #[test]
    fn ids_keep_their_type() {
        let s = RequestId::string("1");
        let line = result(&s, &json!({"ok":true}));
        assert_eq!(
            &line[..],
            br#"{"jsonrpc":"2.0","id":"1","result":{"ok":true}}"#
        );
        let line = cancel_request(&s);
        assert_eq!(
            &line[..],
            br#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"1"}}"#
        );
    }
}
