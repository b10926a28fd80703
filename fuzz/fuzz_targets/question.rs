//! The question model and its dialects on arbitrary JSON: `parse_request`, the answer
//! checks (`normalize`, `check_answers`, `from_elicitation`, `from_permission` and
//! `advance` in both prompt styles), the translations (`to_extension`, `to_elicitation`,
//! `to_permission`, `chat::done`) and
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

use acp_question_bridge::events::By;
use acp_question_bridge::questions::answer::{check_answers, normalize, Outcome, Reason};
use acp_question_bridge::questions::model::{parse_request, Question, MAX_ITEMS};
use acp_question_bridge::questions::prompts::{self, At, Next, Style};
use acp_question_bridge::questions::sources::form::{self, FieldKind};
use acp_question_bridge::questions::{chat, dialect};
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
    // Permission prompts: possible exactly when there is no obstacle; in either style the
    // prompts, answered for the first option of each item, reach exactly that answer, and
    // each binary prompt has one allow and one reject option.
    let obstacle = prompts::obstacle(q);
    for style in [Style::List, Style::Binary] {
        let mut at = At::first(q, style, 0);
        let mut collected = Vec::new();
        for _ in 0..=q.items.iter().map(|i| i.options.len()).sum::<usize>() {
            let Some((_, req)) = prompts::to_permission(q, at, "tc", at.item == 0) else {
                assert!(obstacle.is_some());
                break;
            };
            assert!(obstacle.is_none());
            let opts = req["options"].as_array().expect("options");
            let item = &q.items[at.item];
            let id = match at.option {
                None => {
                    assert_eq!(opts.len(), item.options.len() + 1);
                    answers[at.item][0].clone()
                }
                Some(o) => {
                    assert_eq!(opts.len(), 2);
                    let yes = answers[at.item].contains(&item.options[o].value);
                    (if yes { prompts::ALLOW } else { prompts::REJECT }).to_owned()
                }
            };
            let sel = json!({"outcome":{"outcome":"selected","optionId":id}});
            let (reply, _) = prompts::from_permission(q, at, &raw(&sel))
                .unwrap_or_else(|e| panic!("its own permission option was refused: {e}"));
            match prompts::advance(q, style, at, reply, &mut collected) {
                Ok(Next::Ask(next)) => at = next,
                Ok(Next::Done(o)) => {
                    assert_eq!(o, Outcome::Answered(answers.clone()));
                    break;
                }
                Err(e) => panic!("its own prompts' answers were refused: {e}"),
            }
        }
        if obstacle.is_none() {
            let item = &q.items[0];
            let at = At::first(q, style, 0);
            if at.option.is_none() {
                let dismiss =
                    json!({"outcome":{"outcome":"selected","optionId":prompts::dismiss_id(item)}});
                let (reply, _) = prompts::from_permission(q, at, &raw(&dismiss)).expect("dismiss");
                assert_eq!(
                    prompts::advance(q, style, at, reply, &mut Vec::new()),
                    Ok(Next::Done(Outcome::Rejected(Reason::Declined)))
                );
            }
        }
    }
    for o in [
        Outcome::Answered(answers.clone()),
        Outcome::Rejected(Reason::Timeout),
    ] {
        for content in [
            chat::Content::Replace,
            chat::Content::KeepLines("a\nb"),
            chat::Content::Unchanged,
        ] {
            let _ = chat::done(q, "tc", &o, By::Control, content);
        }
        let _ = chat::stale(q, &o, By::Control);
    }
    // Whatever the client sent: anything accepted obeys the question.
    if let Some(result) = result {
        check_outcome(q, normalize(q, result));
        check_outcome(q, dialect::from_elicitation(q, result));
        // A permission prompt's answer moves the question on; whatever it reaches obeys it.
        for style in [Style::List, Style::Binary] {
            let at = At::first(q, style, 0);
            if let Ok((reply, _)) = prompts::from_permission(q, at, result) {
                if let Ok(Next::Done(Outcome::Answered(a))) =
                    prompts::advance(q, style, at, reply, &mut Vec::new())
                {
                    check_answers_obey(q, &a);
                }
            }
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
    let _ = prompts::to_permission(&q, At::default(), "tc", true);
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
