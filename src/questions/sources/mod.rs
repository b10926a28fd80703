//! Where a question comes from, and how its agent gets its one reply.
//!
//! One module per source (docs/AGENT-DIALECTS.md section 1): each reads its request into the
//! question model and builds the agent's reply in the source's own shape, for an answer and
//! for every way a question can end. The router knows a source only through [`Source`]; it
//! knows nothing of the shapes.

pub mod cursor;
pub mod extension;
pub mod form;
pub mod gemini;
pub mod grok;
pub mod opencode;
pub mod permission;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::jsonrpc::code;
use crate::questions::answer::{Extras, Outcome};
use crate::questions::model::{Choice, Question};

/// What the agent gets back for its request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A result (JSON text, so members the client added keep their exact text).
    Result(String),
    /// A JSON-RPC error.
    Error { code: i64, message: String },
}

impl Reply {
    /// A result value.
    pub fn value(v: &Value) -> Self {
        Reply::Result(v.to_string())
    }

    /// The answer did not fit the agent's shape.
    pub fn invalid(msg: &str) -> Self {
        Reply::Error {
            code: code::INTERNAL_ERROR,
            message: format!("Invalid answer from the client: {msg}"),
        }
    }
}

/// A question's source: how the agent asked, and so what it must get back.
pub trait Source: std::fmt::Debug + Send + Sync {
    /// Shown on every surface: `question`, `form`, `permission`, `qwen`, ...
    fn name(&self) -> &'static str;

    /// The agent's method (its name in the dispatch table, without a leading `_`).
    fn method(&self) -> &'static str;

    /// The agent's one reply for how the question ended: an answer (already checked
    /// against the question) or a rejection, mapped as docs/AGENT-DIALECTS.md section 4 says.
    fn reply(&self, q: &Question, outcome: &Outcome, extras: &Extras) -> Reply;

    /// What the client's own result stands for, when the client was shown the agent's
    /// request as it is (the agent then gets that result unchanged).
    fn read(&self, q: &Question, result: &RawValue) -> Result<Outcome, String>;

    /// The agent's request is standard ACP, which every client it was sent to knows: the
    /// client's error to it is the agent's answer. A vendor's method is not: a client that
    /// answers it `-32601` is asked again in a standard shape.
    fn standard(&self) -> bool {
        false
    }

    /// The request approves a tool the agent is about to run: its tool call is the tool's,
    /// whose status the agent reports as the tool runs (the bridge never marks it done).
    fn approves_a_tool(&self) -> bool {
        false
    }
}

/// Options of the shape most vendors use: `[{label, description?, preview?, id?}]`, the
/// label being the value (what the agents expect back). `None` when one is malformed;
/// absent options are none.
pub(crate) fn options_of(list: Option<&Value>) -> Option<Vec<Choice>> {
    let Some(list) = list.filter(|l| !l.is_null()) else {
        return Some(Vec::new());
    };
    list.as_array()?
        .iter()
        .map(|o| {
            let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
            let label = text("label")?;
            Some(Choice {
                value: label.clone(),
                label,
                description: text("description"),
                preview: text("preview"),
                ..Choice::default()
            })
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod testing {
    use serde_json::value::RawValue;
    use serde_json::Value;

    use super::{Reply, Source};
    use crate::questions::answer::Outcome;
    use crate::questions::model::Question;

    pub fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).expect("valid JSON")
    }

    /// The question of an extension request's params (panics when they are invalid).
    pub fn question(v: Value) -> Question {
        crate::questions::model::parse_request(Some(&raw(v))).expect("a valid question")
    }

    /// The result a source replies with, as a value (panics on an error reply).
    pub fn reply_json(s: &dyn Source, q: &Question, o: &Outcome) -> Value {
        match s.reply(q, o, &Vec::new()) {
            Reply::Result(text) => serde_json::from_str(&text).expect("valid JSON"),
            other => panic!("{other:?}"),
        }
    }
}
