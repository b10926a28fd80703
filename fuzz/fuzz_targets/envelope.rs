//! `envelope::classify` on arbitrary bytes, against a reference classifier written over
//! `serde_json::Value` from the rules of PROTOCOL.md sections 0 and 5.
//!
//! Checked: no panic; `NotJson` exactly when the bytes are not JSON (JSON text is UTF-8,
//! also inside strings serde_json would skip: finding F10); for JSON that parses
//! as a `Value` (numbers in range), the same kind as the reference, the same method and
//! params, and an id whose text is the exact text of the line's `id` member; `session_id`
//! and `preview` never panic, and a preview is at most 81 characters. The fast path
//! (`scan::scan`), whenever it decides, decides exactly as `classify`: same kind, id text,
//! method, params text and outcome. Split at its first newline, the input is two lines:
//! the second, scanned through a [`Memo`] that saw the first, is decided as when scanned alone.
#![no_main]

use acp_question_bridge::rawjson::RawObject;
use acp_question_bridge::envelope::{classify, preview, session_id, Kind};
use acp_question_bridge::scan::{assert_agrees, scan, Memo};
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;
use serde_json::Value;

#[derive(Debug, PartialEq)]
enum Ref {
    Request { method: String, params: bool },
    Notification { method: String, params: bool },
    Response { ok: bool },
    Batch,
    Invalid { id: bool, response_like: bool },
}

const KNOWN: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// The reference: `v` is the line as a `Value`; `raw` its top-level members as raw text.
fn reference(v: &Value, raw: Option<&RawObject<'_>>) -> Ref {
    let obj = match v {
        Value::Array(_) => return Ref::Batch,
        Value::Object(o) => o,
        _ => {
            return Ref::Invalid {
                id: false,
                response_like: false,
            }
        }
    };
    let raw = raw.expect("an object has members");
    let dup = KNOWN
        .iter()
        .any(|k| raw.0.iter().filter(|(m, _)| m == k).count() > 1);
    if dup {
        return Ref::Invalid {
            id: false,
            response_like: false,
        };
    }
    let id = obj.get("id");
    let id_ok = matches!(id, Some(Value::String(_) | Value::Number(_) | Value::Null));
    let response_like = obj.contains_key("result") || obj.contains_key("error");
    let invalid = Ref::Invalid {
        id: id_ok,
        response_like,
    };
    // The version must be exactly the text "2.0" (an escaped spelling is refused).
    let version = raw
        .0
        .iter()
        .find(|(k, _)| k == "jsonrpc")
        .map(|(_, r)| r.get());
    if version != Some("\"2.0\"") {
        return invalid;
    }
    if id.is_some() && !id_ok {
        return invalid;
    }
    if let Some(m) = obj.get("method") {
        let Value::String(method) = m else {
            return invalid;
        };
        if response_like {
            return invalid;
        }
        let params = match obj.get("params") {
            None => false,
            Some(Value::Object(_) | Value::Array(_)) => true,
            Some(_) => return invalid,
        };
        let method = method.clone();
        return if id.is_some() {
            Ref::Request { method, params }
        } else {
            Ref::Notification { method, params }
        };
    }
    match (id_ok, obj.get("result"), obj.get("error")) {
        (true, Some(_), None) => Ref::Response { ok: true },
        (true, None, Some(Value::Object(_))) => Ref::Response { ok: false },
        _ => invalid,
    }
}

fuzz_target!(|data: &[u8]| {
    let kind = classify(data);
    // The scan, when it decides, agrees with `classify`.
    assert_agrees(data, &kind);
    if let Some(cut) = data.iter().position(|&b| b == b'\n') {
        let (first, second) = (&data[..cut], &data[cut + 1..]);
        let mut memo = Memo::default();
        assert_eq!(memo.scan(first), scan(first));
        assert_eq!(memo.scan(second), scan(second));
    }
    let p = preview(data);
    assert!(p.chars().count() <= 81, "preview too long: {p:?}");
    // JSON text is UTF-8 (RFC 8259); serde_json skips over strings it ignores without
    // checking them, so UTF-8 is checked separately.
    let utf8 = std::str::from_utf8(data).is_ok();
    let is_json = utf8 && serde_json::from_slice::<IgnoredAny>(data).is_ok();
    match &kind {
        Kind::NotJson { .. } => assert!(!is_json, "valid JSON classified as NotJson"),
        _ => assert!(is_json, "not JSON but classified as {kind:?}"),
    }
    match &kind {
        Kind::Request { params, .. } | Kind::Notification { params, .. } => {
            let _ = session_id(*params);
        }
        _ => {}
    }
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let raw: Option<RawObject<'_>> = serde_json::from_slice(data).ok();
    let want = reference(&v, raw.as_ref());
    let got = match &kind {
        Kind::Request { method, params, .. } => Ref::Request {
            method: method.to_string(),
            params: params.is_some(),
        },
        Kind::Notification { method, params } => Ref::Notification {
            method: method.to_string(),
            params: params.is_some(),
        },
        Kind::Response { outcome, .. } => Ref::Response {
            ok: outcome.is_ok(),
        },
        Kind::Batch => Ref::Batch,
        Kind::Invalid {
            id, response_like, ..
        } => Ref::Invalid {
            id: id.is_some(),
            response_like: *response_like,
        },
        Kind::NotJson { .. } => unreachable!("checked above"),
    };
    assert_eq!(got, want, "{}", String::from_utf8_lossy(data));
    // Ids keep the exact text of the line's `id` member.
    let id = match &kind {
        Kind::Request { id, .. } | Kind::Response { id, .. } => Some(id),
        Kind::Invalid { id, .. } => id.as_ref(),
        _ => None,
    };
    if let (Some(id), Some(raw)) = (id, raw.as_ref()) {
        let text = raw
            .0
            .iter()
            .find(|(k, _)| k == "id")
            .map(|(_, r)| r.get())
            .expect("an id comes from the id member");
        assert_eq!(id.as_json(), text);
    }
    // Params are the exact text of the `params` member.
    if let (Kind::Request { params, .. } | Kind::Notification { params, .. }, Some(raw)) =
        (&kind, raw.as_ref())
    {
        let text = raw
            .0
            .iter()
            .find(|(k, _)| k == "params")
            .map(|(_, r)| r.get());
        assert_eq!(params.map(|p| p.get()), text);
    }
});
