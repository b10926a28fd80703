//! Question lifecycle events: what the control server's subscribers, the journal and the
//! `--on-question` notifier see.
//!
//! The [`crate::router::Router`] makes them (only when [`crate::router::RouterConfig::events`]
//! is on, so a bridge without observers pays nothing) and the shell hands them out. Each
//! question produces one `requested`, one `delivered` per dialect it is shown in, and exactly
//! one `resolved`; answers that arrive after that are `late_answer` events with their
//! content, so a late answer is never silently lost.

use serde::Serialize;
use serde_json::Value;

/// Who ended a question: defined with the outcomes it goes with.
pub use crate::questions::answer::By;
use crate::questions::model::Item;

/// A pending question as observers see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionView {
    pub session_id: String,
    pub question_id: String,
    /// One or more items, each with its prompt, header, options and flags.
    pub items: Vec<Item>,
    /// RFC 3339, when the bridge received the request.
    pub created_at: String,
    /// RFC 3339, when it times out (absent: no deadline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// How the IDE client is showing it: `extension`, `elicitation`, `permission`, or
    /// `control` when only the control server shows it (the client cannot), `away` when no
    /// client has its session now (`--linger`).
    pub dialect: &'static str,
    /// How the agent asked: `question` (the extension request), `form` (its form
    /// elicitation), `permission` (a tool approval), `qwen` (a permission with questions).
    pub source: &'static str,
    /// What to show beside it (display only): for a permission, `{"toolCall": {...}}`
    /// with the title, kind, command or path (`rawInput`), content and locations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// For a tool approval while an approval policy is in force: what "Always allow" would
    /// write (`subject`, `agent`, `project`, and `rules`: the TOML for each choice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub always_allow: Option<Value>,
    /// What the agent was doing when it asked: `lastMessage`, `plan`, `toolCalls` of the
    /// turn, and `cut` (what was left out to stay within 16 KiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<Value>,
}

/// Who ended a question, as observers see it: a [`By`], or, for an answer from a paired
/// device through the inbox's remote listener, `"device:<name>"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolver {
    pub by: By,
    pub device: Option<String>,
}

impl From<By> for Resolver {
    fn from(by: By) -> Self {
        Self { by, device: None }
    }
}

impl Serialize for Resolver {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.device {
            Some(name) => s.collect_str(&format_args!("device:{name}")),
            None => s.serialize_str(self.by.as_str()),
        }
    }
}

/// Which rule of the approval policy decided a tool approval, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// The rule's id, and where it is written.
    pub rule: String,
    pub file: String,
    pub line: usize,
    /// Why, in a sentence.
    pub why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub justification: Option<String>,
    /// The command or title it was decided on, as the chat note shows it.
    pub subject: String,
}

/// One lifecycle event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "event",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    /// The agent asked; the question is pending.
    Requested { question: QuestionView },
    /// The question was shown to the IDE client in this dialect (again after a fallback).
    Delivered {
        session_id: String,
        question_id: String,
        dialect: &'static str,
    },
    /// The question is over; `result` is what happened (see `docs/PROTOCOL.md`).
    Resolved {
        session_id: String,
        question_id: String,
        by: Resolver,
        result: Value,
    },
    /// A tool approval the approval policy answered (docs/POLICY.md): never shown as a
    /// question, never pending; `result` is the answer the agent got.
    Decided {
        question: QuestionView,
        policy: Box<PolicyView>,
        result: Value,
    },
    /// An answer that came after the question was resolved: dropped, and kept here.
    LateAnswer {
        #[serde(skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        question_id: Option<String>,
        from: By,
        content: Value,
    },
}

impl Event {
    /// The name of the event (`requested`, `delivered`, `resolved`, `late_answer`).
    pub fn name(&self) -> &'static str {
        match self {
            Event::Requested { .. } => "requested",
            Event::Delivered { .. } => "delivered",
            Event::Resolved { .. } => "resolved",
            Event::Decided { .. } => "decided",
            Event::LateAnswer { .. } => "late_answer",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialize_with_camel_case_fields() {
        let e = Event::Resolved {
            session_id: "s".into(),
            question_id: "q".into(),
            by: By::Control.into(),
            result: json!({"status":"rejected","reason":"declined"}),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"event":"resolved","sessionId":"s","questionId":"q","by":"control",
                   "result":{"status":"rejected","reason":"declined"}})
        );
        let late = Event::LateAnswer {
            session_id: None,
            question_id: None,
            from: By::Client,
            content: json!(1),
        };
        assert_eq!(
            serde_json::to_value(&late).unwrap(),
            json!({"event":"late_answer","from":"client","content":1})
        );
        let by_phone = Resolver {
            by: By::Control,
            device: Some("Ada's phone".into()),
        };
        assert_eq!(
            serde_json::to_value(&by_phone).unwrap(),
            json!("device:Ada's phone")
        );
    }
}
