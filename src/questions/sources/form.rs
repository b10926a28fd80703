//! Form elicitation (`elicitation/create`, `mode: "form"`) as a question source.
//!
//! Reads an agent's flat form into question items, knowing the conventions of the agents
//! that ask this way (docs/AGENT-DIALECTS.md 1.1), so a user sees one question with an "Other"
//! box rather than two questions: a free-text companion field belongs to the item before it
//! (Claude's `question_<n>_custom`; codex's `<id>_note` with `_meta.codex.role:
//! "user_note"`, or `<id>__other` in older builds); `message` is the prompt when one item is
//! left; codex fields carry the question in `title` and the header in `description`; a field
//! the schema does not `require` may be left empty. Answers map back into
//! `{"action":"accept","content":{...}}` for exactly the agent's fields.
//!
//! Invariant: content is only ever built for the form's own keys, with the type each
//! property declares.

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::{Reply, Source};
use crate::methods;
use crate::questions::answer::{Extras, Outcome, Reason};
use crate::questions::model::{Choice, Item, Question, MAX_ITEMS};

/// How one property of an agent's form maps to a question item and back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// A string with `enum`/`oneOf`: a single-select item.
    Choice,
    /// An array with `items.enum`/`items.anyOf`: a multi-select item.
    Multi,
    /// A plain string: a free-text item.
    Text,
    /// A boolean: a Yes/No item.
    Boolean,
    /// A number or integer: a free-text item parsed back into a number.
    Number { integer: bool },
}

/// One item of the form: the property it answers, and its free-text companion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub key: String,
    pub kind: FieldKind,
    /// The companion string property that takes this item's free text ("Other").
    pub other: Option<String>,
    /// codex: the option to pick when the answer is free text ("None of the above").
    pub fallback: Option<String>,
    /// The values of its options (an answer outside them is free text).
    pub values: Vec<String>,
}

/// An agent's form, shown as a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub fields: Vec<Field>,
}

fn choices_of(prop: &Value) -> Option<Vec<Choice>> {
    if let Some(list) = prop
        .get("oneOf")
        .or_else(|| prop.get("anyOf"))
        .and_then(Value::as_array)
    {
        return list
            .iter()
            .map(|o| {
                let value = o.get("const")?.as_str()?.to_owned();
                let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
                Some(Choice {
                    label: text("title").unwrap_or_else(|| value.clone()),
                    description: text("description"),
                    preview: o
                        .pointer("/_meta/_claude~1askUserQuestionOption/preview")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    value,
                    ..Choice::default()
                })
            })
            .collect();
    }
    let list = prop.get("enum")?.as_array()?;
    list.iter()
        .map(|v| {
            let s = v.as_str()?.to_owned();
            Some(Choice {
                value: s.clone(),
                label: s,
                ..Choice::default()
            })
        })
        .collect()
}

/// The item a string property is the free-text companion of, when it is one.
fn companion_of(key: &str, prop: &Value, props: &Map<String, Value>) -> Option<String> {
    if prop.get("type").and_then(Value::as_str) != Some("string") || choices_of(prop).is_some() {
        return None;
    }
    let codex = prop.pointer("/_meta/codex");
    let is_choice = |k: &str| {
        props.get(k).is_some_and(|p| {
            choices_of(p).is_some() || p.pointer("/items").and_then(choices_of).is_some()
        })
    };
    // codex 2.6: `_meta.codex.role: "user_note"` naming its question.
    if let Some(q) = codex
        .filter(|c| c.get("role").and_then(Value::as_str) == Some("user_note"))
        .and_then(|c| c.get("questionId"))
        .and_then(Value::as_str)
        .filter(|q| is_choice(q))
    {
        return Some(q.to_owned());
    }
    // codex 1.6: `<id>__other` with `isOtherAnswer`.
    if let Some(base) = key.strip_suffix("__other").filter(|b| is_choice(b)) {
        return Some(base.to_owned());
    }
    // claude-agent-acp: `question_<n>_custom` after `question_<n>`.
    key.strip_suffix("_custom")
        .filter(|b| is_choice(b))
        .map(str::to_owned)
}

/// Reads an agent's form `elicitation/create` params into a question (and the form, to map
/// the answer back). `Err` says why the form cannot be asked as a question.
pub fn parse(params: &Value, question_id: String) -> Result<(Question, Form), String> {
    if params.get("mode").and_then(Value::as_str) != Some("form") {
        return Err("only form elicitations can be asked as questions".into());
    }
    let session_id = params
        .get("sessionId")
        .and_then(Value::as_str)
        .ok_or("the elicitation is not scoped to a session")?
        .to_owned();
    let schema = params
        .get("requestedSchema")
        .ok_or("requestedSchema is missing")?;
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty())
        .ok_or("requestedSchema has no properties")?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let companions: Vec<(String, String)> = props
        .iter()
        .filter_map(|(k, p)| companion_of(k, p, props).map(|base| (k.clone(), base)))
        .collect();
    let own: Vec<(&String, &Value)> = props
        .iter()
        .filter(|(k, _)| !companions.iter().any(|(c, _)| c == *k))
        .collect();
    if own.len() > MAX_ITEMS {
        return Err(format!("more than {MAX_ITEMS} fields"));
    }
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut items = Vec::new();
    let mut fields = Vec::new();
    for (key, prop) in own {
        let ty = prop.get("type").and_then(Value::as_str).unwrap_or_default();
        let text = |k: &str| {
            prop.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        // codex puts the question in `title` and the header in `description`.
        let codex = prop.pointer("/_meta/codex").is_some();
        let (header, described) = if codex {
            (text("description"), text("title"))
        } else {
            (text("title"), text("description"))
        };
        let label = header.unwrap_or(key);
        let prompt = described.map(str::to_owned).unwrap_or_else(|| {
            match (items.is_empty() && props_alone(props, &companions), message) {
                (true, m) if !m.is_empty() => m.to_owned(),
                _ => label.to_owned(),
            }
        });
        let (kind, options) = match ty {
            "string" => match choices_of(prop) {
                Some(c) if !c.is_empty() => (FieldKind::Choice, c),
                Some(_) => return Err(format!("{key}: an enum without usable values")),
                None => (FieldKind::Text, Vec::new()),
            },
            "array" => match prop.get("items").and_then(choices_of) {
                Some(c) if !c.is_empty() => (FieldKind::Multi, c),
                _ => return Err(format!("{key}: an array without enum items")),
            },
            "boolean" => (
                FieldKind::Boolean,
                [("true", "Yes"), ("false", "No")]
                    .map(|(value, label)| Choice {
                        value: value.into(),
                        label: label.into(),
                        ..Choice::default()
                    })
                    .to_vec(),
            ),
            "number" | "integer" => (
                FieldKind::Number {
                    integer: ty == "integer",
                },
                Vec::new(),
            ),
            other => return Err(format!("{key}: unsupported field type {other:?}")),
        };
        let other = companions
            .iter()
            .find(|(_, base)| base == key)
            .map(|(c, _)| c.clone());
        let fallback = other
            .as_ref()
            .filter(|_| codex)
            .and_then(|_| options.last())
            .filter(|c| c.label.eq_ignore_ascii_case("None of the above"))
            .map(|c| c.value.clone());
        items.push(Item {
            header: (prompt != label).then(|| label.to_owned()),
            prompt,
            allow_free_text: options.is_empty() || other.is_some(),
            multi_select: kind == FieldKind::Multi,
            optional: !required.contains(&key.as_str()),
            options,
        });
        fields.push(Field {
            key: key.clone(),
            kind,
            other,
            fallback,
            values: items
                .last()
                .map(|i: &Item| i.options.iter().map(|c| c.value.clone()).collect())
                .unwrap_or_default(),
        });
    }
    let timeout_ms = params
        .pointer("/_meta/codex/autoResolutionMs")
        .and_then(Value::as_u64)
        .filter(|ms| *ms > 0);
    let q = Question {
        session_id,
        question_id,
        items,
        timeout_ms,
    };
    // What the extension's own requests must pass holds for a form too (an empty session
    // id, an `enum` with a value twice, a field with an empty name and no title).
    if let Some(problem) = q.problem() {
        return Err(problem.to_string());
    }
    Ok((q, Form { fields }))
}

/// Whether the form has one item once companions are set aside (then `message` is its
/// prompt).
fn props_alone(props: &Map<String, Value>, companions: &[(String, String)]) -> bool {
    props.len() - companions.len() == 1
}

impl Form {
    /// The `elicitation/create` result for `outcome`; `Err` when an answer does not fit
    /// its property's type.
    pub fn result(&self, outcome: &Outcome) -> Result<Value, String> {
        let answers = match outcome {
            // Only the user declines: a form no surface could show was not seen.
            Outcome::Rejected(Reason::Declined) => return Ok(json!({ "action": "decline" })),
            Outcome::Rejected(_) => return Ok(json!({ "action": "cancel" })),
            Outcome::Answered(a) => a,
        };
        let mut content = Map::new();
        for (field, answer) in self.fields.iter().zip(answers) {
            field.fill(answer, &mut content)?;
        }
        Ok(json!({ "action": "accept", "content": content }))
    }

    /// What the client's own answer to the form stands for (it was shown natively).
    pub fn read(&self, q: &Question, result: &Value) -> Result<Outcome, String> {
        match result.get("action").and_then(Value::as_str) {
            Some("decline") => return Ok(Outcome::Rejected(Reason::Declined)),
            Some("cancel") => return Ok(Outcome::Rejected(Reason::Cancelled)),
            Some("accept") => {}
            _ => return Err("action: must be accept, decline or cancel".into()),
        }
        let empty = Map::new();
        let content = result
            .get("content")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut answers = Vec::with_capacity(self.fields.len());
        for (field, item) in self.fields.iter().zip(&q.items) {
            let mut values: Vec<String> = match content.get(&field.key) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(list)) => list
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| v.to_string())
                    })
                    .collect(),
                Some(Value::String(s)) => vec![s.clone()],
                Some(v) => vec![v.to_string()],
            };
            if let Some(text) = field
                .other
                .as_ref()
                .and_then(|k| content.get(k))
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                values.retain(|v| Some(v) != field.fallback.as_ref());
                values.push(text.to_owned());
            }
            if values.is_empty() && !item.optional {
                return Err(format!("content.{}: is required", field.key));
            }
            answers.push(values);
        }
        Ok(Outcome::Answered(answers))
    }
}

impl Field {
    /// Puts one item's answer into the form's content: a pick in the field, free text in
    /// its companion (with codex's fallback pick), nothing for an item left empty.
    fn fill(&self, answer: &[String], content: &mut Map<String, Value>) -> Result<(), String> {
        let Some(first) = answer.first() else {
            return Ok(());
        };
        let value = match &self.kind {
            FieldKind::Choice | FieldKind::Multi if self.other.is_some() => {
                return self.fill_with_other(answer, content);
            }
            FieldKind::Choice | FieldKind::Text => json!(first),
            FieldKind::Multi => json!(answer),
            FieldKind::Boolean => json!(first == "true"),
            FieldKind::Number { integer: true } => json!(first
                .trim()
                .parse::<i64>()
                .map_err(|_| format!("{}: {first:?} is not an integer", self.key))?),
            FieldKind::Number { integer: false } => json!(first
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("{}: {first:?} is not a number", self.key))?),
        };
        content.insert(self.key.clone(), value);
        Ok(())
    }

    /// An item with an "Other" box: known values go to the field, the rest (free text) to
    /// the companion, joined with `", "`.
    fn fill_with_other(
        &self,
        answer: &[String],
        content: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let (picked, typed): (Vec<&String>, Vec<&String>) =
            answer.iter().partition(|v| self.is_option(v));
        let mut picked: Vec<&str> = picked.into_iter().map(String::as_str).collect();
        if !typed.is_empty() {
            if let Some(fallback) = &self.fallback {
                picked.push(fallback);
            }
            let text: Vec<&str> = typed.into_iter().map(String::as_str).collect();
            if let Some(other) = &self.other {
                content.insert(other.clone(), json!(text.join(", ")));
            }
        }
        match (&self.kind, picked.as_slice()) {
            (_, []) => {}
            (FieldKind::Multi, all) => {
                content.insert(self.key.clone(), json!(all));
            }
            (_, [one, ..]) => {
                content.insert(self.key.clone(), json!(one));
            }
        }
        Ok(())
    }

    fn is_option(&self, v: &str) -> bool {
        self.values.iter().any(|o| o == v)
    }
}

/// The sources' interface for a form.
#[derive(Debug)]
pub struct FormSource {
    pub form: Form,
}

impl Source for FormSource {
    fn standard(&self) -> bool {
        true
    }

    fn method(&self) -> &'static str {
        methods::ELICITATION_CREATE
    }

    fn name(&self) -> &'static str {
        "form"
    }

    fn reply(&self, _q: &Question, outcome: &Outcome, _extras: &Extras) -> Reply {
        match self.form.result(outcome) {
            Ok(v) => Reply::value(&v),
            Err(msg) => Reply::invalid(&msg),
        }
    }

    fn read(&self, q: &Question, result: &RawValue) -> Result<Outcome, String> {
        let v: Value = serde_json::from_str(result.get()).map_err(|e| e.to_string())?;
        self.form.read(q, &v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::answer::check_answers;
    use crate::questions::prompts::obstacle as permission_obstacle;

    fn q(params: Value) -> Question {
        crate::questions::model::parse_request_text(Some(&params.to_string())).unwrap()
    }

    fn answer(form: &Form, q: &Question, answers: Value) -> Value {
        let checked = check_answers(q, &answers).unwrap();
        form.result(&Outcome::Answered(checked)).unwrap()
    }

    /// claude-agent-acp 0.100, AskUserQuestion with one question.
    fn claude_one() -> Value {
        json!({"sessionId":"s","toolCallId":"toolu_1","mode":"form","message":"Which database?",
            "requestedSchema":{"type":"object","properties":{
                "question_0":{"type":"string","title":"Database","oneOf":[
                    {"const":"SQLite","title":"SQLite","description":"A file",
                     "_meta":{"_claude/askUserQuestionOption":{"preview":"sqlite3 app.db"}}},
                    {"const":"Postgres","title":"Postgres","description":"A server"}]},
                "question_0_custom":{"type":"string","title":"Other","description":"Type your own answer"}}}})
    }

    #[test]
    fn claude_one_question_is_one_item_with_an_other_box_and_its_message_as_prompt() {
        let (q, form) = parse(&claude_one(), "e1".into()).unwrap();
        assert_eq!(
            q.items.len(),
            1,
            "the _custom field is the Other box, not an item"
        );
        let item = &q.items[0];
        assert_eq!(item.prompt, "Which database?");
        assert_eq!(item.header.as_deref(), Some("Database"));
        assert!(item.allow_free_text && item.optional && !item.multi_select);
        assert_eq!(item.options[0].preview.as_deref(), Some("sqlite3 app.db"));
        // The natural answer, by label or value; free text goes to the Other box.
        assert_eq!(
            answer(&form, &q, json!([["SQLite"]])),
            json!({"action":"accept","content":{"question_0":"SQLite"}})
        );
        assert_eq!(
            answer(&form, &q, json!([["DuckDB, embedded"]])),
            json!({"action":"accept","content":{"question_0_custom":"DuckDB, embedded"}})
        );
        // Nothing is required: skipping is an answer too.
        assert_eq!(
            answer(&form, &q, json!([[]])),
            json!({"action":"accept","content":{}})
        );
        assert_eq!(
            form.result(&Outcome::Rejected(Reason::Declined)).unwrap(),
            json!({"action":"decline"})
        );
        assert_eq!(
            form.result(&Outcome::Rejected(Reason::Cancelled)).unwrap(),
            json!({"action":"cancel"})
        );
        // The client's own answer, read back for observers.
        let read = form
            .read(&q, &json!({"action":"accept","content":{"question_0":"Postgres","question_0_custom":"v16"}}))
            .unwrap();
        assert_eq!(
            read,
            Outcome::Answered(vec![vec!["Postgres".into(), "v16".into()]])
        );
        assert_eq!(
            form.read(&q, &json!({"action":"decline"})).unwrap(),
            Outcome::Rejected(Reason::Declined)
        );
    }

    #[test]
    fn claude_two_questions_take_their_prompts_from_descriptions() {
        let params = json!({"sessionId":"s","mode":"form","message":"Answer the questions",
            "requestedSchema":{"type":"object","properties":{
                "question_0":{"type":"string","title":"Database","description":"Which database?",
                    "oneOf":[{"const":"SQLite","title":"SQLite"},{"const":"Postgres","title":"Postgres"}]},
                "question_0_custom":{"type":"string","title":"Other"},
                "question_1":{"type":"array","title":"Features","description":"Which features?",
                    "items":{"anyOf":[{"const":"auth","title":"Auth"},{"const":"billing","title":"Billing"}]}},
                "question_1_custom":{"type":"string","title":"Other"}}}});
        let (q, form) = parse(&params, "e2".into()).unwrap();
        let prompts: Vec<&str> = q.items.iter().map(|i| i.prompt.as_str()).collect();
        assert_eq!(prompts, ["Which database?", "Which features?"]);
        assert!(q.items[1].multi_select && q.items[1].allow_free_text);
        assert_eq!(
            answer(
                &form,
                &q,
                json!([["Postgres"], ["auth", "Billing", "search"]])
            ),
            json!({"action":"accept","content":{"question_0":"Postgres",
                "question_1":["auth","billing"],"question_1_custom":"search"}})
        );
    }

    #[test]
    fn codex_fields_have_the_question_in_the_title_and_a_note_companion() {
        let params = json!({"sessionId":"s","mode":"form","message":"Codex needs your input to continue.",
            "_meta":{"codex":{"autoResolutionMs":60000}},
            "requestedSchema":{"type":"object","required":["database"],"properties":{
                "database":{"type":"string","title":"Which database?","description":"Database",
                    "_meta":{"codex":{"isOther":true}},
                    "oneOf":[{"const":"SQLite","title":"SQLite"},{"const":"None of the above","title":"None of the above"}]},
                "database_note":{"type":"string","title":"Other",
                    "_meta":{"codex":{"role":"user_note","questionId":"database"}}}}}});
        let (q, form) = parse(&params, "e3".into()).unwrap();
        assert_eq!(q.items.len(), 1);
        assert_eq!(q.items[0].prompt, "Which database?");
        assert_eq!(q.items[0].header.as_deref(), Some("Database"));
        assert!(!q.items[0].optional && q.items[0].allow_free_text);
        assert_eq!(
            q.timeout_ms,
            Some(60000),
            "the agent's own deadline is the expiry"
        );
        assert_eq!(
            answer(&form, &q, json!([["SQLite"]])),
            json!({"action":"accept","content":{"database":"SQLite"}})
        );
        assert_eq!(
            answer(&form, &q, json!([["DuckDB"]])),
            json!({"action":"accept","content":{"database":"None of the above","database_note":"DuckDB"}})
        );
        assert_eq!(
            form.read(&q, &json!({"action":"accept","content":{"database":"None of the above","database_note":"DuckDB"}}))
                .unwrap(),
            Outcome::Answered(vec![vec!["DuckDB".into()]])
        );
    }

    #[test]
    fn kimi_fields_are_required_and_have_no_free_text() {
        let params = json!({"sessionId":"s","mode":"form","message":"Kimi asks",
            "requestedSchema":{"type":"object","required":["q0","q1"],"properties":{
                "q0":{"type":"string","title":"Which database?","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},
                "q1":{"type":"array","title":"Which features?","minItems":1,
                      "items":{"enum":["x","y"]}}}}});
        let (q, form) = parse(&params, "e4".into()).unwrap();
        assert_eq!(q.items.len(), 2);
        assert!(q.items.iter().all(|i| !i.optional && !i.allow_free_text));
        assert!(check_answers(&q, &json!([[], ["x"]])).is_err(), "required");
        assert_eq!(
            answer(&form, &q, json!([["B"], ["x", "y"]])),
            json!({"action":"accept","content":{"q0":"b","q1":["x","y"]}})
        );
    }
    #[test]
    fn agent_forms_become_questions_and_back() {
        let params = json!({"sessionId":"s","mode":"form","message":"Configure",
            "requestedSchema":{"type":"object","properties":{
                "color":{"type":"string","title":"Color","enum":["red","green"]},
                "name":{"type":"string","title":"Name"},
                "confirm":{"type":"boolean","title":"Confirm"},
                "n":{"type":"integer"}}}});
        let (q, form) = parse(&params, "e1".into()).unwrap();
        assert_eq!(q.items.len(), 4);
        assert_eq!(q.items[0].options.len(), 2);
        assert!(q.items[1].allow_free_text);
        assert_eq!(q.items[2].options[0].label, "Yes");
        let answers = check_answers(&q, &json!([["green"], ["Ada"], ["Yes"], ["7"]])).unwrap();
        assert_eq!(
            form.result(&Outcome::Answered(answers)).unwrap(),
            json!({"action":"accept","content":{"color":"green","name":"Ada","confirm":true,"n":7}})
        );
        assert_eq!(
            form.result(&Outcome::Rejected(Reason::Timeout)).unwrap(),
            json!({"action":"cancel"})
        );
        assert!(parse(&json!({"mode":"url","sessionId":"s"}), "e".into()).is_err());
        let single = json!({"sessionId":"s","mode":"form","message":"Pick a color",
            "requestedSchema":{"type":"object","properties":{"color":{"type":"string","oneOf":[{"const":"r","title":"Red"}]}}}});
        let (q, _) = parse(&single, "e2".into()).unwrap();
        assert_eq!(q.items[0].prompt, "Pick a color");
        assert!(permission_obstacle(&q).is_none());
    }

    #[test]
    fn agent_forms_are_held_to_the_extensions_rules() {
        let form = |session: &str, props: Value| {
            json!({"sessionId":session,"mode":"form","message":"",
                "requestedSchema":{"type":"object","properties":props}})
        };
        for (params, why) in [
            (
                form("", json!({"a":{"type":"string"}})),
                "sessionId: must not be empty",
            ),
            (
                form("s", json!({"c":{"type":"string","enum":["red","red"]}})),
                "questions[0].options[1]: duplicate value \"red\"",
            ),
            (
                form(
                    "s",
                    json!({"c":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"r","title":"Rouge"}]}}),
                ),
                "questions[0].options[1]: duplicate value \"r\"",
            ),
            (
                form("s", json!({"":{"type":"string"}})),
                "questions[0].question: must not be empty",
            ),
        ] {
            assert_eq!(parse(&params, "e".into()).unwrap_err(), why, "{params}");
        }
        // What the extension accepts passes the same check.
        for params in [
            json!({"sessionId":"s","questionId":"q","prompt":"p"}),
            json!({"sessionId":"s","questionId":"q","questions":[{"question":"x","options":["a","b"],"multiple":true}]}),
        ] {
            assert_eq!(q(params).problem(), None);
        }
    }
}
