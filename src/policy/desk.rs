//! The approval policy as a running bridge's shell holds it: its files ([`Live`]), and every
//! decision made off the routing loop.
//!
//! The router does no I/O, and a decision does: the policy's files are looked at again
//! (a `stat` each) before every decision, and a call's paths are resolved as the OS opens
//! them (links before `..`). So the router asks for a decision as an effect, the shell
//! runs [`Desk::decide`] on the policy's own thread, bounded by [`DECIDE_WITHIN`], and hands back a
//! [`Ruling`]. A decision that does not come in time (a file on a hung mount) is an `ask`:
//! nothing fails open.
//!
//! Invariant: every change of the files is in exactly one [`Ruling`] (said in that
//! approval's chat), whether it was seen by a decision or by a `bridge.status` read.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use super::live::Change;
use super::live::Live;
use super::{Call, Decision, Verdict};

/// How long a decision may take before the approval is asked instead. Decisions take
/// microseconds to a few milliseconds (docs/BENCHMARKS.md); this is for a file that cannot
/// be read at all.
pub const DECIDE_WITHIN: Duration = Duration::from_secs(10);

/// Where the approval policy comes from (docs/POLICY.md).
#[derive(Debug, Clone, Default)]
pub struct PolicyFiles {
    /// `--policy FILE`s: they must exist.
    pub given: Vec<PathBuf>,
    /// The user's own file, read when it exists.
    pub user: Option<PathBuf>,
}

/// The policy's answer for one approval, with what the bridge has to say about its files.
#[derive(Debug, Clone, PartialEq)]
pub struct Ruling {
    pub verdict: Verdict,
    /// What changed in the policy's files since the last ruling, said once.
    pub changes: Vec<Change>,
    /// Why the policy is broken (it then decides nothing).
    pub broken: Option<String>,
}

impl Ruling {
    /// An `ask`, for `why`, with nothing to say about the files.
    pub fn ask(why: impl Into<String>) -> Self {
        Ruling {
            verdict: Verdict {
                decision: Decision::Ask,
                rule: None,
                why: why.into(),
            },
            changes: Vec::new(),
            broken: None,
        }
    }
}

/// The policy's files, shared by the decisions running off the loop. Cloned handles share
/// one state.
#[derive(Debug, Clone)]
pub struct Desk {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    live: Live,
    /// Changes seen by `bridge.status`, not yet said in a chat (at most 16).
    unsaid: Vec<Change>,
}

impl Desk {
    pub fn new(files: &PolicyFiles) -> Self {
        Desk {
            inner: Arc::new(Mutex::new(Inner {
                live: Live::new(files.given.clone(), files.user.clone()),
                unsaid: Vec::new(),
            })),
        }
    }

    /// Decides `call`, made in a session in `cwd` (blocking: files are read).
    pub fn decide(&self, call: &Call, cwd: Option<&Path>) -> Ruling {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (policy, changes) = inner.live.policy(cwd);
        let mut said = std::mem::take(&mut inner.unsaid);
        said.extend(changes);
        drop(inner);
        Ruling {
            verdict: policy.decide(call),
            changes: said,
            broken: policy.broken.clone(),
        }
    }

    /// The files and their state for `bridge.status`, looked at again so the page shows a
    /// broken edit before the next approval (blocking: files are read). What changed is
    /// kept for the next ruling's chat.
    pub fn status(&self, cwd: Option<&Path>) -> serde_json::Value {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (policy, changes) = inner.live.policy(cwd);
        inner.unsaid.extend(changes);
        inner.unsaid.truncate(16);
        let mut status = inner.live.status();
        status["broken"] = serde_json::json!(policy.broken);
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_seen_by_a_status_read_is_said_by_the_next_ruling_once() {
        let dir = std::env::temp_dir().join(format!("acp-qb-desk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("policy.toml");
        let rule =
            "[[rule]]\nid = \"git\"\ndecision = \"allow\"\ncommand = [\"git\", \"status\"]\n";
        std::fs::write(&file, rule).unwrap();
        let desk = Desk::new(&PolicyFiles {
            given: vec![file.clone()],
            user: None,
        });
        let call = Call::from_tool_call(
            &serde_json::json!({"kind":"execute","rawInput":{"command":"git status"}}),
            "agent",
            Path::new("/"),
        );
        assert_eq!(desk.decide(&call, None).verdict.decision, Decision::Allow);
        // Broken by an edit: the status sees it first, the next ruling says it.
        std::fs::write(&file, "[[rule]]\nid = 1\n").unwrap();
        let status = desk.status(None);
        assert!(status["files"][0]["error"].is_string(), "{status}");
        let ruling = desk.decide(&call, None);
        assert!(
            matches!(ruling.changes.as_slice(), [Change::KeptLastGood { .. }]),
            "{:?}",
            ruling.changes
        );
        assert_eq!(ruling.verdict.decision, Decision::Allow, "last good rules");
        assert!(desk.decide(&call, None).changes.is_empty(), "said once");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
