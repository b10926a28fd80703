//! What the demo shows of a question item, and what a line the user typed means for it.
//! Pure functions: no I/O, so the rules are tested without a terminal.

use acp_question_bridge::questions::model::{Choice, Item, Question};
use serde_json::Value;

/// Where an item's answer came from.
pub(super) enum Answer {
    Text(String),
    Reject(&'static str),
    /// The bridge withdrew the question (`$/cancel_request`).
    Withdrawn,
}

/// The lines that show item `i` of `q`: its number, header and prompt, then its options.
pub(super) fn render(q: &Question, i: usize) -> Vec<String> {
    let item = &q.items[i];
    let n = q.items.len();
    let count = (n > 1).then(|| format!("({}/{n}) ", i + 1));
    let header = item.header.as_ref().map(|h| format!("{h}: "));
    let notes = match (
        item.multi_select,
        item.allow_free_text,
        item.options.is_empty(),
    ) {
        (_, true, true) => " (free text)",
        (true, true, false) => " (multi-select, free text allowed)",
        (true, false, _) => " (multi-select)",
        (false, true, false) => " (free text allowed)",
        (false, false, _) => "",
    };
    let (count, header) = (count.unwrap_or_default(), header.unwrap_or_default());
    let mut lines = vec![format!("   {count}{header}{}{notes}", item.prompt)];
    for (n, c) in item.options.iter().enumerate() {
        let desc = c
            .description
            .as_ref()
            .map_or(String::new(), |d| format!(" - {d}"));
        lines.push(format!("     {}) {} [{}]{desc}", n + 1, c.label, c.value));
    }
    lines
}

/// What the prompt says an item takes.
pub(super) fn hint(item: &Item) -> String {
    let n = item.options.len();
    match (n, item.multi_select, item.allow_free_text) {
        (0, _, _) => "text".to_owned(),
        (_, true, _) => format!("numbers 1-{n}, comma-separated"),
        (_, false, true) => format!("1-{n} or text"),
        (_, false, false) => format!("1-{n}"),
    }
}

/// The line that rejects a question (besides an empty one).
pub(super) const REJECT: &str = ":r";

/// What a typed line (trimmed) means: empty or [`REJECT`] rejects; a leading `\` quotes the
/// rest, so `\:r` is the text `:r`; anything else is an answer.
pub(super) fn typed(text: &str) -> Answer {
    match text.strip_prefix('\\') {
        Some(quoted) => Answer::Text(quoted.to_owned()),
        None if text.is_empty() || text == REJECT => Answer::Reject("declined"),
        None => Answer::Text(text.to_owned()),
    }
}

/// Maps one typed answer to option values: an option value or label, an option number
/// (1-based), or free text where allowed; a multi-select item takes a comma-separated list.
pub(super) fn parse_answer(item: &Item, text: &str) -> Result<Vec<String>, String> {
    let tokens: Vec<&str> = if item.multi_select {
        text.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect()
    } else {
        vec![text.trim()]
    };
    if tokens.iter().all(|t| t.is_empty()) {
        return Err("empty answer (use --reject to reject)".into());
    }
    let mut values: Vec<String> = Vec::new();
    for t in tokens {
        let number = t.parse::<usize>().ok().and_then(|n| n.checked_sub(1));
        let value = match (
            item.option_value(t),
            number.and_then(|n| item.options.get(n)),
        ) {
            (Some(v), _) => v.to_owned(),
            (None, Some(c)) => c.value.clone(),
            (None, None) if item.allow_free_text => t.to_owned(),
            (None, None) => {
                let names: Vec<&str> = item.options.iter().map(|c| c.value.as_str()).collect();
                return Err(format!(
                    "{t:?} is not an option (a number 1-{} or one of: {}) and free text is not allowed",
                    item.options.len(),
                    names.join(", ")
                ));
            }
        };
        values.push(value);
    }
    Ok(values) // check_answers drops duplicates
}

/// A permission request's options as choices, and the value of its first reject option.
pub(super) fn permission_options(options: &Value) -> (Vec<Choice>, Option<String>) {
    let options: Vec<Choice> = options
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| {
            Some(Choice {
                value: o["optionId"].as_str()?.to_owned(),
                label: o["name"].as_str()?.to_owned(),
                kind: o["kind"].as_str().map(str::to_owned),
                ..Choice::default()
            })
        })
        .collect();
    let reject = options
        .iter()
        .find(|c| c.kind.as_deref().is_some_and(|k| k.starts_with("reject")))
        .map(|c| c.value.clone());
    (options, reject)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(multi: bool, free: bool) -> Item {
        let choice = |v: &str, l: &str| Choice {
            value: v.into(),
            label: l.into(),
            ..Choice::default()
        };
        Item {
            prompt: "Which database?".into(),
            options: vec![choice("pg", "Postgres"), choice("lite", "SQLite")],
            multi_select: multi,
            allow_free_text: free,
            ..Item::default()
        }
    }

    #[test]
    fn a_typed_line_is_an_answer_a_rejection_or_quoted_text() {
        assert!(matches!(typed(""), Answer::Reject("declined")));
        assert!(matches!(typed(REJECT), Answer::Reject("declined")));
        assert!(matches!(typed("\\:r"), Answer::Text(t) if t == ":r"));
        assert!(matches!(typed("2"), Answer::Text(t) if t == "2"));
    }

    #[test]
    fn numbers_labels_and_values_name_options_and_free_text_only_where_allowed() {
        assert_eq!(
            parse_answer(&item(false, false), "2"),
            Ok(vec!["lite".into()])
        );
        assert_eq!(
            parse_answer(&item(false, false), "pg"),
            Ok(vec!["pg".into()])
        );
        assert_eq!(
            parse_answer(&item(true, false), "2, Postgres"),
            Ok(vec!["lite".into(), "pg".into()])
        );
        assert!(parse_answer(&item(false, false), "MySQL").is_err());
        assert_eq!(
            parse_answer(&item(false, true), "MySQL"),
            Ok(vec!["MySQL".into()])
        );
        assert_eq!(hint(&item(true, false)), "numbers 1-2, comma-separated");
        assert_eq!(
            render(
                &Question {
                    items: vec![item(false, false)],
                    ..question()
                },
                0
            ),
            [
                "   Which database?",
                "     1) Postgres [pg]",
                "     2) SQLite [lite]"
            ]
        );
    }

    fn question() -> Question {
        Question {
            session_id: String::new(),
            question_id: String::new(),
            items: Vec::new(),
            timeout_ms: None,
        }
    }

    #[test]
    fn a_permission_requests_first_reject_option_is_its_no() {
        let opts = serde_json::json!([
            {"optionId": "a", "name": "Allow", "kind": "allow_once"},
            {"optionId": "r", "name": "Reject", "kind": "reject_once"},
            {"optionId": "r2", "name": "Never", "kind": "reject_always"},
            {"name": "no id"}
        ]);
        let (choices, reject) = permission_options(&opts);
        assert_eq!(choices.len(), 3);
        assert_eq!(reject.as_deref(), Some("r"));
    }
}
