//! The question model and its dialects on arbitrary JSON: `parse_request`, the answer
//! checks (`normalize`, `check_answers`, `from_elicitation`, `from_permission`), the
//! translations (`to_extension`, `to_elicitation`, `to_permission`, `permission_done`) and
//! the agent-form translation (`from_agent_elicitation`, `to_elicitation_result`).
//!
//! Input: `<params JSON>\n<client result JSON>` (either part may be anything).
//!
//! Checked: no panic anywhere; a parsed question keeps the model's invariants (1 to 16
//! items, non-empty ids and prompts, every item answerable, option values unique); the
//! extension form the bridge sends parses back to the same question; every dialect
//! accepts the answer it was built for; any answer that is accepted, in any dialect,
//! obeys the question (one entry per item, one value for single-select, at least one for
//! multi-select, option values unless free text is allowed, no duplicates) and its
//! canonical result is valid JSON.
#![no_main]

use acp_question_bridge::questions::answer::{check_answers, normalize, Outcome, Reason};
use acp_question_bridge::questions::dialect;
use acp_question_bridge::questions::sources::form::{self, FieldKind};
use acp_question_bridge::questions::model::{parse_request, Question, MAX_ITEMS};
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{json, Value};

fn check_model(q: &Question) {
    assert!((1..=MAX_ITEMS).contains(&q.items.len()));
    assert!(!q.session_id.is_empty() && !q.question_id.is_empty());
    for item in &q.items {
        assert!(!item.prompt.is_empty());
        assert!(!item.options.is_empty() || item.allow_free_text);
        for (i, c) in item.options.iter().enumerate() {
            assert!(item.options[..i].iter().all(|d| d.value != c.value));
        }
    }
}

fn check_answers_obey(q: &Question, answers: &[Vec<String>]) {
    assert_eq!(answers.len(), q.items.len());
    for (item, a) in q.items.iter().zip(answers) {
        if a.is_empty() {
            assert!(item.optional, "an answer to a required item is empty");
            continue;
        }
        if !item.multi_select {
            assert_eq!(a.len(), 1);
        }
        for (j, v) in a.iter().enumerate() {
            assert!(!a[..j].contains(v), "duplicate answer {v:?}");
            assert!(
                item.allow_free_text || item.options.iter().any(|c| &c.value == v),
                "{v:?} is not an option"
            );
        }
    }
}

fn check_outcome(
    q: &Question,
    r: Result<(Outcome, acp_question_bridge::questions::answer::Extras), String>,
) {
    if let Ok((o, extras)) = r {
        if let Outcome::Answered(a) = &o {
            check_answers_obey(q, a);
        }
        let text = o.to_result(&extras);
        assert!(
            serde_json::from_str::<IgnoredAny>(&text).is_ok(),
            "result is not JSON: {text}"
        );
    }
}

/// A valid answer for each item: its first option, or free text.
fn first_answers(q: &Question) -> Vec<Vec<String>> {
    q.items
        .iter()
        .map(|i| {
            vec![i
                .options
                .first()
                .map_or_else(|| "free text".to_owned(), |c| c.value.clone())]
        })
        .collect()
}

fn raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).expect("a Value is JSON")
}

fn question(q: &Question, result: Option<&RawValue>) {
    check_model(q);
    // The extension form parses back to the same question.
    let ext = dialect::to_extension(q, Some("2026-11-20T00:00:00.000Z"));
    let back = parse_request(Some(&raw(&ext))).expect("to_extension output parses");
    assert_eq!(back.items, q.items);
    assert_eq!(
        (&back.session_id, &back.question_id),
        (&q.session_id, &q.question_id)
    );
    let _ = dialect::message(q);
    // Elicitation: one property per item (+ `_other`), all required; its own answer passes.
    let form = dialect::to_elicitation(q, None);
    let required = form["requestedSchema"]["required"].as_array().map(Vec::len);
    assert_eq!(required, Some(q.items.len()));
    let answers = first_answers(q);
    let mut content = serde_json::Map::new();
    for (i, (item, a)) in q.items.iter().zip(&answers).enumerate() {
        let v = if item.multi_select && !item.options.is_empty() {
            json!(a)
        } else {
            json!(a[0])
        };
        content.insert(dialect::item_key(i), v);
    }
    let accept = json!({"action":"accept","content":content});
    match dialect::from_elicitation(q, &raw(&accept)) {
        Ok((Outcome::Answered(got), _)) => assert_eq!(got, answers),
        other => panic!("its own form answer was refused: {other:?}"),
    }
    // The canonical answer passes normalize.
    let canonical = json!({"status":"answered","answers":answers});
    match normalize(q, &raw(&canonical)) {
        Ok((Outcome::Answered(got), _)) => assert_eq!(got, answers),
        other => panic!("its own canonical answer was refused: {other:?}"),
    }
    // Permission: possible exactly when there is no obstacle, one prompt per item; each
    // prompt's options are accepted for that item.
    let obstacle = dialect::permission_obstacle(q);
    for (step, item) in q.items.iter().enumerate() {
        match dialect::to_permission(q, step, "tc", step == 0) {
            None => assert!(obstacle.is_some()),
            Some((_, req)) => {
                assert!(obstacle.is_none());
                let opts = req["options"].as_array().expect("options");
                assert_eq!(opts.len(), item.options.len() + 1);
                let sel =
                    json!({"outcome":{"outcome":"selected","optionId":opts[0]["optionId"]}});
                match dialect::from_permission(q, step, &raw(&sel)) {
                    Ok((Outcome::Answered(got), _)) => {
                        assert_eq!(got, vec![answers[step].clone()])
                    }
                    other => panic!("its own permission option was refused: {other:?}"),
                }
                let dismiss = json!({"outcome":{"outcome":"selected","optionId":dialect::dismiss_id(item)}});
                assert!(matches!(
                    dialect::from_permission(q, step, &raw(&dismiss)),
                    Ok((Outcome::Rejected(Reason::Declined), _))
                ));
            }
        }
    }
    if obstacle.is_none() {
        for o in [
            Outcome::Answered(answers.clone()),
            Outcome::Rejected(Reason::Timeout),
        ] {
            let _ = dialect::permission_done(q, "tc", &o);
        }
    }
    // Whatever the client sent: anything accepted obeys the question.
    if let Some(result) = result {
        check_outcome(q, normalize(q, result));
        check_outcome(q, dialect::from_elicitation(q, result));
        // A permission prompt answers one item (the first, here).
        if let Ok((Outcome::Answered(a), _)) = dialect::from_permission(q, 0, result) {
            let first = Question {
                items: vec![q.items[0].clone()],
                ..q.clone()
            };
            check_answers_obey(&first, &a);
        }
        if let Ok(v) = serde_json::from_str::<Value>(result.get()) {
            if let Ok(a) = check_answers(q, &v) {
                check_answers_obey(q, &a);
            }
            if let Some(a) = v.get("answers") {
                if let Ok(a) = check_answers(q, a) {
                    check_answers_obey(q, &a);
                }
            }
        }
    }
}

fn agent_form(params: &Value) {
    let Ok((q, form)) = form::parse(params, "elicitation:1".into()) else {
        return;
    };
    let fields = &form.fields;
    assert_eq!(fields.len(), q.items.len());
    assert!((1..=MAX_ITEMS).contains(&q.items.len()));
    let answers: Vec<Vec<String>> = q
        .items
        .iter()
        .zip(fields)
        .map(|(i, f)| match (&f.kind, i.options.first()) {
            (FieldKind::Number { .. }, _) => vec!["3".to_owned()],
            (_, Some(c)) => vec![c.value.clone()],
            (_, None) => vec!["text".to_owned()],
        })
        .collect();
    let result = form
        .result(&Outcome::Answered(answers))
        .expect("a valid answer maps back to the form");
    let content = result["content"].as_object().expect("content");
    assert_eq!(content.len(), fields.len());
    for r in [Reason::Declined, Reason::Cancelled, Reason::Timeout] {
        assert!(form.result(&Outcome::Rejected(r)).is_ok());
    }
    // What the bridge shows a native client for it.
    let _ = dialect::to_extension(&q, None);
    let _ = dialect::to_permission(&q, 0, "tc", true);
}

fuzz_target!(|data: &[u8]| {
    let (a, b) = match data.iter().position(|&c| c == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let (Ok(a), b) = (std::str::from_utf8(a), std::str::from_utf8(b).ok()) else {
        return;
    };
    let result: Option<&RawValue> = b.and_then(|b| serde_json::from_str(b).ok());
    let _ = parse_request(None);
    if let Ok(params) = serde_json::from_str::<&RawValue>(a) {
        if let Ok(q) = parse_request(Some(params)) {
            question(&q, result);
        }
    }
    if let Ok(v) = serde_json::from_str::<Value>(a) {
        agent_form(&v);
    }
});
