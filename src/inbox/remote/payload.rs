//! What a Web Push says of a question (`schema/push-payload.schema.json`): the agent and the
//! question, never a tool call's command; the notification's tag and the page to open; and
//! the answers its actions send (`sw.js`).

use serde_json::{json, Value};

use crate::child::agent_name;

/// The longest question text in a payload, in characters.
pub(super) const MAX_TEXT: usize = 160;
/// The longest payload, in bytes: what a push service takes (4,096) less the encryption's
/// header (86), tag (16) and padding delimiter (1).
const MAX_PAYLOAD: usize = 4096 - 86 - 16 - 1;
/// The longest notification tag, in bytes (else its SHA-256 is sent).
const MAX_TAG: usize = 256;

/// The first `max` characters of `s`, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// What a push says of `question` (a `requested` event's, with its `bridge`): the agent's
/// program and project as the title; the question as the body, or for a tool approval only
/// the kind of tool (its title is often the command itself); the page's notification tag,
/// so the page and a push show one notification for one question.
pub fn payload(bridge_id: &str, q: &Value) -> Value {
    let bridge = &q["bridge"];
    let argv: Vec<&str> = bridge["agent"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let agent = cut(&agent_name(&argv), 40);
    let project = bridge["cwd"]
        .as_str()
        .and_then(|c| c.trim_end_matches('/').rsplit('/').next())
        .filter(|p| !p.is_empty());
    let title = match project {
        Some(p) if !cut(p, 40).is_empty() => format!("{agent} · {}", cut(p, 40)),
        _ => agent,
    };
    let items = q["items"].as_array().map_or(&[][..], Vec::as_slice);
    let approval = q["source"] == "permission";
    let body = if approval {
        match items.first().and_then(|i| i["header"].as_str()) {
            Some(kind) => format!("Approve a tool call ({})", cut(kind, 20)),
            None => "Approve a tool call".to_owned(),
        }
    } else {
        let first = items
            .first()
            .and_then(|i| i["prompt"].as_str())
            .filter(|p| !p.trim().is_empty())
            .unwrap_or("A question");
        match items.len() {
            0 | 1 => cut(first, MAX_TEXT),
            n => format!("{} (+{} more)", cut(first, MAX_TEXT), n - 1),
        }
    };
    let tag = serde_json::to_string(&[
        bridge_id,
        q["sessionId"].as_str().unwrap_or(""),
        q["questionId"].as_str().unwrap_or(""),
    ])
    .unwrap_or_default();
    // A push service takes at most 4 KiB: very long ids are sent as their hash (the page's
    // own notification then has another tag).
    let mut p = json!({"title": title, "body": body, "tag": tag, "url": "/", "approval": approval});
    if tag.len() > MAX_TAG {
        // (No actions either: the question's ids would not fit.)
        p["tag"] = super::devices::sha256_hex(&tag).into();
        return p;
    }
    // A tap on the notification opens the page on this question.
    let focus: String =
        percent_encoding::utf8_percent_encode(&tag, percent_encoding::NON_ALPHANUMERIC).collect();
    p["url"] = format!("/?focus={focus}").into();
    let actions = actions(q);
    if !actions.is_empty() {
        p["question"] = json!({"bridge": bridge_id, "sessionId": q["sessionId"], "questionId": q["questionId"]});
        p["actions"] = actions.into();
        if p.to_string().len() > MAX_PAYLOAD {
            // An answer cannot be cut: without its actions, a tap opens the question.
            let o = p.as_object_mut().expect("an object");
            o.remove("actions");
            o.remove("question");
        }
    }
    p
}

/// The answers a notification may carry as its actions, answered by the service worker
/// with no page opened: for a tool approval "Allow once" (its `allow_once` option) and
/// "Deny" (a rejection: the agent gets its `reject_once` option), never "Always allow"; for
/// one single choice of at most two options and nothing to type, each option. Anything
/// else: none (the notification opens the question).
fn actions(q: &Value) -> Vec<Value> {
    let items = q["items"].as_array().map_or(&[][..], Vec::as_slice);
    let [item] = items else {
        return Vec::new();
    };
    let options = item["options"].as_array().map_or(&[][..], Vec::as_slice);
    let single = item["multiSelect"] != true && item["allowFreeText"] != true;
    if q["source"] == "permission" {
        let allow = options
            .iter()
            .find(|o| o["kind"] == "allow_once")
            .and_then(|o| o["value"].as_str());
        return match allow {
            Some(v) if single => vec![
                json!({"action": "a0", "title": "Allow once", "answers": [[v]]}),
                json!({"action": "a1", "title": "Deny", "reject": true}),
            ],
            _ => Vec::new(),
        };
    }
    if !single || options.is_empty() || options.len() > 2 {
        return Vec::new();
    }
    options
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let value = o["value"].as_str()?;
            let label = o["label"].as_str().unwrap_or(value);
            Some(json!({"action": format!("a{i}"), "title": cut(label, 40), "answers": [[value]]}))
        })
        .collect()
}

#[cfg(test)]
mod review_tests {
    use super::*;

    /// A push service takes at most 4 KiB (RFC 8030/8291: 4096 bytes of the encrypted
    /// record, of which 86 are aes128gcm's header, 16 the AEAD tag and 1 the padding
    /// delimiter). The text fields are cut, but an option's value (the answer an action
    /// sends) is copied whole: a choice of two long values makes a payload no push service
    /// takes, and the question is never pushed at all.
    #[test]
    fn review_a_payload_is_never_over_what_a_push_service_takes() {
        let long = "v".repeat(2500);
        let q = json!({"bridge": {"agent": ["agent"], "cwd": "/p"}, "sessionId": "s",
            "questionId": "q", "source": "question",
            "items": [{"prompt": "Which?", "options": [
                {"value": format!("a{long}"), "label": "A"},
                {"value": format!("b{long}"), "label": "B"}]}]});
        let p = payload("b1", &q);
        let len = p.to_string().len();
        assert!(
            len <= MAX_PAYLOAD,
            "a payload of {len} bytes: {}",
            &p.to_string()[..200]
        );
        // Same for a tool approval whose allow_once option id is long.
        let a = json!({"bridge": {"agent": ["agent"], "cwd": "/p"}, "sessionId": "s",
            "questionId": "t", "source": "permission",
            "items": [{"prompt": "x", "header": "execute", "options": [
                {"value": "o".repeat(5000), "label": "Allow", "kind": "allow_once"}]}]});
        let len = payload("b1", &a).to_string().len();
        assert!(len <= MAX_PAYLOAD, "a payload of {len} bytes");
    }
}
