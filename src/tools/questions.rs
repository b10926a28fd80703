//! `acp-question-bridge questions list|show|answer|reject|watch`: the control server from a
//! terminal or a script, over the library's HTTP and WebSocket clients
//! (`acp_question_bridge::control::client`).

use acp_question_bridge::methods;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jsonrpsee::core::client::{ClientT, Error as RpcError, SubscriptionClientT};
use jsonrpsee::core::params::ObjectParams;
use jsonrpsee::rpc_params;
use serde_json::{json, Value};

use acp_question_bridge::control::client::{http_client, ws_client};
use acp_question_bridge::control::TOKEN_ENV;

/// `questions` and its flags.
#[derive(Debug, Args)]
pub struct QuestionsArgs {
    /// The control server: `http://127.0.0.1:PORT`. The page URL the bridge prints works
    /// too (its `#token=` is used).
    #[arg(long, value_name = "URL", global = true)]
    pub control: Option<String>,
    /// The bearer token (default: the URL's `#token=`, else $ACP_QUESTION_BRIDGE_TOKEN).
    #[arg(long, value_name = "TOKEN", global = true)]
    pub token: Option<String>,
    /// Read the token from this file (as written by `--control-token-file`).
    #[arg(long, value_name = "PATH", global = true, conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, Subcommand)]
pub enum Action {
    /// Print the pending questions of every session.
    List {
        /// Print the JSON the server returns instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Print one pending question in full: what the agent was doing (its last message, its
    /// plan, the tool calls of the turn), the tool call with its command or diff, and the
    /// items with their options.
    Show {
        session_id: String,
        question_id: String,
        /// Print its JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Answer a question. For a one-item question, VALUES are that item's answers (one for
    /// single-select, one or more for multi-select; an option's value or label, or free
    /// text where allowed). For several items use --json '[["a"],["b","c"]]'.
    Answer {
        session_id: String,
        question_id: String,
        #[arg(value_name = "VALUES", required_unless_present = "json")]
        values: Vec<String>,
        /// All answers as JSON: one array of strings per item.
        #[arg(long, value_name = "ANSWERS", conflicts_with = "values")]
        json: Option<String>,
        /// The bridge the question belongs to (an inbox needs it only when several bridges
        /// have a question with these ids; `list` shows it).
        #[arg(long, value_name = "ID")]
        bridge: Option<String>,
        /// Also allow it from now on: write the tool approval's "Always allow" rule (as
        /// `list --json` shows it in `alwaysAllow`) to your policy file. Only with an
        /// answer that allows; by default for this agent in this project.
        #[arg(long)]
        always_allow: bool,
        /// With --always-allow: for every agent.
        #[arg(long, requires = "always_allow")]
        every_agent: bool,
        /// With --always-allow: in every folder.
        #[arg(long, requires = "always_allow")]
        everywhere: bool,
    },
    /// Reject a question (the agent gets status "rejected").
    Reject {
        session_id: String,
        question_id: String,
        /// declined (default), cancelled, ...
        #[arg(long)]
        reason: Option<String>,
        /// The bridge the question belongs to (as for `answer`).
        #[arg(long, value_name = "ID")]
        bridge: Option<String>,
    },
    /// Print every question event as a JSON line (pending ones first) until the bridge stops.
    Watch,
}

/// Why a `questions` command failed; one line for stderr.
enum Failure {
    /// The command line cannot work (exit status 2, like clap's own usage errors).
    Usage(String),
    /// The call failed or was refused (exit status 1).
    Call(String),
}

impl From<String> for Failure {
    fn from(msg: String) -> Self {
        Failure::Call(msg)
    }
}

struct Target {
    http: String,
    ws: String,
    token: String,
}

fn target(a: &QuestionsArgs) -> Result<Target, Failure> {
    let usage = |msg: &str| Failure::Usage(msg.to_owned());
    let url = a.control.as_deref().ok_or_else(|| {
        usage("--control <URL> is required (the bridge prints it when started with --control)")
    })?;
    let (base, fragment) = url.split_once('#').unwrap_or((url, ""));
    let from_url = fragment
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .filter(|t| !t.is_empty());
    let token = match (&a.token, &a.token_file) {
        (Some(t), _) => t.clone(),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .trim()
            .to_owned(),
        (None, None) => match from_url {
            Some(t) => t.to_owned(),
            None => std::env::var(TOKEN_ENV).map_err(|_| {
                Failure::Usage(format!(
                    "no token: pass --token, --token-file, a URL with #token=, or set {TOKEN_ENV}"
                ))
            })?,
        },
    };
    let base = base.trim_end_matches('/');
    let rest = base
        .strip_prefix("http://")
        .ok_or_else(|| usage("--control must be an http:// URL"))?;
    Ok(Target {
        http: format!("{base}/"),
        ws: format!("ws://{rest}/"),
        token,
    })
}

/// One line for a failed call to the control server at `url`.
fn describe(e: RpcError, url: &str) -> String {
    match e {
        RpcError::Call(obj) => match obj.data() {
            Some(d) => format!("{} ({})", obj.message(), d.get()),
            None => obj.message().to_owned(),
        },
        RpcError::Transport(t) => format!("cannot reach the control server at {url}: {t}"),
        other => other.to_string(),
    }
}

fn summary(questions: &[Value]) -> String {
    if questions.is_empty() {
        return "No questions right now.\n".into();
    }
    let mut s = String::new();
    for q in questions {
        let str_of = |k: &str| q[k].as_str().unwrap_or("").to_owned();
        s += &format!(
            "session {}  question {}  ({}, shown as {}{})\n",
            str_of("sessionId"),
            str_of("questionId"),
            match q["source"].as_str() {
                Some("question") | None => "asked with the extension".to_owned(),
                Some("permission") => "a tool approval".to_owned(),
                Some("form") => "a form".to_owned(),
                Some(other) => format!("asked as {other}"),
            },
            str_of("dialect"),
            q["expiresAt"]
                .as_str()
                .map(|e| format!(", expires {e}"))
                .unwrap_or_default()
        );
        if let Some(b) = q["bridge"].as_object() {
            let agent: Vec<&str> = b
                .get("agent")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            s += &format!(
                "  bridge {} (pid {}): {}  in {}\n",
                b.get("id").and_then(Value::as_str).unwrap_or(""),
                b.get("pid").and_then(Value::as_u64).unwrap_or(0),
                agent.join(" "),
                b.get("cwd").and_then(Value::as_str).unwrap_or("")
            );
        }
        s += &digest_lines(&q["digest"]);
        s += &context_lines(&q["context"]);
        for (i, item) in q["items"].as_array().into_iter().flatten().enumerate() {
            let header = item["header"]
                .as_str()
                .map(|h| format!("[{h}] "))
                .unwrap_or_default();
            let options = item["options"].as_array().is_some_and(|o| !o.is_empty());
            let kind = match (
                options,
                item["multiSelect"].as_bool().unwrap_or(false),
                item["allowFreeText"].as_bool().unwrap_or(false),
            ) {
                (false, _, _) => " (type your answer)",
                (true, true, true) => " (pick one or more, or type)",
                (true, true, false) => " (pick one or more)",
                (true, false, true) => " (pick one, or type)",
                (true, false, false) => " (pick one)",
            };
            s += &format!(
                "  {}. {header}{}{kind}\n",
                i + 1,
                item["prompt"].as_str().unwrap_or("")
            );
            for o in item["options"].as_array().into_iter().flatten() {
                s += &format!(
                    "     - {}: {}{}{}\n",
                    o["value"].as_str().unwrap_or(""),
                    o["label"].as_str().unwrap_or(""),
                    o["kind"]
                        .as_str()
                        .map(|k| format!(" [{k}]"))
                        .unwrap_or_default(),
                    o["description"]
                        .as_str()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                );
            }
        }
        if let Some(a) = q["alwaysAllow"].as_object() {
            s += &format!(
                "  always allow `{}`: answer with an allow option and --always-allow \
                 [--every-agent] [--everywhere] (for {} in {} by default)\n",
                a.get("subject").and_then(Value::as_str).unwrap_or(""),
                a.get("agent")
                    .and_then(Value::as_str)
                    .unwrap_or("this agent"),
                a.get("project")
                    .and_then(Value::as_str)
                    .unwrap_or("this project"),
            );
        }
    }
    s
}

/// `s` without control characters (an agent's text could move the cursor or recolour the
/// terminal); newlines and tabs are kept.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '?'
            } else {
                c
            }
        })
        .collect()
}

/// The lines that show what the agent was doing: its last message, its plan, the tool calls
/// of its turn.
fn digest_lines(d: &Value) -> String {
    let mut s = String::new();
    if let Some(m) = d["lastMessage"].as_str() {
        s += &format!("  agent said: {}\n", m.trim().replace('\n', "\n    "));
    }
    let plan: Vec<String> = d["plan"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let mark = match e["status"].as_str() {
                Some("completed") => "[done]",
                Some("in_progress") => "[now]",
                _ => "[ ]",
            };
            format!("{mark} {}", e["content"].as_str().unwrap_or(""))
        })
        .collect();
    if !plan.is_empty() {
        s += &format!("  plan: {}\n", plan.join("; "));
    }
    for t in d["toolCalls"].as_array().into_iter().flatten() {
        let paths: Vec<&str> = t["paths"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        s += &format!(
            "  this turn: {} ({}, {}) {}\n",
            t["title"].as_str().unwrap_or("?"),
            t["kind"].as_str().unwrap_or("other"),
            t["status"].as_str().unwrap_or("pending"),
            paths.join(" ")
        );
    }
    if let Some(cut) = d["cut"].as_array() {
        let cut: Vec<&str> = cut.iter().filter_map(Value::as_str).collect();
        s += &format!("  (left out: {})\n", cut.join(", "));
    }
    s
}

/// The lines that show a question's context: the tool call being approved (its title, and
/// the command or path it runs on, from `rawInput`), or a form's message.
fn context_lines(context: &Value) -> String {
    let mut s = String::new();
    let tool = &context["toolCall"];
    // A diff, as lines added and removed (the unchanged lines at both ends left out).
    for c in tool["content"].as_array().into_iter().flatten() {
        if c["type"] != "diff" {
            continue;
        }
        s += &format!("  diff {}\n", c["path"].as_str().unwrap_or(""));
        let old: Vec<&str> = c["oldText"].as_str().unwrap_or("").lines().collect();
        let new: Vec<&str> = c["newText"].as_str().unwrap_or("").lines().collect();
        let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
        let tail = old[head..]
            .iter()
            .rev()
            .zip(new[head..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let (gone, added) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
        const SHOWN: usize = 40;
        for l in gone.iter().take(SHOWN) {
            s += &format!("    -{l}\n");
        }
        for l in added.iter().take(SHOWN) {
            s += &format!("    +{l}\n");
        }
        let more = gone.len().saturating_sub(SHOWN) + added.len().saturating_sub(SHOWN);
        if more > 0 {
            s += &format!("    ({more} more lines)\n");
        }
    }
    if let Some(title) = tool["title"].as_str() {
        s += &format!("  tool call: {title}");
        if let Some(kind) = tool["kind"].as_str() {
            s += &format!(" ({kind})");
        }
        s += "\n";
    }
    let input = &tool["rawInput"];
    for key in ["command", "path", "file_path", "url"] {
        match &input[key] {
            Value::String(v) => s += &format!("  {key}: {v}\n"),
            Value::Array(parts) => {
                let words: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                s += &format!("  {key}: {}\n", words.join(" "));
            }
            _ => {}
        }
    }
    if let Some(m) = context["message"].as_str() {
        s += &format!("  message: {m}\n");
    }
    // What was left out to show it within its bound (a 10 MiB diff's bytes and lines).
    for cut in context["cut"].as_array().into_iter().flatten() {
        if let Some(cut) = cut.as_str() {
            s += &format!("  (left out: {cut})\n");
        }
    }
    s
}

async fn run(a: QuestionsArgs) -> Result<(), Failure> {
    let t = target(&a)?;
    let describe = |e| describe(e, &t.http);
    let mut out = std::io::stdout().lock();
    let mut print = |s: String| {
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    };
    match a.action {
        Action::Show {
            session_id,
            question_id,
            json,
        } => {
            let c = http_client(&t.http, &t.token)?;
            let list: Vec<Value> = c
                .request(methods::QUESTIONS_LIST, rpc_params![])
                .await
                .map_err(describe)?;
            let q = list
                .into_iter()
                .find(|q| {
                    q["sessionId"] == session_id.as_str() && q["questionId"] == question_id.as_str()
                })
                .ok_or_else(|| {
                    Failure::Call(format!(
                        "no question {question_id:?} pending in session {session_id:?}"
                    ))
                })?;
            if json {
                print(format!("{q}\n"));
            } else {
                print(clean(&summary(&[q])));
            }
        }
        Action::List { json } => {
            let c = http_client(&t.http, &t.token)?;
            let list: Vec<Value> = c
                .request(methods::QUESTIONS_LIST, rpc_params![])
                .await
                .map_err(describe)?;
            if json {
                print(format!("{}\n", Value::Array(list)));
            } else {
                print(clean(&summary(&list)));
            }
        }
        Action::Answer {
            session_id,
            question_id,
            values,
            json,
            bridge,
            always_allow,
            every_agent,
            everywhere,
        } => {
            let answers = match json {
                Some(j) => serde_json::from_str::<Value>(&j)
                    .map_err(|e| Failure::Usage(format!("--json: not JSON: {e}")))?,
                None => json!([values]),
            };
            let mut p = ObjectParams::new();
            p.insert("sessionId", session_id)
                .map_err(|e| e.to_string())?;
            p.insert("questionId", question_id)
                .map_err(|e| e.to_string())?;
            p.insert("answers", answers).map_err(|e| e.to_string())?;
            if let Some(b) = bridge {
                p.insert("bridge", b).map_err(|e| e.to_string())?;
            }
            if always_allow {
                use acp_question_bridge::policy::remember::{ForAgent, Place, Remember};
                let r = Remember {
                    agent: if every_agent {
                        ForAgent::Every
                    } else {
                        ForAgent::This
                    },
                    place: if everywhere {
                        Place::Everywhere
                    } else {
                        Place::Project
                    },
                };
                p.insert("remember", r).map_err(|e| e.to_string())?;
            }
            let c = http_client(&t.http, &t.token)?;
            let r: Value = c
                .request(methods::QUESTIONS_ANSWER, p)
                .await
                .map_err(describe)?;
            print(format!("{r}\n"));
        }
        Action::Reject {
            session_id,
            question_id,
            reason,
            bridge,
        } => {
            let mut p = ObjectParams::new();
            p.insert("sessionId", session_id)
                .map_err(|e| e.to_string())?;
            p.insert("questionId", question_id)
                .map_err(|e| e.to_string())?;
            if let Some(r) = reason {
                p.insert("reason", r).map_err(|e| e.to_string())?;
            }
            if let Some(b) = bridge {
                p.insert("bridge", b).map_err(|e| e.to_string())?;
            }
            let c = http_client(&t.http, &t.token)?;
            let r: Value = c
                .request(methods::QUESTIONS_REJECT, p)
                .await
                .map_err(describe)?;
            print(format!("{r}\n"));
        }
        Action::Watch => {
            let c = ws_client(&t.ws, &t.token)
                .await
                .map_err(|e| format!("cannot reach the control server at {}: {e}", t.ws))?;
            let mut sub = c
                .subscribe::<Value, _>(
                    methods::QUESTIONS_SUBSCRIBE,
                    rpc_params![],
                    methods::QUESTIONS_UNSUBSCRIBE,
                )
                .await
                .map_err(describe)?;
            note(&format!("watching {} (Ctrl-C to stop)", t.ws));
            let list: Vec<Value> = c
                .request(methods::QUESTIONS_LIST, rpc_params![])
                .await
                .map_err(describe)?;
            for q in list {
                print(format!("{}\n", json!({"event": "pending", "question": q})));
            }
            while let Some(ev) = sub.next().await {
                match ev {
                    Ok(ev) => print(format!("{ev}\n")),
                    Err(e) => return Err(format!("subscription failed: {e}").into()),
                }
            }
        }
    }
    Ok(())
}

/// Runs `questions ...`; exit code 0 on success, 1 on a refused or failed call, 2 on a
/// command line that cannot work.
pub fn main(a: QuestionsArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(Failure::Call(format!("cannot start runtime: {e}"))),
    };
    match rt.block_on(run(a)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => fail(f),
    }
}

/// A line for the person at the terminal (stderr: stdout carries only the output).
fn note(msg: &str) {
    acp_question_bridge::logging::say("acp-question-bridge questions", msg);
}

fn fail(f: Failure) -> ExitCode {
    let (code, msg) = match f {
        Failure::Usage(msg) => (2, msg),
        Failure::Call(msg) => (1, msg),
    };
    note(&msg);
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_says_how_each_item_is_answered() {
        let list = json!([{
            "sessionId": "s1", "questionId": "q1", "dialect": "extension",
            "items": [
                {"prompt": "Notes?", "header": "Notes", "options": [],
                 "multiSelect": false, "allowFreeText": true},
                {"prompt": "DB?", "options": [{"value": "pg", "label": "Postgres"}],
                 "multiSelect": false, "allowFreeText": true},
                {"prompt": "Features?",
                 "options": [{"value": "a", "label": "Auth", "description": "login"}],
                 "multiSelect": true, "allowFreeText": false},
                {"prompt": "Day?", "options": [{"value": "fri", "label": "Friday"}],
                 "multiSelect": false, "allowFreeText": false}
            ]
        }]);
        let list = list.as_array().cloned().unwrap_or_default();
        assert_eq!(
            summary(&list),
            "session s1  question q1  (asked with the extension, shown as extension)\n\
             \x20 1. [Notes] Notes? (type your answer)\n\
             \x20 2. DB? (pick one, or type)\n\
             \x20    - pg: Postgres\n\
             \x20 3. Features? (pick one or more)\n\
             \x20    - a: Auth (login)\n\
             \x20 4. Day? (pick one)\n\
             \x20    - fri: Friday\n"
        );
    }

    #[test]
    fn summary_shows_a_tool_approval_with_its_command() {
        let list = vec![json!({
            "sessionId": "s1", "questionId": "permission:7", "dialect": "native",
            "source": "permission",
            "context": {"toolCall": {"toolCallId": "t", "title": "Run tests", "kind": "execute",
                                     "rawInput": {"command": "cargo test"}}},
            "items": [{"prompt": "Run tests", "header": "execute", "multiSelect": false,
                       "allowFreeText": false, "options": [
                {"value": "allow", "label": "Allow", "kind": "allow_once"},
                {"value": "reject", "label": "Reject", "kind": "reject_once"}]}]
        })];
        assert_eq!(
            summary(&list),
            "session s1  question permission:7  (a tool approval, shown as native)\n\
             \x20 tool call: Run tests (execute)\n\
             \x20 command: cargo test\n\
             \x20 1. [execute] Run tests (pick one)\n\
             \x20    - allow: Allow [allow_once]\n\
             \x20    - reject: Reject [reject_once]\n"
        );
    }
}
