//! Grok Build's `_x.ai/ask_user_question` (docs/AGENT-DIALECTS.md 1.5; unverified upstream).
//!
//! Params `{sessionId, toolCallId, questions:[{question, multiSelect, options:[{label,
//! description?, preview?, id?}]}], mode}`. Answers are keyed by the question's text:
//! `{"outcome":"accepted","answers":{"<q>":["SQLite"]},"annotations":{"<q>":{"notes":...}}}`;
//! free text alone is sent as `["Other"]` with the text in the notes; every other ending is
//! `{"outcome":"cancelled"}` (the user dismissed it; not an error).

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::{asked, options_of, questions_of, Reply, Source, Vendor};
use crate::methods;
use crate::questions::answer::{Extras, Outcome, Reason};
use crate::questions::model::{Item, Question};

/// `_x.ai/ask_user_question`: every ending but an answer is `{"outcome":"cancelled"}`.
pub static VENDOR: Vendor = Vendor {
    method: methods::XAI_ASK_USER_QUESTION,
    cancelled: r#"{"outcome":"cancelled"}"#,
    opt_in: None,
    parse: crate::vendor_parse!(|p, id, _| parse(p, id)),
};

/// The questions' texts, the keys of the answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grok {
    texts: Vec<String>,
}

pub fn parse(params: &Value, question_id: String) -> Option<(Question, Grok, Value)> {
    let list = questions_of(params)?;
    let mut texts = Vec::new();
    let mut items = Vec::new();
    for q in list {
        let text = q.get("question")?.as_str()?.to_owned();
        items.push(Item {
            prompt: text.clone(),
            multi_select: q
                .get("multiSelect")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            options: options_of(q.get("options"))?,
            // Grok's dialog has an "Other" entry with notes.
            allow_free_text: true,
            ..Item::default()
        });
        texts.push(text);
    }
    let session = params.get("sessionId")?.as_str()?.to_owned();
    let context = json!({ "mode": params.get("mode") });
    asked(session, question_id, items, Grok { texts }, context)
}

impl Source for Grok {
    fn method(&self) -> &'static str {
        methods::XAI_ASK_USER_QUESTION
    }

    fn name(&self) -> &'static str {
        "grok"
    }

    fn reply(&self, q: &Question, o: &Outcome, _extras: &Extras) -> Reply {
        let Outcome::Answered(answers) = o else {
            return Reply::value(&json!({ "outcome": "cancelled" }));
        };
        let mut all = Map::new();
        let mut notes = Map::new();
        for ((text, item), a) in self.texts.iter().zip(&q.items).zip(answers) {
            let (picked, typed): (Vec<&String>, Vec<&String>) = a
                .iter()
                .partition(|v| item.options.iter().any(|c| &c.value == *v));
            let mut picked: Vec<&str> = picked.into_iter().map(String::as_str).collect();
            if !typed.is_empty() {
                if picked.is_empty() {
                    picked.push("Other");
                }
                let typed: Vec<&str> = typed.into_iter().map(String::as_str).collect();
                notes.insert(text.clone(), json!({ "notes": typed.join(", ") }));
            }
            all.insert(text.clone(), json!(picked));
        }
        let mut v = json!({ "outcome": "accepted", "answers": all });
        if !notes.is_empty() {
            v["annotations"] = Value::Object(notes);
        }
        Reply::value(&v)
    }

    fn read(&self, _q: &Question, result: &RawValue) -> Result<Outcome, String> {
        let v: Value = serde_json::from_str(result.get()).map_err(|e| e.to_string())?;
        match v.get("outcome").and_then(Value::as_str) {
            Some("cancelled") => Ok(Outcome::Rejected(Reason::Cancelled)),
            Some("accepted") => Ok(Outcome::Answered(
                self.texts
                    .iter()
                    .map(|t| {
                        let mut a: Vec<String> = v["answers"][t]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|s| s.as_str().map(str::to_owned))
                            .filter(|s| s != "Other")
                            .collect();
                        if let Some(n) = v["annotations"][t]["notes"].as_str() {
                            a.push(n.to_owned());
                        }
                        a
                    })
                    .collect(),
            )),
            _ => Err("outcome: must be accepted or cancelled".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::sources::testing::{raw, reply_json};

    #[test]
    fn answers_are_keyed_by_question_text_and_free_text_goes_to_notes() {
        let params = json!({"sessionId": "s", "toolCallId": "tc", "mode": "default",
            "questions": [{"question": "Which database?", "multiSelect": false,
                "options": [{"label": "SQLite", "description": "a file", "preview": "sqlite3"}, {"label": "Postgres"}]}]});
        let (q, s, _) = parse(&params, "grok:1".into()).unwrap();
        assert_eq!(q.items[0].options[0].preview.as_deref(), Some("sqlite3"));
        assert_eq!(
            reply_json(&s, &q, &Outcome::Answered(vec![vec!["SQLite".into()]])),
            json!({"outcome":"accepted","answers":{"Which database?":["SQLite"]}})
        );
        assert_eq!(
            reply_json(&s, &q, &Outcome::Answered(vec![vec!["DuckDB".into()]])),
            json!({"outcome":"accepted","answers":{"Which database?":["Other"]},
                   "annotations":{"Which database?":{"notes":"DuckDB"}}})
        );
        for r in [Reason::Declined, Reason::Cancelled, Reason::Timeout] {
            assert_eq!(
                reply_json(&s, &q, &Outcome::Rejected(r)),
                json!({"outcome":"cancelled"})
            );
        }
        let native = raw(
            json!({"outcome":"accepted","answers":{"Which database?":["Other"]},
            "annotations":{"Which database?":{"notes":"DuckDB"}}}),
        );
        assert_eq!(
            s.read(&q, &native).unwrap(),
            Outcome::Answered(vec![vec!["DuckDB".into()]])
        );
        assert!(
            parse(&json!({"questions": [{"question": "x"}]}), "g".into()).is_none(),
            "no session"
        );
    }
}
