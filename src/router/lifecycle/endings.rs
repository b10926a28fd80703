//! Every way a question ends (answered, cancelled, timed out, withdrawn, refused): the
//! agent's one reply, and what the client is sent about the request it shows.

use std::time::Instant;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::render;
use crate::envelope::RequestId;
use crate::events::By;
use crate::jsonrpc::{self, code};
use crate::questions::answer::{Extras, Outcome, Reason};
use crate::questions::open::{Delivery, Open, Pending, Who};
use crate::questions::prompts::{self};
use crate::questions::sources::Reply;
use crate::questions::{chat, Dialect};
use crate::router::{Outbox, Router};

impl Router {
    /// Tells the client a question is over. The tool call that shows it (a permission
    /// prompt's, the pointer of a question waiting elsewhere, or, when it is withdrawn, the
    /// agent's own) is marked done with what was answered and where. When the question is
    /// `withdraw`n while the client still shows it (answered elsewhere, expired, cancelled),
    /// a later press there is told it had no effect; the client gets `$/cancel_request` only
    /// when it is known to handle it, and a question shown without a tool call gets a note
    /// in the chat instead.
    pub(in crate::router) fn close_at_client(
        &mut self,
        p: &mut Open,
        outcome: &Outcome,
        by: By,
        withdraw: bool,
        out: &mut Outbox,
    ) {
        self.joined_over(p, outcome, by, out);
        if !self.client_sees(&p.question.session_id) {
            // `--linger`: no client has its session now; the next one is told by the replay.
            return;
        }
        let attached = p.attached().clone();
        self.tell_over(Who::Attached, p, &attached, outcome, by, withdraw, out);
    }

    /// Tells client `who`, shown `p` as `d` says, that it is over ([`closing`]): one way
    /// for every client. A later press on a prompt it still shows (`withdraw`) is told it
    /// had no effect.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::router) fn tell_over(
        &mut self,
        who: Who,
        p: &Open,
        d: &Delivery,
        outcome: &Outcome,
        by: By,
        withdraw: bool,
        out: &mut Outbox,
    ) {
        let Some(view) = self.clients.view(who) else {
            return;
        };
        let told = closing(view, p, d, outcome, by, withdraw);
        let session = &p.question.session_id;
        if let Some(note) = told.stale {
            // Kept for a while (the attached client's last 4,096, a joined one's last
            // 256): a few hundred bytes each.
            match who {
                Who::Attached => self.ledger.withdrawn(&d.client_id, session, note),
                Who::Joined(c) => self.clients.ended(c, d.client_id.clone(), session, note),
            }
        }
        let lines = told
            .lines
            .into_iter()
            .map(render::Line::Notification)
            .collect();
        self.send_to(who, lines, out);
    }

    /// Sends the agent its one response for `p`.
    pub(in crate::router) fn finish(
        &mut self,
        p: &mut Open,
        outcome: Outcome,
        extras: &Extras,
        by: By,
        out: &mut Outbox,
    ) {
        self.joined_over(p, &outcome, by, out);
        if self.cfg.events {
            self.resolved(p, by, outcome.to_event(), out);
        }
        self.count_outcome(p, Some(&outcome), by);
        if self.cfg.linger && !self.client_sees(&p.question.session_id) {
            self.away_outcome(p, &outcome, by);
        }
        match p.origin.reply(&p.question, &outcome, extras) {
            Reply::Result(result) => {
                tracing::trace!(%result, "question result");
                out.agent(jsonrpc::result_text(&p.agent_id, &result));
            }
            Reply::Error { code, message } => {
                out.agent(jsonrpc::error(Some(&p.agent_id), code, &message, None))
            }
        }
    }

    /// Counts and logs how `p` ended (`None`: a result the bridge could not read).
    pub(super) fn count_outcome(&mut self, p: &Pending, outcome: Option<&Outcome>, by: By) {
        let reason = match outcome {
            Some(Outcome::Rejected(r)) => {
                self.counters.questions_rejected += 1;
                Some(r.as_str())
            }
            _ => {
                self.counters.questions_answered += 1;
                None
            }
        };
        tracing::info!(
            session_id = ?p.question.session_id,
            question_id = ?p.question.question_id,
            source = p.origin.name(),
            answered = reason.is_none(),
            reason,
            by = by.as_str(),
            "question resolved"
        );
    }

    /// Ends `p` with a bridge-made rejection, closing it at the client when asked.
    pub(super) fn end(
        &mut self,
        p: &mut Open,
        reason: Reason,
        by: By,
        withdraw: bool,
        out: &mut Outbox,
    ) {
        let outcome = Outcome::Rejected(reason);
        if withdraw {
            self.close_at_client(p, &outcome, by, true, out);
        }
        self.finish(p, outcome, &Vec::new(), by, out);
    }

    /// `session/cancel`: the session's questions are rejected (`cancelled`) and the client
    /// is told to close them.
    pub(in crate::router) fn cancel_session_questions(&mut self, session: &str, out: &mut Outbox) {
        for mut p in self.questions.take_session(session) {
            self.end(&mut p, Reason::Cancelled, By::Cancel, true, out);
        }
        let of_session = |p: &Pending| p.question.session_id == session;
        self.end_deciding(of_session, Some(Reason::Cancelled), By::Cancel, out);
    }

    /// The agent's `$/cancel_request`: when it names a pending question, the client is told,
    /// the agent gets `-32800`, and true is returned.
    pub(in crate::router) fn on_agent_cancel_request(
        &mut self,
        params: Option<&str>,
        line: &Bytes,
        out: &mut Outbox,
    ) -> bool {
        let Some(rid) = cancelled_request_id(params) else {
            return false;
        };
        let Some(mut p) = self.questions.take(&rid) else {
            return self.cancel_deciding(&rid, out);
        };
        tracing::info!(question_id = ?p.question.question_id, "agent cancelled its question");
        // (`--linger`: a question the client that has its session is not showing, because
        // the one that showed it left, is ended here, as one held for the control server.)
        let at_client = !p.attached().held && self.client_sees(&p.question.session_id);
        if at_client && p.attached().dialect == Dialect::Native {
            // The agent's own request, which the client shows as it was sent: the
            // cancellation is between the two (the client still answers the request, with
            // -32800 or a result), and the bridge steps back to tracking it as a request.
            self.counters.forwarded_to_client += 1;
            out.to_client
                .push_back(crate::router::Out::Line(line.clone()));
            // The clients that joined its session are told, as of any other ending.
            self.joined_over(
                &mut p,
                &Outcome::Rejected(Reason::Cancelled),
                By::Cancel,
                out,
            );
            self.resolved(
                &p,
                By::Cancel,
                json!({ "status": "rejected", "reason": "cancelled" }),
                out,
            );
            self.track_shown(&p);
            return true;
        }
        if at_client && p.attached().client_id == p.agent_id {
            self.counters.forwarded_to_client += 1;
            out.to_client
                .push_back(crate::router::Out::Line(line.clone()));
            let cancelled = Outcome::Rejected(Reason::Cancelled);
            self.close_at_client(&mut p, &cancelled, By::Cancel, false, out);
        } else {
            let cancelled = Outcome::Rejected(Reason::Cancelled);
            self.close_at_client(&mut p, &cancelled, By::Cancel, true, out);
        }
        self.resolved(
            &p,
            By::Cancel,
            json!({ "status": "rejected", "reason": "cancelled" }),
            out,
        );
        out.agent(jsonrpc::error(
            Some(&p.agent_id),
            code::REQUEST_CANCELLED,
            "Request cancelled",
            None,
        ));
        true
    }

    /// A request the client shows as the agent sent it, no longer a question: tracked like
    /// any request the client has to answer.
    pub(super) fn track_shown(&mut self, p: &Pending) {
        let method = p.origin.method();
        let session = p.question.session_id.as_str();
        self.requests
            .shown(p.agent_id.clone(), method, session, p.created);
    }

    /// Questions past their deadline: rejected (`timeout`), and the client closes them.
    pub(in crate::router) fn expire_questions(&mut self, now: Instant, out: &mut Outbox) {
        for mut p in self.questions.take_due(now) {
            self.end(&mut p, Reason::Timeout, By::Timeout, true, out);
        }
    }

    /// The client is gone: every question is rejected (`client_disconnected`).
    pub(in crate::router) fn reject_all_questions(&mut self, out: &mut Outbox) {
        for mut p in self.questions.take_all() {
            self.end(
                &mut p,
                Reason::ClientDisconnected,
                By::Disconnect,
                false,
                out,
            );
        }
        let reason = Some(Reason::ClientDisconnected);
        self.end_deciding(|_| true, reason, By::Disconnect, out);
    }

    /// The agent is gone: the client closes every question it still shows.
    pub(in crate::router) fn withdraw_all_questions(&mut self, out: &mut Outbox) {
        self.end_deciding(|_| true, None, By::Disconnect, out);
        for mut p in self.questions.take_all() {
            let cancelled = Outcome::Rejected(Reason::Cancelled);
            self.close_at_client(&mut p, &cancelled, By::Disconnect, true, out);
            self.resolved(&p, By::Disconnect, json!({ "status": "withdrawn" }), out);
        }
    }
}

/// The `requestId` a `$/cancel_request` names (`params` is its JSON text).
fn cancelled_request_id(params: Option<&str>) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct P<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: Option<&'a RawValue>,
    }
    params
        .and_then(|p| serde_json::from_str::<P<'_>>(p).ok())
        .and_then(|p| p.request_id)
        .map(RequestId::from_raw)
}

/// What a client is sent when a question it was shown in `d` is over, and what a later
/// press on its prompt is told (when it was `withdraw`n while shown).
pub(in crate::router) struct Closing {
    pub lines: Vec<Bytes>,
    pub stale: Option<String>,
}

/// How a client (`view`) is told that `p`, shown in `d`, is over: the tool call that shows it
/// (a permission prompt's, the pointer of a question waiting elsewhere, or, when it is
/// withdrawn, the agent's own) is marked done with what was answered and where; the
/// client gets `$/cancel_request` only when it is known to handle it, and a question shown
/// without a tool call gets a note in the chat instead.
fn closing(
    view: &crate::router::client::ClientView,
    p: &Pending,
    d: &crate::questions::open::Delivery,
    outcome: &Outcome,
    by: By,
    withdraw: bool,
) -> Closing {
    let mut lines = Vec::new();
    let update = |v: &serde_json::Value| jsonrpc::notification(crate::methods::SESSION_UPDATE, v);
    let shown = withdraw && !d.held;
    let cancel_request = shown && view.sends_cancel_requests();
    if cancel_request {
        lines.push(jsonrpc::cancel_request(&d.client_id));
    }
    let stale = shown.then(|| chat::stale(&p.question, outcome, by));
    let tool_call = match (&d.tool_call_id, &p.agent_tool_call) {
        (Some(tc), _) => Some(tc),
        (None, Some(tc)) if shown => Some(tc),
        _ => None,
    };
    let over = || {
        chat::note(
            &p.question.session_id,
            &chat::over(&p.question, outcome, by),
        )
    };
    let Some(tc) = tool_call else {
        if shown && !cancel_request {
            lines.push(update(&over()));
        }
        return Closing { lines, stale };
    };
    // While the client still shows a prompt of the bridge's below the tool call, its
    // content keeps its line count; a tool call whose content is the agent's is left as
    // it is, and the chat gets the sentence.
    let prompt = match (shown, d.dialect) {
        (true, Dialect::Permission) => {
            prompts::to_permission(&p.question, d.at, tc, false).map(|(update, _)| update)
        }
        _ => None,
    };
    let prompt_text = prompt
        .as_ref()
        .and_then(|u| u["update"]["content"][0]["content"]["text"].as_str());
    let content = match (shown, prompt_text) {
        (false, _) => chat::Content::Replace,
        (true, Some(text)) => chat::Content::KeepLines(text),
        (true, None) => chat::Content::Unchanged,
    };
    // A tool approval's tool call is the tool's own: the tool has not run yet, and the
    // agent reports its status; the chat alone is told.
    if !(matches!(content, chat::Content::Unchanged) && p.origin.approves_a_tool()) {
        lines.push(update(&chat::done(&p.question, tc, outcome, by, content)));
    }
    if let chat::Content::Unchanged = content {
        lines.push(update(&over()));
    }
    Closing { lines, stale }
}
