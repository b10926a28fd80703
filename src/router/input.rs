//! The router's one way in: everything that happens to it is an [`Input`], handed to
//! [`Router::handle`] with the time and the outbox (rust-analyzer's `handle_event(Event)`).
//! What it does is in the outbox; what a caller waits for (whether a client was taken, a
//! control call's result) is the [`Handled`] it returns. Besides this, the router has only
//! read-only views (`status`, `questions`, `question_views`, ...) and its setup
//! (`new`, `set_id_prefix`, `set_wall_anchor`).
//!
//! Invariant: every change of the router's state goes through [`Router::handle`].

use std::time::Instant;

use serde_json::Value;

use super::{AgentExit, ControlError, Outbox, Router, Side};
use crate::codec::Frame;
use crate::envelope::RequestId;
use crate::policy::desk::Ruling;
use crate::policy::remember::Remember;
use crate::scan::{Batch, Scanned};

/// One thing that happened.
#[derive(Debug)]
pub enum Input<'a> {
    /// The next deadline ([`Router::next_deadline`]) came.
    Timer,
    /// A line read from a side, not scanned yet.
    Frame(Side, Frame),
    /// A line scanned where it was read.
    Scanned(Side, Scanned),
    /// The lines of one read, scanned where they were read.
    Batch(Side, Batch),
    /// The client's output ended.
    ClientEof,
    /// `--linger`: the client left, and the agent is kept.
    ClientDetached,
    /// `--linger`: a client attached; `front_answered`: its front answered its
    /// `initialize` with this holder's result.
    ClientAttached { front_answered: bool },
    /// `--linger`: a client joins the held sessions beside the attached one, as `client`.
    ClientJoined { client: u32, front_answered: bool },
    /// A line of joined client `client`, not scanned yet.
    JoinedFrame(u32, Frame),
    /// The lines of one read of joined client `client`.
    JoinedBatch(u32, Batch),
    /// Joined client `client` left.
    JoinedLeft(u32),
    /// The agent is gone; `stopped`: how the user stopped it, when they did.
    AgentGone {
        exit: &'a AgentExit,
        stopped: Option<&'a str>,
    },
    /// The shell's ruling on the tool approval `id`, decided under `ticket`.
    Ruling {
        id: RequestId,
        ticket: u64,
        ruling: Ruling,
    },
    /// The shell's answer to `Effect::WhoKeeps` for the client's request `id`.
    KeptElsewhere { id: RequestId, holder: Option<u32> },
    /// A call of the control server (or of a paired device through the inbox).
    Control(Control<'a>),
}

/// A control call that changes a question.
#[derive(Debug)]
pub enum Control<'a> {
    /// `questions.answer`.
    Answer {
        session: &'a str,
        question_id: &'a str,
        answers: &'a Value,
        device: Option<&'a str>,
    },
    /// `questions.reject` (`reason` defaults to `declined`).
    Reject {
        session: &'a str,
        question_id: &'a str,
        reason: Option<&'a str>,
        device: Option<&'a str>,
    },
    /// "Always allow" with an answer: its rule is written first.
    Remember {
        session: &'a str,
        question_id: &'a str,
        answers: &'a Value,
        remember: Remember,
    },
    /// The answer of a `Remember` once its rule is written (`token`).
    AnswerRemembered {
        token: u64,
        session: &'a str,
        question_id: &'a str,
        answers: &'a Value,
        device: Option<&'a str>,
    },
}

/// What [`Router::handle`] says back.
#[derive(Debug)]
pub enum Handled {
    /// Nothing: what it did is in the outbox.
    Done,
    /// [`Input::ClientJoined`]: whether the client was taken (no `--linger`, or no room).
    Joined(bool),
    /// A control call's result: what the agent got.
    Answered(Result<Value, ControlError>),
    /// [`Control::Remember`]: the token the answer waits under.
    Remembering(Result<u64, ControlError>),
}

impl Handled {
    /// Whether a joining client was taken.
    #[must_use]
    pub fn taken(self) -> bool {
        matches!(self, Handled::Joined(true))
    }

    /// A control call's result.
    pub fn answered(self) -> Result<Value, ControlError> {
        match self {
            Handled::Answered(r) => r,
            other => Err(ControlError::Invalid(format!("not an answer: {other:?}"))),
        }
    }

    /// A remembering call's token.
    pub fn remembering(self) -> Result<u64, ControlError> {
        match self {
            Handled::Remembering(r) => r,
            other => Err(ControlError::Invalid(format!("not a token: {other:?}"))),
        }
    }
}

impl Router {
    /// Handles what happened at `now`.
    pub fn handle(&mut self, input: Input<'_>, now: Instant, out: &mut Outbox) -> Handled {
        match input {
            Input::Timer => self.on_timer(now, out),
            Input::Frame(from, frame) => self.on_scanned(from, Scanned::new(frame), now, out),
            Input::Scanned(from, scanned) => self.on_scanned(from, scanned, now, out),
            Input::Batch(from, batch) => self.on_batch(from, batch, now, out),
            Input::ClientEof => self.on_client_eof(now, out),
            Input::ClientDetached => self.on_client_detached(now, out),
            Input::ClientAttached { front_answered } => {
                self.on_client_attached(now, out);
                if front_answered {
                    self.front_answered_initialize();
                }
            }
            Input::ClientJoined {
                client,
                front_answered,
            } => return Handled::Joined(self.on_client_joined(client, front_answered)),
            Input::JoinedFrame(client, frame) => self.on_joined_frame(client, frame, now, out),
            Input::JoinedBatch(client, batch) => self.on_joined_batch(client, batch, now, out),
            Input::JoinedLeft(client) => self.on_joined_left(client),
            Input::AgentGone { exit, stopped } => self.on_agent_gone(exit, stopped, out),
            Input::Ruling { id, ticket, ruling } => self.on_ruling(&id, ticket, ruling, out),
            Input::KeptElsewhere { id, holder } => self.on_kept_elsewhere(&id, holder, now, out),
            Input::Control(call) => return self.control(call, out),
        }
        Handled::Done
    }

    fn control(&mut self, call: Control<'_>, out: &mut Outbox) -> Handled {
        match call {
            Control::Answer {
                session,
                question_id,
                answers,
                device,
            } => Handled::Answered(self.control_answer(session, question_id, answers, device, out)),
            Control::Reject {
                session,
                question_id,
                reason,
                device,
            } => Handled::Answered(self.control_reject(session, question_id, reason, device, out)),
            Control::Remember {
                session,
                question_id,
                answers,
                remember,
            } => Handled::Remembering(self.control_remember(
                session,
                question_id,
                answers,
                remember,
                out,
            )),
            Control::AnswerRemembered {
                token,
                session,
                question_id,
                answers,
                device,
            } => Handled::Answered(self.control_answer_remembered(
                token,
                session,
                question_id,
                answers,
                device,
                out,
            )),
        }
    }
}
