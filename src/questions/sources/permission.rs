//! `session/request_permission` as a question source: tool approvals from every agent
//! (docs/AGENT-DIALECTS.md 1.2), and Qwen Code's permission with answers (1.3), whose
//! `toolCall.rawInput.questions` is a real multi-item question.
//!
//! A tool approval is one single-select item whose options are the permission options
//! (value = `optionId`, label = `name`, the kind kept); its context is the tool call. Every
//! ending but an answer is `{"outcome":{"outcome":"cancelled"}}`; a decline picks the
//! prompt's first reject option (a reject is an answer).

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::{Reply, Source};
use crate::methods;
use crate::questions::answer::{Extras, Outcome, Reason};
use crate::questions::model::{Choice, Item, Question, MAX_ITEMS};

/// Qwen's marker of a permission request that carries questions.
const QWEN_KIND: &str = "user_question";

/// A permission request, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    /// Qwen's questions: the answers go in a top-level `answers`, with this option.
    qwen_submit: Option<String>,
    /// The option a decline picks (the first reject option), if any.
    reject: Option<String>,
}

/// The question, the source, and the context (the tool call) of a permission request;
/// `None` when it is not one the bridge can read (it is then only forwarded).
pub fn parse(params: &Value, question_id: String) -> Option<(Question, Permission, Value)> {
    let session_id = params.get("sessionId")?.as_str()?.to_owned();
    let tool_call = params.get("toolCall")?.as_object()?;
    tool_call.get("toolCallId")?.as_str()?;
    let options: Vec<Choice> = params
        .get("options")?
        .as_array()?
        .iter()
        .map(|o| {
            Some(Choice {
                value: o.get("optionId")?.as_str()?.to_owned(),
                label: o.get("name")?.as_str()?.to_owned(),
                kind: o.get("kind").and_then(Value::as_str).map(str::to_owned),
                ..Choice::default()
            })
        })
        .collect::<Option<_>>()?;
    if options.is_empty() {
        return None;
    }
    let kind_of = |k: &str| {
        options
            .iter()
            .find(|c| c.kind.as_deref() == Some(k))
            .map(|c| c.value.clone())
    };
    let reject = kind_of("reject_once").or_else(|| kind_of("reject_always"));
    let context = json!({ "toolCall": tool_call });
    let qwen = tool_call
        .get("_meta")
        .and_then(|m| m.get("qwenInteractionKind"))
        .and_then(Value::as_str)
        == Some(QWEN_KIND);
    let questions = tool_call
        .get("rawInput")
        .and_then(|r| r.get("questions"))
        .and_then(Value::as_array);
    let (items, qwen_submit) = match (qwen, questions) {
        (true, Some(list)) if !list.is_empty() && list.len() <= MAX_ITEMS => {
            let submit = kind_of("allow_once").or_else(|| options.first().map(|c| c.value.clone()));
            (list.iter().map(qwen_item).collect::<Option<_>>()?, submit)
        }
        _ => {
            let title = tool_call.get("title").and_then(Value::as_str);
            let item = Item {
                prompt: title.unwrap_or("Allow this tool call?").to_owned(),
                header: tool_call
                    .get("kind")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                options,
                ..Item::default()
            };
            (vec![item], None)
        }
    };
    let q = Question {
        session_id,
        question_id,
        items,
        timeout_ms: None,
    };
    if q.problem().is_some() {
        return None;
    }
    Some((
        q,
        Permission {
            qwen_submit,
            reject,
        },
        context,
    ))
}

/// One of Qwen's `{question, header, options:[{label, description}], multiSelect}`.
fn qwen_item(v: &Value) -> Option<Item> {
    let options = v
        .get("options")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|o| {
                    let label = o.get("label")?.as_str()?.to_owned();
                    Some(Choice {
                        value: label.clone(),
                        label,
                        description: o
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        ..Choice::default()
                    })
                })
                .collect::<Option<Vec<_>>>()
        })
        .unwrap_or(Some(Vec::new()))?;
    Some(Item {
        prompt: v.get("question")?.as_str()?.to_owned(),
        header: v.get("header").and_then(Value::as_str).map(str::to_owned),
        multi_select: v
            .get("multiSelect")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        // Qwen's dialog has an "Other" box: free text is sent as the string itself.
        allow_free_text: true,
        options,
        ..Item::default()
    })
}

impl Permission {
    /// Qwen's questions inside a permission request: a real question, which only Qwen's own
    /// client reads from the request as sent.
    pub fn asks_questions(&self) -> bool {
        self.qwen_submit.is_some()
    }
}

impl Source for Permission {
    fn standard(&self) -> bool {
        true
    }

    fn approves_a_tool(&self) -> bool {
        !self.asks_questions()
    }

    fn method(&self) -> &'static str {
        methods::SESSION_REQUEST_PERMISSION
    }

    fn name(&self) -> &'static str {
        if self.qwen_submit.is_some() {
            "qwen"
        } else {
            "permission"
        }
    }

    fn reply(&self, _q: &Question, outcome: &Outcome, _extras: &Extras) -> Reply {
        let selected = |id: &str| json!({ "outcome": { "outcome": "selected", "optionId": id } });
        let cancelled = json!({ "outcome": { "outcome": "cancelled" } });
        let v = match (outcome, &self.qwen_submit) {
            (Outcome::Answered(answers), Some(submit)) => {
                let mut all = Map::new();
                for (i, a) in answers.iter().enumerate() {
                    // Multi-select and free text joined with ", " (the separator is not
                    // documented by Qwen).
                    all.insert(i.to_string(), json!(a.join(", ")));
                }
                let mut v = selected(submit);
                v["answers"] = Value::Object(all);
                v
            }
            (Outcome::Answered(answers), None) => match answers.first().and_then(|a| a.first()) {
                Some(id) => selected(id),
                None => cancelled,
            },
            (Outcome::Rejected(Reason::Declined), None) => match &self.reject {
                Some(id) => selected(id),
                None => cancelled,
            },
            (Outcome::Rejected(_), _) => cancelled,
        };
        Reply::value(&v)
    }

    fn read(&self, q: &Question, result: &RawValue) -> Result<Outcome, String> {
        let v: Value = serde_json::from_str(result.get()).map_err(|e| e.to_string())?;
        let outcome = v.get("outcome").ok_or("outcome: is required")?;
        match outcome.get("outcome").and_then(Value::as_str) {
            Some("cancelled") => Ok(Outcome::Rejected(Reason::Cancelled)),
            Some("selected") => {
                let id = outcome
                    .get("optionId")
                    .and_then(Value::as_str)
                    .ok_or("outcome.optionId: must be a string")?;
                if self.qwen_submit.is_none() {
                    return Ok(Outcome::Answered(vec![vec![id.to_owned()]]));
                }
                if Some(id) != self.qwen_submit.as_deref() {
                    return Ok(Outcome::Rejected(Reason::Declined));
                }
                let answers = v.get("answers").and_then(Value::as_object);
                Ok(Outcome::Answered(
                    (0..q.items.len())
                        .map(|i| {
                            answers
                                .and_then(|a| a.get(&i.to_string()))
                                .and_then(Value::as_str)
                                .map(|s| vec![s.to_owned()])
                                .unwrap_or_default()
                        })
                        .collect(),
                ))
            }
            _ => Err("outcome.outcome: must be selected or cancelled".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    fn bash() -> Value {
        json!({
            "sessionId": "s1",
            "toolCall": {"toolCallId": "tc-1", "title": "rm -rf build", "kind": "execute",
                         "rawInput": {"command": "rm -rf build"}},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
            ]
        })
    }

    #[test]
    fn a_tool_approval_is_one_single_select_item_with_the_tool_call_as_context() {
        let (q, p, context) = parse(&bash(), "permission:7".into()).unwrap();
        assert_eq!(p.name(), "permission");
        assert_eq!(q.items.len(), 1);
        let item = &q.items[0];
        assert_eq!(item.prompt, "rm -rf build");
        assert_eq!(item.header.as_deref(), Some("execute"));
        assert!(!item.multi_select && !item.allow_free_text);
        let values: Vec<(&str, &str, Option<&str>)> = item
            .options
            .iter()
            .map(|c| (c.value.as_str(), c.label.as_str(), c.kind.as_deref()))
            .collect();
        assert_eq!(
            values,
            [
                ("allow", "Allow", Some("allow_once")),
                ("always", "Always allow", Some("allow_always")),
                ("reject", "Reject", Some("reject_once"))
            ]
        );
        assert_eq!(context["toolCall"]["rawInput"]["command"], "rm -rf build");
    }

    #[test]
    fn answers_and_endings_in_the_permission_shape() {
        let (q, p, _) = parse(&bash(), "permission:7".into()).unwrap();
        let reply = |o: Outcome| match p.reply(&q, &o, &Vec::new()) {
            Reply::Result(text) => serde_json::from_str::<Value>(&text).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            reply(Outcome::Answered(vec![vec!["always".into()]])),
            json!({"outcome":{"outcome":"selected","optionId":"always"}})
        );
        assert_eq!(
            reply(Outcome::Rejected(Reason::Declined)),
            json!({"outcome":{"outcome":"selected","optionId":"reject"}})
        );
        for r in [
            Reason::Cancelled,
            Reason::Timeout,
            Reason::ClientDisconnected,
            Reason::Unsupported,
        ] {
            assert_eq!(
                reply(Outcome::Rejected(r)),
                json!({"outcome":{"outcome":"cancelled"}})
            );
        }
        assert_eq!(
            p.read(
                &q,
                &raw(json!({"outcome":{"outcome":"selected","optionId":"allow"}}))
            )
            .unwrap(),
            Outcome::Answered(vec![vec!["allow".into()]])
        );
        assert_eq!(
            p.read(&q, &raw(json!({"outcome":{"outcome":"cancelled"}})))
                .unwrap(),
            Outcome::Rejected(Reason::Cancelled)
        );
        assert!(p.read(&q, &raw(json!({"outcome":"yes"}))).is_err());
    }

    #[test]
    fn not_a_permission_the_bridge_can_read() {
        for bad in [
            json!({"toolCall": {"toolCallId": "t"}, "options": [{"optionId":"a","name":"A","kind":"allow_once"}]}),
            json!({"sessionId": "s", "toolCall": {}, "options": [{"optionId":"a","name":"A"}]}),
            json!({"sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": []}),
            json!({"sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": [{"optionId":"a","name":"A"},{"optionId":"a","name":"B"}]}),
        ] {
            assert!(parse(&bad, "p".into()).is_none(), "{bad}");
        }
    }

    fn qwen() -> Value {
        json!({
            "sessionId": "s1",
            "toolCall": {
                "toolCallId": "tc-q", "title": "Ask user", "kind": "other",
                "rawInput": {"questions": [
                    {"question": "Which database?", "header": "DB",
                     "options": [{"label": "Postgres", "description": "server"}, {"label": "SQLite"}],
                     "multiSelect": false},
                    {"question": "Which features?", "header": "Features",
                     "options": [{"label": "auth"}, {"label": "billing"}], "multiSelect": true}
                ]},
                "_meta": {"qwenInteractionKind": "user_question"}
            },
            "options": [
                {"optionId": "proceed_once", "name": "Submit", "kind": "allow_once"},
                {"optionId": "cancel", "name": "Cancel", "kind": "reject_once"}
            ]
        })
    }

    #[test]
    fn qwen_questions_are_a_real_multi_item_question() {
        let (q, p, _) = parse(&qwen(), "permission:9".into()).unwrap();
        assert_eq!(p.name(), "qwen");
        assert_eq!(q.items.len(), 2);
        assert_eq!(q.items[0].prompt, "Which database?");
        assert!(q.items[1].multi_select && q.items[0].allow_free_text);
        let answered = Outcome::Answered(vec![
            vec!["a server of my own".into()],
            vec!["auth".into(), "billing".into()],
        ]);
        let Reply::Result(text) = p.reply(&q, &answered, &Vec::new()) else {
            panic!()
        };
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"outcome":{"outcome":"selected","optionId":"proceed_once"},
                   "answers":{"0":"a server of my own","1":"auth, billing"}})
        );
        let Reply::Result(text) = p.reply(&q, &Outcome::Rejected(Reason::Declined), &Vec::new())
        else {
            panic!()
        };
        assert_eq!(text, r#"{"outcome":{"outcome":"cancelled"}}"#);
        assert_eq!(
            p.read(
                &q,
                &raw(
                    json!({"outcome":{"outcome":"selected","optionId":"proceed_once"},
                            "answers":{"0":"SQLite","1":"auth"}})
                )
            )
            .unwrap(),
            Outcome::Answered(vec![vec!["SQLite".into()], vec!["auth".into()]])
        );
    }
}
