//! Classification of one JSON-RPC line without building a `serde_json::Value`.
//!
//! Owns the question "what is this line?" (request, notification, response, batch, invalid,
//! not JSON) for both directions. The view borrows from the line: `params`, `result` and
//! `error` stay `&RawValue`, so forwarding never needs a re-serialization.
//!
//! Invariants:
//! - The envelope is a flat struct; `RawValue` is never inside `untagged` or `flatten`
//!   (serde_json #497, #1051).
//! - A present `"id": null` is kept apart from a missing `id`.
//! - Ids keep their exact JSON text ([`RequestId`]): `1` and `"1"` differ.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

/// A JSON-RPC id as its exact JSON text (`1`, `"1"`, `null`), so `1` and `"1"` stay apart.
/// Shared (`Arc`): the router and the question registry keep several handles on one id,
/// and a clone is a reference count, not an allocation.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(Arc<str>);

impl RequestId {
    /// Wraps JSON text that is already known to be a valid id (string, number or null).
    pub fn from_raw(raw: &RawValue) -> Self {
        Self(raw.get().into())
    }

    /// Wraps JSON text that is already known to be a valid id (string, number or null).
    pub fn from_json(text: &str) -> Self {
        Self(text.into())
    }

    /// An id made by the bridge: a JSON string.
    pub fn string(s: &str) -> Self {
        Self(json_string(s).into())
    }

    /// The id as JSON text, ready to splice into a message.
    pub fn as_json(&self) -> &str {
        &self.0
    }
}

/// The hasher of the router's and the registry's maps, whose keys (ids, session ids) the
/// peers choose: SipHash, the std default, was a large share of a question round trip
/// (`bench/results.md`), so these maps use foldhash's fast folded-multiply hash, seeded
/// per process (from address-space layout, the time and a heap address) and per map. A
/// peer cannot aim collisions at it without seeing those; not a cryptographic guarantee,
/// and both peers are the user's.
pub type IdHashState = foldhash::fast::RandomState;
/// A map keyed by ids or session ids, with [`IdHashState`].
pub type IdMap<K, V> = std::collections::HashMap<K, V, IdHashState>;
/// A set of ids, with [`IdHashState`].
pub type IdSet<K> = std::collections::HashSet<K, IdHashState>;

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Kind<'_> {
    /// Whether this is a batch (used by benchmarks to keep a result alive).
    pub fn is_batch(&self) -> bool {
        matches!(self, Kind::Batch)
    }
}

/// JSON text of a string (quoted and escaped).
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// What a line is, as far as routing cares.
#[derive(Debug)]
pub enum Kind<'a> {
    Request {
        id: RequestId,
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    Notification {
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    Response {
        id: RequestId,
        /// `Ok(result)` or `Err(error object)`.
        outcome: Result<&'a RawValue, &'a RawValue>,
    },
    /// A JSON array: forwarded unchanged and not inspected (ACP v1 does not use batches).
    Batch,
    /// Valid JSON, but not a JSON-RPC 2.0 message.
    Invalid {
        /// The id, when one of a valid type could be read.
        id: Option<RequestId>,
        /// True when the message looks like a response (has `result` or `error`): such a
        /// message is never answered, so two peers can never echo errors at each other.
        response_like: bool,
        reason: &'static str,
    },
    /// Not JSON at all.
    NotJson { error: String },
}

#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Keeps a present field as `Some` even when its value is `null`.
fn present<'de, D>(d: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&RawValue>::deserialize(d).map(Some)
}

fn first_non_ws(raw: &RawValue) -> u8 {
    raw.get().as_bytes().first().copied().unwrap_or(b' ')
}

fn valid_id(raw: &RawValue) -> bool {
    matches!(first_non_ws(raw), b'"' | b'-' | b'0'..=b'9' | b'n')
}

/// Classifies one line (already stripped of its terminator and BOM).
///
/// ```
/// use acp_question_bridge::envelope::{classify, Kind};
///
/// let line = br#"{"jsonrpc":"2.0","id":"1","method":"session/prompt","params":{"n":1e400}}"#;
/// match classify(line) {
///     Kind::Request { id, method, params } => {
///         assert_eq!(id.as_json(), r#""1""#); // not the same id as 1
///         assert_eq!(method, "session/prompt");
///         assert_eq!(params.unwrap().get(), r#"{"n":1e400}"#); // raw text, untouched
///     }
///     other => panic!("{other:?}"),
/// }
/// assert!(matches!(classify(b"Loading..."), Kind::NotJson { .. }));
/// ```
pub fn classify(line: &[u8]) -> Kind<'_> {
    // Validating UTF-8 once, up front, lets serde work on a `str`: the raw values it hands
    // out need no second validation (the hot path of every forwarded line).
    let line = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return Kind::NotJson {
                error: format!("invalid UTF-8: {e}"),
            }
        }
    };
    let start = line.bytes().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| line.as_bytes()[i]) {
        Some(b'[') => {
            // Still check it is JSON: garbage that starts with `[` is not a batch.
            return match serde_json::from_str::<serde::de::IgnoredAny>(line) {
                Ok(_) => Kind::Batch,
                Err(e) => Kind::NotJson {
                    error: e.to_string(),
                },
            };
        }
        Some(b'{') => {}
        _ => {
            return match serde_json::from_str::<serde::de::IgnoredAny>(line) {
                Ok(_) => Kind::Invalid {
                    id: None,
                    response_like: false,
                    reason: "a JSON-RPC message must be an object",
                },
                Err(e) => Kind::NotJson {
                    error: e.to_string(),
                },
            };
        }
    }
    let env: RawEnvelope<'_> = match serde_json::from_str(line) {
        Ok(env) => env,
        Err(e) => {
            // Valid JSON with e.g. a duplicate key is invalid JSON-RPC, not a parse error.
            return match serde_json::from_str::<serde::de::IgnoredAny>(line) {
                Ok(_) => Kind::Invalid {
                    id: None,
                    response_like: false,
                    reason: "duplicate member in JSON-RPC envelope",
                },
                Err(_) => Kind::NotJson {
                    error: e.to_string(),
                },
            };
        }
    };
    let id = env.id.filter(|r| valid_id(r)).map(RequestId::from_raw);
    let response_like = env.result.is_some() || env.error.is_some();
    let id_of_invalid = id.clone();
    let invalid = |reason| Kind::Invalid {
        id: id_of_invalid,
        response_like,
        reason,
    };
    if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    if env.id.is_some() && id.is_none() {
        return invalid("\"id\" must be a string, a number or null");
    }
    if let Some(method) = env.method {
        let Ok(method) = Cow::<str>::deserialize(method) else {
            return invalid("\"method\" must be a string");
        };
        if response_like {
            return invalid("a message cannot have both \"method\" and \"result\"/\"error\"");
        }
        if let Some(p) = env.params {
            if !matches!(first_non_ws(p), b'{' | b'[') {
                return invalid("\"params\" must be an object or an array");
            }
        }
        return match id {
            Some(id) => Kind::Request {
                id,
                method,
                params: env.params,
            },
            None => Kind::Notification {
                method,
                params: env.params,
            },
        };
    }
    match (id, env.result, env.error) {
        (Some(id), Some(r), None) => Kind::Response { id, outcome: Ok(r) },
        (Some(id), None, Some(e)) if first_non_ws(e) == b'{' => Kind::Response {
            id,
            outcome: Err(e),
        },
        (_, Some(_), Some(_)) => invalid("a response cannot have both \"result\" and \"error\""),
        (None, _, _) if response_like => invalid("a response must have an \"id\""),
        (_, None, Some(_)) => invalid("\"error\" must be an object"),
        _ => invalid("a message needs \"method\", \"result\" or \"error\""),
    }
}

/// Reads `params.sessionId` when it is a string (a second, small scan of `params`).
pub fn session_id(params: Option<&RawValue>) -> Option<String> {
    session_id_in(params?.get())
}

/// Reads `sessionId` from the JSON text of `params` when it is a string.
pub fn session_id_in(params: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct P<'a> {
        #[serde(rename = "sessionId", borrow, default)]
        session_id: Option<Cow<'a, str>>,
    }
    if params.as_bytes().first() != Some(&b'{') {
        return None;
    }
    serde_json::from_str::<P<'_>>(params)
        .ok()?
        .session_id
        .map(Cow::into_owned)
}

/// A short, printable preview of a line for logs (never the whole payload).
pub fn preview(line: &[u8]) -> String {
    const MAX: usize = 80;
    let text = String::from_utf8_lossy(&line[..line.len().min(MAX)]);
    let mut s: String = text
        .chars()
        .map(|c| if c.is_control() { '.' } else { c })
        .collect();
    if line.len() > MAX {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_keeps_exact_id() {
        match classify(br#"{"jsonrpc":"2.0","id":"1","method":"a","params":{}}"#) {
            Kind::Request { id, method, params } => {
                assert_eq!(id.as_json(), r#""1""#);
                assert_eq!(method, "a");
                assert_eq!(params.unwrap().get(), "{}");
            }
            k => panic!("{k:?}"),
        }
        match classify(br#"{"id":1,"method":"a","jsonrpc":"2.0"}"#) {
            Kind::Request { id, .. } => assert_eq!(id.as_json(), "1"),
            k => panic!("{k:?}"),
        }
        assert_ne!(RequestId::string("1"), RequestId(Arc::from("1")));
    }

    #[test]
    fn notification_and_escaped_method() {
        match classify(br#"{"jsonrpc":"2.0","method":"session\/update","params":{"x":1e400}}"#) {
            Kind::Notification { method, params } => {
                assert_eq!(method, "session/update");
                assert_eq!(params.unwrap().get(), r#"{"x":1e400}"#);
            }
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn responses() {
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":null,"result":null}"#),
            Kind::Response { outcome: Ok(_), .. }
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}"#),
            Kind::Response {
                outcome: Err(_),
                ..
            }
        ));
    }

    #[test]
    fn error_without_id_is_invalid_and_response_like() {
        match classify(br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"x"}}"#) {
            Kind::Invalid {
                id, response_like, ..
            } => {
                assert!(id.is_none());
                assert!(response_like);
            }
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn invalid_messages() {
        for line in [
            &br#"{"id":1,"method":"a"}"#[..],
            br#"{"jsonrpc":"1.0","id":1,"method":"a"}"#,
            br#"{"jsonrpc":"2.0","id":{},"method":"a"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","params":3}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#,
            b"42",
            b"\"str\"",
        ] {
            assert!(
                matches!(classify(line), Kind::Invalid { .. }),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        match classify(br#"{"jsonrpc":"2.0","id":7,"method":5}"#) {
            Kind::Invalid { id, .. } => assert_eq!(id.unwrap().as_json(), "7"),
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn not_json_and_batches() {
        assert!(matches!(classify(b"hello"), Kind::NotJson { .. }));
        assert!(matches!(classify(b"{\"a\":"), Kind::NotJson { .. }));
        assert!(matches!(classify(b"[1,"), Kind::NotJson { .. }));
        assert!(matches!(classify(b"[{\"jsonrpc\":\"2.0\"}]"), Kind::Batch));
        assert!(matches!(classify(b"\xff\xfe"), Kind::NotJson { .. }));
    }

    #[test]
    fn session_id_is_read_from_params() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[],"sessionId":"s\u0031"}}"#;
        let Kind::Request { params, .. } = classify(line) else {
            panic!()
        };
        assert_eq!(session_id(params).as_deref(), Some("s1"));
        assert_eq!(session_id(None), None);
    }

    #[test]
    fn preview_is_short_and_printable() {
        let p = preview(&[b'a'; 200]);
        assert_eq!(p.chars().count(), 81);
        assert_eq!(preview(b"a\tb"), "a.b");
    }
}
