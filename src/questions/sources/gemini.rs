//! gemini-cli's `gemini/requestUserInput` (docs/AGENT-DIALECTS.md 1.6; unmerged upstream, PR
//! 24664). Params `{sessionId, requestId, kind: ask_user | exit_plan_mode, title,
//! questions:[{question, header, type: choice | text | yesno, options?, multiSelect?,
//! placeholder?}]}`. Answers `{"outcome":"submitted","answers":{"0":"..."}}` keyed by
//! index, multi-select and Other text joined with `", "`; anything else
//! `{"outcome":"cancelled"}`. For `exit_plan_mode` the first question offers the approval
//! labels; free text there means "rejected, with this feedback".

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::{asked, options_of, questions_of, OptIn, Reply, Source, Vendor};
use crate::methods;
use crate::questions::answer::{Extras, Outcome, Reason};
use crate::questions::model::{Choice, Item, Question};

/// `gemini/requestUserInput`, with gemini-cli's opt-in (`_meta["geminiCli.hostInput"]`).
pub static VENDOR: Vendor = Vendor {
    method: methods::GEMINI_REQUEST_USER_INPUT,
    cancelled: r#"{"outcome":"cancelled"}"#,
    opt_in: Some(OptIn {
        name: "gemini",
        key: "geminiCli.hostInput",
        offer: || json!({"requestUserInput": true, "supportedKinds": ["ask_user", "exit_plan_mode"], "version": 1}),
        said: |v| v["requestUserInput"] == true,
    }),
    parse: crate::vendor_parse!(|p, id, _| parse(p, id)),
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gemini {
    plan: bool,
}

pub fn parse(params: &Value, question_id: String) -> Option<(Question, Gemini, Value)> {
    let plan = params.get("kind").and_then(Value::as_str) == Some("exit_plan_mode");
    let list = questions_of(params)?;
    let items = list
        .iter()
        .map(|q| {
            let kind = q.get("type").and_then(Value::as_str).unwrap_or("choice");
            let options = match kind {
                "yesno" => ["Yes", "No"]
                    .map(|l| Choice {
                        value: l.into(),
                        label: l.into(),
                        ..Choice::default()
                    })
                    .to_vec(),
                "text" => Vec::new(),
                _ => options_of(q.get("options"))?,
            };
            Some(Item {
                prompt: q.get("question")?.as_str()?.to_owned(),
                header: q.get("header").and_then(Value::as_str).map(str::to_owned),
                multi_select: q
                    .get("multiSelect")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                allow_free_text: kind != "yesno",
                options,
                ..Item::default()
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let session = params.get("sessionId")?.as_str()?.to_owned();
    let context = json!({ "title": params.get("title"), "kind": params.get("kind") });
    asked(session, question_id, items, Gemini { plan }, context)
}

impl Source for Gemini {
    fn method(&self) -> &'static str {
        methods::GEMINI_REQUEST_USER_INPUT
    }

    fn name(&self) -> &'static str {
        if self.plan {
            "gemini_plan"
        } else {
            "gemini"
        }
    }

    fn reply(&self, _q: &Question, o: &Outcome, _extras: &Extras) -> Reply {
        let Outcome::Answered(answers) = o else {
            return Reply::value(&json!({ "outcome": "cancelled" }));
        };
        let mut all = Map::new();
        for (i, a) in answers.iter().enumerate() {
            all.insert(i.to_string(), json!(a.join(", ")));
        }
        Reply::value(&json!({ "outcome": "submitted", "answers": all }))
    }

    fn read(&self, q: &Question, result: &RawValue) -> Result<Outcome, String> {
        let v: Value = serde_json::from_str(result.get()).map_err(|e| e.to_string())?;
        match v.get("outcome").and_then(Value::as_str) {
            Some("cancelled") => Ok(Outcome::Rejected(Reason::Cancelled)),
            Some("submitted") => Ok(Outcome::Answered(
                (0..q.items.len())
                    .map(|i| {
                        v["answers"][i.to_string()]
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .map(|s| vec![s.to_owned()])
                            .unwrap_or_default()
                    })
                    .collect(),
            )),
            _ => Err("outcome: must be submitted or cancelled".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::sources::testing::{raw, reply_json};

    #[test]
    fn answers_by_index_joined_and_yes_no_items() {
        let params = json!({"sessionId": "s", "requestId": "r1", "kind": "ask_user", "title": "Setup",
            "questions": [
                {"question": "Which database?", "header": "DB", "type": "choice",
                 "options": [{"label": "PostgreSQL", "description": "server"}, {"label": "SQLite"}], "multiSelect": true},
                {"question": "Use TypeScript?", "header": "TS", "type": "yesno"},
                {"question": "Project name?", "header": "Name", "type": "text", "placeholder": "my-app"}]});
        let (q, s, _) = parse(&params, "gemini:1".into()).unwrap();
        assert_eq!(s.name(), "gemini");
        assert_eq!(q.items[1].options.len(), 2);
        assert!(q.items[2].options.is_empty() && q.items[2].allow_free_text);
        let answered = Outcome::Answered(vec![
            vec!["PostgreSQL".into(), "DuckDB".into()],
            vec!["Yes".into()],
            vec!["shop".into()],
        ]);
        assert_eq!(
            reply_json(&s, &q, &answered),
            json!({"outcome":"submitted","answers":{"0":"PostgreSQL, DuckDB","1":"Yes","2":"shop"}})
        );
        assert_eq!(
            reply_json(&s, &q, &Outcome::Rejected(Reason::Declined)),
            json!({"outcome":"cancelled"})
        );
        assert_eq!(
            s.read(
                &q,
                &raw(json!({"outcome":"submitted","answers":{"0":"SQLite","1":"No","2":"x"}}))
            )
            .unwrap(),
            Outcome::Answered(vec![
                vec!["SQLite".into()],
                vec!["No".into()],
                vec!["x".into()]
            ])
        );
        let plan = json!({"sessionId": "s", "requestId": "r2", "kind": "exit_plan_mode", "title": "Plan",
            "questions": [{"question": "Approve the plan?", "type": "choice",
                "options": [{"label": "Yes, proceed"}, {"label": "No, keep planning"}]}]});
        let (q, s, _) = parse(&plan, "gemini:2".into()).unwrap();
        assert_eq!(s.name(), "gemini_plan");
        assert_eq!(
            reply_json(
                &s,
                &q,
                &Outcome::Answered(vec![vec!["Add tests first".into()]])
            ),
            json!({"outcome":"submitted","answers":{"0":"Add tests first"}})
        );
    }
}
