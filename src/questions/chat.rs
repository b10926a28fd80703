//! What the bridge writes into the client's chat about a question, through what every
//! client renders: `session/update` tool calls and message chunks (docs/CLIENTS.md,
//! sections 2 and 3). No client handles `$/cancel_request`, and some break on it, so this is
//! how the client learns that a question it shows is over, that one it cannot show waits
//! elsewhere, and that a press on a prompt that is already over had no effect.
//!
//! Pure functions building `session/update` params; the router decides when to send them.

use serde_json::{json, Value};

use super::answer::By;
use super::answer::{Outcome, Reason};
use super::dialect::message;
use super::model::Question;

/// The labels of an answer, or what a non-answer was.
pub fn answer_text(q: &Question, outcome: &Outcome) -> String {
    match outcome {
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
            labels.join(", ")
        }
        Outcome::Rejected(Reason::Declined) => "declined".to_owned(),
        Outcome::Rejected(r) => format!("no answer ({})", r.as_str()),
    }
}

/// Where an answer came from, for a sentence ("Answered on the Questions page or CLI").
fn place(by: By) -> &'static str {
    match by {
        By::Control => " on the Questions page or CLI",
        _ => "",
    }
}

/// What a done update does with the tool call's content.
#[derive(Debug, Clone, Copy)]
pub enum Content<'a> {
    /// It becomes the sentence that says how the question ended.
    Replace,
    /// The client still shows a prompt below the tool call: the sentence takes the place of
    /// the first line of `shown` (what the tool call showed), and the line count stays, since
    /// a client that removes its prompt by the rows it drew it at (agentic.nvim) would
    /// otherwise remove other lines (docs/CLIENTS.md).
    KeepLines(&'a str),
    /// Left as it is (a tool call of the agent's, whose content the bridge did not write): the
    /// sentence goes in the title, and a note in the chat.
    Unchanged,
}

/// The title of a done tool call: the question and its answer, short, with no colon (some
/// clients show a title up to its first colon, and cut it at 60 characters).
fn done_title(q: &Question, outcome: &Outcome) -> String {
    let question = match q.items.as_slice() {
        [one] => one.prompt.clone(),
        items => format!("{} questions", items.len()),
    };
    let title = format!("{question} → {}", answer_text(q, outcome)).replace(':', " ");
    match title.char_indices().nth(59) {
        Some((cut, _)) => format!("{}…", &title[..cut]),
        None => title,
    }
}

/// The `tool_call_update` that marks the tool call showing `q` as over: what was answered
/// and where (completed), or why it ended unanswered (failed).
pub fn done(
    q: &Question,
    tool_call_id: &str,
    outcome: &Outcome,
    by: By,
    content: Content<'_>,
) -> Value {
    let (status, text) = match outcome {
        Outcome::Answered(_) => (
            "completed",
            format!("Answered{}: {}", place(by), answer_text(q, outcome)),
        ),
        Outcome::Rejected(Reason::Declined) if by == By::Client => {
            ("completed", "Dismissed".to_owned())
        }
        Outcome::Rejected(Reason::Declined) => ("completed", format!("Declined{}", place(by))),
        Outcome::Rejected(Reason::Timeout) => (
            "failed",
            "No answer in time: the question expired".to_owned(),
        ),
        Outcome::Rejected(r) => ("failed", format!("Withdrawn ({})", r.as_str())),
    };
    let mut update = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": tool_call_id,
        "title": done_title(q, outcome),
        "status": status,
    });
    let text = match content {
        Content::Replace => Some(text),
        Content::KeepLines(shown) => {
            // The options stay listed (without the candidate's mark); any other line says
            // the prompt is over.
            let rest = shown.lines().skip(1).map(|l| match l.strip_prefix("→ ") {
                Some(option) => format!("- {option}"),
                None if l.starts_with("- ") => l.to_owned(),
                None => "(this prompt is over)".to_owned(),
            });
            Some(
                std::iter::once(text)
                    .chain(rest)
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        }
        Content::Unchanged => None,
    };
    if let Some(text) = text {
        update["content"] =
            json!([{ "type": "content", "content": { "type": "text", "text": text } }]);
    }
    json!({ "sessionId": q.session_id, "update": update })
}

/// The tool call that tells the user a question waits for them elsewhere (the client
/// cannot show it): a new `tool_call` when `announce`, else an update of the agent's own
/// tool call. `page` is the control server's page (without its token: see
/// docs/SECURITY.md).
pub fn waiting(q: &Question, tool_call_id: &str, announce: bool, page: Option<&str>) -> Value {
    let text = waiting_text(q, page);
    json!({
        "sessionId": q.session_id,
        "update": {
            "sessionUpdate": if announce { "tool_call" } else { "tool_call_update" },
            "toolCallId": tool_call_id,
            "title": format!("Waiting for your answer: {}", message(q)),
            "kind": "other",
            "status": "pending",
            "content": [{ "type": "content", "content": { "type": "text", "text": text } }]
        }
    })
}

/// What the chat says of a question that waits outside the client: what it is and where to
/// answer it. Two lines: the pointer's content, and (on one line) the note that goes with it,
/// for clients that do not show a pending tool call (codecompanion.nvim).
pub fn waiting_text(q: &Question, page: Option<&str>) -> String {
    let mut text = format!(
        "The agent is waiting for your answer to: {}\nThis editor cannot show this question, so it waits outside it: ",
        message(q)
    );
    match page {
        Some(url) => text.push_str(&format!(
            "answer it on the Questions page at {url} (its token is on the bridge's stderr), \
             with `acp-question-bridge questions answer`, or in `acp-question-bridge inbox`."
        )),
        None => text.push_str(
            "answer it with `acp-question-bridge questions answer` or in `acp-question-bridge inbox`.",
        ),
    }
    text
}

/// A line of text in the chat (`agent_message_chunk`) of `session`.
pub fn note(session: &str, text: &str) -> Value {
    json!({
        "sessionId": session,
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": { "type": "text", "text": format!("\n[acp-question-bridge] {text}\n") }
        }
    })
}

/// How `q` ended, after "was": "answered on ...: SQLite", "declined", "ended (timeout)".
fn ending(q: &Question, outcome: &Outcome, by: By) -> String {
    match outcome {
        Outcome::Answered(_) => format!("answered{}: {}", place(by), answer_text(q, outcome)),
        Outcome::Rejected(Reason::Declined) => format!("declined{}", place(by)),
        Outcome::Rejected(r) => format!("withdrawn ({})", r.as_str()),
    }
}

/// A sentence that says how `q` ended, for a client shown it without a tool call.
pub fn over(q: &Question, outcome: &Outcome, by: By) -> String {
    format!(
        "The question \"{}\" was {}.",
        message(q),
        ending(q, outcome, by)
    )
}

/// What a press on a prompt that is already over is told.
pub fn stale(q: &Question, outcome: &Outcome, by: By) -> String {
    format!(
        "The question \"{}\" was already {}. Your choice in this prompt was not used.",
        message(q),
        ending(q, outcome, by)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::questions::sources::testing::question;

    fn db() -> Question {
        question(
            json!({"sessionId":"s","questionId":"q","prompt":"Which database?",
            "options":[{"value":"sqlite","label":"SQLite"},{"value":"pg","label":"Postgres"}]}),
        )
    }

    fn text(update: &Value) -> &str {
        update["update"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
    }

    #[test]
    fn done_says_what_was_answered_and_where() {
        let q = db();
        let pg = Outcome::Answered(vec![vec!["pg".into()]]);
        let d = done(&q, "tc", &pg, By::Control, Content::Replace);
        assert_eq!(d["update"]["status"], "completed");
        assert_eq!(d["update"]["title"], "Which database? → Postgres");
        assert_eq!(text(&d), "Answered on the Questions page or CLI: Postgres");
        let mine = done(&q, "tc", &pg, By::Client, Content::Replace);
        assert_eq!(text(&mine), "Answered: Postgres");
        let expired = done(
            &q,
            "tc",
            &Outcome::Rejected(Reason::Timeout),
            By::Timeout,
            Content::Replace,
        );
        assert_eq!(expired["update"]["status"], "failed");
        // A prompt still on screen below: as many lines as before.
        let kept = done(
            &q,
            "tc",
            &pg,
            By::Control,
            Content::KeepLines("Q?\n→ a\n- b\nYes chooses it"),
        );
        assert_eq!(
            text(&kept),
            "Answered on the Questions page or CLI: Postgres\n- a\n- b\n(this prompt is over)"
        );
        let theirs = done(&q, "tc", &pg, By::Control, Content::Unchanged);
        assert!(theirs["update"].get("content").is_none());
        // Long titles are cut, colons never reach the client.
        let long = question(
            json!({"sessionId":"s","questionId":"q","prompt":"Pick: one of these fine databases for the service we build?",
            "options":[{"value":"a","label":"A"}]}),
        );
        let t = done(
            &long,
            "tc",
            &Outcome::Answered(vec![vec!["a".into()]]),
            By::Client,
            Content::Replace,
        );
        let title = t["update"]["title"].as_str().unwrap();
        assert_eq!(title.chars().count(), 60, "{title}");
        assert!(!title.contains(':'), "{title}");
        assert_eq!(
            stale(&q, &pg, By::Control),
            "The question \"Which database?\" was already answered on the Questions page or CLI: Postgres. Your choice in this prompt was not used."
        );
    }

    #[test]
    fn waiting_points_to_the_page_without_its_token() {
        let w = waiting(&db(), "question-1", true, Some("http://127.0.0.1:4000/"));
        assert_eq!(w["update"]["sessionUpdate"], "tool_call");
        assert_eq!(w["update"]["status"], "pending");
        assert_eq!(
            w["update"]["title"],
            "Waiting for your answer: Which database?"
        );
        assert!(text(&w).contains("http://127.0.0.1:4000/ "), "{}", text(&w));
        assert!(!text(&w).contains('#'));
    }
}
