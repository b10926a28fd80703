//! When a peer is gone: the client's EOF (every question rejected, the agent's requests
//! answered on the client's behalf, then the agent's stdin closed) and the agent's exit
//! (every client request waiting on it gets one error naming the exit, every question is
//! withdrawn at the client).

use std::time::Instant;

use serde_json::json;

use super::{dispatch, Out, Outbox, Router, Side};
use crate::envelope::RequestId;
use crate::jsonrpc::{self, code};

/// How the agent ended, as the shell observed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentExit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stderr_tail: String,
}

impl AgentExit {
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("agent exited with code {c}"),
            (None, Some(s)) => format!("agent was killed by signal {s}"),
            (None, None) => "agent exited".to_owned(),
        }
    }
}

impl Router {
    /// The client closed its output: every pending question is rejected with
    /// `client_disconnected`, then the agent's stdin is closed after what is queued.
    pub(in crate::router) fn on_client_eof(&mut self, _now: Instant, out: &mut Outbox) {
        self.reject_all_questions(out);
        self.answer_agent_requests(None, false, out);
        self.held.agent_requests_ended();
        out.to_agent.push_back(Out::Close);
    }

    /// Answers the agent's requests still waiting on the client, on its behalf. For a
    /// `session/cancel` of `session` (`notify_client`): its permission requests get
    /// `{"outcome":{"outcome":"cancelled"}}` and its form elicitations `{"action":"cancel"}`,
    /// as ACP says the client must, and the client gets `$/cancel_request` for each. For the
    /// client's EOF (`session` = `None`): the same for every session, and every other request
    /// gets a `-32603` error, so each has its one response before the agent's stdin closes.
    /// A later answer from the client is dropped.
    pub(super) fn answer_agent_requests(
        &mut self,
        session: Option<&str>,
        notify_client: bool,
        out: &mut Outbox,
    ) {
        let cancelled = |m: &str| dispatch::request(Side::Agent, m.as_bytes())?.cancelled;
        let due = self.requests.end_agent_requests(|r| match session {
            Some(s) => cancelled(&r.method).is_some() && r.session_id.as_deref() == Some(s),
            None => true,
        });
        for (id, req) in due {
            let line = match cancelled(&req.method) {
                Some(result) => jsonrpc::result_text(&id, result),
                None => jsonrpc::error(
                    Some(&id),
                    code::INTERNAL_ERROR,
                    &format!("the client disconnected before answering {}", req.method),
                    None,
                ),
            };
            tracing::info!(%id, method = ?req.method, "answered on the client's behalf");
            self.held.agent_answered(&id);
            out.agent(line);
            if notify_client && self.clients.attached().sends_cancel_requests() {
                self.notify_client(jsonrpc::cancel_request(&id), out);
            }
        }
    }

    /// The agent is gone (exited and its stdout drained): every client request still
    /// waiting on it gets one `-32603` error naming the exit, after how the user stopped it
    /// when they did (`stopped`: `sessions stop`).
    pub(in crate::router) fn on_agent_gone(
        &mut self,
        exit: &AgentExit,
        stopped: Option<&str>,
        out: &mut Outbox,
    ) {
        if self.agent_gone {
            return;
        }
        self.agent_gone = true;
        let said = match stopped {
            Some(why) => format!("{why} ({})", exit.describe()),
            None => exit.describe(),
        };
        self.joined_agent_gone(&said, out);
        let mut waiting = self.requests.drain(Side::Client);
        if self.cfg.linger {
            // A client that left gets nothing; a later client's request sent under a bridge
            // id gets its error under its own.
            waiting.retain(|(id, _)| self.held.orphan_answered(id).is_none());
            for (id, _) in &mut waiting {
                if let Some(client) = self.held.unmap(id) {
                    *id = client;
                }
            }
        }
        // A later client's `initialize` waiting for the first one's result never gets it.
        for waiter in self.held.take_init_waiters() {
            out.client(jsonrpc::error(
                Some(&waiter),
                code::INTERNAL_ERROR,
                &format!("{said} before it answered initialize"),
                None,
            ));
        }
        // The first error carries the whole stderr tail, the others its last KiB, so the
        // burst stays small however many requests were waiting.
        let short_tail = last_chars(&exit.stderr_tail, SHORT_TAIL);
        for (n, (id, req)) in waiting.into_iter().enumerate() {
            let message = format!("{said} while handling {}", req.method);
            let tail = if n == 0 {
                exit.stderr_tail.as_str()
            } else {
                short_tail
            };
            let data = json!({
                "exitCode": exit.code,
                "signal": exit.signal,
                "stderrTail": tail,
            });
            out.client(jsonrpc::error(
                Some(&id),
                code::INTERNAL_ERROR,
                &message,
                Some(data),
            ));
        }
        // Requests the agent sent can no longer be answered usefully: the client closes
        // what it still shows.
        let shown = self.requests.drain(Side::Agent);
        if self.clients.attached().sends_cancel_requests() {
            // (With `--linger`, only what the attached client was sent.)
            let shown: Vec<RequestId> = shown
                .into_iter()
                .map(|(id, _)| id)
                .filter(|id| self.held.sent(id))
                .collect();
            for id in shown {
                self.notify_client(jsonrpc::cancel_request(&id), out);
            }
        }
        self.withdraw_all_questions(out);
    }
}

/// How much of the agent's stderr tail the second and later exit errors carry.
const SHORT_TAIL: usize = 1024;

/// The last `max` bytes of `s`, cut at a character boundary.
fn last_chars(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}
