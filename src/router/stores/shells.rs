//! The commands that may have moved each session's shell, for the approval policy: Claude
//! Code's Bash keeps its folder between calls, so after `cd sub && ls` its next command runs
//! in `sub`, and is decided there ([`crate::policy::Shell`]).
//!
//! Fed by every tool call the agent announces or updates, and by every tool approval: a
//! tool call of a tool that keeps its folder ([`crate::policy::keeps_its_folder`], named in
//! its first announcement, or its `_meta.claudeCode.toolName`) whose command may move a
//! shell ([`crate::policy::may_move_a_shell`]) is kept, and so is every later one of the
//! session (it may rename the folder the shell is in), whether it ran or not (one that did
//! not only adds a folder to decide in). A later update of the same tool call replaces its
//! command. A tool call line too long to read ([`lost`]) loses the shells of the sessions it
//! names.
//!
//! Invariant: bounded. At most [`MAX_MOVES`] commands a session (past that the session's
//! shell is `lost`: every later command is asked), [`MAX_IDS`] tool call ids, and
//! [`MAX_SESSIONS`] sessions (all forgotten at once past that, each then `lost`: nothing is
//! forgotten silently).

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crate::policy::{keeps_its_folder, may_move_a_shell, Shell};

const MAX_MOVES: usize = 64;
const MAX_IDS: usize = 256;
const MAX_SESSIONS: usize = 4096;

/// What may have moved one session's shell: (tool call id, command), oldest first, and
/// whether some were lost.
type Moves = (Vec<(Box<str>, String)>, bool);

/// The moves of the sessions' shells.
#[derive(Debug, Default)]
pub(in crate::router) struct Shells {
    /// By session.
    moves: HashMap<String, Moves>,
    /// The tool calls of tools that keep their folder, newest last.
    keeping: VecDeque<Box<str>>,
    /// Sessions forgotten when the store was full: their shells are lost.
    forgotten: bool,
}

impl Shells {
    /// A tool call (`tool_call` or `tool_call_update`, or a permission request's `toolCall`)
    /// of `session`.
    pub fn seen(&mut self, session: &str, tool_call: &Value) {
        let Some(id) = tool_call["toolCallId"].as_str() else {
            return;
        };
        let tool = tool_call["_meta"]["claudeCode"]["toolName"]
            .as_str()
            .or_else(|| tool_call["name"].as_str());
        if keeps_its_folder(tool) && !self.keeping.iter().any(|k| &**k == id) {
            if self.keeping.len() >= MAX_IDS {
                self.keeping.pop_front();
            }
            self.keeping.push_back(id.into());
        }
        if !self.keeping.iter().any(|k| &**k == id) {
            return;
        }
        let Some(command) = tool_call["rawInput"]["command"].as_str() else {
            return;
        };
        // Once one may have moved it, every later command: one may rename where it is.
        let moved = self.moves.get(session).is_some_and(|(m, _)| !m.is_empty());
        if !moved && !may_move_a_shell(command) {
            return;
        }
        if self.moves.len() >= MAX_SESSIONS && !self.moves.contains_key(session) {
            self.moves.clear();
            self.forgotten = true;
        }
        // Once sessions were forgotten, a session taken up again may be one of them.
        let forgotten = self.forgotten;
        let (moves, lost) = self
            .moves
            .entry(session.to_owned())
            .or_insert_with(|| (Vec::new(), forgotten));
        if let Some((_, c)) = moves.iter_mut().find(|(i, _)| &**i == id) {
            *c = command.to_owned();
        } else if moves.len() >= MAX_MOVES {
            *lost = true;
        } else {
            moves.push((id.into(), command.to_owned()));
        }
    }

    /// A `tool_call` line too long to read: the shells of the sessions it names (every one,
    /// when it names none) are lost, as its command is not known.
    pub fn lost(&mut self, sessions: &[String]) {
        if sessions.is_empty() {
            self.moves.clear();
            self.forgotten = true;
        }
        for s in sessions {
            if self.moves.len() >= MAX_SESSIONS && !self.moves.contains_key(s) {
                self.moves.clear();
                self.forgotten = true;
            }
            self.moves.entry(s.clone()).or_default().1 = true;
        }
    }

    /// What moved `session`'s shell before its tool call `current` (itself left out).
    pub fn before(&self, session: &str, current: Option<&str>) -> Shell {
        let Some((moves, lost)) = self.moves.get(session) else {
            return Shell {
                moved_by: Vec::new(),
                lost: self.forgotten,
            };
        };
        Shell {
            moved_by: moves
                .iter()
                .filter(|(i, _)| Some(&**i) != current)
                .map(|(_, c)| c.clone())
                .collect(),
            lost: *lost,
        }
    }

    #[cfg(test)]
    fn ids(&self) -> std::collections::HashSet<&str> {
        self.keeping.iter().map(|k| &**k).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Claude's tool call: announced with its tool's name and no input, then updated with
    /// the command.
    fn claude(shells: &mut Shells, session: &str, id: &str, command: &str) {
        shells.seen(
            session,
            &json!({"toolCallId": id, "_meta": {"claudeCode": {"toolName": "Bash"}}, "rawInput": {}}),
        );
        shells.seen(
            session,
            &json!({"toolCallId": id, "rawInput": {"command": command}}),
        );
    }

    #[test]
    fn the_moves_of_a_bash_shell_are_kept_by_session_and_the_current_one_left_out() {
        let mut s = Shells::default();
        claude(&mut s, "a", "t1", "cd sub && ls");
        claude(&mut s, "a", "t2", "git status");
        claude(&mut s, "b", "t3", "cd docs");
        // Codex's exec runs each command in a fresh shell: not kept.
        s.seen(
            "a",
            &json!({"toolCallId": "c1", "kind": "execute", "rawInput": {"command": "cd x"}}),
        );
        assert_eq!(s.before("a", None).moved_by, ["cd sub && ls", "git status"]);
        assert_eq!(s.before("a", Some("t1")).moved_by, ["git status"]);
        assert_eq!(s.before("b", None).moved_by, ["cd docs"]);
        assert!(!s.before("a", None).lost);
        assert_eq!(s.ids(), std::collections::HashSet::from(["t1", "t2", "t3"]));
        // Once one may have moved the shell, every later command of the session is kept: it
        // may rename the folder the shell is in.
        claude(&mut s, "b", "t4", "mv docs docs2");
        assert_eq!(s.before("b", None).moved_by, ["cd docs", "mv docs docs2"]);
        // A tool call line too long to read loses the shell of the session it names.
        s.lost(&["b".to_owned()]);
        assert!(s.before("b", None).lost);
        assert!(!s.before("a", None).lost);
        // An update of the same tool call replaces its command.
        s.seen(
            "a",
            &json!({"toolCallId": "t1", "rawInput": {"command": "cd other"}}),
        );
        assert_eq!(s.before("a", None).moved_by, ["cd other", "git status"]);
    }

    #[test]
    fn past_its_bound_a_sessions_shell_is_lost_never_forgotten() {
        let mut s = Shells::default();
        for i in 0..=MAX_MOVES {
            claude(&mut s, "a", &format!("t{i}"), "cd sub");
        }
        let shell = s.before("a", None);
        assert_eq!(shell.moved_by.len(), MAX_MOVES);
        assert!(shell.lost);
        for i in 0..=MAX_SESSIONS {
            claude(&mut s, &format!("s{i}"), &format!("u{i}"), "cd sub");
        }
        assert!(s.before("a", None).lost, "a session forgotten is lost");
        claude(&mut s, "a", "again", "cd sub");
        assert!(
            s.before("a", None).lost,
            "and stays lost when it is seen again"
        );
        assert!(s.ids().len() <= MAX_IDS);
    }
}
