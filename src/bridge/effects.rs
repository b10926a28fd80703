//! The disk work the router asks for ([`Effect`]), carried out off the loop and handed back
//! to it as a [`Done`] (rust-analyzer's main loop does the same with its tasks). The loop
//! never waits for one. The policy's decisions and status reads run on the policy's own
//! thread ([`PolicyThread`]), not on tokio's blocking pool, which the relay's long writes
//! use: a policy file that never reads (a FIFO, a hung mount) stalls only the policy, and
//! no thread piles up behind it.
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
use crate::router::{Control, Effect, Input, Outbox, Router};

/// An effect carried out.
#[derive(Debug)]
pub(super) enum Done {
    /// The ruling on the tool approval the agent asked with this id.
    Decided(RequestId, u64, Ruling),
    /// The "Always allow" write under this token: written, or why not.
    Written(u64, Result<(), String>),
    /// `--linger`: the other holder that keeps the session a client's request loads.
    Kept(RequestId, Option<u32>),
}

/// The effects under way.
pub(super) struct Effects {
    /// The policy's thread (`None`: no policy).
    policy: Option<PolicyThread>,
    done_tx: mpsc::Sender<Done>,
    pub done_rx: mpsc::Receiver<Done>,
    /// Answers waiting for their "Always allow" write, by token.
    writes: HashMap<u64, (AnswerParams, Reply)>,
    /// `--linger`: the holders' folder and this holder's key (its agent command and
    /// folder), where other holders are looked for.
    holders: Option<(PathBuf, String)>,
}

impl Effects {
    pub fn new(desk: Option<Desk>, holders: Option<(PathBuf, String)>) -> Self {
        let (done_tx, done_rx) = mpsc::channel(64);
        Effects {
            policy: desk.and_then(PolicyThread::start),
            done_tx,
            done_rx,
            writes: HashMap::new(),
            holders,
        }
    }

    /// The policy's thread, for `bridge.status`.
    pub fn policy(&self) -> Option<&PolicyThread> {
        self.policy.as_ref()
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
                    let policy = self.policy.clone();
                    tokio::spawn(async move {
                        let ruling = decide(policy, *call, cwd).await;
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
                Effect::WhoKeeps { id, session } => {
                    let holders = self.holders.clone();
                    tokio::spawn(async move {
                        let found = tokio::task::spawn_blocking(move || {
                            holders.and_then(|(folder, key)| who_keeps(&folder, &key, &session))
                        })
                        .await
                        .unwrap_or(None);
                        let _ = done.send(Done::Kept(id, found)).await;
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
        let now = std::time::Instant::now();
        match done {
            Done::Decided(id, ticket, ruling) => {
                router.handle(Input::Ruling { id, ticket, ruling }, now, outbox);
            }
            Done::Kept(id, holder) => {
                router.handle(Input::KeptElsewhere { id, holder }, now, outbox);
            }
            Done::Written(token, written) => {
                let Some((a, reply)) = self.writes.remove(&token) else {
                    return;
                };
                // A caller that went away just misses its reply.
                let _ = reply.send(match written {
                    Ok(()) => {
                        let call = Control::AnswerRemembered {
                            token,
                            session: &a.session_id,
                            question_id: &a.question_id,
                            answers: &a.answers,
                            device: a.device.as_deref(),
                        };
                        router
                            .handle(Input::Control(call), now, outbox)
                            .answered()
                            .map_err(control::control_error)
                    }
                    Err(e) => Err(control::invalid_params(format!("remember: {e}"))),
                });
            }
        }
    }
}

/// The live holder other than this one, of the same `key`, whose file in `folder` lists
/// `session`.
fn who_keeps(folder: &std::path::Path, key: &str, session: &str) -> Option<u32> {
    crate::linger::scan(folder)
        .into_iter()
        .find(|h| {
            h.pid != std::process::id() && h.key == key && h.sessions.iter().any(|s| s == session)
        })
        .map(|h| h.pid)
}

/// The policy's own thread: decisions and status reads, one at a time.
#[derive(Debug, Clone)]
pub(super) struct PolicyThread {
    jobs: std::sync::mpsc::SyncSender<Job>,
}

type Job = Box<dyn FnOnce(&Desk) + Send>;

/// How many decisions may wait for the policy's thread; past that they are asked at once.
const WAITING: usize = 64;

impl PolicyThread {
    fn start(desk: Desk) -> Option<Self> {
        let (jobs, todo) = std::sync::mpsc::sync_channel::<Job>(WAITING);
        let started = std::thread::Builder::new()
            .name("policy".into())
            .spawn(move || {
                for job in todo {
                    job(&desk);
                }
            });
        match started {
            Ok(_) => Some(PolicyThread { jobs }),
            Err(e) => {
                tracing::error!(error = %e, "cannot start the policy's thread; every tool approval is asked");
                None
            }
        }
    }

    /// Runs `f` on the policy's thread, within [`DECIDE_WITHIN`]; `Err` says why not (busy
    /// with a file that does not read, or gone after a panic).
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Desk) -> T + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |desk| {
            let _ = tx.send(f(desk));
        });
        self.jobs.try_send(job).map_err(|e| match e {
            std::sync::mpsc::TrySendError::Full(_) => {
                format!("{WAITING} decisions already wait for the approval policy")
            }
            std::sync::mpsc::TrySendError::Disconnected(_) => {
                "the approval policy's thread is gone".to_owned()
            }
        })?;
        match tokio::time::timeout(DECIDE_WITHIN, rx).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err("the approval policy could not decide".to_owned()),
            Err(_) => Err(format!(
                "the approval policy did not decide within {} s (a file that cannot be read?)",
                DECIDE_WITHIN.as_secs()
            )),
        }
    }
}

/// The ruling for `call`, decided on the policy's thread, within [`DECIDE_WITHIN`].
async fn decide(
    policy: Option<PolicyThread>,
    call: crate::policy::Call,
    cwd: Option<PathBuf>,
) -> Ruling {
    let Some(policy) = policy else {
        return Ruling::ask("no approval policy is in force");
    };
    match policy
        .run(move |desk| desk.decide(&call, cwd.as_deref()))
        .await
    {
        Ok(ruling) => ruling,
        Err(why) => {
            tracing::warn!("{why}; the approval is asked");
            Ruling::ask(format!("{why}; asked"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::desk::PolicyFiles;

    /// A decision stuck on a file holds only the policy's thread: what waits behind it is
    /// bounded ([`WAITING`]), one more is refused at once, and nothing else is taken.
    #[test]
    fn a_stuck_policy_thread_queues_a_bounded_number_and_refuses_the_rest_at_once() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let policy = PolicyThread::start(Desk::new(&PolicyFiles::default())).unwrap();
        // The first job does not return until released (a file that does not read).
        let (started, on_it) = std::sync::mpsc::channel::<()>();
        let (release, stuck) = std::sync::mpsc::channel::<()>();
        let first: Job = Box::new(move |_| {
            started.send(()).unwrap();
            stuck.recv().unwrap();
        });
        policy.jobs.try_send(first).unwrap();
        on_it.recv().unwrap();
        for _ in 0..WAITING {
            assert!(policy.jobs.try_send(Box::new(|_| ())).is_ok());
        }
        let refused = rt.block_on(policy.run(|_| ()));
        assert!(
            refused.as_ref().is_err_and(|e| e.contains("already wait")),
            "{refused:?}"
        );
        // Released, it works through what waited, then takes new decisions.
        release.send(()).unwrap();
        let (drained, all_done) = std::sync::mpsc::channel::<()>();
        policy
            .jobs
            .send(Box::new(move |_| drained.send(()).unwrap()))
            .unwrap();
        all_done.recv().unwrap();
        assert_eq!(rt.block_on(policy.run(|_| 7)), Ok(7));
    }
}
