//! The handlers of the methods in the dispatch table ([`super::dispatch::TABLE`]), one
//! module per source. Each takes a request ([`super::message::Req`]) or notification
//! ([`super::message::Note`]) and answers, shows, or passes it on; a question source parses
//! its request into the one question model and hands it to [`super::lifecycle`], which owns
//! how questions are shown and how they end.

pub(super) mod cancel;
pub(super) mod client_tools;
pub(super) mod elicitation;
pub(super) mod initialize;
mod long_update;
pub(super) mod permission;
pub(super) mod prompt;
pub(super) mod question;
pub(super) mod session;
pub(super) mod tool_call;
pub(super) mod vendor;
