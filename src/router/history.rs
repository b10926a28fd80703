//! `--linger`: how much of a held session's conversation a `session/load` replays (RFD
//! #533's `historyPolicy`, read from the request's `_meta` until it is in the schema).

/// How much of a held session's conversation a `session/load` replays: RFD #533's
/// `historyPolicy`, read from the request's `_meta` until it is in the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// The whole conversation kept, from the session's start (the default).
    Full,
    /// Only what no client was sent: what happened while the session had no client.
    PendingOnly,
    /// Nothing: only the questions and requests that wait.
    None,
}

impl History {
    /// The policy a load's `params` ask for (`_meta.historyPolicy`); `Full` when none, or
    /// one not known.
    pub fn of(params: Option<&str>) -> Self {
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        #[derive(serde::Deserialize)]
        struct Meta {
            #[serde(rename = "historyPolicy")]
            history_policy: Option<String>,
        }
        let asked = params
            .and_then(|p| serde_json::from_str::<Params>(p).ok())
            .and_then(|p| p.meta?.history_policy);
        match asked.as_deref() {
            Some("pending_only") => History::PendingOnly,
            Some("none") => History::None,
            _ => History::Full,
        }
    }
}

impl super::Router {
    /// What a load of `session` replays, as `history` asks: its conversation kept (from its
    /// start, or only what no client was sent), after a note saying how much of it went.
    pub(super) fn replay(&self, session: &str, history: History) -> Vec<bytes::Bytes> {
        let (mut lines, dropped): (Vec<bytes::Bytes>, u64) = match history {
            History::Full => {
                let (updates, dropped) = self.held.updates(session);
                (updates.cloned().collect(), dropped)
            }
            History::PendingOnly => {
                let (updates, dropped) = self.held.unseen_updates(session);
                (updates.cloned().collect(), dropped)
            }
            History::None => (Vec::new(), 0),
        };
        if dropped > 0 {
            let note = format!(
                "{dropped} updates of this session were not kept (the oldest, past 2 MiB, or one over 256 KiB); what follows is the rest."
            );
            let note = crate::questions::chat::note(session, &note);
            lines.insert(
                0,
                crate::jsonrpc::notification(crate::methods::SESSION_UPDATE, &note),
            );
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::History;

    #[test]
    fn a_load_asks_for_its_history_in_meta_and_gets_all_of_it_otherwise() {
        let of = |p: &str| History::of(Some(p));
        assert_eq!(
            of(r#"{"_meta":{"historyPolicy":"pending_only"}}"#),
            History::PendingOnly
        );
        assert_eq!(of(r#"{"_meta":{"historyPolicy":"none"}}"#), History::None);
        assert_eq!(of(r#"{"_meta":{"historyPolicy":"full"}}"#), History::Full);
        assert_eq!(
            of(r#"{"_meta":{"historyPolicy":"everything"}}"#),
            History::Full
        );
        assert_eq!(of(r#"{"sessionId":"s"}"#), History::Full);
        assert_eq!(History::of(None), History::Full);
    }
}
