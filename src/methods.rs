//! The JSON-RPC method names the bridge reads or writes, in one place, grouped by who sends
//! them. The names the official ACP schema also has are checked against its
//! `agent-client-protocol-schema` crate (a dev-dependency only) by `tests/it/method_names.rs`,
//! which also lists the names here it does not have.
//!
//! Below everything: this module imports nothing of the crate. Tests keep their literals:
//! they check the wire.

// The client's ACP methods (client to agent).

/// The client's first request: protocol version, capabilities, `clientInfo`.
pub const INITIALIZE: &str = "initialize";
/// The client authenticates with one of the agent's methods.
pub const AUTHENTICATE: &str = "authenticate";
/// The client opens a session in a folder (`cwd`).
pub const SESSION_NEW: &str = "session/new";
/// The client loads a saved session, which the agent replays.
pub const SESSION_LOAD: &str = "session/load";
/// The client resumes a saved session, without the replay.
pub const SESSION_RESUME: &str = "session/resume";
/// The client forks a session (unstable in ACP).
pub const SESSION_FORK: &str = "session/fork";
/// The client's turn: a prompt, answered when the agent's turn ends.
pub const SESSION_PROMPT: &str = "session/prompt";
/// The client closes a session.
pub const SESSION_CLOSE: &str = "session/close";
/// The client cancels a session's turn (a notification).
pub const SESSION_CANCEL: &str = "session/cancel";
/// The sessions the agent has (with `--linger`, the bridge answers it for an agent that
/// cannot).
pub const SESSION_LIST: &str = "session/list";

// The agent's ACP methods (agent to client).

/// What the agent is doing: message chunks, tool calls, plans (a notification).
pub const SESSION_UPDATE: &str = "session/update";
/// The agent asks the user to approve a tool call.
pub const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
/// The agent asks the user to fill in a form.
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// The older name of [`ELICITATION_CREATE`] (the ACP schema of March-April 2026).
pub const SESSION_ELICITATION: &str = "session/elicitation";
/// The agent reads a file through the client (the mock agent's `fs-read`).
pub const FS_READ_TEXT_FILE: &str = "fs/read_text_file";
/// The agent's other requests for the client's files and terminals (ACP v1).
pub const FS_WRITE_TEXT_FILE: &str = "fs/write_text_file";
pub const TERMINAL_CREATE: &str = "terminal/create";
pub const TERMINAL_OUTPUT: &str = "terminal/output";
pub const TERMINAL_RELEASE: &str = "terminal/release";
pub const TERMINAL_WAIT_FOR_EXIT: &str = "terminal/wait_for_exit";
pub const TERMINAL_KILL: &str = "terminal/kill";

// Either side.

/// A peer gives up a request it sent (a notification, `{"requestId": ...}`).
pub const CANCEL_REQUEST: &str = "$/cancel_request";

// The ACP extensions the bridge adds or reads.

/// The question extension (docs/PROTOCOL.md): the agent asks the user questions.
pub const SESSION_REQUEST_QUESTION: &str = "_sandboxagent/session/request_question";

// The vendors' methods (agent to client), each also sent with a leading `_`.

/// Cursor's questions.
pub const CURSOR_ASK_QUESTION: &str = "cursor/ask_question";
/// Cursor's plan to approve.
pub const CURSOR_CREATE_PLAN: &str = "cursor/create_plan";
/// Grok Build's questions (sent as `_x.ai/ask_user_question`).
pub const XAI_ASK_USER_QUESTION: &str = "x.ai/ask_user_question";
/// gemini-cli's questions and plans to approve.
pub const GEMINI_REQUEST_USER_INPUT: &str = "gemini/requestUserInput";
/// OpenCode's questions (also the `_meta` key of its opt-in).
pub const OPENCODE_QUESTION: &str = "opencode/question";

// The control server's methods (not ACP: the Questions page, the `questions` CLI and the
// inbox call a bridge's, or the inbox's own).

/// The pending questions.
pub const QUESTIONS_LIST: &str = "questions.list";
/// Answers a pending question (first answer wins).
pub const QUESTIONS_ANSWER: &str = "questions.answer";
/// Rejects a pending question.
pub const QUESTIONS_REJECT: &str = "questions.reject";
/// The questions answered or decided in the last 24 hours.
pub const QUESTIONS_HISTORY: &str = "questions.history";
/// Subscribes to question events.
pub const QUESTIONS_SUBSCRIBE: &str = "questions.subscribe";
/// A question event, to a subscriber (the subscription's notification).
pub const QUESTIONS_EVENT: &str = "questions.event";
/// Ends a subscription to question events.
pub const QUESTIONS_UNSUBSCRIBE: &str = "questions.unsubscribe";
/// The bridges the inbox follows (a bridge lists only itself).
pub const BRIDGES_LIST: &str = "bridges.list";
/// The status of a bridge (its counters, agent, policy), or of the inbox.
pub const BRIDGE_STATUS: &str = "bridge.status";
/// The Questions page says whether it is visible (the user is at the desk: nothing rings).
pub const PAGE_VISIBLE: &str = "page.visible";

/// [`SESSION_UPDATE`] as it stands in a line, quotes included, for a byte search.
pub const SESSION_UPDATE_QUOTED: &[u8] = &quoted::<{ SESSION_UPDATE.len() + 2 }>(SESSION_UPDATE);

/// `name` between double quotes, at compile time.
const fn quoted<const N: usize>(name: &str) -> [u8; N] {
    let name = name.as_bytes();
    assert!(name.len() + 2 == N);
    let mut out = [b'"'; N];
    let mut i = 0;
    while i < name.len() {
        out[i + 1] = name[i];
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_quoted_name_is_the_name_between_quotes() {
        assert_eq!(super::SESSION_UPDATE_QUOTED, br#""session/update""#);
    }
}
