//! `session/new`, `session/load`, `session/resume` and `session/fork` from the client: the
//! folder (`cwd`) of each session, which the approval policy matches paths against and reads
//! the project's policy file from. The request's `cwd` is held by its id until the agent's
//! result names the session (`sessionId` in the result, else in the request). Nothing of the
//! messages changes.
//!
//! Invariant: bounded. At most [`MAX_WAITING`] requests are held (the oldest forgotten first)
//! and [`MAX_SESSIONS`] folders are kept (all forgotten at once past that: a session the
//! bridge no longer knows gets the agent's folder).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;

use crate::envelope::RequestId;
use crate::router::message::Req;
use crate::router::{Outbox, Router, Side};

const MAX_WAITING: usize = 64;
const MAX_SESSIONS: usize = 4096;

/// The folders of the sessions, and the requests that will name one.
#[derive(Debug, Default)]
pub(in crate::router) struct Sessions {
    waiting: VecDeque<(RequestId, PathBuf, Option<String>)>,
    cwd: HashMap<String, PathBuf>,
}

impl Sessions {
    /// The folder of `session`, if the bridge saw it begin.
    pub fn cwd(&self, session: &str) -> Option<&Path> {
        self.cwd.get(session).map(PathBuf::as_path)
    }

    fn insert(&mut self, session: String, cwd: PathBuf) {
        if self.cwd.len() >= MAX_SESSIONS && !self.cwd.contains_key(&session) {
            self.cwd.clear();
        }
        self.cwd.insert(session, cwd);
    }
}

/// The request: its `cwd` (an absolute path, as ACP requires) is held by its id.
pub(in crate::router) fn arrives(r: &mut Router, req: Req<'_>, out: &mut Outbox) {
    let params = req
        .params
        .and_then(|p| serde_json::from_str::<Value>(p).ok());
    if let Some(p) = params {
        let cwd = p["cwd"]
            .as_str()
            .map(PathBuf::from)
            .filter(|c| c.is_absolute());
        if let Some(cwd) = cwd {
            let named = p["sessionId"].as_str().map(str::to_owned);
            let s = &mut r.sessions;
            if s.waiting.len() >= MAX_WAITING {
                s.waiting.pop_front();
            }
            s.waiting.push_back((req.id.clone(), cwd, named));
        }
    }
    let line = req.line.clone();
    r.pass(Side::Client, req, line, out);
}

/// The agent's successful result: the session it names gets the folder.
pub(in crate::router) fn result(r: &mut Router, id: &RequestId, line: Bytes) -> Bytes {
    let s = &mut r.sessions;
    let Some(at) = s.waiting.iter().position(|(w, ..)| w == id) else {
        return line;
    };
    let (_, cwd, named) = s.waiting.remove(at).expect("found above");
    let session = serde_json::from_slice::<Value>(&line)
        .ok()
        .and_then(|v| v["result"]["sessionId"].as_str().map(str::to_owned))
        .or(named);
    if let Some(session) = session {
        s.insert(session, cwd);
    }
    line
}
