//! The clients the bridge knows by name, and what each is known to do with the messages the
//! bridge writes itself. One table, each entry with its evidence: what was seen on the wire
//! (docs/CLIENTS.md). A client not in the table gets what every client handles: yes/no
//! permission prompts, and no `$/cancel_request`.
//!
//! A client names itself in `initialize` as `params.clientInfo.name`; agentic.nvim puts its
//! `clientInfo` inside `clientCapabilities` instead, so both places are read.

use serde_json::Value;

/// What a known client does.
#[derive(Debug, PartialEq, Eq)]
pub struct Known {
    /// `clientInfo.name`, compared without regard to case.
    pub name: &'static str,
    /// It shows every option of a permission prompt by name, and sends the one the user
    /// picked: a question's options can go in one prompt.
    pub shows_option_names: bool,
    /// It handles `$/cancel_request` for a request it shows (closes the prompt, and goes on).
    pub handles_cancel_request: bool,
    /// What was seen that says so (docs/CLIENTS.md).
    pub evidence: &'static str,
}

/// Every client the bridge knows by name.
pub const KNOWN: &[Known] = &[
    Known {
        name: "acp-question-bridge-demo",
        shows_option_names: true,
        handles_cancel_request: true,
        evidence: "the project's own `demo` (src/tools/demo.rs) lists every option by number and \
                   name, and stops waiting for an answer on `$/cancel_request` \
                   (tests/it/demo.rs::question_timeout_withdraws_the_question)",
    },
    Known {
        name: "Agentic.nvim",
        shows_option_names: true,
        handles_cancel_request: false,
        evidence: "agentic.nvim cea3f3e shows `[1] SQLite [2] Postgres [3] Dismiss` with each \
                   option's description and sends the chosen optionId; on `$/cancel_request` it \
                   raises E5560 and loses the rest of that output",
    },
    Known {
        name: "CodeCompanion.nvim",
        shows_option_names: false,
        handles_cancel_request: false,
        evidence: "codecompanion.nvim 19.22.0 keys options by kind (g1..g4) and hides their \
                   names: of two allow_once options only the last can be chosen; it ignores \
                   `$/cancel_request`",
    },
    Known {
        name: "acpx",
        shows_option_names: false,
        handles_cancel_request: false,
        evidence: "acpx 0.19.1 asks `Allow <title>? (y/N)`: y sends the first allow option, n \
                   rejects; on `$/cancel_request` it exits with code 5",
    },
];

/// The known client whose `initialize` params (and the capabilities in them) these are.
pub fn recognize(params: &Value, capabilities: &Value) -> Option<&'static Known> {
    let name = [
        &params["clientInfo"]["name"],
        &capabilities["clientInfo"]["name"],
    ]
    .into_iter()
    .find_map(Value::as_str)?;
    KNOWN.iter().find(|k| k.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recognize(params: &Value) -> Option<&'static Known> {
        super::recognize(params, &params["clientCapabilities"])
    }

    #[test]
    fn clients_are_recognized_by_either_client_info() {
        let codecompanion = json!({"clientInfo":{"name":"CodeCompanion.nvim","version":"1.0.0"}});
        assert_eq!(
            recognize(&codecompanion).map(|k| k.name),
            Some("CodeCompanion.nvim")
        );
        let agentic =
            json!({"clientCapabilities":{"clientInfo":{"name":"Agentic.nvim","version":"0.0.1"}}});
        let agentic = recognize(&agentic).expect("agentic.nvim");
        assert!(agentic.shows_option_names);
        assert_eq!(
            recognize(&json!({"clientInfo":{"name":"ACPX"}})).map(|k| k.name),
            Some("acpx")
        );
        assert_eq!(recognize(&json!({"clientInfo":{"name":"Zed"}})), None);
        assert_eq!(recognize(&json!({})), None);
        // Of the clients people run, none handles `$/cancel_request` yet.
        assert!(KNOWN
            .iter()
            .filter(|k| k.name != "acp-question-bridge-demo")
            .all(|k| !k.handles_cancel_request));
    }
}
