//! The settings of the [`super::Router`] ([`RouterConfig`], from the command line) and the
//! [`Counters`] it keeps for status and benchmarks.

use std::time::Duration;

use crate::questions::Dialect;

/// Settings of the routing core.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    /// Upper bound on requests in flight per direction, and on pending questions in all
    /// sessions; one more is refused with `-32000`, so memory stays bounded.
    pub max_in_flight: usize,
    /// Deadline for every question (`--question-timeout`); a request's `timeoutMs` may
    /// shorten it.
    pub question_timeout: Option<Duration>,
    /// Most questions one session may have pending (`--max-pending-per-session`).
    pub max_pending_per_session: usize,
    /// `--client-dialect`: `None` chooses from the client's `initialize` (auto).
    pub client_dialect: Option<Dialect>,
    /// Tell the agent the client renders form elicitations even when it does not, and show
    /// them as questions (the default, unless `--no-opt-in form`), where some surface can
    /// take them ([`Router::can_take_questions`]).
    pub advertise_elicitation: bool,
    /// `--advertise-elicitation` given: offer forms even where no surface could take a
    /// question the client cannot show.
    pub force_forms: bool,
    /// The vendors' opt-ins (`crate::questions::sources::OptIn::name`) offered to the agent
    /// when some surface can take their questions; the command line offers all of them but
    /// those named by `--no-opt-in`.
    pub opt_ins: Vec<&'static str>,
    /// Make question lifecycle events ([`Outbox::events`]) for the control server, the
    /// journal and notifications.
    pub events: bool,
    /// A question the client cannot show waits for an answer through the control server
    /// instead of being rejected as `unsupported` (the control server is running).
    pub hold_unsupported: bool,
    /// `--permission-prompts`: how questions are asked as permission prompts; `None`
    /// chooses by the client (`crate::clients`).
    pub permission_prompts: Option<crate::questions::prompts::Style>,
    /// `--client-cancel-requests`: send the client `$/cancel_request` for a request it shows
    /// that is over, whatever is known of the client.
    pub client_cancel_requests: bool,
    /// The control server's page (without its token), named in the chat of a question the
    /// client cannot show.
    pub page_url: Option<String>,
    /// The approval policy's files (`None`: no policy, every approval is asked). The router
    /// never reads them: it asks the shell for each decision ([`super::Effect::Decide`]).
    pub policy: Option<PolicyFiles>,
    /// The agent's name as its command says (`crate::child::agent_name`), which policy
    /// rules match besides the name it gives in `initialize`.
    pub agent: String,
    /// The agent's folder: the session folder of a session the bridge did not see begin.
    pub cwd: Option<std::path::PathBuf>,
    /// The prefix of the ids of the requests the bridge sends (random per process by
    /// default: [`crate::jsonrpc::bridge_id_prefix`]), so no agent can predict them.
    pub id_prefix: String,
    /// `--linger` (a holder): a client may leave and another attach; what the agent sends
    /// meanwhile is kept for it ([`super::stores::held`]).
    pub linger: bool,
    /// The agent runs inside the wall (`--sandbox`): it is offered no client files or
    /// terminals, and its `fs/*` and `terminal/*` requests are refused (what the client
    /// does for it runs outside the wall).
    pub walled: bool,
}
pub use crate::policy::desk::PolicyFiles;

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            max_in_flight: 16_384,
            question_timeout: None,
            max_pending_per_session: 32,
            client_dialect: None,
            advertise_elicitation: false,
            force_forms: false,
            opt_ins: Vec::new(),
            events: false,
            hold_unsupported: false,
            permission_prompts: None,
            client_cancel_requests: false,
            page_url: None,
            policy: None,
            agent: "agent".into(),
            cwd: None,
            id_prefix: crate::jsonrpc::bridge_id_prefix(),
            linger: false,
            walled: false,
        }
    }
}

/// Counters for status and benchmarks.
#[derive(Debug, Default, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    pub forwarded_to_agent: u64,
    pub forwarded_to_client: u64,
    pub dropped_from_agent: u64,
    pub rejected_from_client: u64,
    pub questions_asked: u64,
    pub questions_answered: u64,
    pub questions_rejected: u64,
    pub questions_invalid: u64,
    pub late_answers_dropped: u64,
    /// Tool approvals the approval policy answered (allowed or denied), never asked.
    pub decided_by_policy: u64,
}
