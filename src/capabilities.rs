//! The `initialize` capability merges of PROTOCOL.md section 2, and what a client's
//! `initialize` says it can show. Each merge rewrites only the objects on its path
//! ([`crate::rawjson::merge`]). Capabilities are read and merged in the member of the message's own protocol version:
//! v1's `clientCapabilities` / `agentCapabilities`, or the v2 draft's `capabilities`.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::questions::META_KEY;
use crate::rawjson::{merge, Existing, RawObject};

/// The member of an `initialize` request's params or response's result that holds the
/// capabilities in protocol version 1 (ACP v1).
const V1_CLIENT: &str = "clientCapabilities";
const V1_AGENT: &str = "agentCapabilities";
/// The same member in the protocol version 2 draft, for both sides
/// (`agent-client-protocol-schema`'s `v2::InitializeRequest` / `InitializeResponse`).
const V2: &str = "capabilities";

/// Which member of `obj` (an `initialize` request's params or response's result) holds its
/// capabilities: v2's `capabilities` when its `protocolVersion` is 2 or more, or when it has
/// `capabilities` and not the v1 member; else the v1 member `v1`. A merge then creates
/// nothing a peer of the other version would read.
fn capabilities_key(obj: Option<&RawObject<'_>>, v1: &'static str) -> &'static str {
    let Some(obj) = obj else { return v1 };
    let version = obj
        .get("protocolVersion")
        .and_then(|v| v.get().parse::<u64>().ok());
    let v2_shape = obj.get(V2).is_some() && obj.get(v1).is_none();
    if version.is_some_and(|v| v >= 2) || v2_shape {
        V2
    } else {
        v1
    }
}

/// [`capabilities_key`] of the member `outer` (`params` or `result`) of the message `line`.
fn capabilities_key_in(line: &str, outer: &str, v1: &'static str) -> &'static str {
    let inner = RawObject::parse(line)
        .and_then(|o| o.get(outer))
        .and_then(|v| RawObject::parse(v.get()));
    capabilities_key(inner.as_ref(), v1)
}

/// What the client's `initialize` said about showing questions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientSupport {
    /// `clientCapabilities._meta["sandboxagent.dev"].extensions.sessionRequestQuestion`
    /// (`capabilities._meta...` in protocol version 2).
    pub native_questions: bool,
    /// `clientCapabilities.elicitation.form` (v2: `capabilities.elicitation.form`) is present.
    pub elicitation_form: bool,
    /// The vendors' methods ([`crate::questions::sources::VENDORS`]) the client said it
    /// understands (docs/AGENT-DIALECTS.md 2.1): a `_meta` key named after the method, with
    /// or without a leading `_`, or the vendor's own opt-in.
    pub vendor_methods: Vec<&'static str>,
    /// The client, when the bridge knows it by name (`crate::clients`).
    pub known: Option<&'static crate::clients::Known>,
}

impl ClientSupport {
    pub fn from_initialize(params: Option<&RawValue>) -> Self {
        let whole: Value = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        let params = params.and_then(|p| RawObject::parse(p.get()));
        let key = capabilities_key(params.as_ref(), V1_CLIENT);
        let caps: Value = params
            .as_ref()
            .and_then(|p| p.get(key))
            .and_then(|c| serde_json::from_str(c.get()).ok())
            .unwrap_or(Value::Null);
        let meta = &caps["_meta"];
        let said =
            |key: &str| !matches!(meta.get(key), None | Some(Value::Null | Value::Bool(false)));
        let vendor_methods = crate::questions::sources::VENDORS
            .iter()
            .filter(|v| {
                let m = v.method;
                let opted_in = v
                    .opt_in
                    .as_ref()
                    .is_some_and(|o| meta.get(o.key).is_some_and(|x| (o.said)(x)));
                said(m) || said(&format!("_{m}")) || opted_in
            })
            .map(|v| v.method)
            .collect();
        ClientSupport {
            native_questions: caps["_meta"][META_KEY]["extensions"]["sessionRequestQuestion"]
                == Value::Bool(true),
            elicitation_form: caps["elicitation"]["form"].is_object(),
            vendor_methods,
            known: crate::clients::recognize(&whole, &caps),
        }
    }

    /// Whether the client understands this vendor method (with or without its leading `_`).
    pub fn understands(&self, method: &str) -> bool {
        let m = method.strip_prefix('_').unwrap_or(method);
        self.vendor_methods.contains(&m)
    }
}

/// The client's `initialize` request with the extension flag set (the bridge answers
/// every question, so the agent may ask).
pub fn merge_initialize_request(line: &str) -> Option<String> {
    merge(
        line,
        &[
            "params",
            capabilities_key_in(line, "params", V1_CLIENT),
            "_meta",
            META_KEY,
            "extensions",
        ],
        "sessionRequestQuestion",
        &Value::Bool(true),
        Existing::Replace,
    )
}

/// The agent's `initialize` response with the extension flag and the bridge's version
/// added (never overwriting what the agent declared).
pub fn merge_initialize_response(line: &str) -> Option<String> {
    let caps = capabilities_key_in(line, "result", V1_AGENT);
    let line = merge(
        line,
        &["result", caps, "_meta", META_KEY, "extensions"],
        "sessionRequestQuestion",
        &Value::Bool(true),
        Existing::Keep,
    )?;
    merge(
        &line,
        &["result", caps, "_meta", META_KEY],
        "questionBridge",
        &json!({ "version": env!("CARGO_PKG_VERSION") }),
        Existing::Keep,
    )
}

/// The client's `initialize` request with a vendor's opt-in added to its capabilities'
/// `_meta` (an existing one is kept): the bridge shows its questions anywhere.
pub fn offer_opt_in(line: &str, opt_in: &crate::questions::sources::OptIn) -> Option<String> {
    offer_meta(line, opt_in.key, &(opt_in.offer)())
}

fn offer_meta(line: &str, key: &str, value: &Value) -> Option<String> {
    let caps = capabilities_key_in(line, "params", V1_CLIENT);
    merge(line, &["params", caps, "_meta"], key, value, Existing::Keep)
}

/// The client's `initialize` request with `clientCapabilities.elicitation.form = {}` added
/// (v2: `capabilities.elicitation.form`; `--advertise-elicitation`; an existing `form` is
/// kept).
pub fn advertise_elicitation(line: &str) -> Option<String> {
    merge(
        line,
        &[
            "params",
            capabilities_key_in(line, "params", V1_CLIENT),
            "elicitation",
        ],
        "form",
        &json!({}),
        Existing::Keep,
    )
}

/// The client's `initialize` request with its file and terminal capabilities taken off
/// (`fs.readTextFile`, `fs.writeTextFile` and `terminal` false), for an agent inside the
/// wall (docs/SECURITY.md, "The agent itself"): what a client reads, writes or runs for the
/// agent, it does outside the wall.
pub fn withhold_client_tools(line: &str) -> Option<String> {
    let caps = capabilities_key_in(line, "params", V1_CLIENT);
    let no = Value::Bool(false);
    let line = merge(line, &["params", caps], "terminal", &no, Existing::Replace)?;
    let line = merge(
        &line,
        &["params", caps, "fs"],
        "readTextFile",
        &no,
        Existing::Replace,
    )?;
    merge(
        &line,
        &["params", caps, "fs"],
        "writeTextFile",
        &no,
        Existing::Replace,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_inside_the_wall_is_offered_no_client_files_or_terminals() {
        let line = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"x":1}}}"#;
        let v: Value = serde_json::from_str(&withhold_client_tools(line).unwrap()).unwrap();
        assert_eq!(
            v["params"]["clientCapabilities"],
            json!({"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"x":1})
        );
    }

    #[test]
    fn merge_creates_the_path_and_keeps_everything_else() {
        let line = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}},"x":1e400}}"#;
        assert_eq!(
            merge_initialize_request(line).unwrap(),
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}},"x":1e400}}"#
        );
    }

    #[test]
    fn merge_keeps_existing_siblings_and_values() {
        let line = r#"{"id":0,"result":{"agentCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"other":1,"sessionRequestQuestion":false}},"z":"\u00e9"}}}}"#;
        let merged: Value =
            serde_json::from_str(&merge_initialize_response(line).unwrap()).unwrap();
        let meta = &merged["result"]["agentCapabilities"]["_meta"];
        assert_eq!(meta["z"], "é");
        let ours = &meta["sandboxagent.dev"];
        assert_eq!(ours["extensions"]["other"], 1);
        assert_eq!(ours["extensions"]["sessionRequestQuestion"], false);
        assert_eq!(ours["questionBridge"]["version"], env!("CARGO_PKG_VERSION"));
        // Raw text of untouched members survives.
        assert!(merge_initialize_response(line)
            .unwrap()
            .contains(r#""z":"\u00e9""#));
    }

    #[test]
    fn merge_into_a_non_object_is_refused() {
        assert_eq!(
            merge_initialize_request(r#"{"params":{"clientCapabilities":3}}"#),
            None
        );
        assert_eq!(merge("[1]", &[], "k", &json!(1), Existing::Keep), None);
    }

    #[test]
    fn a_v2_request_is_merged_into_its_own_capabilities() {
        let line = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ide","version":"1"},"capabilities":{"auth":{}}}}"#;
        assert_eq!(
            merge_initialize_request(line).unwrap(),
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ide","version":"1"},"capabilities":{"auth":{},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}}"#
        );
        assert_eq!(
            advertise_elicitation(line).unwrap(),
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ide","version":"1"},"capabilities":{"auth":{},"elicitation":{"form":{}}}}}"#
        );
        // Version 2 without capabilities: they are created under the v2 name.
        assert_eq!(
            merge_initialize_request(r#"{"id":0,"params":{"protocolVersion":2}}"#).unwrap(),
            r#"{"id":0,"params":{"protocolVersion":2,"capabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}}"#
        );
        // The v2 shape without a version number.
        assert_eq!(
            merge_initialize_request(r#"{"id":0,"params":{"capabilities":{}}}"#).unwrap(),
            r#"{"id":0,"params":{"capabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}}"#
        );
    }

    #[test]
    fn a_v2_response_is_merged_into_its_own_capabilities() {
        let version = env!("CARGO_PKG_VERSION");
        let line = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"agent","version":"1"},"capabilities":{"session":{}},"authMethods":[]}}"#;
        assert_eq!(
            merge_initialize_response(line).unwrap(),
            format!(
                r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":2,"info":{{"name":"agent","version":"1"}},"capabilities":{{"session":{{}},"_meta":{{"sandboxagent.dev":{{"extensions":{{"sessionRequestQuestion":true}},"questionBridge":{{"version":"{version}"}}}}}}}},"authMethods":[]}}}}"#
            )
        );
        // An agent that answers a v2 client with version 1 uses, and gets, the v1 member.
        let v1 = r#"{"id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#;
        assert_eq!(
            merge_initialize_response(v1).unwrap(),
            format!(
                r#"{{"id":0,"result":{{"protocolVersion":1,"agentCapabilities":{{"_meta":{{"sandboxagent.dev":{{"extensions":{{"sessionRequestQuestion":true}},"questionBridge":{{"version":"{version}"}}}}}}}}}}}}"#
            )
        );
    }

    #[test]
    fn a_v1_message_keeps_the_v1_member() {
        // Version 1 with no capabilities at all: the v1 member is created, as before.
        assert_eq!(
            merge_initialize_request(r#"{"id":0,"params":{"protocolVersion":1}}"#).unwrap(),
            r#"{"id":0,"params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}}"#
        );
        // Both members present in a version 1 message: the v1 one is the capabilities.
        let both =
            r#"{"id":0,"params":{"protocolVersion":1,"capabilities":{},"clientCapabilities":{}}}"#;
        assert_eq!(
            merge_initialize_request(both).unwrap(),
            r#"{"id":0,"params":{"protocolVersion":1,"capabilities":{},"clientCapabilities":{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}}"#
        );
    }

    fn support(params: &str) -> ClientSupport {
        let p = RawValue::from_string(params.into()).unwrap();
        ClientSupport::from_initialize(Some(&p))
    }

    #[test]
    fn client_support_is_read() {
        let both = ClientSupport {
            native_questions: true,
            elicitation_form: true,
            vendor_methods: Vec::new(),
            known: None,
        };
        assert_eq!(
            support(
                r#"{"clientCapabilities":{"elicitation":{"form":{}},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}"#
            ),
            both
        );
        // Version 2: from `capabilities`, whatever a v1 member says.
        assert_eq!(
            support(
                r#"{"protocolVersion":2,"capabilities":{"elicitation":{"form":{}},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}},"clientCapabilities":{}}"#
            ),
            both
        );
        assert_eq!(
            support(r#"{"protocolVersion":1,"capabilities":{"elicitation":{"form":{}}}}"#),
            ClientSupport {
                native_questions: false,
                elicitation_form: true,
                vendor_methods: Vec::new(),
                known: None,
            }
        );
        assert_eq!(
            ClientSupport::from_initialize(None),
            ClientSupport::default()
        );
    }

    #[test]
    fn vendor_methods_the_client_understands() {
        let support = |caps: serde_json::Value| {
            let params = json!({"protocolVersion": 1, "clientCapabilities": caps}).to_string();
            let raw = RawValue::from_string(params).unwrap();
            ClientSupport::from_initialize(Some(&raw))
        };
        let none = support(json!({"_meta": {"x.ai/ask_user_question": false}}));
        assert!(crate::questions::sources::VENDORS
            .iter()
            .all(|v| !none.understands(v.method)));
        let some = support(json!({"_meta": {
            "_x.ai/ask_user_question": {},
            "cursor/ask_question": true,
            "geminiCli.hostInput": {"requestUserInput": true, "version": 1},
            "opencode/question": {"version": 1}
        }}));
        for m in [
            "x.ai/ask_user_question",
            "_x.ai/ask_user_question",
            "cursor/ask_question",
            "_cursor/ask_question",
            "gemini/requestUserInput",
            "opencode/question",
        ] {
            assert!(some.understands(m), "{m}");
        }
        assert!(!some.understands("cursor/create_plan"));
        assert!(
            !support(json!({"_meta": {"geminiCli.hostInput": {"requestUserInput": false}}}))
                .understands("gemini/requestUserInput")
        );
    }
}
