//! Cursor CLI's own ways of asking (docs/AGENT-DIALECTS.md 1.4): `cursor/ask_question` (questions
//! with options, no free text) and `cursor/create_plan` (a plan to accept or reject).
//!
//! Replies are always nested under `outcome`. A question: answered ->
//! `{"outcome":"answered","answers":[{"questionId","selectedOptionIds"}]}`, declined ->
//! `skipped` with a reason, anything else `cancelled`. A plan: one single-select item
//! Accept / Reject whose free text is the reason for a rejection; accepted ->
//! `{"outcome":"accepted"}`, rejected -> `{"outcome":"rejected","reason"}`, anything else
//! `cancelled`.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{asked, questions_of, Reply, Source, Vendor};
use crate::methods;
use crate::questions::answer::{Extras, Outcome, Reason};
use crate::questions::model::{Choice, Item, Question};

/// `cursor/ask_question`: the questions' ids, in item order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    ids: Vec<String>,
}

/// `cursor/create_plan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan;

const ACCEPT: &str = "accept";
const REJECT: &str = "reject";

/// The session a Cursor request belongs to: Cursor's requests carry no `sessionId`; the
/// router gives the one whose prompt is in flight (empty when there is none).
fn session(params: &Value, in_flight: &str) -> String {
    params
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or(in_flight)
        .to_owned()
}

/// `cursor/ask_question`: every ending but an answer is `{"outcome":{"outcome":"cancelled"}}`.
pub static ASK: Vendor = Vendor {
    method: methods::CURSOR_ASK_QUESTION,
    cancelled: r#"{"outcome":{"outcome":"cancelled"}}"#,
    opt_in: None,
    parse: crate::vendor_parse!(parse_ask),
};

/// `cursor/create_plan`, ended like [`ASK`].
pub static PLAN: Vendor = Vendor {
    method: methods::CURSOR_CREATE_PLAN,
    cancelled: r#"{"outcome":{"outcome":"cancelled"}}"#,
    opt_in: None,
    parse: crate::vendor_parse!(parse_plan),
};

/// Reads `cursor/ask_question` params: `{toolCallId, title, questions:[{id, prompt,
/// options:[{id, label}], allowMultiple}]}`.
pub fn parse_ask(
    params: &Value,
    question_id: String,
    in_flight: &str,
) -> Option<(Question, Ask, Value)> {
    let list = questions_of(params)?;
    let mut ids = Vec::with_capacity(list.len());
    let mut items = Vec::with_capacity(list.len());
    for q in list {
        ids.push(q.get("id")?.as_str()?.to_owned());
        let options = q
            .get("options")?
            .as_array()?
            .iter()
            .map(|o| {
                Some(Choice {
                    value: o.get("id")?.as_str()?.to_owned(),
                    label: o.get("label")?.as_str()?.to_owned(),
                    ..Choice::default()
                })
            })
            .collect::<Option<Vec<_>>>()?;
        items.push(Item {
            prompt: q.get("prompt")?.as_str()?.to_owned(),
            multi_select: q
                .get("allowMultiple")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            options,
            ..Item::default()
        });
    }
    let context = json!({ "title": params.get("title") });
    asked(
        session(params, in_flight),
        question_id,
        items,
        Ask { ids },
        context,
    )
}

/// Reads `cursor/create_plan` params: `{toolCallId, name?, overview?, plan, todos, ...}`.
pub fn parse_plan(
    params: &Value,
    question_id: String,
    in_flight: &str,
) -> Option<(Question, Plan, Value)> {
    let plan = params.get("plan")?.as_str()?;
    let name = params.get("name").and_then(Value::as_str);
    let choice = |value: &str, label: &str| Choice {
        value: value.into(),
        label: label.into(),
        ..Choice::default()
    };
    let item = Item {
        prompt: match name {
            Some(n) => format!("Accept the plan \"{n}\"?"),
            None => "Accept this plan?".to_owned(),
        },
        header: Some("Plan".into()),
        options: vec![choice(ACCEPT, "Accept"), choice(REJECT, "Reject")],
        // Typed text rejects the plan, with that text as the reason.
        allow_free_text: true,
        ..Item::default()
    };
    let context = json!({
        "plan": plan,
        "name": name,
        "overview": params.get("overview"),
        "todos": params.get("todos"),
    });
    asked(
        session(params, in_flight),
        question_id,
        vec![item],
        Plan,
        context,
    )
}

fn outcome(v: Value) -> Reply {
    Reply::value(&json!({ "outcome": v }))
}

fn nested(result: &RawValue) -> Result<Value, String> {
    let v: Value = serde_json::from_str(result.get()).map_err(|e| e.to_string())?;
    v.get("outcome")
        .cloned()
        .ok_or_else(|| "outcome: is required".into())
}

impl Source for Ask {
    fn method(&self) -> &'static str {
        methods::CURSOR_ASK_QUESTION
    }

    fn name(&self) -> &'static str {
        "cursor"
    }

    fn reply(&self, _q: &Question, o: &Outcome, _extras: &Extras) -> Reply {
        match o {
            Outcome::Answered(answers) => {
                let answers: Vec<Value> = self
                    .ids
                    .iter()
                    .zip(answers)
                    .map(|(id, a)| json!({ "questionId": id, "selectedOptionIds": a }))
                    .collect();
                outcome(json!({ "outcome": "answered", "answers": answers }))
            }
            Outcome::Rejected(Reason::Declined) => outcome(
                json!({ "outcome": "skipped", "reason": "The user skipped the questions." }),
            ),
            Outcome::Rejected(_) => outcome(json!({ "outcome": "cancelled" })),
        }
    }

    fn read(&self, q: &Question, result: &RawValue) -> Result<Outcome, String> {
        let o = nested(result)?;
        match o.get("outcome").and_then(Value::as_str) {
            Some("skipped") => Ok(Outcome::Rejected(Reason::Declined)),
            Some("cancelled") => Ok(Outcome::Rejected(Reason::Cancelled)),
            Some("answered") => {
                let given = o.get("answers").and_then(Value::as_array);
                Ok(Outcome::Answered(
                    self.ids
                        .iter()
                        .take(q.items.len())
                        .map(|id| {
                            given
                                .into_iter()
                                .flatten()
                                .find(|a| a.get("questionId").and_then(Value::as_str) == Some(id))
                                .and_then(|a| a.get("selectedOptionIds"))
                                .and_then(Value::as_array)
                                .map(|ids| {
                                    ids.iter()
                                        .filter_map(|v| v.as_str().map(str::to_owned))
                                        .collect()
                                })
                                .unwrap_or_default()
                        })
                        .collect(),
                ))
            }
            _ => Err("outcome.outcome: must be answered, skipped or cancelled".into()),
        }
    }
}

impl Source for Plan {
    fn method(&self) -> &'static str {
        methods::CURSOR_CREATE_PLAN
    }

    fn name(&self) -> &'static str {
        "cursor_plan"
    }

    fn reply(&self, _q: &Question, o: &Outcome, _extras: &Extras) -> Reply {
        match o {
            Outcome::Answered(a) => match a.first().and_then(|a| a.first()).map(String::as_str) {
                Some(ACCEPT) => outcome(json!({ "outcome": "accepted" })),
                Some(REJECT) | None => outcome(json!({ "outcome": "rejected" })),
                Some(reason) => outcome(json!({ "outcome": "rejected", "reason": reason })),
            },
            Outcome::Rejected(Reason::Declined) => outcome(json!({ "outcome": "rejected" })),
            Outcome::Rejected(_) => outcome(json!({ "outcome": "cancelled" })),
        }
    }

    fn read(&self, _q: &Question, result: &RawValue) -> Result<Outcome, String> {
        let o = nested(result)?;
        match o.get("outcome").and_then(Value::as_str) {
            Some("accepted") => Ok(Outcome::Answered(vec![vec![ACCEPT.into()]])),
            Some("rejected") => Ok(Outcome::Answered(vec![vec![o
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or(REJECT)
                .to_owned()]])),
            Some("cancelled") => Ok(Outcome::Rejected(Reason::Cancelled)),
            _ => Err("outcome.outcome: must be accepted, rejected or cancelled".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::sources::testing::{raw, reply_json};

    fn ask() -> Value {
        json!({"toolCallId": "tc-9", "title": "A few questions",
        "questions": [
            {"id": "q1", "prompt": "Which database?", "options": [{"id": "a", "label": "SQLite"}, {"id": "b", "label": "Postgres"}], "allowMultiple": false},
            {"id": "q2", "prompt": "Which features?", "options": [{"id": "x", "label": "Auth"}, {"id": "y", "label": "Billing"}], "allowMultiple": true}
        ]})
    }

    #[test]
    fn ask_question_parses_and_answers_nested_under_outcome() {
        let (q, s, context) = parse_ask(&ask(), "cursor:1".into(), "s-live").unwrap();
        assert_eq!(
            q.session_id, "s-live",
            "the session whose prompt is in flight"
        );
        assert_eq!(q.items.len(), 2);
        assert!(q.items[1].multi_select && !q.items[0].allow_free_text);
        assert_eq!(context["title"], "A few questions");
        let answered = Outcome::Answered(vec![vec!["b".into()], vec!["x".into(), "y".into()]]);
        assert_eq!(
            reply_json(&s, &q, &answered),
            json!({"outcome":{"outcome":"answered","answers":[
                {"questionId":"q1","selectedOptionIds":["b"]},
                {"questionId":"q2","selectedOptionIds":["x","y"]}]}})
        );
        assert_eq!(
            reply_json(&s, &q, &Outcome::Rejected(Reason::Declined))["outcome"]["outcome"],
            "skipped"
        );
        for r in [
            Reason::Cancelled,
            Reason::Timeout,
            Reason::ClientDisconnected,
        ] {
            assert_eq!(
                reply_json(&s, &q, &Outcome::Rejected(r)),
                json!({"outcome":{"outcome":"cancelled"}})
            );
        }
        let native = raw(
            json!({"outcome":{"outcome":"answered","answers":[{"questionId":"q2","selectedOptionIds":["y"]},{"questionId":"q1","selectedOptionIds":["a"]}]}}),
        );
        assert_eq!(
            s.read(&q, &native).unwrap(),
            Outcome::Answered(vec![vec!["a".into()], vec!["y".into()]])
        );
        assert!(parse_ask(&json!({"questions": []}), "c".into(), "s").is_none());
        assert!(parse_ask(
            &json!({"questions": [{"id": "q", "prompt": "p"}]}),
            "c".into(),
            "s"
        )
        .is_none());
    }

    #[test]
    fn a_plan_is_accepted_or_rejected_with_a_reason() {
        let params = json!({"toolCallId": "tc", "name": "Refactor", "overview": "Split it",
            "plan": "# Plan\n1. Split", "todos": [{"id": "t1", "content": "Split", "status": "pending"}]});
        let (q, s, context) = parse_plan(&params, "plan:1".into(), "s").unwrap();
        assert_eq!(q.items[0].prompt, "Accept the plan \"Refactor\"?");
        assert_eq!(context["plan"], "# Plan\n1. Split");
        let pick = |v: &str| Outcome::Answered(vec![vec![v.to_owned()]]);
        assert_eq!(
            reply_json(&s, &q, &pick("accept")),
            json!({"outcome":{"outcome":"accepted"}})
        );
        assert_eq!(
            reply_json(&s, &q, &pick("Keep the old API")),
            json!({"outcome":{"outcome":"rejected","reason":"Keep the old API"}})
        );
        assert_eq!(
            reply_json(&s, &q, &pick("reject")),
            json!({"outcome":{"outcome":"rejected"}})
        );
        assert_eq!(
            reply_json(&s, &q, &Outcome::Rejected(Reason::Timeout)),
            json!({"outcome":{"outcome":"cancelled"}})
        );
        assert_eq!(
            s.read(
                &q,
                &raw(json!({"outcome":{"outcome":"rejected","reason":"no"}}))
            )
            .unwrap(),
            pick("no")
        );
    }
}
