//! The disk work the router asks for ([`Effect`]), carried out off the loop: each runs on
//! tokio's blocking pool and comes back to the loop as a [`Done`] (rust-analyzer's main loop
//! does the same with its tasks). The loop never waits for one.
//!
//! Invariants:
//! - Every [`Effect::Decide`] comes back exactly once: with the policy's ruling, or, when it
//!   takes longer than [`DECIDE_WITHIN`] or its task fails, with an `ask`. Nothing fails
//!   open.
//! - An "Always allow" answer is given to the router only after its rule is written; a rule
//!   that cannot be written leaves the question pending and tells the caller why.

use std::collections::HashMap;
use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::control::{self, AnswerParams, Reply};
use crate::envelope::RequestId;
use crate::policy::desk::{Desk, Ruling, DECIDE_WITHIN};
use crate::router::{Effect, Outbox, Router};

/// An effect carried out.
#[derive(Debug)]
pub(super) enum Done {
    /// The ruling on the tool approval the agent asked with this id.
    Decided(RequestId, u64, Ruling),
    /// The "Always allow" write under this token: written, or why not.
    Written(u64, Result<(), String>),
}

/// The effects under way.
pub(super) struct Effects {
    /// The policy's files (`None`: no policy).
    desk: Option<Desk>,
    done_tx: mpsc::Sender<Done>,
    pub done_rx: mpsc::Receiver<Done>,
    /// Answers waiting for their "Always allow" write, by token.
    writes: HashMap<u64, (AnswerParams, Reply)>,
}

impl Effects {
    pub fn new(desk: Option<Desk>) -> Self {
        let (done_tx, done_rx) = mpsc::channel(64);
        Effects {
            desk,
            done_tx,
            done_rx,
            writes: HashMap::new(),
        }
    }

    /// The policy's files, for `bridge.status`.
    pub fn desk(&self) -> Option<&Desk> {
        self.desk.as_ref()
    }

    /// Starts every effect the router queued.
    pub fn start(&mut self, outbox: &mut Outbox) {
        for effect in outbox.effects.drain(..) {
            let done = self.done_tx.clone();
            match effect {
                Effect::Decide {
                    id,
                    ticket,
                    call,
                    cwd,
                } => {
                    let desk = self.desk.clone();
                    tokio::spawn(async move {
                        let ruling = decide(desk, *call, cwd).await;
                        let _ = done.send(Done::Decided(id, ticket, ruling)).await;
                    });
                }
                Effect::Remember { token, rule, said } => {
                    let Some((a, _)) = self.writes.get(&token) else {
                        continue;
                    };
                    let comment = comment(&said, a.device.as_deref());
                    tokio::spawn(async move {
                        let written =
                            tokio::task::spawn_blocking(move || write(&rule, &said, &comment))
                                .await
                                .unwrap_or_else(
                                    |_| Err("the rule could not be written".to_owned()),
                                );
                        let _ = done.send(Done::Written(token, written)).await;
                    });
                }
            }
        }
    }

    /// Keeps `a` and its `reply` until the write under `token` is done.
    pub fn wait_for_write(&mut self, token: u64, a: AnswerParams, reply: Reply) {
        self.writes.insert(token, (a, reply));
    }

    /// What a finished effect means for the router.
    pub fn finish(&mut self, done: Done, router: &mut Router, outbox: &mut Outbox) {
        match done {
            Done::Decided(id, ticket, ruling) => router.on_ruling(&id, ticket, ruling, outbox),
            Done::Written(token, written) => {
                let Some((a, reply)) = self.writes.remove(&token) else {
                    return;
                };
                // A caller that went away just misses its reply.
                let _ = reply.send(match written {
                    Ok(()) => router
                        .control_answer_remembered(
                            token,
                            &a.session_id,
                            &a.question_id,
                            &a.answers,
                            a.device.as_deref(),
                            outbox,
                        )
                        .map_err(control::control_error),
                    Err(e) => Err(control::invalid_params(format!("remember: {e}"))),
                });
            }
        }
    }
}

/// The ruling for `call`, decided on the blocking pool, within [`DECIDE_WITHIN`].
async fn decide(desk: Option<Desk>, call: crate::policy::Call, cwd: Option<PathBuf>) -> Ruling {
    let Some(desk) = desk else {
        return Ruling::ask("no approval policy is in force");
    };
    let task = tokio::task::spawn_blocking(move || desk.decide(&call, cwd.as_deref()));
    match tokio::time::timeout(DECIDE_WITHIN, task).await {
        Ok(Ok(ruling)) => ruling,
        Ok(Err(_)) => {
            tracing::error!("the approval policy's decision failed; the approval is asked");
            Ruling::ask("the approval policy could not decide; asked")
        }
        Err(_) => {
            tracing::warn!(
                within_s = DECIDE_WITHIN.as_secs(),
                "the approval policy did not decide in time (a file that cannot be read?); the approval is asked"
            );
            Ruling::ask(format!(
                "the approval policy did not decide within {} s; asked",
                DECIDE_WITHIN.as_secs()
            ))
        }
    }
}

/// The comment written above a remembered rule: what it does, who asked, when.
fn comment(said: &str, device: Option<&str>) -> String {
    let from = device.map_or("the Questions page or CLI".to_owned(), |d| {
        format!("device {d}")
    });
    let when = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
    format!("{said}: remembered from {from}, {when}")
}

/// Appends `rule` to the user's policy file (blocking: a lock, a read, a sync, a rename).
fn write(rule: &str, said: &str, comment: &str) -> Result<(), String> {
    let file = crate::policy::file::user_file()
        .ok_or("no HOME or XDG_CONFIG_HOME for the user's policy file")?;
    match crate::policy::remember::append(&file, rule, comment) {
        Ok(written) => {
            tracing::info!(file = %file.display(), written, "{said}");
            Ok(())
        }
        Err(e) => {
            tracing::warn!(error = %e, "always allow: the rule was not written");
            Err(e.to_string())
        }
    }
}
