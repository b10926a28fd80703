//! The question extension `_sandboxagent/session/request_question`.
//!
//! - [`model`]: the dialect-neutral question and the validation of the agent's params;
//! - [`answer`]: reasons, outcomes, and the normalization of client answers;
//! - [`open`]: the open questions (what was asked, and its delivery), indexed for O(1)
//!   routing; [`recent`]: bounded memories of what just ended.

pub mod answer;
pub mod chat;
pub mod dialect;
pub mod model;
pub mod open;
pub mod prompts;
pub mod recent;
pub mod sources;

/// The extension's method name.
pub const METHOD: &str = crate::methods::SESSION_REQUEST_QUESTION;
/// The `_meta` key the extension's capability flags live under.
pub const META_KEY: &str = "sandboxagent.dev";

/// How a question is shown to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// The extension request itself, forwarded as the agent sent it.
    Extension,
    /// ACP `elicitation/create` in form mode.
    Elicitation,
    /// ACP `session/request_permission`, for one single-select item.
    Permission,
    /// The agent's own request, forwarded as it was sent (a form to a client that renders
    /// forms, a permission request), and the client's result returned unchanged.
    #[value(skip)]
    Native,
    /// Not shown to the client at all: the question waits on the control server (page,
    /// CLI, `--on-question`) alone (`--client-dialect control`).
    Control,
}

impl Dialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Extension => "extension",
            Dialect::Elicitation => "elicitation",
            Dialect::Permission => "permission",
            Dialect::Native => "native",
            Dialect::Control => "control",
        }
    }
}
