//! Translations between the question model and what clients can show (PROTOCOL.md
//! section 3): the extension and ACP `elicitation/create` forms, and back (permission
//! prompts are [`super::prompts`]).
//!
//! Pure functions only: the router decides when to use them. Invariant: every translation
//! back to an answer goes through [`check_answers`], so an answer that reaches the agent
//! obeys the same rules whichever dialect the client used.

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::answer::{check_answers, Extras, Outcome, Reason};
use super::model::{Choice, Item, Question};
use crate::rawjson::RawObject;

/// The property key of item `i` in an elicitation form.
pub fn item_key(i: usize) -> String {
    format!("q{}", i + 1)
}

/// The companion free-text key of a choice property.
pub fn other_key(key: &str) -> String {
    format!("{key}_other")
}

fn title(item: &Item) -> &str {
    item.header.as_deref().unwrap_or(&item.prompt)
}

fn one_of(options: &[Choice]) -> Vec<Value> {
    options
        .iter()
        .map(|c| {
            let mut o = json!({ "const": c.value, "title": c.label });
            if let Some(d) = &c.description {
                o["description"] = json!(d);
            }
            o
        })
        .collect()
}

/// The one-line message of a form or prompt for `q`.
pub fn message(q: &Question) -> String {
    match q.items.as_slice() {
        [one] => one.prompt.clone(),
        items => {
            let titles: Vec<&str> = items.iter().map(title).collect();
            format!(
                "Please answer {} questions: {}",
                items.len(),
                titles.join(", ")
            )
        }
    }
}

/// Params of `elicitation/create` (form mode) asking `q`.
pub fn to_elicitation(q: &Question, expires_at: Option<&str>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (i, item) in q.items.iter().enumerate() {
        let key = item_key(i);
        let mut prop = if item.options.is_empty() {
            json!({ "type": "string" })
        } else if item.multi_select {
            json!({ "type": "array", "minItems": 1, "items": { "anyOf": one_of(&item.options) } })
        } else {
            json!({ "type": "string", "oneOf": one_of(&item.options) })
        };
        prop["title"] = json!(title(item));
        if item.header.is_some() || q.items.len() > 1 {
            prop["description"] = json!(item.prompt);
        }
        properties.insert(key.clone(), prop);
        if !item.options.is_empty() && item.allow_free_text {
            properties.insert(
                other_key(&key),
                json!({
                    "type": "string",
                    "title": format!("Other ({})", title(item)),
                    "description": "Your own answer instead of (or, for several choices, in addition to) the options"
                }),
            );
        }
        required.push(key);
    }
    let mut meta = json!({ "questionId": q.question_id });
    if let Some(at) = expires_at {
        meta["expiresAt"] = json!(at);
    }
    json!({
        "sessionId": q.session_id,
        "mode": "form",
        "message": message(q),
        "requestedSchema": { "type": "object", "properties": properties, "required": required },
        "_meta": { super::META_KEY: meta }
    })
}

/// Params of `_sandboxagent/session/request_question` asking `q` (multi-question form),
/// for questions the bridge itself asks (a translated agent form).
pub fn to_extension(q: &Question, expires_at: Option<&str>) -> Value {
    let questions: Vec<Value> = q
        .items
        .iter()
        .map(|item| {
            let mut v = json!({
                "question": item.prompt,
                "options": item.options,
                "multiSelect": item.multi_select,
                "allowFreeText": item.allow_free_text,
            });
            if let Some(h) = &item.header {
                v["header"] = json!(h);
            }
            v
        })
        .collect();
    let mut params =
        json!({ "sessionId": q.session_id, "questionId": q.question_id, "questions": questions });
    if let Some(at) = expires_at {
        params["expiresAt"] = json!(at);
    }
    params
}

/// Splits a client's result object into the members the bridge reads and the rest.
pub(crate) fn split(
    result: &RawValue,
    read: &[&str],
) -> Result<(Map<String, Value>, Extras), String> {
    let members: RawObject<'_> =
        serde_json::from_str(result.get()).map_err(|_| "result: must be an object".to_owned())?;
    let mut known = Map::new();
    let mut extras = Extras::new();
    for (k, v) in members.0 {
        if read.contains(&k.as_ref()) {
            known.insert(
                k.to_string(),
                serde_json::from_str(v.get()).map_err(|e| format!("{k}: {e}"))?,
            );
        } else {
            extras.push((k.into_owned(), v.to_owned()));
        }
    }
    Ok((known, extras))
}

/// The outcome of an `elicitation/create` response for `q`.
pub fn from_elicitation(q: &Question, result: &RawValue) -> Result<(Outcome, Extras), String> {
    let (obj, extras) = split(result, &["action", "content"])?;
    let outcome = match obj.get("action").and_then(Value::as_str) {
        Some("decline") => Outcome::Rejected(Reason::Declined),
        Some("cancel") => Outcome::Rejected(Reason::Cancelled),
        Some("accept") => {
            let empty = Map::new();
            let content = match obj.get("content") {
                Some(Value::Object(c)) => c,
                None | Some(Value::Null) => &empty,
                Some(_) => return Err("content: must be an object".into()),
            };
            let mut answers = Vec::with_capacity(q.items.len());
            for (i, item) in q.items.iter().enumerate() {
                let key = item_key(i);
                let other = content
                    .get(&other_key(&key))
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty());
                let chosen = match (content.get(&key), item.multi_select) {
                    (Some(Value::Array(values)), true) => values.clone(),
                    (Some(Value::String(s)), _) => vec![json!(s)],
                    (None | Some(Value::Null), _) => Vec::new(),
                    (Some(_), true) => {
                        return Err(format!("content.{key}: must be an array of strings"))
                    }
                    (Some(_), false) => return Err(format!("content.{key}: must be a string")),
                };
                let entry = match other {
                    // For one choice the user's own text replaces the option.
                    Some(text) if !item.multi_select => vec![json!(text)],
                    Some(text) => chosen.into_iter().chain([json!(text)]).collect(),
                    None => chosen,
                };
                answers.push(Value::Array(entry));
            }
            Outcome::Answered(check_answers(q, &Value::Array(answers)).map_err(|e| {
                // Name the form's keys, not the internal answer positions.
                e.replacen("answers[", "content item [", 1)
            })?)
        }
        Some(other) => {
            return Err(format!(
                "action: {other:?} is not accept, decline or cancel"
            ))
        }
        None => return Err("action: is required".into()),
    };
    Ok((outcome, extras))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::questions::sources::testing::{question as q, raw};

    fn single() -> Question {
        q(
            json!({"sessionId":"s","questionId":"q","prompt":"Which option?",
            "options":[["option-a","Option A"],["option-b","Option B"]]}),
        )
    }

    fn multi() -> Question {
        q(json!({"sessionId":"s","questionId":"q","questions":[
            {"question":"Which DB?","header":"DB","options":[{"label":"Postgres","description":"d"},{"label":"SQLite"}],"custom":true},
            {"question":"Features?","options":["auth","billing"],"multiple":true},
            {"question":"Notes?"}]}))
    }

    #[test]
    fn elicitation_form_for_a_single_question() {
        assert_eq!(
            to_elicitation(&single(), Some("2026-01-01T00:00:00.000Z")),
            json!({"sessionId":"s","mode":"form","message":"Which option?",
                "requestedSchema":{"type":"object","properties":{
                    "q1":{"type":"string","oneOf":[{"const":"option-a","title":"Option A"},{"const":"option-b","title":"Option B"}],"title":"Which option?"}},
                    "required":["q1"]},
                "_meta":{"sandboxagent.dev":{"questionId":"q","expiresAt":"2026-01-01T00:00:00.000Z"}}})
        );
    }

    #[test]
    fn elicitation_form_for_several_questions() {
        let form = to_elicitation(&multi(), None);
        assert_eq!(
            form["message"],
            "Please answer 3 questions: DB, Features?, Notes?"
        );
        let props = &form["requestedSchema"]["properties"];
        assert_eq!(props["q1"]["title"], "DB");
        assert_eq!(props["q1"]["description"], "Which DB?");
        assert_eq!(
            props["q1"]["oneOf"][0],
            json!({"const":"Postgres","title":"Postgres","description":"d"})
        );
        assert_eq!(props["q1_other"]["type"], "string");
        assert_eq!(props["q2"]["type"], "array");
        assert_eq!(
            props["q2"]["items"]["anyOf"][1],
            json!({"const":"billing","title":"billing"})
        );
        assert_eq!(
            props["q3"],
            json!({"type":"string","title":"Notes?","description":"Notes?"})
        );
        assert_eq!(
            form["requestedSchema"]["required"],
            json!(["q1", "q2", "q3"])
        );
    }

    #[test]
    fn elicitation_answers() {
        let m = multi();
        let (o, _) = from_elicitation(
            &m,
            &raw(json!({"action":"accept","content":{
            "q1":"SQLite","q1_other":"MySQL","q2":["auth","billing"],"q3":"none"}})),
        )
        .unwrap();
        assert_eq!(
            o,
            Outcome::Answered(vec![
                vec!["MySQL".into()],
                vec!["auth".into(), "billing".into()],
                vec!["none".into()]
            ])
        );
        let (o, extras) =
            from_elicitation(&single(), &raw(json!({"action":"decline","_meta":{"k":1}}))).unwrap();
        assert_eq!(o, Outcome::Rejected(Reason::Declined));
        assert_eq!(extras[0].0, "_meta");
        assert_eq!(
            from_elicitation(&single(), &raw(json!({"action":"cancel"})))
                .unwrap()
                .0,
            Outcome::Rejected(Reason::Cancelled)
        );
        let e = from_elicitation(
            &single(),
            &raw(json!({"action":"accept","content":{"q1":"option-z"}})),
        )
        .unwrap_err();
        assert!(e.contains("option-z"), "{e}");
        let e =
            from_elicitation(&single(), &raw(json!({"action":"accept","content":{}}))).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        assert!(from_elicitation(&single(), &raw(json!({"action":"maybe"}))).is_err());
    }
}
