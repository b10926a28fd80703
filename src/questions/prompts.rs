//! Questions asked as `session/request_permission` prompts, for clients that show nothing
//! richer (docs/CLIENTS.md, section 1).
//!
//! Real clients differ in what of a prompt they let the user reach: some show every option
//! by name, others reach only one option per `kind`, show only the tool call's title, or
//! accept only option ids that start with `allow`. So there are two shapes ([`Style`]):
//! - [`Style::Binary`], the one every client answers correctly: one prompt per decision, with
//!   exactly one allow option (`allow`) and one reject option (`reject`), the question and the
//!   candidate answer in the tool call's title and content. A single-select item asks its
//!   options in turn ("Which database? → SQLite", Yes / No, then "→ Postgres"); Yes picks
//!   the option, No goes on, and No to the last option declines the question. A multi-select
//!   item asks Yes / No for every option (no option chosen declines).
//! - [`Style::List`], for clients known to show every option by name: one prompt per item
//!   whose options are the item's options (`allow_once`) and a "Dismiss" (`reject_once`).
//!   Multi-select items still take one yes/no prompt per option.
//!
//! A question is asked prompt by prompt ([`At`]); [`advance`] says what follows an answer.
//! Items without options (free text) cannot be asked so ([`obstacle`]); an item with
//! options that also allows free text can (the user just cannot type). Pure functions only.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::answer::{check_answers, Extras, Outcome, Reason};
use super::model::{Item, Question};

/// The option id of the one allow option of a binary prompt (some clients accept only ids
/// that start with `allow`).
pub const ALLOW: &str = "allow";
/// The option id of the one reject option of a binary prompt.
pub const REJECT: &str = "reject";

/// How a client is asked (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Style {
    /// One prompt per item with every option by name.
    List,
    /// One yes/no prompt per decision.
    #[default]
    Binary,
}

impl Style {
    pub fn as_str(self) -> &'static str {
        match self {
            Style::List => "list",
            Style::Binary => "binary",
        }
    }
}

/// Which prompt of a question is being asked: the item, and for a yes/no prompt the option
/// it offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct At {
    pub item: usize,
    pub option: Option<usize>,
}

impl At {
    /// The first prompt of item `item` in `style`.
    pub fn first(q: &Question, style: Style, item: usize) -> At {
        let yes_no = style == Style::Binary || q.items.get(item).is_some_and(|i| i.multi_select);
        At {
            item,
            option: yes_no.then_some(0),
        }
    }
}

/// Why `q` cannot be asked as permission prompts, if it cannot.
pub fn obstacle(q: &Question) -> Option<&'static str> {
    q.items
        .iter()
        .any(|item| item.options.is_empty())
        .then_some("a question without options (free text)")
}

/// The optionId of a list prompt's "Dismiss" option: one that is no option value.
pub fn dismiss_id(item: &Item) -> String {
    let mut id = "dismiss".to_owned();
    while item.options.iter().any(|c| c.value == id) {
        id.push('_');
    }
    id
}

/// The `session/update` that shows prompt `at` of `q` (a `tool_call` when `announce`, else
/// a `tool_call_update` of a tool call the client has), and the `session/request_permission`
/// params that ask it. `None` when `q` cannot be asked so, or `at` is no prompt of it.
pub fn to_permission(
    q: &Question,
    at: At,
    tool_call_id: &str,
    announce: bool,
) -> Option<(Value, Value)> {
    if obstacle(q).is_some() {
        return None;
    }
    let item = q.items.get(at.item)?;
    let count = match q.items.len() {
        1 => String::new(),
        n => format!("({}/{n}) ", at.item + 1),
    };
    // The question itself first: some clients show only the content of the tool call they
    // were announced, never the prompt's title (agentic.nvim, docs/CLIENTS.md).
    let mut text = match &item.header {
        Some(h) => format!("{h}: {}\n", item.prompt),
        None => format!("{}\n", item.prompt),
    };
    let (title, options) = match at.option {
        None => {
            for c in &item.options {
                text.push_str("- ");
                text.push_str(&c.label);
                if let Some(d) = &c.description {
                    text.push_str(": ");
                    text.push_str(d);
                }
                text.push('\n');
            }
            let mut options: Vec<Value> = item
                .options
                .iter()
                .map(|c| json!({ "optionId": c.value, "name": c.label, "kind": "allow_once" }))
                .collect();
            options.push(
                json!({ "optionId": dismiss_id(item), "name": "Dismiss", "kind": "reject_once" }),
            );
            (format!("{count}{}", item.prompt), options)
        }
        Some(o) => {
            let choice = item.options.get(o)?;
            let n = item.options.len();
            let last = o + 1 == n;
            for (i, c) in item.options.iter().enumerate() {
                text.push_str(if i == o { "→ " } else { "- " });
                text.push_str(&c.label);
                if let Some(d) = &c.description {
                    text.push_str(": ");
                    text.push_str(d);
                }
                text.push('\n');
            }
            let (title, yes, no, hint) = if item.multi_select {
                (
                    format!(
                        "{count}{} → include {}? (option {} of {n}, choose any)",
                        item.prompt,
                        choice.label,
                        o + 1
                    ),
                    "Yes, include it",
                    "No",
                    "Yes or No for each option in turn; choosing none skips the question.",
                )
            } else {
                (
                    format!(
                        "{count}{} → {} (option {} of {n})",
                        item.prompt,
                        choice.label,
                        o + 1
                    ),
                    "Yes, this one",
                    if last {
                        "No, skip the question"
                    } else {
                        "No, next option"
                    },
                    if last {
                        "Yes chooses it; No declines the question."
                    } else {
                        "Yes chooses it; No goes on to the next option (No to every option declines the question)."
                    },
                )
            };
            text.push_str(hint);
            let options = vec![
                json!({ "optionId": ALLOW, "name": yes, "kind": "allow_once" }),
                json!({ "optionId": REJECT, "name": no, "kind": "reject_once" }),
            ];
            (title, options)
        }
    };
    let tool_call = json!({
        "sessionId": q.session_id,
        "update": {
            "sessionUpdate": if announce { "tool_call" } else { "tool_call_update" },
            "toolCallId": tool_call_id,
            "title": title,
            "kind": "other",
            "status": "pending",
            "content": [{ "type": "content", "content": { "type": "text", "text": text.trim_end() } }]
        }
    });
    let request = json!({
        "sessionId": q.session_id,
        "toolCall": { "toolCallId": tool_call_id, "title": title, "kind": "other", "status": "pending" },
        "options": options,
        "_meta": { super::META_KEY: { "questionId": q.question_id } }
    });
    Some((tool_call, request))
}

/// What the answer to one prompt says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A list prompt's option value.
    Pick(String),
    /// A yes/no prompt's allow option.
    Yes,
    /// A yes/no prompt's reject option.
    No,
    /// A list prompt's "Dismiss".
    Declined,
    /// The prompt was cancelled: the whole question is.
    Cancelled,
}

/// Reads the client's result for prompt `at` of `q`.
pub fn from_permission(q: &Question, at: At, result: &RawValue) -> Result<(Reply, Extras), String> {
    let (obj, extras) = super::dialect::split(result, &["outcome"])?;
    let outcome = &obj.get("outcome").cloned().unwrap_or(Value::Null);
    let item = q.items.get(at.item).ok_or("question has no such item")?;
    let reply = match outcome.get("outcome").and_then(Value::as_str) {
        Some("cancelled") => Reply::Cancelled,
        Some("selected") => {
            let id = outcome
                .get("optionId")
                .and_then(Value::as_str)
                .ok_or("outcome.optionId: is required with \"selected\"")?;
            match at.option {
                Some(_) if id == ALLOW => Reply::Yes,
                // Anything but the allow option is a no: some clients send an id of their
                // own choosing for every option that does not start with `allow`
                // (docs/CLIENTS.md).
                Some(_) => Reply::No,
                None if id == dismiss_id(item) => Reply::Declined,
                None if item.options.iter().any(|c| c.value == id) => Reply::Pick(id.to_owned()),
                _ => {
                    return Err(format!(
                        "outcome.optionId: {id:?} is not one of the options offered"
                    ))
                }
            }
        }
        _ => {
            return Err(
                "outcome: must be {\"outcome\":\"selected\",..} or {\"outcome\":\"cancelled\"}"
                    .into(),
            )
        }
    };
    Ok((reply, extras))
}

/// What comes after a prompt's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Ask this prompt next.
    Ask(At),
    /// The question is over.
    Done(Outcome),
}

/// Moves `q` on after the answer `reply` to prompt `at` in `style`. `collected` holds the
/// answers of the items before `at.item`, and for a multi-select item being asked, the
/// options chosen so far as its last entry.
pub fn advance(
    q: &Question,
    style: Style,
    at: At,
    reply: Reply,
    collected: &mut Vec<Vec<String>>,
) -> Result<Next, String> {
    let item = q.items.get(at.item).ok_or("question has no such item")?;
    let item_done = match (&reply, at.option) {
        (Reply::Cancelled, _) => return Ok(Next::Done(Outcome::Rejected(Reason::Cancelled))),
        (Reply::Declined, _) => return Ok(Next::Done(Outcome::Rejected(Reason::Declined))),
        (Reply::Pick(v), None) => Some(vec![v.clone()]),
        (Reply::Yes | Reply::No, Some(o)) if item.multi_select => {
            if o == 0 {
                collected.truncate(at.item);
                collected.push(Vec::new());
            }
            if reply == Reply::Yes {
                let value = item.options.get(o).ok_or("no such option")?.value.clone();
                collected.last_mut().expect("pushed above").push(value);
            }
            if o + 1 < item.options.len() {
                return Ok(Next::Ask(At {
                    item: at.item,
                    option: Some(o + 1),
                }));
            }
            match collected.pop() {
                Some(chosen) if !chosen.is_empty() => Some(chosen),
                _ => return Ok(Next::Done(Outcome::Rejected(Reason::Declined))),
            }
        }
        (Reply::Yes, Some(o)) => Some(vec![item
            .options
            .get(o)
            .ok_or("no such option")?
            .value
            .clone()]),
        (Reply::No, Some(o)) if o + 1 < item.options.len() => {
            return Ok(Next::Ask(At {
                item: at.item,
                option: Some(o + 1),
            }))
        }
        (Reply::No, Some(_)) => return Ok(Next::Done(Outcome::Rejected(Reason::Declined))),
        (reply, _) => return Err(format!("{reply:?} does not answer this prompt")),
    };
    if let Some(values) = item_done {
        collected.truncate(at.item);
        collected.push(values);
    }
    if at.item + 1 < q.items.len() {
        return Ok(Next::Ask(At::first(q, style, at.item + 1)));
    }
    let answers = Value::Array(
        collected
            .iter()
            .map(|v| Value::Array(v.iter().map(|s| json!(s)).collect()))
            .collect(),
    );
    Ok(Next::Done(Outcome::Answered(check_answers(q, &answers)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::questions::sources::testing::{question as q, raw};

    fn sel(id: &str) -> Box<RawValue> {
        raw(json!({"outcome":{"outcome":"selected","optionId":id}}))
    }

    fn db() -> Question {
        q(
            json!({"sessionId":"s","questionId":"q","prompt":"Which database?",
            "options":[{"value":"sqlite","label":"SQLite","description":"a file"},{"value":"pg","label":"Postgres"}]}),
        )
    }

    /// Runs `q` in `style` answering each prompt with `replies` (option ids); the outcome
    /// and the prompts' titles.
    fn run(q: &Question, style: Style, replies: &[&str]) -> (Outcome, Vec<String>) {
        let mut at = At::first(q, style, 0);
        let mut collected = Vec::new();
        let mut titles = Vec::new();
        for id in replies {
            let (_, req) = to_permission(q, at, "tc", false).expect("a prompt");
            titles.push(req["toolCall"]["title"].as_str().unwrap().to_owned());
            let (reply, _) = from_permission(q, at, &sel(id)).unwrap();
            match advance(q, style, at, reply, &mut collected).unwrap() {
                Next::Ask(next) => at = next,
                Next::Done(o) => return (o, titles),
            }
        }
        panic!("still asking after {replies:?}: {titles:?}");
    }

    #[test]
    fn a_binary_prompt_has_one_allow_and_one_reject_option() {
        let d = db();
        let (update, req) = to_permission(&d, At::first(&d, Style::Binary, 0), "tc", true).unwrap();
        assert_eq!(
            req["options"],
            json!([{"optionId":"allow","name":"Yes, this one","kind":"allow_once"},
                   {"optionId":"reject","name":"No, next option","kind":"reject_once"}])
        );
        assert_eq!(
            req["toolCall"]["title"],
            "Which database? → SQLite (option 1 of 2)"
        );
        assert_eq!(update["update"]["sessionUpdate"], "tool_call");
        assert_eq!(
            update["update"]["content"][0]["content"]["text"],
            "Which database?\n→ SQLite: a file\n- Postgres\nYes chooses it; No goes on to the next option (No to every option declines the question)."
        );
        let (_, last) = to_permission(
            &d,
            At {
                item: 0,
                option: Some(1),
            },
            "tc",
            false,
        )
        .unwrap();
        assert_eq!(last["options"][1]["name"], "No, skip the question");
    }

    #[test]
    fn every_option_of_a_single_select_is_reachable_in_binary() {
        let d = db();
        let sqlite = Outcome::Answered(vec![vec!["sqlite".into()]]);
        assert_eq!(run(&d, Style::Binary, &["allow"]).0, sqlite);
        let (o, titles) = run(&d, Style::Binary, &["reject", "allow"]);
        assert_eq!(o, Outcome::Answered(vec![vec!["pg".into()]]));
        assert_eq!(titles[1], "Which database? → Postgres (option 2 of 2)");
        assert_eq!(
            run(&d, Style::Binary, &["reject", "reject"]).0,
            Outcome::Rejected(Reason::Declined)
        );
        let mut collected = Vec::new();
        let at = At::first(&d, Style::Binary, 0);
        let cancelled = raw(json!({"outcome":{"outcome":"cancelled"}}));
        let (reply, _) = from_permission(&d, at, &cancelled).unwrap();
        assert_eq!(
            advance(&d, Style::Binary, at, reply, &mut collected).unwrap(),
            Next::Done(Outcome::Rejected(Reason::Cancelled))
        );
        // An id that is not the allow option is a no (a client that sends its own id for
        // anything but `allow...`).
        assert_eq!(
            from_permission(&d, at, &sel("dismiss")).unwrap().0,
            Reply::No
        );
    }

    #[test]
    fn a_list_prompt_names_every_option() {
        let d = db();
        let at = At::first(&d, Style::List, 0);
        assert_eq!(at.option, None);
        let (_, req) = to_permission(&d, at, "tc", true).unwrap();
        assert_eq!(
            req["options"],
            json!([{"optionId":"sqlite","name":"SQLite","kind":"allow_once"},
                   {"optionId":"pg","name":"Postgres","kind":"allow_once"},
                   {"optionId":"dismiss","name":"Dismiss","kind":"reject_once"}])
        );
        assert_eq!(
            run(&d, Style::List, &["pg"]).0,
            Outcome::Answered(vec![vec!["pg".into()]])
        );
        assert_eq!(
            run(&d, Style::List, &["dismiss"]).0,
            Outcome::Rejected(Reason::Declined)
        );
        assert!(from_permission(&d, at, &sel("allow")).is_err());
        let clash =
            q(json!({"sessionId":"s","questionId":"q","prompt":"p","options":["dismiss","x"]}));
        assert_eq!(dismiss_id(&clash.items[0]), "dismiss_");
    }

    #[test]
    fn multi_select_takes_a_yes_or_no_per_option_in_either_style() {
        let m = q(json!({"sessionId":"s","questionId":"q","questions":[
            {"question":"Which DB?","options":["pg","sqlite"]},
            {"question":"Features?","options":["auth","billing","search"],"multiple":true}]}));
        for style in [Style::List, Style::Binary] {
            let first_db = if style == Style::List {
                "sqlite"
            } else {
                "reject"
            };
            let mut replies = vec![first_db];
            if style == Style::Binary {
                replies.push("allow");
            }
            replies.extend(["allow", "reject", "allow"]);
            let (o, titles) = run(&m, style, &replies);
            assert_eq!(
                o,
                Outcome::Answered(vec![
                    vec!["sqlite".into()],
                    vec!["auth".into(), "search".into()]
                ]),
                "{style:?}"
            );
            assert_eq!(
                titles.last().unwrap(),
                "(2/2) Features? → include search? (option 3 of 3, choose any)"
            );
        }
        let declined = run(&m, Style::List, &["pg", "reject", "reject", "reject"]).0;
        assert_eq!(declined, Outcome::Rejected(Reason::Declined));
    }

    #[test]
    fn free_text_only_items_cannot_be_prompted() {
        let f = q(json!({"sessionId":"s","questionId":"q","prompt":"notes?"}));
        assert!(obstacle(&f).is_some());
        assert!(to_permission(&f, At::default(), "t", true).is_none());
        // Options with free text allowed: asked, the user just cannot type.
        let o = q(
            json!({"sessionId":"s","questionId":"q","prompt":"p","options":["a"],"allowFreeText":true}),
        );
        assert!(obstacle(&o).is_none());
    }
}
