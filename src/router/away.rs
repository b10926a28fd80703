//! `--linger`: each session's conversation is kept for the next client that loads it
//! ([`super::stores::held`]): the agent's updates (found without parsing a line in the
//! usual layout; those of a session no client has are kept instead of sent), the user's
//! prompts, and the bridge's notes of what happened while no client had it (a turn that
//! ended, a question answered elsewhere, the approval policy's decisions).

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
    /// A run of the agent's lines (`--linger`; `data[start..end]`, each with its `\n`):
    /// every update is kept in its session's conversation, and one of a session no client
    /// has is kept instead of sent; the rest goes to the client as it came, in runs.
    pub(super) fn forward_agent_run(
        &mut self,
        data: &Bytes,
        start: usize,
        end: usize,
        out: &mut Outbox,
    ) {
        let (mut at, mut from, mut n) = (start, start, 0u64);
        while at < end {
            let stop = memchr::memchr(b'\n', &data[at..end]).map_or(end, |i| at + i);
            let next = (stop + 1).min(end);
            if self.kept_instead(&data[at..stop]) {
                self.send_run(data, from, at, n, out);
                (from, n) = (next, 0);
            } else {
                n += 1;
            }
            at = next;
        }
        self.send_run(data, from, end, n, out);
    }

    /// `data[from..to]`, `n` whole lines, to the client as one slice.
    fn send_run(&mut self, data: &Bytes, from: usize, to: usize, n: u64, out: &mut Outbox) {
        if n > 0 {
            self.counters.forwarded_to_client += n;
            out.to_client.push_back(Out::Run(data.slice(from..to)));
        }
    }

    /// Keeps `line` (one of the agent's, with no newline) in its session's conversation when
    /// it is an update; whether it is one of a session no client has now: then it is kept
    /// instead of sent, for the next client that takes the session.
    pub(super) fn kept_instead(&mut self, line: &[u8]) -> bool {
        let Some(session) = update_session(line) else {
            return false;
        };
        if !self.held.holds(&session) && !self.held.is_loading(&session) {
            // Not a session the agent began or loaded through the bridge: the client's, as
            // without `--linger` (nothing is kept, nothing held back).
            return false;
        }
        // (The agent's replay of a session the client is loading is the client's.)
        let seen = self.held.client_has(&session) || self.held.is_loading(&session);
        self.held.keep_update(&session, line, seen, false);
        !seen
    }

    /// Keeps the user's prompt in `session`'s conversation (`--linger`), as the
    /// `user_message_chunk` updates a load replays: one per content block of `params`.
    pub(in crate::router) fn keep_prompt(&mut self, session: &str, params: &str) {
        // (Only in a session the agent began or loaded: a prompt naming another is the
        // agent's to refuse, and makes no session.)
        if !self.cfg.linger || !self.held.holds(session) {
            return;
        }
        #[derive(serde::Deserialize)]
        struct Prompt<'a> {
            #[serde(borrow)]
            prompt: Vec<&'a serde_json::value::RawValue>,
        }
        let Ok(p) = serde_json::from_str::<Prompt>(params) else {
            return;
        };
        let session_json = serde_json::Value::from(session).to_string();
        for block in p.prompt {
            let line = format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":{session_json},"update":{{"sessionUpdate":"user_message_chunk","content":{}}}}}}}"#,
                block.get()
            );
            let seen = self.held.client_has(session);
            self.held.keep_update(session, line.as_bytes(), seen, false);
        }
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
            let line = jsonrpc::notification(crate::methods::SESSION_UPDATE, &note);
            if self.cfg.linger {
                self.held
                    .keep_update(session, line.trim_ascii_end(), true, true);
            }
            self.notify_client(line, out);
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
        self.held
            .keep_update(session, line.trim_ascii_end(), false, true);
    }
}
