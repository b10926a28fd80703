//! The dialect-neutral question model and the validation of the agent's request params.
//!
//! Owns PROTOCOL.md section 1.1: both accepted param forms (single `prompt` + `options`,
//! and `questions: [...]`) and every option shape parse into one [`Question`]. Every
//! rejection names the offending field (`questions[1].options[0]: value must be a string`)
//! so agent authors can fix their request from the error alone.
//!
//! Invariants: a parsed question has 1..=16 items; every item can be answered (it has
//! options or allows free text); option values are unique within an item.

use serde_json::value::RawValue;
use serde_json::Value;

use crate::rawjson::{Members, RawObject};

/// Members of the request params the bridge reads (others are forwarded, never parsed): an
/// item's members (the single form), then the three only a request has.
const REQUEST_KEYS: &[&str] = &[
    "question",
    "prompt",
    "header",
    "options",
    "multiSelect",
    "multiple",
    "allowFreeText",
    "custom",
    "sessionId",
    "questionId",
    "timeoutMs",
];
/// Members of one `questions[i]` item the bridge reads.
const ITEM_KEYS: &[&str] = REQUEST_KEYS.split_at(REQUEST_KEYS.len() - 3).0;

/// Most items one request may carry.
pub const MAX_ITEMS: usize = 16;

/// One selectable option.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Choice {
    pub value: String,
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Text to show beside the option (a code sample, a plan), display only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// A permission option's kind (`allow_once`, `allow_always`, `reject_once`,
    /// `reject_always`), so a page can style allow and reject apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// One question item (a request carries one or more).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    pub prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    pub options: Vec<Choice>,
    pub multi_select: bool,
    pub allow_free_text: bool,
    /// The item may be left unanswered (an empty answer): the agent's form does not
    /// require it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

impl Item {
    /// The value of the option whose value or label is `s` (a label maps to its value).
    pub fn option_value(&self, s: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|c| c.value == s)
            .or_else(|| self.options.iter().find(|c| c.label == s))
            .map(|c| c.value.as_str())
    }
}

/// A validated question request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub session_id: String,
    pub question_id: String,
    pub items: Vec<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl Question {
    /// What [`parse_request`] guarantees of every question it returns, checked on a question
    /// made some other way (an agent's `elicitation/create` form): ids not empty, 1 to
    /// [`MAX_ITEMS`] items, each with a prompt, distinct option values, and a way to be
    /// answered. `None` when it holds.
    pub fn problem(&self) -> Option<Invalid> {
        if self.session_id.is_empty() {
            return Some(invalid("sessionId", "must not be empty"));
        }
        if self.question_id.is_empty() {
            return Some(invalid("questionId", "must not be empty"));
        }
        if self.items.is_empty() || self.items.len() > MAX_ITEMS {
            return Some(invalid(
                "questions",
                format!(
                    "must hold 1 to {MAX_ITEMS} items (has {})",
                    self.items.len()
                ),
            ));
        }
        for (i, item) in self.items.iter().enumerate() {
            let at = format!("questions[{i}]");
            if item.prompt.is_empty() {
                return Some(invalid(field(&at, "question"), "must not be empty"));
            }
            for (j, c) in item.options.iter().enumerate() {
                if item.options[..j].iter().any(|o| o.value == c.value) {
                    return Some(invalid(format!("{at}.options[{j}]"), duplicate(&c.value)));
                }
            }
            if item.options.is_empty() && !item.allow_free_text {
                return Some(invalid(at, UNANSWERABLE));
            }
        }
        None
    }
}

/// A validation failure: `field` is a path such as `questions[1].options[0]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct Invalid {
    pub field: String,
    pub problem: String,
}

/// The problem of an item with neither options nor free text (from [`parse_request`] and
/// [`Question::problem`] alike).
const UNANSWERABLE: &str = "has no options and does not allow free text, so it cannot be answered";

/// The problem of an option whose value an earlier option of its item has.
fn duplicate(value: &str) -> String {
    format!("duplicate value {value:?}")
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Invalid {
    Invalid {
        field: field.into(),
        problem: problem.into(),
    }
}

fn non_empty_string(obj: &Members<'_>, key: &str, at: &str) -> Result<String, Invalid> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(invalid(field(at, key), "must not be empty")),
        Some(_) => Err(invalid(field(at, key), "must be a string")),
        None => Err(invalid(field(at, key), "is required")),
    }
}

fn opt_string(obj: &Members<'_>, key: &str, at: &str) -> Result<Option<String>, Invalid> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(field(at, key), "must be a string")),
    }
}

/// Reads a boolean that has two accepted names (`multiSelect`/`multiple`).
fn opt_bool(obj: &Members<'_>, names: [&str; 2], at: &str) -> Result<Option<bool>, Invalid> {
    let mut found = None;
    for name in names {
        match obj.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => {
                if found.is_some_and(|f| f != *b) {
                    return Err(invalid(
                        field(at, name),
                        format!("contradicts `{}`", names[0]),
                    ));
                }
                found = Some(*b);
            }
            Some(_) => return Err(invalid(field(at, name), "must be a boolean")),
        }
    }
    Ok(found)
}

/// Turns a [`RawObject::known`] error (`"must be an object"` or `"key: why"`) into [`Invalid`].
fn invalid_member(e: &str, at: &str) -> Invalid {
    match e.split_once(": ") {
        Some((key, why)) => invalid(field(at, key), format!("is not valid JSON here ({why})")),
        None => invalid(if at.is_empty() { "params" } else { at }, e),
    }
}

fn field(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// One option; `Err` is the problem (the caller names the field).
fn parse_choice(v: &Value) -> Result<Choice, String> {
    let text = |v: &Value, what: &str| match v {
        Value::String(s) => Ok(s.clone()),
        _ => Err(format!("{what} must be a string")),
    };
    match v {
        Value::String(s) => Ok(Choice {
            value: s.clone(),
            label: s.clone(),
            description: None,
            ..Choice::default()
        }),
        Value::Array(pair) => match pair.as_slice() {
            [value, label] => Ok(Choice {
                value: text(value, "value")?,
                label: text(label, "label")?,
                description: None,
                ..Choice::default()
            }),
            _ => Err("must be [value, label]".to_owned()),
        },
        Value::Object(obj) => {
            let label = match obj.get("label") {
                Some(l) => text(l, "label")?,
                None => return Err("label is required".to_owned()),
            };
            let value = match obj.get("value") {
                None | Some(Value::Null) => label.clone(),
                Some(v) => text(v, "value")?,
            };
            let description = match obj.get("description") {
                None | Some(Value::Null) => None,
                Some(d) => Some(text(d, "description")?),
            };
            Ok(Choice {
                value,
                label,
                description,
                ..Choice::default()
            })
        }
        _ => Err("must be a string, [value, label] or {value?, label, description?}".to_owned()),
    }
}

/// Parses one item from `obj`; `prompt_key` is `prompt` (single form) or `question`.
fn parse_item(obj: &Members<'_>, prompt_key: &str, at: &str) -> Result<Item, Invalid> {
    let prompt = non_empty_string(obj, prompt_key, at)?;
    let header = opt_string(obj, "header", at)?;
    // Field paths are only spelled out for an error.
    let options_at = || field(at, "options");
    let options = match obj.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => {
            let mut options: Vec<Choice> = Vec::with_capacity(list.len());
            for (i, v) in list.iter().enumerate() {
                let here = || format!("{}[{i}]", options_at());
                let choice = parse_choice(v).map_err(|problem| invalid(here(), problem))?;
                if options.iter().any(|c| c.value == choice.value) {
                    return Err(invalid(here(), duplicate(&choice.value)));
                }
                options.push(choice);
            }
            options
        }
        Some(_) => return Err(invalid(options_at(), "must be an array")),
    };
    let multi_select = opt_bool(obj, ["multiSelect", "multiple"], at)?.unwrap_or(false);
    let allow_free_text =
        opt_bool(obj, ["allowFreeText", "custom"], at)?.unwrap_or(options.is_empty());
    if options.is_empty() && !allow_free_text {
        return Err(invalid(
            if at.is_empty() { "options" } else { at },
            UNANSWERABLE,
        ));
    }
    Ok(Item {
        prompt,
        header,
        options,
        multi_select,
        allow_free_text,
        ..Item::default()
    })
}

/// Validates the params of `_sandboxagent/session/request_question`. Only the members
/// the bridge understands are parsed; unknown ones may hold anything.
pub fn parse_request(params: Option<&RawValue>) -> Result<Question, Invalid> {
    parse_request_text(params.map(RawValue::get))
}

/// [`parse_request`] on the JSON text of `params` (valid JSON, as the scan found it).
pub fn parse_request_text(params: Option<&str>) -> Result<Question, Invalid> {
    parse_request_from(params, None)
}

/// [`parse_request_text`], liberal as sandbox-agent's own adapter needs (docs/AGENT-DIALECTS.md
/// 1.8): a request without `questionId` gets `request-<its JSON-RPC id>` when `request_id`
/// (the id's JSON text) is given. (An item's text is read from `prompt` or `question` in
/// both forms either way.)
pub fn parse_request_from(
    params: Option<&str>,
    request_id: Option<&str>,
) -> Result<Question, Invalid> {
    let raw = params.ok_or_else(|| invalid("params", "are required"))?;
    let members = RawObject::parse(raw).ok_or_else(|| invalid("params", "must be an object"))?;
    let member = |key: &str| members.get(key);
    let obj = &members
        .known(REQUEST_KEYS)
        .map_err(|e| invalid_member(&e, ""))?;
    let session_id = non_empty_string(obj, "sessionId", "")?;
    let question_id = match (obj.get("questionId"), request_id) {
        (None, Some(id)) => format!("request-{}", id.trim_matches('"')),
        _ => non_empty_string(obj, "questionId", "")?,
    };
    // The single form's text: `prompt`, or `question` as an alias.
    let single = ["prompt", "question"]
        .into_iter()
        .find(|k| obj.get(k).is_some());
    let items = match (single, member("questions")) {
        (Some(key), Some(_)) => {
            return Err(invalid(
                key,
                "cannot be combined with `questions` (send one form)",
            ))
        }
        (None, None) => return Err(invalid("questions", "is required (or `prompt`)")),
        (Some(key), None) => vec![parse_item(obj, key, "")?],
        (None, Some(list)) => {
            let list: Vec<&RawValue> = serde_json::from_str(list.get())
                .map_err(|_| invalid("questions", "must be an array"))?;
            if list.is_empty() || list.len() > MAX_ITEMS {
                return Err(invalid(
                    "questions",
                    format!("must hold 1 to {MAX_ITEMS} items (has {})", list.len()),
                ));
            }
            let mut items = Vec::with_capacity(list.len());
            for (i, v) in list.into_iter().enumerate() {
                let at = format!("questions[{i}]");
                let q = RawObject::parse(v.get())
                    .ok_or_else(|| invalid(at.as_str(), "must be an object"))?
                    .known(ITEM_KEYS)
                    .map_err(|e| invalid_member(&e, &at))?;
                // The item's text: `question`, or `prompt` as an alias.
                let key = if q.get("question").is_none() && q.get("prompt").is_some() {
                    "prompt"
                } else {
                    "question"
                };
                items.push(parse_item(&q, key, &at)?);
            }
            items
        }
    };
    let timeout_ms = match obj.get("timeoutMs") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(ms) if ms > 0 => Some(ms),
            _ => return Err(invalid("timeoutMs", "must be a positive integer")),
        },
        Some(_) => return Err(invalid("timeoutMs", "must be a positive integer")),
    };
    if member("_meta").is_some_and(|m| !m.get().starts_with('{')) {
        return Err(invalid("_meta", "must be an object"));
    }
    Ok(Question {
        session_id,
        question_id,
        items,
        timeout_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(params: Value) -> Result<Question, Invalid> {
        let raw = RawValue::from_string(params.to_string()).unwrap();
        parse_request(Some(&raw))
    }

    fn err(params: Value) -> String {
        parse(params).unwrap_err().to_string()
    }

    #[test]
    fn a_repeated_member_takes_its_last_value_and_paths_name_the_option() {
        let raw = RawValue::from_string(
            r#"{"sessionId":"s","questionId":"q","prompt":"first","prompt":"second","options":["a","b"]}"#
                .to_owned(),
        )
        .unwrap();
        let q = parse_request(Some(&raw)).unwrap();
        assert_eq!(q.items[0].prompt, "second");
        let e = err(json!({"sessionId":"s","questionId":"q","questions":[
            {"question":"x","options":["a"]},
            {"question":"y","options":["a",{"value":"b"}]}
        ]}));
        assert_eq!(e, "questions[1].options[1]: label is required");
        let e = err(json!({"sessionId":"s","questionId":"q","prompt":"x","options":["a","a"]}));
        assert_eq!(e, "options[1]: duplicate value \"a\"");
    }

    #[test]
    fn single_form_with_pairs() {
        let q = parse(json!({"sessionId":"s1","questionId":"q-7",
            "prompt":"Which option?","options":[["option-a","Option A"],["option-b","Option B"]]}))
        .unwrap();
        assert_eq!(q.items.len(), 1);
        let item = &q.items[0];
        assert_eq!(item.prompt, "Which option?");
        assert_eq!(item.options[1].value, "option-b");
        assert_eq!(item.options[1].label, "Option B");
        assert!(!item.multi_select);
        assert!(!item.allow_free_text);
    }

    #[test]
    fn multi_form_and_every_option_shape() {
        let q = parse(json!({"sessionId":"s1","questionId":"q",
            "questions":[
                {"question":"Which DB?","header":"DB","options":[
                    {"label":"Postgres","description":"d"},{"label":"SQLite"}],
                 "multiple":false,"custom":true},
                {"question":"Pick","options":["x",["v","L"],{"value":"w","label":"W"}],"multiSelect":true},
                {"question":"Notes?"}
            ], "timeoutMs": 5000, "_meta": {}, "unknownField": 1}))
        .unwrap();
        assert_eq!(q.timeout_ms, Some(5000));
        let [db, pick, notes] = q.items.as_slice() else {
            panic!()
        };
        assert_eq!(db.header.as_deref(), Some("DB"));
        assert_eq!(db.options[0].value, "Postgres");
        assert_eq!(db.options[0].description.as_deref(), Some("d"));
        assert!(db.allow_free_text);
        let values: Vec<_> = pick.options.iter().map(|c| c.value.as_str()).collect();
        assert_eq!(values, ["x", "v", "w"]);
        assert!(pick.multi_select && !pick.allow_free_text);
        assert!(notes.options.is_empty() && notes.allow_free_text);
        assert_eq!(pick.option_value("L"), Some("v"));
    }

    #[test]
    fn validation_messages_name_the_field() {
        let base = |extra: Value| {
            let mut p = json!({"sessionId":"s","questionId":"q"});
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            p
        };
        assert_eq!(
            err(json!({"questionId":"q","prompt":"p"})),
            "sessionId: is required"
        );
        assert_eq!(
            err(json!({"sessionId":"","questionId":"q","prompt":"p"})),
            "sessionId: must not be empty"
        );
        assert_eq!(
            err(json!({"sessionId":"s","questionId":7,"prompt":"p"})),
            "questionId: must be a string"
        );
        assert_eq!(err(base(json!({}))), "questions: is required (or `prompt`)");
        assert_eq!(
            err(base(json!({"prompt":"p","questions":[]}))),
            "prompt: cannot be combined with `questions` (send one form)"
        );
        assert_eq!(err(base(json!({"prompt":""}))), "prompt: must not be empty");
        assert_eq!(
            err(base(json!({"questions":[]}))),
            "questions: must hold 1 to 16 items (has 0)"
        );
        assert_eq!(
            err(base(
                json!({"questions":[{"question":"a"},{"question":"b","options":[{"value":1,"label":"x"}]}]})
            )),
            "questions[1].options[0]: value must be a string"
        );
        assert_eq!(
            err(base(json!({"prompt":"p","options":["a","b","a"]}))),
            "options[2]: duplicate value \"a\""
        );
        assert_eq!(
            err(base(
                json!({"questions":[{"question":"a","multiple":"yes"}]})
            )),
            "questions[0].multiple: must be a boolean"
        );
        assert_eq!(
            err(base(json!({"questions":[{"question":"a","custom":false}]}))),
            "questions[0]: has no options and does not allow free text, so it cannot be answered"
        );
        assert_eq!(
            err(base(json!({"prompt":"p","timeoutMs":0}))),
            "timeoutMs: must be a positive integer"
        );
        assert_eq!(
            err(base(json!({"prompt":"p","options":[{"description":"d"}]}))),
            "options[0]: label is required"
        );
        assert_eq!(
            err(base(
                json!({"questions":[{"question":"a","multiSelect":true,"multiple":false}]})
            )),
            "questions[0].multiple: contradicts `multiSelect`"
        );
        assert_eq!(err(json!([1])), "params: must be an object");
        // Unknown members are never parsed: a huge number there is fine.
        let raw = RawValue::from_string(
            r#"{"sessionId":"s","questionId":"q","prompt":"p","x":1e400,"_meta":{"n":1e400}}"#
                .into(),
        )
        .unwrap();
        assert!(parse_request(Some(&raw)).is_ok());
        let raw = RawValue::from_string(
            r#"{"sessionId":"s","questionId":"q","questions":[{"question":"a","y":1e400}]}"#.into(),
        )
        .unwrap();
        assert!(parse_request(Some(&raw)).is_ok());
        let raw = RawValue::from_string(
            r#"{"sessionId":"s","questionId":"q","prompt":"p","timeoutMs":1e400}"#.into(),
        )
        .unwrap();
        assert!(parse_request(Some(&raw))
            .unwrap_err()
            .to_string()
            .starts_with("timeoutMs: is not valid JSON here"));
        assert_eq!(
            err(base(json!({"questions":["x"]}))),
            "questions[0]: must be an object"
        );
        assert_eq!(
            err(base(json!({"questions":[{"question":"a"}], "_meta": 1}))),
            "_meta: must be an object"
        );
        let many: Vec<Value> = (0..17)
            .map(|i| json!({"question": format!("q{i}")}))
            .collect();
        assert_eq!(
            err(base(json!({ "questions": many }))),
            "questions: must hold 1 to 16 items (has 17)"
        );
    }

    #[test]
    fn the_extension_is_read_liberally_as_sandbox_agents_adapter_sends_it() {
        // `question` for the single form's text, `prompt` for an item's, no questionId.
        let single = json!({"sessionId": "s", "question": "Proceed?", "options": ["yes", "no"]});
        let q = parse_request_from(Some(&single.to_string()), Some("7")).unwrap();
        assert_eq!(q.question_id, "request-7");
        assert_eq!(q.items[0].prompt, "Proceed?");
        let multi =
            json!({"sessionId": "s", "questions": [{"prompt": "Which?", "options": ["a", "b"]}]});
        let q = parse_request_from(Some(&multi.to_string()), Some("\"abc\"")).unwrap();
        assert_eq!(q.question_id, "request-abc");
        assert_eq!(q.items[0].prompt, "Which?");
        // A questionId that is there is still checked; strict callers still require one.
        let empty = json!({"sessionId": "s", "questionId": "", "prompt": "p"});
        assert!(parse_request_from(Some(&empty.to_string()), Some("1")).is_err());
        assert_eq!(
            parse_request_text(Some(&single.to_string()))
                .unwrap_err()
                .to_string(),
            "questionId: is required"
        );
    }
}
