//! What the router remembers, each store with its bounds and a narrow API, apart from the
//! handlers that fill and read them:
//! - [`requests`]: the requests in flight each way, the ids answered already, the bridge's
//!   own request ids;
//! - [`ledger`]: what is remembered of ended questions and seen sessions;
//! - [`tool_calls`]: the tool calls the agent announced, for approvals that name them by id
//!   ([`fit`] fits one into the room it is shown in);
//! - [`sessions`]: the sessions' folders;
//! - [`shells`]: the commands that may have moved each session's shell (Claude Code's Bash
//!   keeps its folder between calls);
//! - [`digest`]: what each session's agent was doing, for its questions;
//! - [`held`]: with `--linger`, what is kept for the next client (updates, results, the
//!   agent's requests waiting for a client, the requests of a client that left);
//! - [`joined`]: with `--linger`, the clients that joined a session another client has.
//!
//! The open questions themselves are [`crate::questions::open::OpenQuestions`].

pub(super) mod clients;
pub(super) mod digest;
pub(super) mod fit;
pub(super) mod held;
pub(super) mod ledger;
pub(super) mod requests;
pub(super) mod sessions;
pub(super) mod shells;
pub(super) mod tool_calls;
