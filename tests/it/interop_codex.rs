//! A real Codex, offline: codex-acp 2.6 (npm, running the native Codex CLI 0.166 as its app
//! server) behind the real bridge, its model the scripted fake of the OpenAI Responses API in
//! `tests/it/common/fake_model/`. Nothing leaves the machine but the npm install.
//!
//! The approval policy (docs/POLICY.md) answers Codex's command approvals: the fake model
//! runs `git status`, which a rule allows, then `rm -rf build`, which a rule denies; neither
//! reaches the client, each is a note in its chat, and the model gets each result. A command
//! no rule covers is asked as codex-acp sent it, which `fixtures/real-agents/` pins
//! (`ACP_QB_RECORD=1` rewrites it). When npm cannot install the agent, the tests say so
//! loudly on stderr and pass without running.
//!
//! What codex-acp 2.6 sends (read from the live traffic, not assumed): the command of an
//! approval is a string in `rawInput.command` (Codex's `/bin/bash -lc '<cmd>'` with the
//! shell taken off), never an argv; and its only `reject_once` option is "cancel", which
//! ends Codex's turn, so the model sees the refusal ("aborted by user") in the next turn.
//!
//! Codex asks only about what runs outside its sandbox: the rig starts it read-only with
//! on-request approvals, and the fake model asks for each command to run unsandboxed
//! (`sandbox_permissions: "require_escalated"`), as a model does when it needs to.

use crate::common;
use std::path::PathBuf;

use crate::common::chunks;
use crate::common::fake_model::{output_text, Dialect, Kind, Reply};
use crate::common::real_agent::{
    plain_client, record_or_load, Agent, Rig, CODEX_ACP_VERSION, CODEX_VERSION,
};
use serde_json::{json, Value};

const POLICY: &str = "[[rule]]\nid = \"git-read\"\ndecision = \"allow\"\n\
    command = [\"git\", [\"status\", \"log\"]]\n\n\
    [[rule]]\nid = \"no-rm\"\ndecision = \"deny\"\ncommand = [\"rm\", [\"-rf\", \"-r\", \"-fr\"]]\n";
/// Codex's shell tool for its built-in models (unified exec): one command line in `cmd`.
const TOOL: &str = "exec_command";

/// The fake model's call of [`TOOL`] to run `cmd` outside the sandbox.
fn unsandboxed(cmd: &str, why: &str) -> Reply {
    Reply::tool(
        TOOL,
        json!({"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": why}),
    )
}

/// A run: the rig, with [`POLICY`] given to the bridge (`--policy`), and a session.
struct Run {
    codex: Rig,
    session: String,
    /// The folder of the policy file.
    policy: PathBuf,
}

impl Run {
    /// Starts the rig with `script` and opens a session; `None` when the agent cannot be
    /// installed (the test then passes without running).
    async fn start(name: &str, script: Vec<Reply>) -> Option<Self> {
        let policy = common::temp_dir(&format!("{name}-policy"));
        let file = policy.join("policy.toml");
        std::fs::write(&file, POLICY).expect("write the policy");
        let args = ["--policy", file.to_str().expect("a UTF-8 path")];
        let Some(mut codex) = Rig::start(Agent::Codex, name, script, &args).await else {
            let _ = std::fs::remove_dir_all(&policy);
            return None;
        };
        let session = codex.open(plain_client()).await;
        Some(Self {
            codex,
            session,
            policy,
        })
    }

    /// Checks the end of a run: the bridge exits cleanly after the client closes stdin,
    /// and the agent called the fake's Responses API and nothing else (no `CONNECT` out).
    async fn finish(mut self) {
        let codex = &mut self.codex;
        assert_eq!(codex.finish().await, 0, "{}", codex.bridge.stderr());
        let requests = codex.model.requests();
        let other = requests.iter().any(|r| r.kind == Kind::Other);
        assert!(!other, "unexpected requests: {:?}", codex.model.paths());
        let _ = std::fs::remove_dir_all(&self.policy);
    }
}

#[tokio::test]
async fn a_policy_allows_and_denies_codex_commands_and_the_model_gets_each_result() {
    const FINAL: &str = "Status seen; the build stays.";
    let script = vec![
        unsandboxed("git status", "Show the repository's status?"),
        unsandboxed("rm -rf build", "Remove the build folder?"),
        Reply::text(FINAL),
    ];
    let Some(mut run) = Run::start("codex-policy", script).await else {
        return;
    };
    let (codex, session) = (&mut run.codex, run.session.as_str());
    let b = &mut codex.bridge;
    b.prompt(2, session, "show the status, then clean").await;
    let (done, seen) = b.response(json!(2)).await;
    // The deny picks codex-acp's only reject_once option, "cancel": Codex ends its turn.
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    let asked = |msgs: &[Value]| {
        msgs.iter()
            .any(|m| m["method"] == "session/request_permission")
    };
    assert!(!asked(&seen), "the policy answered both: {seen:#?}");
    let chat = chunks(&seen);
    assert!(
        chat.contains("Allowed by policy rule `git-read`: git status"),
        "{chat}"
    );
    assert!(
        chat.contains("Denied by policy rule `no-rm`: rm -rf build"),
        "{chat}"
    );

    // Codex offered its shell tool as the fake answered it.
    let offered = codex.model.wait_step(0).await;
    let tool = offered.tool(TOOL);
    let tool = tool.unwrap_or_else(|| panic!("no {TOOL}: {:?}", offered.tool_names()));
    assert_eq!(tool["parameters"]["properties"]["cmd"]["type"], "string");
    assert_eq!(offered.body["model"], common::real_agent::CODEX_MODEL);

    // git ran, unsandboxed, in the project: its own words.
    let ran = output_text(&codex.model.tool_output(0).await);
    assert!(ran.contains("No commits yet"), "{ran}");
    assert!(ran.contains("Process exited with code 0"), "{ran}");
    assert!(codex.cwd.join("build").is_dir(), "rm -rf never ran");

    // The next turn carries Codex's word for the refusal, and the model ends it.
    let b = &mut codex.bridge;
    b.prompt(3, session, "go on").await;
    let (done, seen) = b.response(json!(3)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(!asked(&seen), "{seen:#?}");
    assert!(chunks(&seen).ends_with(FINAL), "{seen:#?}");
    let refused = output_text(&codex.model.tool_output(1).await);
    assert!(refused.contains("aborted by user"), "{refused}");
    assert!(codex.cwd.join("build").is_dir(), "rm -rf never ran");
    run.finish().await;
}

#[tokio::test]
async fn codex_asks_the_client_about_a_command_no_rule_covers() {
    const FINAL: &str = "The file x is there.";
    const NAME: &str = "codex-acp-2.6-exec";
    let script = vec![
        unsandboxed("touch x", "Create the file x?"),
        Reply::text(FINAL),
    ];
    let Some(mut run) = Run::start("codex-ask", script).await else {
        return;
    };
    let (codex, session) = (&mut run.codex, run.session.as_str());
    let b = &mut codex.bridge;
    b.prompt(2, session, "create x").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let cwd = codex.cwd.to_string_lossy().into_owned();
    // The command as one string, not an argv; the working directory beside it.
    let raw_input = json!({"command": "touch x", "cwd": cwd});
    assert_eq!(ask["params"]["toolCall"]["rawInput"], raw_input, "{ask}");
    let expected = json!({"sessionId": session,
        "toolCall": {"toolCallId": Dialect::OpenAi.tool_id(0), "title": "touch x", "rawInput": raw_input,
            "kind": "execute", "status": "pending"},
        "options": [
            {"optionId": "allow_once", "name": "Yes, proceed", "kind": "allow_once"},
            {"optionId": "accept_execpolicy_amendment", "kind": "allow_always",
                "name": "Yes, and don't ask again for commands that start with `touch x`"},
            {"optionId": "cancel", "name": "No, and tell Codex what to do differently",
                "kind": "reject_once"}]});
    assert_eq!(ask["params"], expected);

    let outcome = json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}});
    b.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": outcome}))
        .await;
    let (done, after) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(chunks(&after).ends_with(FINAL), "{after:#?}");
    let ran = output_text(&codex.model.tool_output(0).await);
    assert!(ran.contains("Process exited with code 0"), "{ran}");
    assert!(codex.cwd.join("x").is_file(), "touch x ran in the project");

    let live = codex.permission_exchange(session);
    let comment = format!(
        "codex-acp {CODEX_ACP_VERSION} (Codex CLI {CODEX_VERSION}) behind the bridge with an approval \
         policy that covers no `touch`; the fake model runs `touch x` outside the sandbox, \
         codex-acp asks, the client allows once. The permission request as the client got \
         it, and its answer. Recorded by tests/it/interop_codex.rs (ACP_QB_RECORD=1); <session> \
         and <cwd> stand for the run's session id and working directory. Not replayed."
    );
    let stored = record_or_load(NAME, &comment, &live);
    assert_eq!(
        stored[1..],
        live[..],
        "fixtures/real-agents/{NAME}.jsonl is stale: rerun with ACP_QB_RECORD=1 and review"
    );
    run.finish().await;
}
