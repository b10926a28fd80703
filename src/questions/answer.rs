//! Normalization and validation of answers (PROTOCOL.md sections 1.2 and 1.3).
//!
//! Owns the mapping from whatever a client sends back (the canonical shape, or one of the
//! sandbox-agent variants) to the one canonical result the agent receives, and the checks
//! of answers against the question (count, single vs multi-select, option values, free
//! text). Invariant: the agent only ever sees `{"status":"answered","answers":[...]}` or
//! `{"status":"rejected","reason":<reason>}`, plus any extra fields the client sent.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::model::Question;
use crate::envelope::json_string;
use crate::rawjson::{Members, RawObject};

/// Members of a client's result that the bridge did not consume, as raw JSON text, in
/// their original order: they reach the agent exactly as the client wrote them.
pub type Extras = Vec<(String, Box<RawValue>)>;

/// Why a question was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The user said no.
    Declined,
    /// Dismissed, or the session was cancelled.
    Cancelled,
    /// The question's deadline passed.
    Timeout,
    /// The client went away (its stdin reached EOF).
    ClientDisconnected,
    /// The client has no way to show the question.
    Unsupported,
    /// A newer question replaced it.
    Superseded,
}

impl Reason {
    pub const ALL: [Reason; 6] = [
        Reason::Declined,
        Reason::Cancelled,
        Reason::Timeout,
        Reason::ClientDisconnected,
        Reason::Unsupported,
        Reason::Superseded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Declined => "declined",
            Reason::Cancelled => "cancelled",
            Reason::Timeout => "timeout",
            Reason::ClientDisconnected => "client_disconnected",
            Reason::Unsupported => "unsupported",
            Reason::Superseded => "superseded",
        }
    }

    pub fn parse(s: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// Who or what ended a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    /// The IDE client answered (or rejected it, or answered with an error).
    Client,
    /// The bridge itself rejected it as `unsupported`: the client has no way to show it.
    Bridge,
    /// An answer or rejection through the control server (web page, CLI, API).
    Control,
    /// Its deadline passed.
    Timeout,
    /// The session was cancelled, or the agent withdrew its request.
    Cancel,
    /// The client or the agent went away.
    Disconnect,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Client => "client",
            By::Bridge => "bridge",
            By::Control => "control",
            By::Timeout => "timeout",
            By::Cancel => "cancel",
            By::Disconnect => "disconnect",
        }
    }
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `answers[i]` holds the chosen values (or free text) of item `i`.
    Answered(Vec<Vec<String>>),
    Rejected(Reason),
}

impl Outcome {
    /// The `result` of a `resolved` event.
    pub fn to_event(&self) -> serde_json::Value {
        match self {
            Outcome::Answered(a) => serde_json::json!({ "status": "answered", "answers": a }),
            Outcome::Rejected(r) => {
                serde_json::json!({ "status": "rejected", "reason": r.as_str() })
            }
        }
    }

    /// The canonical result the agent receives (JSON text); `extras` are members the
    /// client added, spliced in unchanged.
    pub fn to_result(&self, extras: &Extras) -> String {
        let mut out = match self {
            Outcome::Answered(answers) => format!(
                "{{\"status\":\"answered\",\"answers\":{}",
                serde_json::to_string(answers).unwrap_or_else(|_| "[]".into())
            ),
            Outcome::Rejected(reason) => {
                format!(
                    "{{\"status\":\"rejected\",\"reason\":\"{}\"",
                    reason.as_str()
                )
            }
        };
        for (k, v) in extras {
            out.push(',');
            out.push_str(&json_string(k));
            out.push(':');
            out.push_str(v.get());
        }
        out.push('}');
        out
    }
}

/// Checks `answers` against `q` and returns them normalized: a label is mapped to its
/// option's value, a lone string stands for a one-entry list, duplicates are dropped.
pub fn check_answers(q: &Question, answers: &Value) -> Result<Vec<Vec<String>>, String> {
    let Value::Array(list) = answers else {
        return Err("answers: must be an array with one entry per question".into());
    };
    if list.len() != q.items.len() {
        return Err(format!(
            "answers: expected {} entries (one per question), got {}",
            q.items.len(),
            list.len()
        ));
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, (item, entry)) in q.items.iter().zip(list).enumerate() {
        let raw: Vec<&Value> = match entry {
            Value::Array(values) => values.iter().collect(),
            Value::String(_) => vec![entry],
            _ => return Err(format!("answers[{i}]: must be an array of strings")),
        };
        let mut chosen: Vec<String> = Vec::with_capacity(raw.len());
        for (j, v) in raw.into_iter().enumerate() {
            let Value::String(s) = v else {
                return Err(format!("answers[{i}][{j}]: must be a string"));
            };
            let value = match item.option_value(s) {
                Some(value) => value.to_owned(),
                None if item.allow_free_text => s.clone(),
                None => {
                    let values: Vec<&str> = item.options.iter().map(|c| c.value.as_str()).collect();
                    return Err(format!(
                        "answers[{i}][{j}]: {s:?} is not one of the options ({}) and free text is not allowed",
                        values.join(", ")
                    ));
                }
            };
            if !chosen.contains(&value) {
                chosen.push(value);
            }
        }
        match (item.multi_select, chosen.len()) {
            (false, 1) | (true, 1..) => {}
            (_, 0) if item.optional => {}
            (false, n) => {
                return Err(format!(
                    "answers[{i}]: a single-select question takes exactly one answer, got {n}"
                ))
            }
            (true, _) => {
                return Err(format!(
                    "answers[{i}]: a multi-select question takes at least one answer"
                ))
            }
        }
        out.push(chosen);
    }
    Ok(out)
}

/// Normalizes a client's result for `q` into an outcome plus the extra members to keep.
/// `Err` carries a message naming what is wrong.
pub fn normalize(q: &Question, result: &RawValue) -> Result<(Outcome, Extras), String> {
    const CONSUMED: [&str; 4] = ["status", "outcome", "answers", "reason"];
    let members: RawObject<'_> =
        serde_json::from_str(result.get()).map_err(|_| "result: must be an object".to_owned())?;
    let mut obj = Members::default();
    let mut extras = Extras::new();
    for (k, v) in members.0 {
        if CONSUMED.contains(&k.as_ref()) {
            let value = serde_json::from_str(v.get()).map_err(|e| format!("{k}: {e}"))?;
            obj.insert(k, value);
        } else {
            if k == "_meta" {
                // Only the extension's block is read (for outcome "selected").
                if let Some(block) = serde_json::from_str::<RawObject<'_>>(v.get())
                    .ok()
                    .and_then(|m| m.0.into_iter().find(|(k, _)| k == super::META_KEY))
                {
                    let block: Value = serde_json::from_str(block.1.get()).unwrap_or_default();
                    obj.insert(
                        "_meta".into(),
                        serde_json::json!({ super::META_KEY: block }),
                    );
                }
            }
            extras.push((k.into_owned(), v.to_owned()));
        }
    }
    let kind = match (obj.get("status"), obj.get("outcome")) {
        (Some(Value::String(s)), _) => s.as_str(),
        (None, Some(Value::String(s))) => s.as_str(),
        (Some(_), _) => return Err("status: must be \"answered\" or \"rejected\"".into()),
        (None, Some(_)) => return Err("outcome: must be a string".into()),
        (None, None) => {
            return Err("result: needs \"status\" (\"answered\" or \"rejected\")".into())
        }
    };
    let outcome = match kind {
        "answered" => {
            let answers = obj.get("answers").ok_or("answers: is required")?;
            Outcome::Answered(check_answers(q, answers)?)
        }
        "selected" => {
            let answers = obj
                .get("_meta")
                .and_then(|m| m.get("sandboxagent.dev"))
                .and_then(|m| m.get("answers"))
                .or_else(|| obj.get("answers"))
                .ok_or(
                    "_meta[\"sandboxagent.dev\"].answers: is required with outcome \"selected\"",
                )?;
            Outcome::Answered(check_answers(q, answers)?)
        }
        "rejected" => match obj.get("reason") {
            None | Some(Value::Null) => Outcome::Rejected(Reason::Declined),
            Some(Value::String(r)) => Outcome::Rejected(Reason::parse(r).ok_or_else(|| {
                let known: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
                format!("reason: {r:?} is not one of {}", known.join(", "))
            })?),
            Some(_) => return Err("reason: must be a string".into()),
        },
        "cancelled" if obj.contains_key("outcome") => Outcome::Rejected(Reason::Cancelled),
        other => {
            return Err(format!(
                "status: {other:?} is not \"answered\" or \"rejected\""
            ))
        }
    };
    Ok((outcome, extras))
}

/// Why a control answer or rejection was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// No such question is pending: it was resolved already (by whom, when known) or
    /// never existed.
    #[error("the question is not pending{}", match .resolved_by {
        Some(by) => format!(" (already resolved by {})", by.as_str()),
        None => String::new(),
    })]
    NotPending { resolved_by: Option<By> },
    /// The answer does not fit the question; names the field.
    #[error("{0}")]
    Invalid(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::model::parse_request;
    use serde_json::json;

    fn q(v: Value) -> Question {
        let raw = serde_json::value::RawValue::from_string(v.to_string()).unwrap();
        parse_request(Some(&raw)).unwrap()
    }

    fn single() -> Question {
        q(json!({"sessionId":"s","questionId":"q","prompt":"p",
            "options":[["option-a","Option A"],["option-b","Option B"]]}))
    }

    fn multi() -> Question {
        q(json!({"sessionId":"s","questionId":"q","questions":[
            {"question":"db","options":[{"label":"Postgres"},{"label":"SQLite"}],"custom":true},
            {"question":"f","options":["auth","billing"],"multiple":true},
            {"question":"notes"}]}))
    }

    fn norm(q: &Question, r: Value) -> Result<Value, String> {
        let raw = RawValue::from_string(r.to_string()).unwrap();
        normalize(q, &raw).map(|(o, extras)| serde_json::from_str(&o.to_result(&extras)).unwrap())
    }

    #[test]
    fn extras_keep_their_exact_text() {
        let raw = RawValue::from_string(
            r#"{"status":"answered","answers":[["option-a"]],"_meta":{"n":1e400}}"#.into(),
        )
        .unwrap();
        let (o, extras) = normalize(&single(), &raw).unwrap();
        assert_eq!(
            o.to_result(&extras),
            r#"{"status":"answered","answers":[["option-a"]],"_meta":{"n":1e400}}"#
        );
    }

    #[test]
    fn canonical_answer_passes() {
        assert_eq!(
            norm(
                &single(),
                json!({"status":"answered","answers":[["option-a"]]})
            ),
            Ok(json!({"status":"answered","answers":[["option-a"]]}))
        );
    }

    #[test]
    fn extras_are_kept() {
        assert_eq!(
            norm(
                &single(),
                json!({"_meta":{"x":1},"status":"answered","answers":[["option-b"]]})
            ),
            Ok(json!({"status":"answered","answers":[["option-b"]],"_meta":{"x":1}}))
        );
    }

    #[test]
    fn sandbox_agent_variants() {
        let q = single();
        assert_eq!(
            norm(&q, json!({"outcome":"answered","answers":[["option-a"]]})),
            Ok(json!({"status":"answered","answers":[["option-a"]]}))
        );
        assert_eq!(
            norm(
                &q,
                json!({"outcome":"selected","_meta":{"sandboxagent.dev":{"answers":[["option-b"]]}}})
            ),
            Ok(
                json!({"status":"answered","answers":[["option-b"]],"_meta":{"sandboxagent.dev":{"answers":[["option-b"]]}}})
            )
        );
        assert_eq!(
            norm(&q, json!({"outcome":"rejected"})),
            Ok(json!({"status":"rejected","reason":"declined"}))
        );
        assert_eq!(
            norm(&q, json!({"outcome":"cancelled"})),
            Ok(json!({"status":"rejected","reason":"cancelled"}))
        );
        assert_eq!(
            norm(&q, json!({"status":"rejected"})),
            Ok(json!({"status":"rejected","reason":"declined"}))
        );
        assert_eq!(
            norm(&q, json!({"status":"rejected","reason":"timeout"})),
            Ok(json!({"status":"rejected","reason":"timeout"}))
        );
    }

    #[test]
    fn labels_map_to_values_and_strings_to_lists() {
        assert_eq!(
            norm(
                &single(),
                json!({"status":"answered","answers":["Option B"]})
            ),
            Ok(json!({"status":"answered","answers":[["option-b"]]}))
        );
    }

    #[test]
    fn multi_form_answers() {
        assert_eq!(
            norm(
                &multi(),
                json!({"status":"answered","answers":[["MySQL"],["auth","billing","auth"],["none"]]})
            ),
            Ok(json!({"status":"answered","answers":[["MySQL"],["auth","billing"],["none"]]}))
        );
    }

    #[test]
    fn invalid_answers_say_why() {
        let q = single();
        let e = |r| norm(&q, r).unwrap_err();
        assert_eq!(
            e(json!({"status":"answered","answers":[["option-c"]]})),
            "answers[0][0]: \"option-c\" is not one of the options (option-a, option-b) and free text is not allowed"
        );
        assert_eq!(
            e(json!({"status":"answered","answers":[["option-a","option-b"]]})),
            "answers[0]: a single-select question takes exactly one answer, got 2"
        );
        assert_eq!(
            e(json!({"status":"answered","answers":[]})),
            "answers: expected 1 entries (one per question), got 0"
        );
        assert_eq!(e(json!({"status":"answered"})), "answers: is required");
        assert_eq!(
            e(json!({"status":"maybe"})),
            "status: \"maybe\" is not \"answered\" or \"rejected\""
        );
        assert_eq!(
            e(json!({"status":"rejected","reason":"bored"})),
            "reason: \"bored\" is not one of declined, cancelled, timeout, client_disconnected, unsupported, superseded"
        );
        assert_eq!(e(json!(null)), "result: must be an object");
        assert_eq!(
            e(json!({"status":"answered","answers":[[1]]})),
            "answers[0][0]: must be a string"
        );
        let m = multi();
        assert_eq!(
            norm(
                &m,
                json!({"status":"answered","answers":[["Postgres"],[],["x"]]})
            )
            .unwrap_err(),
            "answers[1]: a multi-select question takes at least one answer"
        );
    }
}
