//! Translations between the question model and what clients can show (PROTOCOL.md
//! section 3): ACP `elicitation/create` forms and `session/request_permission` prompts,
//! and back from an agent's own form elicitation to a question.
//!
//! Pure functions only: the router decides when to use them. Invariant: every translation
//! back to an answer goes through [`check_answers`], so an answer that reaches the agent
//! obeys the same rules whichever dialect the client used.

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::answer::{check_answers, Extras, Outcome, Reason};
use super::model::{Choice, Item, Question};
use crate::capabilities::RawObject;

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
fn split(result: &RawValue, read: &[&str]) -> Result<(Map<String, Value>, Extras), String> {
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

/// The optionId of the permission prompt's "Dismiss" option: one that is no option value.
pub fn dismiss_id(item: &Item) -> String {
    let mut id = "dismiss".to_owned();
    while item.options.iter().any(|c| c.value == id) {
        id.push('_');
    }
    id
}

/// Why `q` cannot be asked as permission prompts, if it cannot. Each item becomes one
/// prompt (several items: one after another); an item that allows free text but has
/// options can still be asked (the user just cannot type).
pub fn permission_obstacle(q: &Question) -> Option<&'static str> {
    q.items.iter().find_map(|item| {
        if item.multi_select {
            Some("a multi-select question")
        } else if item.options.is_empty() {
            Some("a question without options")
        } else {
            None
        }
    })
}

/// The `session/update` that shows item `step` of a permission-prompt question (a
/// `tool_call` when `announce`, else a `tool_call_update` of a tool call the client has),
/// and the `session/request_permission` params that ask it. `None` when `q` cannot be asked
/// so (see [`permission_obstacle`]).
pub fn to_permission(
    q: &Question,
    step: usize,
    tool_call_id: &str,
    announce: bool,
) -> Option<(Value, Value)> {
    if permission_obstacle(q).is_some() {
        return None;
    }
    let item = q.items.get(step)?;
    let title = match q.items.len() {
        1 => item.prompt.clone(),
        n => format!("({}/{n}) {}", step + 1, item.prompt),
    };
    let mut listing = String::new();
    if let Some(h) = &item.header {
        listing.push_str(h);
        listing.push('\n');
    }
    for c in &item.options {
        listing.push_str("- ");
        listing.push_str(&c.label);
        if let Some(d) = &c.description {
            listing.push_str(": ");
            listing.push_str(d);
        }
        listing.push('\n');
    }
    let tool_call = json!({
        "sessionId": q.session_id,
        "update": {
            "sessionUpdate": if announce { "tool_call" } else { "tool_call_update" },
            "toolCallId": tool_call_id,
            "title": title,
            "kind": "other",
            "status": "pending",
            "content": [{ "type": "content", "content": { "type": "text", "text": listing.trim_end() } }]
        }
    });
    let mut options: Vec<Value> = item
        .options
        .iter()
        .map(|c| json!({ "optionId": c.value, "name": c.label, "kind": "allow_once" }))
        .collect();
    options.push(json!({ "optionId": dismiss_id(item), "name": "Dismiss", "kind": "reject_once" }));
    let request = json!({
        "sessionId": q.session_id,
        "toolCall": { "toolCallId": tool_call_id, "title": title, "kind": "other", "status": "pending" },
        "options": options,
        "_meta": { super::META_KEY: { "questionId": q.question_id } }
    });
    Some((tool_call, request))
}

/// The outcome of a `session/request_permission` response for item `step` of `q`: the
/// answer to that item alone (`Answered` holds one list), or the question's end.
pub fn from_permission(
    q: &Question,
    step: usize,
    result: &RawValue,
) -> Result<(Outcome, Extras), String> {
    let (obj, extras) = split(result, &["outcome"])?;
    let outcome = &obj.get("outcome").cloned().unwrap_or(Value::Null);
    let item = q.items.get(step).ok_or("question has no such item")?;
    let outcome = match outcome.get("outcome").and_then(Value::as_str) {
        Some("cancelled") => Outcome::Rejected(Reason::Cancelled),
        Some("selected") => match outcome.get("optionId").and_then(Value::as_str) {
            Some(id) if id == dismiss_id(item) => Outcome::Rejected(Reason::Declined),
            Some(id) => match item.option_value(id) {
                Some(v) if item.options.iter().any(|c| c.value == id) => {
                    Outcome::Answered(vec![vec![v.to_owned()]])
                }
                _ => {
                    return Err(format!(
                        "outcome.optionId: {id:?} is not one of the options offered"
                    ))
                }
            },
            None => return Err("outcome.optionId: is required with \"selected\"".into()),
        },
        _ => {
            return Err(
                "outcome: must be {\"outcome\":\"selected\",..} or {\"outcome\":\"cancelled\"}"
                    .into(),
            )
        }
    };
    Ok((outcome, extras))
}

/// The `tool_call_update` that closes a permission-prompt question's tool call.
pub fn permission_done(q: &Question, tool_call_id: &str, outcome: &Outcome) -> Value {
    let (status, text) = match outcome {
        Outcome::Answered(answers) => {
            let labels: Vec<&str> = q
                .items
                .iter()
                .zip(answers)
                .flat_map(|(item, values)| {
                    values.iter().map(|v| {
                        item.options
                            .iter()
                            .find(|c| &c.value == v)
                            .map_or(v.as_str(), |c| c.label.as_str())
                    })
                })
                .collect();
            ("completed", format!("Answered: {}", labels.join(", ")))
        }
        Outcome::Rejected(Reason::Declined) => ("completed", "Dismissed".to_owned()),
        Outcome::Rejected(r) => ("failed", format!("Withdrawn ({})", r.as_str())),
    };
    json!({
        "sessionId": q.session_id,
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool_call_id,
            "status": status,
            "content": [{ "type": "content", "content": { "type": "text", "text": text } }]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::model::parse_request;

    fn q(v: Value) -> Question {
        parse_request(Some(&RawValue::from_string(v.to_string()).unwrap())).unwrap()
    }

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

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

    #[test]
    fn permission_prompt_and_answers() {
        let s = single();
        let (tool_call, req) = to_permission(&s, 0, "tc-1", true).unwrap();
        assert_eq!(tool_call["update"]["sessionUpdate"], "tool_call");
        assert_eq!(tool_call["update"]["status"], "pending");
        assert_eq!(tool_call["update"]["kind"], "other");
        assert_eq!(tool_call["update"]["title"], "Which option?");
        assert_eq!(
            tool_call["update"]["content"][0]["content"]["text"],
            "- Option A\n- Option B"
        );
        assert_eq!(
            req["options"],
            json!([{"optionId":"option-a","name":"Option A","kind":"allow_once"},
                   {"optionId":"option-b","name":"Option B","kind":"allow_once"},
                   {"optionId":"dismiss","name":"Dismiss","kind":"reject_once"}])
        );
        let sel = |id: &str| raw(json!({"outcome":{"outcome":"selected","optionId":id}}));
        assert_eq!(
            from_permission(&s, 0, &sel("option-b")).unwrap().0,
            Outcome::Answered(vec![vec!["option-b".into()]])
        );
        assert_eq!(
            from_permission(&s, 0, &sel("dismiss")).unwrap().0,
            Outcome::Rejected(Reason::Declined)
        );
        assert_eq!(
            from_permission(&s, 0, &raw(json!({"outcome":{"outcome":"cancelled"}})))
                .unwrap()
                .0,
            Outcome::Rejected(Reason::Cancelled)
        );
        assert!(from_permission(&s, 0, &sel("nope")).is_err());
        let done = permission_done(
            &s,
            "tc-1",
            &Outcome::Answered(vec![vec!["option-b".into()]]),
        );
        assert_eq!(done["update"]["status"], "completed");
        assert_eq!(
            done["update"]["content"][0]["content"]["text"],
            "Answered: Option B"
        );
    }

    #[test]
    fn several_single_select_items_are_asked_one_prompt_at_a_time() {
        // Free text allowed (but not required) does not stop a prompt: the user just
        // cannot type.
        let two = q(json!({"sessionId":"s","questionId":"q","questions":[
            {"question":"Which DB?","options":["pg","sqlite"],"custom":true},
            {"question":"Which day?","options":["mon","fri"]}]}));
        assert_eq!(permission_obstacle(&two), None);
        let (first, _) = to_permission(&two, 0, "tc", true).unwrap();
        assert_eq!(first["update"]["sessionUpdate"], "tool_call");
        assert_eq!(first["update"]["title"], "(1/2) Which DB?");
        let (second, req) = to_permission(&two, 1, "tc", false).unwrap();
        assert_eq!(second["update"]["sessionUpdate"], "tool_call_update");
        assert_eq!(req["toolCall"]["title"], "(2/2) Which day?");
        let sel = raw(json!({"outcome":{"outcome":"selected","optionId":"fri"}}));
        assert_eq!(
            from_permission(&two, 1, &sel).unwrap().0,
            Outcome::Answered(vec![vec!["fri".into()]])
        );
        assert!(
            from_permission(&two, 0, &sel).is_err(),
            "not an option of item 0"
        );
        let done = permission_done(
            &two,
            "tc",
            &Outcome::Answered(vec![vec!["pg".into()], vec!["fri".into()]]),
        );
        assert_eq!(
            done["update"]["content"][0]["content"]["text"],
            "Answered: pg, fri"
        );
    }

    #[test]
    fn permission_cannot_express_everything() {
        assert_eq!(
            permission_obstacle(&multi()),
            Some("a multi-select question")
        );
        let m = q(
            json!({"sessionId":"s","questionId":"q","questions":[{"question":"x","options":["a"],"multiple":true}]}),
        );
        assert_eq!(permission_obstacle(&m), Some("a multi-select question"));
        let f = q(json!({"sessionId":"s","questionId":"q","prompt":"notes?"}));
        assert!(to_permission(&f, 0, "t", true).is_none());
        let d = q(json!({"sessionId":"s","questionId":"q","prompt":"p","options":["dismiss","x"]}));
        assert_eq!(dismiss_id(&d.items[0]), "dismiss_");
    }
}
