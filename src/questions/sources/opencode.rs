//! OpenCode's `opencode/question` (docs/AGENT-DIALECTS.md 1.7; unmerged upstream, PR 20017).
//! Params `{requestId, sessionId, questions:[{header, question, options:[{label,
//! description}], multiple, custom}], tool?}` (`custom`, free text, defaults to true).
//! Answers `{"answers":[["Yes"]]}` (one list per question, labels or free text); anything
//! else `{"rejected":true}`.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{asked, options_of, questions_of, OptIn, Reply, Source, Vendor};
use crate::methods;
use crate::questions::answer::{Extras, Outcome, Reason};
use crate::questions::model::{Item, Question};

/// `opencode/question`, with OpenCode's own opt-in (`_meta["opencode/question"]`).
pub static VENDOR: Vendor = Vendor {
    method: methods::OPENCODE_QUESTION,
    cancelled: r#"{"rejected":true}"#,
    opt_in: Some(OptIn {
        name: "opencode",
        key: methods::OPENCODE_QUESTION,
        offer: || json!({ "version": 1 }),
        said: |v| !matches!(v, Value::Null | Value::Bool(false)),
    }),
    parse: crate::vendor_parse!(|p, id, _| parse(p, id)),
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCode;

pub fn parse(params: &Value, question_id: String) -> Option<(Question, OpenCode, Value)> {
    let list = questions_of(params)?;
    let items = list
        .iter()
        .map(|q| {
            Some(Item {
                prompt: q.get("question")?.as_str()?.to_owned(),
                header: q.get("header").and_then(Value::as_str).map(str::to_owned),
                multi_select: q.get("multiple").and_then(Value::as_bool).unwrap_or(false),
                allow_free_text: q.get("custom").and_then(Value::as_bool).unwrap_or(true),
                options: options_of(q.get("options"))?,
                ..Item::default()
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let session = params.get("sessionId")?.as_str()?.to_owned();
    let context = json!({ "tool": params.get("tool") });
    asked(session, question_id, items, OpenCode, context)
}

impl Source for OpenCode {
    fn method(&self) -> &'static str {
        methods::OPENCODE_QUESTION
    }

    fn name(&self) -> &'static str {
        "opencode"
    }

    fn reply(&self, _q: &Question, o: &Outcome, _extras: &Extras) -> Reply {
        match o {
            Outcome::Answered(a) => Reply::value(&json!({ "answers": a })),
            Outcome::Rejected(_) => Reply::value(&json!({ "rejected": true })),
        }
    }

    fn read(&self, _q: &Question, result: &RawValue) -> Result<Outcome, String> {
        let v: Value = serde_json::from_str(result.get()).map_err(|e| e.to_string())?;
        if v.get("rejected") == Some(&Value::Bool(true)) {
            return Ok(Outcome::Rejected(Reason::Declined));
        }
        serde_json::from_value(v.get("answers").cloned().unwrap_or(Value::Null))
            .map(Outcome::Answered)
            .map_err(|_| "answers: must be a list of string lists".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::sources::testing::{raw, reply_json};

    #[test]
    fn one_list_per_question_or_rejected() {
        let params = json!({"requestId": "r", "sessionId": "s", "questions": [
            {"header": "Go", "question": "Continue?", "options": [{"label": "Yes", "description": "go on"}, {"label": "No"}], "multiple": false},
            {"header": "Why", "question": "Anything else?", "options": [], "custom": true}]});
        let (q, s, _) = parse(&params, "opencode:1".into()).unwrap();
        assert!(q.items[0].allow_free_text, "custom defaults to true");
        let answered = Outcome::Answered(vec![vec!["Yes".into()], vec!["ship it".into()]]);
        assert_eq!(
            reply_json(&s, &q, &answered),
            json!({"answers":[["Yes"],["ship it"]]})
        );
        assert_eq!(
            reply_json(&s, &q, &Outcome::Rejected(Reason::Timeout)),
            json!({"rejected":true})
        );
        assert_eq!(
            s.read(&q, &raw(json!({"answers":[["No"],[]]}))).unwrap(),
            Outcome::Answered(vec![vec!["No".into()], vec![]])
        );
        assert_eq!(
            s.read(&q, &raw(json!({"rejected":true}))).unwrap(),
            Outcome::Rejected(Reason::Declined)
        );
    }
}
