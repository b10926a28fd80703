//! `--linger`: what the agent says in a session no client has is kept for the next client
//! that takes it ([`super::stores::held`]): its updates (found without parsing a line in the
//! usual layout), and the bridge's notes of what happened meanwhile (a turn that ended, a
//! question answered elsewhere, the approval policy's decisions).

use bytes::Bytes;

use super::{Out, Outbox, Router};
use crate::jsonrpc;
use crate::questions::chat;

/// The session of a `session/update` line, if it is one: found without parsing the line in
/// the usual layout (`"params":{"sessionId":"..."` with no escapes), else parsed.
pub(super) fn update_session(line: &[u8]) -> Option<String> {
    use memchr::memmem;
    memmem::find(line, crate::methods::SESSION_UPDATE.as_bytes())?;
    const USUAL: &[u8] = br#""method":"session/update","params":{"sessionId":""#;
    if let Some(at) = memmem::find(line, USUAL) {
        let rest = &line[at + USUAL.len()..];
        if let Some(end) = memchr::memchr(b'"', rest) {
            let id = &rest[..end];
            if !id.contains(&b'\\') {
                return std::str::from_utf8(id).ok().map(str::to_owned);
            }
        }
    }
    #[derive(serde::Deserialize)]
    struct Update<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "sessionId", borrow)]
        session_id: Option<std::borrow::Cow<'a, str>>,
    }
    let u = serde_json::from_slice::<Update>(line).ok()?;
    if u.method.as_deref() != Some(crate::methods::SESSION_UPDATE) {
        return None;
    }
    u.params?.session_id.map(std::borrow::Cow::into_owned)
}

impl Router {
    /// A run of the agent's lines while some session has no client (`--linger`): an update
    /// of such a session is kept, not sent; every other line goes to the client as it came.
    pub(super) fn forward_agent_run(
        &mut self,
        data: &Bytes,
        start: usize,
        end: usize,
        out: &mut Outbox,
    ) {
        let mut at = start;
        while at < end {
            let stop = memchr::memchr(b'\n', &data[at..end]).map_or(end, |i| at + i);
            let line = &data[at..stop];
            if !self.kept_instead(line) {
                self.counters.forwarded_to_client += 1;
                out.to_client.push_back(Out::Line(data.slice(at..stop)));
            }
            at = stop + 1;
        }
    }

    /// Whether `line` (one of the agent's, with no newline) is an update of a session no
    /// client has now: then it is kept for the next client that takes the session.
    pub(super) fn kept_instead(&mut self, line: &[u8]) -> bool {
        let Some(session) = update_session(line) else {
            return false;
        };
        if self.held.client_has(&session) || self.held.is_loading(&session) {
            // (The agent's replay of a session the client is loading is the client's.)
            return false;
        }
        self.held.keep_update(&session, line);
        true
    }

    /// How a question ended while no client had its session, as a chat note for the next.
    pub(in crate::router) fn away_outcome(
        &mut self,
        p: &crate::questions::open::Open,
        outcome: &crate::questions::answer::Outcome,
        by: crate::questions::answer::By,
    ) {
        use crate::questions::answer::{By, Outcome};
        let what = p
            .question
            .items
            .first()
            .map(|i| i.prompt.chars().take(120).collect::<String>())
            .unwrap_or_default();
        let where_ = match (&p.device, by) {
            (Some(device), _) => format!("on {device}"),
            (None, By::Control) => "on the Questions page or the command line".to_owned(),
            (None, By::Bridge) => "by the approval policy".to_owned(),
            (None, other) => format!("({})", other.as_str()),
        };
        let said = match outcome {
            Outcome::Rejected(reason) => format!(
                "While no editor was attached, \"{what}\" ended {where_}: {}.",
                reason.as_str()
            ),
            _ => format!("While no editor was attached, \"{what}\" was answered {where_}."),
        };
        self.away_note(&p.question.session_id.clone(), &said);
    }

    /// A chat note in `session`: to the client when it has the session, else kept for the
    /// next that takes it (`--linger`).
    pub(in crate::router) fn session_note(&mut self, session: &str, text: &str, out: &mut Outbox) {
        if self.client_sees(session) {
            let note = chat::note(session, text);
            self.notify_client(
                jsonrpc::notification(crate::methods::SESSION_UPDATE, &note),
                out,
            );
        } else {
            self.away_note(session, text);
        }
    }

    /// A chat note for a client that loads `session`: the questions that wait in it, and
    /// where else to answer them (a client may not show a request that comes outside its
    /// own turn). `None` when none waits.
    pub(in crate::router) fn waiting_note(&self, session: &str) -> Option<Bytes> {
        let asked: Vec<String> = self
            .questions
            .iter()
            .filter(|o| o.question.session_id == session)
            .map(|o| {
                let what: String = crate::questions::dialect::message(&o.question)
                    .chars()
                    .take(120)
                    .collect();
                format!("\"{what}\"")
            })
            .collect();
        if asked.is_empty() {
            return None;
        }
        let many = asked.len() > 1;
        let place = match &self.cfg.page_url {
            Some(url) => format!("on this bridge's Questions page ({url}),"),
            None => "".to_owned(),
        };
        let said = format!(
            "{} {} for you in this session: {}. {} asked again below; if your editor does not show {}, answer {} with `acp-question-bridge inbox` (every bridge's questions, on one page), {place} or with `acp-question-bridge questions`.",
            asked.len(),
            if many { "questions wait" } else { "question waits" },
            asked.join(", "),
            if many { "They are" } else { "It is" },
            if many { "them" } else { "it" },
            if many { "them" } else { "it" },
        )
        .replace("  ", " ");
        Some(jsonrpc::notification(
            crate::methods::SESSION_UPDATE,
            &chat::note(session, &said),
        ))
    }

    /// A chat line kept in `session`'s updates (replayed to the next client that loads it).
    pub(in crate::router) fn away_note(&mut self, session: &str, text: &str) {
        let line =
            jsonrpc::notification(crate::methods::SESSION_UPDATE, &chat::note(session, text));
        self.held.keep_update(session, line.trim_ascii_end());
    }
}
