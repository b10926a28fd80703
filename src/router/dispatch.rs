//! The dispatch table: the one place that says which methods the bridge acts on, who sends
//! them, and which handler (a module in [`super::handlers`]) takes them; and the route every
//! valid message takes through it.
//!
//! Invariants: the scanned fast path and the classified path reach the same [`Router::route`]
//! (the scan only saves parsing); a method not in [`TABLE`] is tracked (requests) and
//! forwarded byte for byte. The lookup compares the method's bytes with a few static names
//! (lengths first), so a notification that is only forwarded pays a few compares. This
//! module knows nothing of what a handler does with the message.

use std::time::Instant;

use bytes::Bytes;
use serde_json::value::RawValue;

use super::handlers::{
    cancel, client_tools, elicitation, initialize, permission, prompt, question, session,
    tool_call, vendor,
};
pub(super) use super::message::{Note, Req};
use super::{Outbox, Router, Side};
use crate::envelope::{self, RequestId};
use crate::questions::sources;
use crate::scan::{Shape, Span};

/// The methods the bridge acts on, besides the vendors' ([`sources::VENDORS`], all taken by
/// [`vendor::arrives`]). A new one is one entry here plus one handler module.
pub(super) static TABLE: &[Entry] = &[
    Entry {
        names: &[crate::questions::METHOD],
        from: Side::Agent,
        on: On::Request(RequestRule {
            arrives: Some(question::arrives),
            ..RequestRule::TRACKED
        }),
    },
    Entry {
        names: &[
            crate::methods::ELICITATION_CREATE,
            crate::methods::SESSION_ELICITATION,
        ],
        from: Side::Agent,
        on: On::Request(RequestRule {
            arrives: Some(elicitation::arrives),
            cancelled: Some(r#"{"action":"cancel"}"#),
            ..RequestRule::TRACKED
        }),
    },
    Entry {
        names: &[crate::methods::SESSION_REQUEST_PERMISSION],
        from: Side::Agent,
        on: On::Request(RequestRule {
            arrives: Some(permission::arrives),
            cancelled: Some(r#"{"outcome":{"outcome":"cancelled"}}"#),
            ..RequestRule::TRACKED
        }),
    },
    // The client's files and terminals: refused while the agent runs inside the wall.
    Entry {
        names: &[
            crate::methods::FS_READ_TEXT_FILE,
            crate::methods::FS_WRITE_TEXT_FILE,
            crate::methods::TERMINAL_CREATE,
            crate::methods::TERMINAL_OUTPUT,
            crate::methods::TERMINAL_RELEASE,
            crate::methods::TERMINAL_WAIT_FOR_EXIT,
            crate::methods::TERMINAL_KILL,
        ],
        from: Side::Agent,
        on: On::Request(RequestRule {
            arrives: Some(client_tools::arrives),
            ..RequestRule::TRACKED
        }),
    },
    Entry {
        names: &[crate::methods::INITIALIZE],
        from: Side::Client,
        on: On::Request(RequestRule {
            arrives: Some(initialize::arrives),
            result: Some(initialize::result),
            ..RequestRule::TRACKED
        }),
    },
    // The session's folder, for the approval policy.
    Entry {
        names: &[
            crate::methods::SESSION_NEW,
            crate::methods::SESSION_LOAD,
            crate::methods::SESSION_RESUME,
            crate::methods::SESSION_FORK,
        ],
        from: Side::Client,
        on: On::Request(RequestRule {
            arrives: Some(session::arrives),
            result: Some(session::result),
            ..RequestRule::TRACKED
        }),
    },
    // `--linger`: the held sessions, for an agent that cannot list its own.
    Entry {
        names: &[crate::methods::SESSION_LIST],
        from: Side::Client,
        on: On::Request(RequestRule {
            arrives: Some(session::list),
            ..RequestRule::TRACKED
        }),
    },
    // A new turn, or a session's end, for the digest of what the agent was doing.
    Entry {
        names: &[
            crate::methods::SESSION_PROMPT,
            crate::methods::SESSION_CLOSE,
        ],
        from: Side::Client,
        on: On::Request(RequestRule {
            arrives: Some(prompt::client_request),
            ..RequestRule::TRACKED
        }),
    },
    Entry {
        names: &[crate::methods::SESSION_CANCEL],
        from: Side::Client,
        on: On::Notification(cancel::session_cancel),
    },
    // `--linger`: a later client's cancel of a request sent under a bridge id.
    Entry {
        names: &[crate::methods::CANCEL_REQUEST],
        from: Side::Client,
        on: On::Notification(cancel::client_cancel_request),
    },
    Entry {
        names: &[crate::methods::CANCEL_REQUEST],
        from: Side::Agent,
        on: On::Notification(cancel::cancel_request),
    },
    // Forwarded like any notification; one about a tool call is also remembered, for the
    // permission requests that name it by id, and a tool call or plan for the digest.
    Entry {
        names: &[crate::methods::SESSION_UPDATE],
        from: Side::Agent,
        on: On::Observe {
            wants: tool_call::picked,
            then: tool_call::update,
        },
    },
];

/// One method the bridge acts on.
pub(super) struct Entry {
    /// Its names on the wire (a dialect's aliases, e.g. with and without a leading `_`).
    pub names: &'static [&'static str],
    /// The peer that sends it (the same name from the other peer is plain traffic).
    pub from: Side,
    pub on: On,
}

/// What the bridge does with the method; a request of a notification-only method (or the
/// reverse) is plain traffic.
pub(super) enum On {
    Request(RequestRule),
    /// The handler owns the notification: it forwards it, or not.
    Notification(NotificationFn),
    /// A notification only forwarded (in runs with its neighbours), unless `wants` picks
    /// the line (a cheap look at its bytes): then `then` takes it, and forwards it.
    Observe {
        wants: fn(&[u8]) -> bool,
        then: NotificationFn,
    },
}

/// What the bridge does with a request, its response, and its ending.
#[derive(Clone, Copy)]
pub(super) struct RequestRule {
    /// Takes the request over (it refuses, shows, or passes it on with [`Router::pass`]);
    /// `None`: tracked and forwarded as any other request.
    pub arrives: Option<RequestFn>,
    /// Reads (and may rewrite) the peer's successful response before it is forwarded.
    pub result: Option<ResultFn>,
    /// The result (JSON text) the bridge sends on the client's behalf when the request is
    /// still open at the client on `session/cancel` of its session or at the client's EOF.
    pub cancelled: Option<&'static str>,
}

impl RequestRule {
    /// Tracked and forwarded, nothing more (the base of each entry).
    const TRACKED: Self = Self {
        arrives: None,
        result: None,
        cancelled: None,
    };
}

pub(super) type RequestFn = fn(&mut Router, Req<'_>, &mut Outbox);
pub(super) type ResultFn = fn(&mut Router, &RequestId, Bytes) -> Bytes;
pub(super) type NotificationFn = fn(&mut Router, Note<'_>, &mut Outbox);

/// A valid message, from the scan's offsets or from [`envelope::classify`].
pub(super) enum Msg<'a> {
    Request {
        id: RequestId,
        method: &'a str,
        params: Option<&'a str>,
    },
    Notification {
        method: &'a str,
        params: Option<&'a str>,
    },
    Response {
        id: RequestId,
        /// `result` (true) or `error`.
        ok: bool,
        /// The `result` or `error` value's JSON text.
        outcome: &'a str,
    },
}

impl<'a> Msg<'a> {
    /// The message a scan found, read from its offsets in `line`.
    pub(super) fn scanned(shape: Shape, line: &'a [u8]) -> Self {
        let text = |s: Span| s.text(line);
        match shape {
            Shape::Request { id, method, params } => Msg::Request {
                id: RequestId::from_json(text(id)),
                method: text(method),
                params: params.map(text),
            },
            Shape::Notification { method, params } => Msg::Notification {
                method: text(method),
                params: params.map(text),
            },
            Shape::Response { id, ok, outcome } => Msg::Response {
                id: RequestId::from_json(text(id)),
                ok,
                outcome: text(outcome),
            },
        }
    }
}

/// The entry for `method` from `from` among those `kind` selects (a notification, on the
/// hot path of forwarding, is compared with the few notification entries only).
#[inline]
fn entry(from: Side, method: &[u8], kind: fn(&On) -> bool) -> Option<&'static Entry> {
    TABLE
        .iter()
        .find(|e| e.from == from && kind(&e.on) && e.names.iter().any(|n| n.as_bytes() == method))
}

/// The rule for a request of `method` from `from`, when the bridge acts on it.
#[inline]
pub(super) fn request(from: Side, method: &[u8]) -> Option<RequestRule> {
    match entry(from, method, |on| matches!(on, On::Request(_))) {
        Some(Entry {
            on: On::Request(rule),
            ..
        }) => Some(*rule),
        _ if from == Side::Agent => {
            let v = sources::vendor(std::str::from_utf8(method).ok()?)?;
            Some(RequestRule {
                arrives: Some(vendor::arrives),
                cancelled: Some(v.cancelled),
                ..RequestRule::TRACKED
            })
        }
        _ => None,
    }
}

/// The handler of a notification of `method` from `from` (the whole `line`), when the
/// bridge acts on it.
#[inline]
pub(super) fn notification(from: Side, method: &[u8], line: &[u8]) -> Option<NotificationFn> {
    let kind = |on: &On| matches!(on, On::Notification(_) | On::Observe { .. });
    match entry(from, method, kind).map(|e| &e.on) {
        Some(On::Notification(handler)) => Some(*handler),
        Some(On::Observe { wants, then }) if wants(line) => Some(*then),
        _ => None,
    }
}

impl Router {
    /// Whether the agent runs inside the wall ([`super::RouterConfig::walled`]).
    pub(in crate::router) fn walled(&self) -> bool {
        self.cfg.walled
    }

    /// The one route of a valid message: a request or notification to its handler (or
    /// tracked and forwarded), a response to the question it answers (or matched with its
    /// request and forwarded).
    pub(super) fn route(
        &mut self,
        from: Side,
        msg: Msg<'_>,
        line: &Bytes,
        now: Instant,
        out: &mut Outbox,
    ) {
        match msg {
            Msg::Request { id, method, params } => {
                let span =
                    tracing::debug_span!("msg", direction = from.as_str(), %id, method = ?method);
                let _e = span.enter();
                tracing::trace!(payload = %String::from_utf8_lossy(line), "request");
                let req = Req {
                    id,
                    method,
                    params,
                    line,
                    now,
                };
                match request(from, method.as_bytes()).and_then(|r| r.arrives) {
                    Some(arrives) => arrives(self, req, out),
                    None => self.pass(from, req, line.clone(), out),
                }
            }
            Msg::Notification { method, params } => {
                let span = tracing::debug_span!("msg", direction = from.as_str(), method = ?method);
                let _e = span.enter();
                tracing::trace!(payload = %String::from_utf8_lossy(line), "notification");
                match notification(from, method.as_bytes(), line) {
                    Some(handler) => handler(self, Note { params, line }, out),
                    None => self.forward(from, line.clone(), out),
                }
            }
            Msg::Response { id, ok, outcome } => {
                let span = tracing::debug_span!("msg", direction = from.as_str(), %id);
                let _e = span.enter();
                tracing::trace!(payload = %String::from_utf8_lossy(line), "response");
                if from == Side::Client
                    && (self.questions.has_client_id(&id) || self.questions.was_resolved(&id))
                {
                    // An answer to a question needs its result as a `RawValue` (a check of
                    // that part only: the rest of the line is not read again).
                    match serde_json::from_str::<&RawValue>(outcome) {
                        Ok(raw) => {
                            let outcome = if ok { Ok(raw) } else { Err(raw) };
                            if self.on_client_response_to_question(&id, outcome, line, out) {
                                return;
                            }
                        }
                        Err(error) => tracing::warn!(%error, "answer's result is not JSON"),
                    }
                }
                self.on_response(from, id, ok, line.clone(), now, out);
            }
        }
    }

    /// A request the bridge does not take over: tracked until its response, and `line`
    /// forwarded.
    pub(super) fn pass(&mut self, from: Side, req: Req<'_>, line: Bytes, out: &mut Outbox) {
        let session = req.params.and_then(envelope::session_id_in);
        self.track_request(from, req.id, req.method.into(), session, line, req.now, out);
    }
}
