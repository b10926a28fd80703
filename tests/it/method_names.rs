//! The method names of `acp_question_bridge::methods` against the official ACP schema crate
//! (`agent-client-protocol-schema` 1.15.1, a dev-dependency only, with the features
//! Cargo.toml gives it): every name the schema has is the schema's own, every other one is
//! listed here as one the schema does not have (and is checked to be missing from it), and
//! every constant of `src/methods.rs` is on one of the two lists.

use std::collections::BTreeSet;

use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, CLIENT_METHOD_NAMES, PROTOCOL_LEVEL_METHOD_NAMES,
};
use serde_json::Value;

use acp_question_bridge::methods;

/// Ours that the schema crate names, each beside the schema's value.
fn in_the_schema() -> Vec<(&'static str, &'static str)> {
    let (a, c, p) = (
        AGENT_METHOD_NAMES,
        CLIENT_METHOD_NAMES,
        PROTOCOL_LEVEL_METHOD_NAMES,
    );
    vec![
        // The client's (methods agents handle).
        (methods::INITIALIZE, a.initialize),
        (methods::AUTHENTICATE, a.authenticate),
        (methods::SESSION_NEW, a.session_new),
        (methods::SESSION_LOAD, a.session_load),
        (methods::SESSION_RESUME, a.session_resume),
        (methods::SESSION_PROMPT, a.session_prompt),
        (methods::SESSION_CLOSE, a.session_close),
        (methods::SESSION_CANCEL, a.session_cancel),
        (methods::SESSION_LIST, a.session_list),
        // The agent's (methods clients handle).
        (methods::SESSION_UPDATE, c.session_update),
        (
            methods::SESSION_REQUEST_PERMISSION,
            c.session_request_permission,
        ),
        (methods::ELICITATION_CREATE, c.elicitation_create),
        (methods::FS_READ_TEXT_FILE, c.fs_read_text_file),
        (methods::FS_WRITE_TEXT_FILE, c.fs_write_text_file),
        (methods::TERMINAL_CREATE, c.terminal_create),
        (methods::TERMINAL_OUTPUT, c.terminal_output),
        (methods::TERMINAL_RELEASE, c.terminal_release),
        (methods::TERMINAL_WAIT_FOR_EXIT, c.terminal_wait_for_exit),
        (methods::TERMINAL_KILL, c.terminal_kill),
        // Either side's.
        (methods::CANCEL_REQUEST, p.cancel_request),
    ]
}

/// Ours that the schema crate does not name, and why.
const NOT_IN_THE_SCHEMA: &[(&str, &str)] = &[
    (
        methods::SESSION_FORK,
        "unstable: behind the crate's `unstable_session_fork` feature, off here",
    ),
    (
        methods::SESSION_ELICITATION,
        "the older name of elicitation/create, gone from the schema",
    ),
    (methods::SESSION_REQUEST_QUESTION, "the bridge's extension"),
    (methods::CURSOR_ASK_QUESTION, "Cursor's"),
    (methods::CURSOR_CREATE_PLAN, "Cursor's"),
    (methods::XAI_ASK_USER_QUESTION, "Grok Build's"),
    (methods::GEMINI_REQUEST_USER_INPUT, "gemini-cli's"),
    (methods::OPENCODE_QUESTION, "OpenCode's"),
    (methods::QUESTIONS_LIST, "the control server's, not ACP"),
    (methods::QUESTIONS_ANSWER, "the control server's, not ACP"),
    (methods::QUESTIONS_REJECT, "the control server's, not ACP"),
    (methods::QUESTIONS_HISTORY, "the control server's, not ACP"),
    (
        methods::QUESTIONS_SUBSCRIBE,
        "the control server's, not ACP",
    ),
    (methods::QUESTIONS_EVENT, "the control server's, not ACP"),
    (
        methods::QUESTIONS_UNSUBSCRIBE,
        "the control server's, not ACP",
    ),
    (methods::BRIDGES_LIST, "the control server's, not ACP"),
    (methods::BRIDGE_STATUS, "the control server's, not ACP"),
    (methods::PAGE_VISIBLE, "the control server's, not ACP"),
];

/// Every method name the schema crate's name tables hold.
fn the_schemas_names() -> BTreeSet<String> {
    let tables = [
        serde_json::to_value(AGENT_METHOD_NAMES),
        serde_json::to_value(CLIENT_METHOD_NAMES),
        serde_json::to_value(PROTOCOL_LEVEL_METHOD_NAMES),
    ];
    let mut names = BTreeSet::new();
    for table in tables {
        let Value::Object(fields) = table.expect("a table of names serializes") else {
            panic!("a table of names is an object");
        };
        names.extend(
            fields
                .values()
                .map(|v| v.as_str().expect("a name").to_owned()),
        );
    }
    names
}

#[test]
fn a_name_the_schema_has_is_the_schemas() {
    for (ours, schemas) in in_the_schema() {
        assert_eq!(ours, schemas);
    }
}

#[test]
fn a_name_listed_as_not_in_the_schema_is_not_there() {
    let schemas = the_schemas_names();
    for (ours, why) in NOT_IN_THE_SCHEMA {
        assert!(
            !schemas.contains(*ours),
            "{ours} ({why}) is in the schema crate now: check it against it instead"
        );
    }
}

#[test]
fn every_constant_of_the_module_is_on_one_list() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/methods.rs");
    let text = std::fs::read_to_string(path).expect("src/methods.rs is readable");
    let declared: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("pub const "))
        .filter_map(|l| l.split_once(": &str = \""))
        .map(|(_, value)| value.trim_end_matches("\";"))
        .collect();
    let listed: BTreeSet<&str> = in_the_schema()
        .into_iter()
        .map(|(ours, _)| ours)
        .chain(NOT_IN_THE_SCHEMA.iter().map(|(ours, _)| *ours))
        .collect();
    assert!(declared.len() >= 20, "{declared:?}");
    assert_eq!(declared, listed);
}
