//! The folder (`cwd`) of each session, which the approval policy matches paths against and
//! reads the project's policy file from. The `cwd` of a request that begins a session is held
//! by its id until the agent's result names the session (`sessionId` in the result, else in
//! the request): [`crate::router::handlers::session`].
//!
//! `--linger` also holds back here a load or resume of a session this holder does not keep
//! while the shell asks whether another holder keeps it ([`HeldBack`]).
//!
//! Invariant: bounded. At most [`MAX_WAITING`] requests are held (the oldest forgotten first),
//! as many held back, and [`MAX_SESSIONS`] folders are kept (all forgotten at once past that:
//! a session the bridge no longer knows gets the agent's folder).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use crate::envelope::RequestId;

const MAX_WAITING: usize = 64;
const MAX_SESSIONS: usize = 4096;

/// The folders of the sessions, and the requests that will name one.
#[derive(Debug, Default)]
pub(in crate::router) struct Sessions {
    waiting: VecDeque<(RequestId, PathBuf, Option<String>)>,
    cwd: HashMap<String, PathBuf>,
    held_back: VecDeque<HeldBack>,
}

/// A client's `session/load` or `session/resume`, held back until the shell says whether
/// another holder keeps its session.
#[derive(Debug)]
pub(in crate::router) struct HeldBack {
    pub id: RequestId,
    pub method: Box<str>,
    pub session: String,
    pub line: bytes::Bytes,
}

impl Sessions {
    /// The folder of `session`, if the bridge saw it begin.
    pub fn cwd(&self, session: &str) -> Option<&Path> {
        self.cwd.get(session).map(PathBuf::as_path)
    }

    /// Holds the folder of a request that begins a session, by the request's id, with the
    /// session it names (if any).
    pub fn wait(&mut self, id: RequestId, cwd: PathBuf, named: Option<String>) {
        if self.waiting.len() >= MAX_WAITING {
            self.waiting.pop_front();
        }
        self.waiting.push_back((id, cwd, named));
    }

    /// The folder held for request `id`, and the session the request named.
    pub fn answered(&mut self, id: &RequestId) -> Option<(PathBuf, Option<String>)> {
        let at = self.waiting.iter().position(|(w, ..)| w == id)?;
        let (_, cwd, named) = self.waiting.remove(at)?;
        Some((cwd, named))
    }

    /// Holds `r` back (the oldest is forgotten past the bound: its client gets no answer,
    /// as from an agent that drops a request).
    pub fn hold_back(&mut self, r: HeldBack) {
        if self.held_back.len() >= MAX_WAITING {
            self.held_back.pop_front();
        }
        self.held_back.push_back(r);
    }

    /// The request held back under `id`, released.
    pub fn release(&mut self, id: &RequestId) -> Option<HeldBack> {
        let at = self.held_back.iter().position(|h| &h.id == id)?;
        self.held_back.remove(at)
    }

    /// The client that sent what is held back left: it is dropped.
    pub fn drop_held_back(&mut self) {
        self.held_back.clear();
    }

    /// `session` is in `cwd`.
    pub fn insert(&mut self, session: String, cwd: PathBuf) {
        if self.cwd.len() >= MAX_SESSIONS && !self.cwd.contains_key(&session) {
            self.cwd.clear();
        }
        self.cwd.insert(session, cwd);
    }
}
