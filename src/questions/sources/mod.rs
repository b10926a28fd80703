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
use crate::questions::model::{Choice, Item, Question, MAX_ITEMS};

/// Every vendor's own way of asking, once. The dispatch table routes these methods (with
/// or without a leading `_`) to one handler, the client's `initialize` is read for them,
/// and their opt-ins are offered to the agent: adding a vendor is its module plus one line
/// here (and its shape in the mock agent, an independent witness on purpose).
pub static VENDORS: &[&Vendor] = &[
    &cursor::ASK,
    &cursor::PLAN,
    &grok::VENDOR,
    &gemini::VENDOR,
    &opencode::VENDOR,
    #[cfg(test)]
    &testing::VENDOR,
];

/// A vendor's own method of asking (docs/AGENT-DIALECTS.md 1.4-1.7), declared in its
/// source's module.
pub struct Vendor {
    /// The method, without a leading `_`; `Source::method` of what [`Vendor::parse`] makes.
    pub method: &'static str,
    /// The agent's result when the question ends unanswered at the client (its
    /// `session/cancel`, its EOF) while the client was shown the request as it is.
    pub cancelled: &'static str,
    /// The vendor's own opt-in, besides a `_meta` key named after the method.
    pub opt_in: Option<OptIn>,
    /// Reads a request's params (with the question id to give it, and the session whose
    /// prompt is in flight): the question, its source, and what to show beside it. `None`
    /// when the bridge cannot read it (it is then tracked and forwarded).
    pub parse: Parse,
}

/// [`Vendor::parse`]: (params, question id, session in flight) to the question, its source,
/// and its context.
pub type Parse = fn(&Value, String, &str) -> Option<(Question, Origin, Value)>;

/// A vendor's opt-in: a member of the client capabilities' `_meta`.
pub struct OptIn {
    /// Its name for `--no-opt-in`.
    pub name: &'static str,
    /// The `_meta` key.
    pub key: &'static str,
    /// What the bridge offers the agent there when some surface can take the questions.
    pub offer: fn() -> Value,
    /// Whether a client's value there says it understands the method.
    pub said: fn(&Value) -> bool,
}

/// The vendor whose method this is (with or without one leading `_`).
pub fn vendor(method: &str) -> Option<&'static Vendor> {
    let m = method.strip_prefix('_').unwrap_or(method);
    VENDORS.iter().copied().find(|v| v.method == m)
}

/// [`Vendor::parse`] from a parser of a source's own type.
#[macro_export]
#[doc(hidden)]
macro_rules! vendor_parse {
    ($parse:expr) => {
        |params, id, in_flight| {
            let (q, source, context) = $parse(params, id, in_flight)?;
            let source: $crate::questions::sources::Origin = std::sync::Arc::new(source);
            Some((q, source, context))
        }
    };
}

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

/// Where a pending question came from, which decides what the agent gets back.
pub type Origin = std::sync::Arc<dyn Source>;

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

    /// A client that refused this question as the extension is asked it next as a form
    /// elicitation, where it renders forms (only the extension's own questions: a form the
    /// agent sent is shown as a form only where the client renders forms, and a vendor's
    /// question goes to a permission prompt).
    fn form_after_extension(&self) -> bool {
        false
    }

    /// The request approves a tool the agent is about to run: its tool call is the tool's,
    /// whose status the agent reports as the tool runs (the bridge never marks it done).
    fn approves_a_tool(&self) -> bool {
        false
    }
}

/// A vendor request's `questions` list: present, an array, not empty and within
/// [`MAX_ITEMS`] (`None` otherwise: the bridge cannot read the request).
pub(crate) fn questions_of(params: &Value) -> Option<&Vec<Value>> {
    params
        .get("questions")?
        .as_array()
        .filter(|l| !l.is_empty() && l.len() <= MAX_ITEMS)
}

/// The end of every vendor parser: the question of `items` in `session_id`, when the
/// model accepts it, with its source and context.
pub(crate) fn asked<S>(
    session_id: String,
    question_id: String,
    items: Vec<Item>,
    source: S,
    context: Value,
) -> Option<(Question, S, Value)> {
    let q = Question {
        session_id,
        question_id,
        items,
        timeout_ms: None,
    };
    q.problem().is_none().then_some((q, source, context))
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
    use serde_json::{json, Value};

    use super::{Reply, Source, Vendor};
    use crate::questions::answer::{Extras, Outcome};
    use crate::questions::model::{Item, Question};

    /// A vendor that exists only in the tests: the whole of adding one is this and its line
    /// in [`super::VENDORS`]. `test/ask {sessionId, text}` is answered `{"said": "<answer>"}`,
    /// and `{"said": null}` for every other ending.
    pub static VENDOR: Vendor = Vendor {
        method: "test/ask",
        cancelled: r#"{"said":null}"#,
        opt_in: None,
        parse: crate::vendor_parse!(|p: &Value, id: String, _: &str| {
            let q = Question {
                session_id: p.get("sessionId")?.as_str()?.to_owned(),
                question_id: id,
                items: vec![Item {
                    prompt: p.get("text")?.as_str()?.to_owned(),
                    allow_free_text: true,
                    ..Item::default()
                }],
                timeout_ms: None,
            };
            q.problem()
                .is_none()
                .then_some((q, TestVendor, Value::Null))
        }),
    };

    #[derive(Debug)]
    pub struct TestVendor;

    impl Source for TestVendor {
        fn name(&self) -> &'static str {
            "test"
        }
        fn method(&self) -> &'static str {
            VENDOR.method
        }
        fn reply(&self, _q: &Question, o: &Outcome, _extras: &Extras) -> Reply {
            let said = match o {
                Outcome::Answered(a) => a.first().and_then(|x| x.first()).cloned(),
                Outcome::Rejected(_) => None,
            };
            Reply::value(&json!({ "said": said }))
        }
        fn read(&self, _q: &Question, result: &RawValue) -> Result<Outcome, String> {
            Err(format!("not read: {}", result.get()))
        }
    }

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
