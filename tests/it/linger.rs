//! `--linger`: the agent outlives the editor, through the real binaries. A front is started
//! as an editor starts it (in a process group of its own, which the test SIGKILLs as an
//! editor does); its holder and the agent must live on, keep the session's questions and
//! requests, and give them to the next front that loads the session.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::Command;

use crate::common::{chunk_text, mock_pid, temp_dir, Bridge, BRIDGE, MOCK, WAIT};

/// A front around the mock agent, as an editor starts it: its own process group, in
/// `cwd`, with the test's own roster (and so holders' folder).
pub(crate) fn front(roster: &Path, cwd: &Path, linger: &str) -> Bridge {
    let mut cmd = Command::new(BRIDGE);
    cmd.args(["--linger", linger, "--no-policy", "--", MOCK])
        .current_dir(cwd)
        .env("ACP_QUESTION_BRIDGE_REGISTRY", roster)
        .env("RUST_LOG", "debug")
        .process_group(0);
    Bridge::from_command(cmd)
}

/// A roster folder (0700) and a project folder for one test.
pub(crate) fn folders(name: &str) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let base = temp_dir(name);
    let roster = base.join("r");
    std::fs::create_dir_all(&roster).expect("roster");
    std::fs::set_permissions(&roster, std::fs::Permissions::from_mode(0o700)).expect("0700");
    let cwd = base.join("p");
    std::fs::create_dir_all(&cwd).expect("project");
    (roster, cwd)
}

/// The holders listed in `roster` (their files' JSON).
pub(crate) fn holders(roster: &Path) -> Vec<Value> {
    let Ok(dir) = std::fs::read_dir(roster.join("held")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect()
}

pub(crate) fn alive(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
}

/// Waits until `pid` is gone (a zombie counts as gone).
pub(crate) async fn gone(pid: u32, within: Duration) {
    tokio::time::timeout(within, async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("process {pid} is still running"));
}

/// The editor goes, and takes its front's process group with it (SIGKILL).
pub(crate) async fn kill_editor(front: &mut Bridge) {
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(front.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("killpg");
    front.wait().await;
}

/// The editor leaves `session` with an approval pending (prompt 3) and a turn (prompt 4)
/// that says the agent's pid once the editor is gone: it is SIGKILLed with its group, and
/// the holder keeps the pid and the note that the turn ended.
async fn leave_while_waiting(first: &mut Bridge, roster: &Path, session: &str) {
    first.prompt(3, session, "permission").await;
    first.recv_until(is_permission).await;
    first.prompt(4, session, "pid 300").await;
    first
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("pid: in ")))
        .await;
    kill_editor(first).await;
    kept_at_least(roster, session, 2).await;
}

/// `initialize` (the result) and a new session (its id).
pub(crate) async fn start_session(b: &mut Bridge) -> (Value, String) {
    let init = b.initialize(json!({})).await;
    let sid = b.new_session(1).await;
    (init, sid)
}

/// Prompts `pid` in `session` under `id`: the agent's process id.
async fn agent_pid(b: &mut Bridge, id: i64, session: &str) -> u32 {
    b.prompt(id, session, "pid").await;
    let (_, seen) = b.response(json!(id)).await;
    seen.iter()
        .filter_map(chunk_text)
        .find_map(mock_pid)
        .expect("the mock agent's pid")
}

pub(crate) fn is_permission(m: &Value) -> bool {
    m["method"] == "session/request_permission"
}

#[tokio::test]
async fn a_front_killed_with_its_group_leaves_the_approval_pending_and_the_next_front_takes_it_back(
) {
    let (roster, cwd) = folders("linger-back");
    let mut first = front(&roster, &cwd, "5m");
    let (init, sid) = start_session(&mut first).await;
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"], true,
        "{init}"
    );
    let pid = agent_pid(&mut first, 2, &sid).await;
    leave_while_waiting(&mut first, &roster, &sid).await;
    assert!(alive(pid), "the agent outlives the editor");

    // The approval is listed on the control server, as any question.
    let entry = std::fs::read_dir(&roster)
        .expect("roster")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .find_map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).ok()?).ok())
        .expect("the holder's roster entry");
    let list = tokio::time::timeout(
        WAIT,
        Command::new(BRIDGE)
            .args(["questions", "list", "--json", "--control"])
            .arg(entry["url"].as_str().expect("url"))
            .arg("--token")
            .arg(entry["token"].as_str().expect("token"))
            .output(),
    )
    .await
    .expect("in time")
    .expect("questions list");
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains(&sid) && listed.contains("Run the mock tool"),
        "{listed}"
    );
    // `sessions` lists it: no client, one question pending, the linger running.
    let held = sessions(&roster, &["--json"]).await;
    let held: Value = serde_json::from_str(&held).expect("JSON");
    let holder = &held[0];
    assert_eq!(holder["clientAttached"], false, "{held}");
    assert!(
        holder["lingerLeftMs"].as_u64().is_some_and(|ms| ms > 0),
        "{held}"
    );
    let session = holder["sessions"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["sessionId"] == sid.as_str()))
        .unwrap_or_else(|| panic!("{held}"));
    assert_eq!(session["pendingQuestions"], 1, "{held}");

    // The editor comes back with the same command line, and loads the session.
    let mut second = front(&roster, &cwd, "5m");
    let again = second.initialize(json!({})).await;
    assert_eq!(again["result"]["agentCapabilities"]["loadSession"], true);
    // The mock agent cannot list its sessions: the bridge lists those it holds.
    let caps = &again["result"]["agentCapabilities"]["sessionCapabilities"];
    assert!(
        caps["list"].is_object() && caps["resume"].is_object(),
        "{again}"
    );
    let listed = second.call(9, "session/list", json!({})).await;
    let held = &listed["result"]["sessions"];
    assert_eq!(held[0]["sessionId"], sid.as_str(), "{listed}");
    let dir = held[0]["cwd"].clone();
    assert!(dir.as_str().is_some_and(|d| d.starts_with('/')), "{listed}");
    let there = second.call(10, "session/list", json!({ "cwd": dir })).await;
    assert_eq!(there["result"]["sessions"], *held, "{there}");
    let elsewhere = second
        .call(11, "session/list", json!({ "cwd": "/nowhere" }))
        .await;
    assert_eq!(elsewhere["result"]["sessions"], json!([]), "{elsewhere}");
    second
        .send(&json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":sid,"cwd":cwd,"mcpServers":[]}}))
        .await;
    let (loaded, replay) = second.response(json!(1)).await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    // What the agent said while no editor was there, before the load's result.
    let said: Vec<&str> = replay.iter().filter_map(chunk_text).collect();
    assert!(said.iter().any(|t| mock_pid(t) == Some(pid)), "{said:?}");
    assert!(
        said.iter()
            .any(|t| t.contains("While no editor was attached, the turn ended: end_turn")),
        "{said:?}"
    );
    // And the whole conversation from the session's start: what the first editor was
    // shown, and the user's prompts.
    assert!(said.iter().any(|t| t.starts_with("pid: in ")), "{said:?}");
    let asked: Vec<&str> = replay
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "user_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(asked, ["pid", "permission", "pid 300"], "{replay:?}");
    // And, last, what waits: a client that shows no request outside its own prompt
    // (codecompanion.nvim) still learns of it, and where to answer it.
    assert!(
        said.last()
            .is_some_and(|t| t.contains("1 question waits for you in this session")
                && t.contains("Questions page")
                && t.contains("`acp-question-bridge inbox`")),
        "{said:?}"
    );
    // The way back to the page is in the new editor's log (the token only to a terminal).
    let log = second.stderr();
    assert!(
        log.contains("questions page: http://") && log.contains("acp-question-bridge inbox"),
        "{log}"
    );
    assert!(!log.contains("#token="), "{log}");
    let (ask, _) = second.recv_until(is_permission).await;
    second
        .send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}))
        .await;
    let (_, seen) = second
        .recv_until(|m| {
            chunk_text(m).is_some_and(|t| t.contains("before this editor attached ended: end_turn"))
        })
        .await;
    assert!(
        seen.iter()
            .filter_map(chunk_text)
            .any(|t| t == "permission: allow"),
        "the agent got the answer: {seen:?}"
    );
    // Its id 3 is the first client's (its turn just ended, to nobody); the same agent
    // answers this client's id 3.
    assert_eq!(agent_pid(&mut second, 3, &sid).await, pid);

    let doctor = tokio::time::timeout(
        WAIT * 2,
        Command::new(BRIDGE)
            .arg("doctor")
            .env("ACP_QUESTION_BRIDGE_REGISTRY", &roster)
            .output(),
    )
    .await
    .expect("in time")
    .expect("doctor");
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("agents kept by --linger: 1"), "{said}");
    let table = sessions(&roster, &[]).await;
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(sid.as_str()) && l.split_whitespace().nth(2) == Some("1")),
        "{table}"
    );
    second.close_stdin();
    assert_eq!(second.wait().await, 0);
    assert!(alive(pid), "kept for the next client");
    // `sessions stop` ends it, agent and all.
    sessions(&roster, &["stop", &sid]).await;
    gone(pid, WAIT).await;
    assert!(holders(&roster).is_empty());
}

/// `acp-question-bridge sessions ARGS` over `roster`: its stdout (it must succeed).
async fn sessions(roster: &Path, args: &[&str]) -> String {
    let out = tokio::time::timeout(
        WAIT * 2,
        Command::new(BRIDGE)
            .arg("sessions")
            .args(args)
            .env("ACP_QUESTION_BRIDGE_REGISTRY", roster)
            .output(),
    )
    .await
    .expect("in time")
    .expect("sessions");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "sessions {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[tokio::test]
async fn the_linger_ends_and_so_does_the_agents_group() {
    for linger in ["1s", "0s"] {
        let (roster, cwd) = folders("linger-end");
        let mut b = front(&roster, &cwd, linger);
        let (_, sid) = start_session(&mut b).await;
        let pid = agent_pid(&mut b, 2, &sid).await;
        let holder = holders(&roster)[0]["pid"].as_u64().expect("pid") as u32;
        b.close_stdin();
        assert_eq!(b.wait().await, 0, "linger {linger}: {}", b.stderr());
        // The linger, then the shutdown ladder (3 s grace) and no more.
        gone(pid, WAIT).await;
        gone(holder, WAIT).await;
        assert!(holders(&roster).is_empty(), "the holder's file is gone");
    }
}

#[tokio::test]
async fn a_file_read_asked_with_no_client_attached_is_answered_by_the_next() {
    let (roster, cwd) = folders("linger-fs");
    // The agent's `fs/*` requests are relayed only outside the wall, which refuses them.
    let front = |roster: &Path, cwd: &Path, linger: &str| {
        let mut cmd = Command::new(BRIDGE);
        cmd.args([
            "--linger",
            linger,
            "--no-policy",
            "--sandbox",
            "off",
            "--",
            MOCK,
        ])
        .current_dir(cwd)
        .env("ACP_QUESTION_BRIDGE_REGISTRY", roster)
        .env("RUST_LOG", "debug")
        .process_group(0);
        Bridge::from_command(cmd)
    };
    let mut first = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut first).await;
    // Asked a second after the client is gone.
    first.prompt(2, &sid, "fs-read /the/file 1000").await;
    first
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("fs-read: asking")))
        .await;
    kill_editor(&mut first).await;

    let mut second = front(&roster, &cwd, "5m");
    second.initialize(json!({})).await;
    second
        .send(&json!({"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":sid,"cwd":cwd,"mcpServers":[]}}))
        .await;
    let (read, _) = second
        .recv_until(|m| m["method"] == "fs/read_text_file")
        .await;
    assert_eq!(read["params"]["path"], "/the/file");
    second
        .send(&json!({"jsonrpc":"2.0","id":read["id"],"result":{"content":"kept for you"}}))
        .await;
    second
        .recv_until(|m| {
            chunk_text(m).is_some_and(|t| t.starts_with("fs-read:") && t.contains("kept for you"))
        })
        .await;
    second.close_stdin();
    assert_eq!(second.wait().await, 0);
    sessions_stop_all(&roster).await;
}

#[tokio::test]
async fn a_session_the_holder_does_not_hold_goes_to_the_agent() {
    let (roster, cwd) = folders("linger-other");
    let mut b = front(&roster, &cwd, "5m");
    b.initialize(json!({})).await;
    b.send(&json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"from-elsewhere","cwd":cwd,"mcpServers":[]}}))
        .await;
    b.response(json!(1)).await;
    // The agent loaded it (the mock knows it only then): a prompt in it is the agent's.
    agent_pid(&mut b, 2, "from-elsewhere").await;
    b.close_stdin();
    b.wait().await;
    sessions_stop_all(&roster).await;
}

#[tokio::test]
async fn the_holder_killed_the_front_says_so_and_nothing_is_left_running() {
    let (roster, cwd) = folders("linger-holder-killed");
    let mut b = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut b).await;
    let pid = agent_pid(&mut b, 2, &sid).await;
    let holder = holders(&roster)[0]["pid"].as_u64().expect("pid") as u32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    assert_ne!(b.wait().await, 0);
    assert!(b.stderr().contains("is gone"), "{}", b.stderr());
    // The agent's guard ends the agent's group.
    gone(pid, WAIT).await;
}

#[tokio::test]
async fn a_second_front_while_one_is_attached_gets_an_agent_of_its_own() {
    let (roster, cwd) = folders("linger-two");
    let mut first = front(&roster, &cwd, "5m");
    let (_, s1) = start_session(&mut first).await;
    let mut second = front(&roster, &cwd, "5m");
    let (_, s2) = start_session(&mut second).await;
    let (p1, p2) = (
        agent_pid(&mut first, 2, &s1).await,
        agent_pid(&mut second, 2, &s2).await,
    );
    assert_ne!(p1, p2, "one client per holder");
    assert_eq!(holders(&roster).len(), 2);
    // (Each agent names its first session alike: `sessions stop` of that name stops
    // neither, and says which holders have it.)
    assert_eq!(s1, s2);
    let out = Command::new(BRIDGE)
        .args(["sessions", "stop", &s1])
        .env("ACP_QUESTION_BRIDGE_REGISTRY", &roster)
        .output();
    let out = tokio::time::timeout(WAIT, out)
        .await
        .expect("in time")
        .expect("runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("several holders"),
        "{said}"
    );
    assert!(alive(p1) && alive(p2));
    first.close_stdin();
    second.close_stdin();
    first.wait().await;
    second.wait().await;
    sessions_stop_all(&roster).await;
}

/// The ACP Python SDK's client (`agent-client-protocol` on PyPI), as a client author would
/// use it: `spawn_agent_process` on the bridge, `initialize`, `load_session` of the session
/// the first editor left, an approval answered in `request_permission`.
const PYTHON_CLIENT: &str = r#"
import asyncio, json, os, sys
from acp import spawn_agent_process, RequestPermissionResponse
from acp.schema import AllowedOutcome

class Client:
    def __init__(self):
        self.updates, self.asked = [], []
        self.answered = asyncio.Event()
    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append(tool_call.title)
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id="allow", outcome="selected"))
    async def session_update(self, session_id, update, **kwargs):
        text = getattr(getattr(update, "content", None), "text", None)
        self.updates.append(text)
        if text and text.startswith("permission: "):
            self.answered.set()

async def main():
    sid, cwd, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    client = Client()
    async with spawn_agent_process(client, cmd[0], *cmd[1:], cwd=cwd, env=dict(os.environ)) as (conn, _):
        init = await conn.initialize(protocol_version=1)
        await conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
        replay = list(client.updates)
        await asyncio.wait_for(client.answered.wait(), 60)
        print(json.dumps({
            "loadSession": init.agent_capabilities.load_session,
            "replay": replay, "asked": client.asked, "updates": client.updates,
        }))

asyncio.run(main())
"#;

/// The Python SDK and what it needs (pinned), installed once under the tests' install lock.
async fn python_sdk() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for (name, version) in [
        ("agent-client-protocol", "0.12.1"),
        ("pydantic", "2.13.4"),
        ("pydantic-core", "2.46.4"),
        ("typing-extensions", "4.15.0"),
        ("annotated-types", "0.7.0"),
        ("typing-inspection", "0.4.2"),
    ] {
        let dir = crate::common::install::pip_package(name, version)
            .await
            .unwrap_or_else(|why| panic!("{why}"));
        dirs.push(dir);
    }
    dirs
}

#[tokio::test]
async fn the_python_sdk_client_loads_a_held_session_and_answers_its_approval() {
    let sdk = python_sdk().await;
    let (roster, cwd) = folders("linger-python");
    let mut first = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut first).await;
    let pid = agent_pid(&mut first, 2, &sid).await;
    leave_while_waiting(&mut first, &roster, &sid).await;

    let script = cwd.join("client.py");
    std::fs::write(&script, PYTHON_CLIENT).expect("the client's script");
    let path = std::env::join_paths(&sdk).expect("PYTHONPATH");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(&script)
        .arg(&sid)
        .arg(&cwd)
        .args([BRIDGE, "--linger", "5m", "--no-policy", "--", MOCK])
        .current_dir(&cwd)
        .env("PYTHONPATH", path)
        .env("ACP_QUESTION_BRIDGE_REGISTRY", &roster);
    let out = tokio::task::spawn_blocking(move || crate::common::output_within(&mut cmd))
        .await
        .expect("joined");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_str(said.trim()).expect("the client's JSON");
    assert_eq!(got["loadSession"], true, "{got}");
    assert!(
        got["replay"]
            .as_array()
            .is_some_and(|r| r.iter().any(|t| t.as_str().and_then(mock_pid) == Some(pid))),
        "the replay came before the load's result: {got}"
    );
    // The conversation from before the crash: the user's prompts and what the first editor
    // was shown, as the SDK's client got them.
    let replay: Vec<&str> = got["replay"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for said in ["pid", "permission", "pid 300"] {
        assert!(replay.contains(&said), "{said:?} in {got}");
    }
    assert!(
        replay.iter().any(|t| t.starts_with("pid: in ")),
        "what the first editor was shown: {got}"
    );
    assert_eq!(
        got["asked"],
        json!(["Run the mock tool"]),
        "asked once: {got}"
    );
    assert!(alive(pid));
    sessions_stop_all(&roster).await;
    gone(pid, WAIT).await;
}

/// Stops every holder of `roster` through `sessions stop`.
pub(crate) async fn sessions_stop_all(roster: &Path) {
    for h in holders(roster) {
        let pid = h["pid"].as_u64().expect("pid").to_string();
        sessions(roster, &["stop", &pid]).await;
    }
}

/// Waits until the holder of `roster` keeps at least `n` updates of `session` that no
/// client was sent (what the agent said while no client had it).
async fn kept_at_least(roster: &Path, session: &str, n: u64) {
    tokio::time::timeout(WAIT, async {
        loop {
            let held: Value =
                serde_json::from_str(&sessions(roster, &["--json"]).await).expect("JSON");
            let kept = held[0]["sessions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["sessionId"] == session && s["updatesUnseen"].as_u64() >= Some(n));
            if kept {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{n} updates of {session} never kept"));
}

/// The holder's control server (from its roster entry): (`http://ADDR/`, token).
pub(crate) fn holder_control(roster: &Path) -> (String, String) {
    let entry = std::fs::read_dir(roster)
        .expect("roster")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .find_map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).ok()?).ok())
        .expect("the holder's roster entry");
    (
        entry["url"].as_str().expect("url").to_owned(),
        entry["token"].as_str().expect("token").to_owned(),
    )
}

/// Found by review: when the agent dies with a later client attached, the requests of the
/// client that left get nothing, and the later client's request sent under a bridge id
/// gets its error under its own id.
#[tokio::test]
async fn when_the_agent_dies_a_later_client_is_answered_only_under_its_own_ids() {
    let (roster, cwd) = folders("linger-gone");
    let mut first = front(&roster, &cwd, "5m");
    let (_, s1) = start_session(&mut first).await;
    let started = |m: &Value| chunk_text(m).is_some_and(|t| t.starts_with("pid: in "));
    for id in [2, 77] {
        first.prompt(id, &s1, "pid 600000").await;
        first.recv_until(started).await;
    }
    kill_editor(&mut first).await;

    let mut second = front(&roster, &cwd, "5m");
    second.initialize(json!({})).await;
    let s2 = second.new_session(1).await;
    // Id 2 is still at the agent for the first client: this one goes under a bridge id.
    second.prompt(2, &s2, "pid 600000").await;
    second.recv_until(started).await;
    let s3 = second.new_session(3).await;
    second.prompt(4, &s3, "crash 1").await;
    let rest: Vec<Value> = second
        .drain()
        .await
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let ids: Vec<&Value> = rest
        .iter()
        .filter(|m| m.get("method").is_none() && m.get("id").is_some())
        .map(|m| &m["id"])
        .collect();
    assert!(
        ids.contains(&&json!(2)),
        "its request 2 is answered: {ids:?}"
    );
    assert!(
        ids.iter().all(|i| [json!(2), json!(4)].contains(i)),
        "only ids it sent: {ids:?}"
    );
    second.wait().await;
}

/// Found by review: a later client is not sent what concerns a session it has not loaded;
/// the load replays it, once.
#[tokio::test]
async fn a_session_not_loaded_is_not_shown_and_its_load_replays_what_happened_once() {
    let (roster, cwd) = folders("linger-unloaded");
    let mut first = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut first).await;
    first.prompt(2, &sid, "permission").await;
    first.recv_until(is_permission).await;
    kill_editor(&mut first).await;

    let mut second = front(&roster, &cwd, "5m");
    second.record();
    second.initialize(json!({})).await;
    // Answered elsewhere while this client has not loaded the session.
    let (url, token) = holder_control(&roster);
    let c = crate::common::control::http(&url, &token);
    let pending = crate::common::control::list_until(&c, 1).await;
    let qid = pending[0]["questionId"]
        .as_str()
        .expect("questionId")
        .to_owned();
    crate::common::control::call(
        &c,
        "questions.answer",
        json!({"sessionId": sid, "questionId": qid, "answers": [["allow"]]}),
    )
    .await
    .expect("answered");
    // The agent's report of it is kept, not sent (with the two notes: answered, turn over).
    kept_at_least(&roster, &sid, 3).await;
    second
        .send(&json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":sid,"cwd":cwd,"mcpServers":[]}}))
        .await;
    let (_, replay) = second.response(json!(1)).await;
    // What this client was sent before it sent the load.
    let before_load: Vec<&str> = second
        .transcript()
        .iter()
        .take_while(|(d, l)| !(*d == crate::common::Dir::Client && l.contains("session/load")))
        .filter(|(d, l)| *d == crate::common::Dir::Bridge && l.contains(sid.as_str()))
        .map(|(_, l)| l.as_str())
        .collect();
    let reported = |m: &Value| chunk_text(m).is_some_and(|t| t.starts_with("permission: "));
    assert_eq!(
        replay.iter().filter(|m| reported(m)).count(),
        1,
        "{replay:?}"
    );
    assert!(
        before_load.iter().all(|l| !l.contains("permission: ")),
        "nothing of the session before its load but the replay: {before_load:?}"
    );
    second.close_stdin();
    second.wait().await;
    sessions_stop_all(&roster).await;
}

/// Two editors come back at once for the same session: one front attaches to the holder
/// and gets the session with its approval; the other finds it busy and gets an agent of its
/// own. The approval is shown to one of them only, and answered once.
/// Two editors race to load the session the first one left (RFD #533's shared sessions):
/// one attaches and the other joins beside it, both get the agent that kept it and its
/// pending approval, the first answer wins, and the other is told (and its late press is
/// refused). What either prompts, both see.
#[tokio::test]
async fn two_fronts_racing_for_one_held_session_share_it_and_the_first_answer_wins() {
    let (roster, cwd) = folders("linger-race");
    let mut first = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut first).await;
    let pid = agent_pid(&mut first, 2, &sid).await;
    first.prompt(3, &sid, "permission").await;
    first.recv_until(is_permission).await;
    kill_editor(&mut first).await;

    let mut racers = [front(&roster, &cwd, "5m"), front(&roster, &cwd, "5m")];
    let load = json!({"jsonrpc":"2.0","id":1,"method":"session/load",
        "params":{"sessionId":sid,"cwd":cwd,"mcpServers":[]}});
    for b in racers.iter_mut() {
        b.initialize(json!({})).await;
        b.send(&load).await;
    }
    let mut asks = Vec::new();
    for b in racers.iter_mut() {
        let (result, mut seen) = b.response(json!(1)).await;
        assert!(result.get("result").is_some(), "{result}");
        if !seen.iter().any(is_permission) {
            seen.push(b.recv_until(is_permission).await.0);
        }
        asks.push(seen.into_iter().find(is_permission).expect("asked"));
    }
    assert_eq!(holders(&roster).len(), 1, "one agent, shared");
    // What either prompts, both see: the agent is the one the first editor left.
    racers[1].prompt(2, &sid, "pid").await;
    let (_, seen) = racers[1].response(json!(2)).await;
    let said = mock_pid;
    assert_eq!(seen.iter().filter_map(chunk_text).find_map(said), Some(pid));
    racers[0]
        .recv_until(|m| chunk_text(m).and_then(said) == Some(pid))
        .await;
    // The first answer wins; both see the agent take it.
    let answer = |ask: &Value| json!({"jsonrpc":"2.0","id":ask["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}});
    racers[0].send(&answer(&asks[0])).await;
    // The other is told at once, then sees the agent's turn go on.
    racers[1]
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.contains("was answered")))
        .await;
    for b in racers.iter_mut() {
        b.recv_until(|m| chunk_text(m).is_some_and(|t| t == "permission: allow"))
            .await;
    }
    racers[1].send(&answer(&asks[1])).await;
    racers[1]
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.contains("already answered")))
        .await;
    for b in racers.iter_mut() {
        b.close_stdin();
        assert_eq!(b.wait().await, 0);
    }
    // Both left: the agent is kept for the next.
    assert!(alive(pid));
    sessions_stop_all(&roster).await;
    gone(pid, WAIT).await;
}

/// Two editors left two holders of the same command line, each with a session. An editor
/// that comes back for the older one's session is given that holder (its front answers the
/// client's `initialize` with the holders' result, reads the `session/load`, and picks the
/// holder that keeps the session): its agent, its pending approval.
#[tokio::test]
async fn a_front_finds_the_holder_that_keeps_the_session_its_client_loads() {
    let (roster, cwd) = folders("linger-which");
    // (The mock agent numbers its sessions: the first holder's second session is its own,
    // the second's first is the newest holder's.)
    let mut a = front(&roster, &cwd, "5m");
    start_session(&mut a).await;
    let sa = a.new_session(5).await;
    let pa = agent_pid(&mut a, 2, &sa).await;
    a.prompt(3, &sa, "permission").await;
    a.recv_until(is_permission).await;
    // While the first is attached, the second editor gets a holder of its own.
    let mut b = front(&roster, &cwd, "5m");
    let (_, sb) = start_session(&mut b).await;
    let pb = agent_pid(&mut b, 2, &sb).await;
    assert_ne!(pa, pb);
    kill_editor(&mut a).await;
    kill_editor(&mut b).await;
    // Both holders say which sessions they keep.
    tokio::time::timeout(WAIT, async {
        loop {
            let said: Vec<Value> = holders(&roster);
            let listed = |s: &str| {
                said.iter().any(|h| {
                    h["sessions"]
                        .as_array()
                        .is_some_and(|l| l.iter().any(|x| x == s))
                })
            };
            if said.len() == 2
                && listed(&sa)
                && listed(&sb)
                && said.iter().all(|h| h["init"].is_string())
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the holders' files list their sessions");

    // Back for the older holder's session (the newest is tried first otherwise).
    let mut c = front(&roster, &cwd, "5m");
    c.initialize(json!({})).await;
    c.send(&json!({"jsonrpc":"2.0","id":1,"method":"session/load",
        "params":{"sessionId":sa,"cwd":cwd,"mcpServers":[]}}))
        .await;
    let (loaded, _) = c.response(json!(1)).await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let (ask, _) = c.recv_until(is_permission).await;
    c.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}))
        .await;
    c.recv_until(|m| chunk_text(m).is_some_and(|t| t == "permission: allow"))
        .await;
    assert_eq!(
        agent_pid(&mut c, 4, &sa).await,
        pa,
        "the agent that keeps it"
    );
    // And the other session, from the other holder.
    let mut d = front(&roster, &cwd, "5m");
    d.initialize(json!({})).await;
    d.send(&json!({"jsonrpc":"2.0","id":1,"method":"session/load",
        "params":{"sessionId":sb,"cwd":cwd,"mcpServers":[]}}))
        .await;
    d.response(json!(1)).await;
    assert_eq!(agent_pid(&mut d, 2, &sb).await, pb);
    for x in [&mut c, &mut d] {
        x.close_stdin();
        x.wait().await;
    }
    sessions_stop_all(&roster).await;
}

/// codecompanion.nvim, a real Neovim client, takes back a held session: its recorded wire
/// (`fixtures/linger/codecompanion-load.jsonl`: `/resume` in a new chat, which lists the
/// held sessions and loads the one left with an approval pending) replayed by a second
/// front against the holder a first front left exactly as the recording's did. codecompanion
/// does not show an approval asked outside its own prompt: the load's replay says it waits,
/// and where to answer it, which the test then does on the CLI.
#[tokio::test]
async fn codecompanion_resumes_a_held_session_as_recorded() {
    let (roster, cwd) = folders("linger-codecompanion");
    let mut first = front(&roster, &cwd, "5m");
    first.initialize(json!({})).await;
    // The recording's project folder, as codecompanion sends it (its `session/list` asks
    // for the sessions of that folder).
    let session = first
        .call(
            1,
            "session/new",
            json!({"cwd": "/work/nvim-lab/project", "mcpServers": []}),
        )
        .await;
    assert_eq!(session["result"]["sessionId"], "mock-session-1");
    first.prompt(2, "mock-session-1", "permission").await;
    first.recv_until(is_permission).await;
    kill_editor(&mut first).await;

    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/linger/codecompanion-load.jsonl");
    let steps = crate::fixtures::steps(&path);
    let mut second = front(&roster, &cwd, "5m");
    // Up to the end of the prompt after the load (the last bridge line), then the check of
    // the note, then the rest (close, exit).
    let last = steps
        .iter()
        .rposition(|s| s.get("bridge").is_some())
        .expect("lines");
    crate::fixtures::replay_on("codecompanion-load.jsonl", &steps[..=last], &mut second).await;
    // The approval still waits: codecompanion never answered it. The CLI does.
    let (base, token) = holder_control(&roster);
    let page = format!("{base}#token={token}");
    let out = Command::new(BRIDGE)
        .args(["questions", "answer", "--control", &page, "mock-session-1"])
        .arg("permission:0")
        .arg("Allow")
        .output();
    let out = tokio::time::timeout(WAIT, out)
        .await
        .expect("in time")
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The agent takes it, and its turn (the first editor's) ends: the client is told.
    second
        .recv_until(|m| chunk_text(m).is_some_and(|t| t == "permission: allow"))
        .await;
    second
        .recv_until(|m| {
            chunk_text(m).is_some_and(|t| t.contains("before this editor attached ended: end_turn"))
        })
        .await;
    crate::fixtures::replay_on("codecompanion-load.jsonl", &steps[last + 1..], &mut second).await;
    sessions_stop_all(&roster).await;
}

/// Makes every holder's file in `roster` lag its holder, as it does for a few milliseconds
/// after each change (it is written off the holder's loop): no `initialize` result, no
/// sessions.
fn files_lag(roster: &Path) {
    for entry in std::fs::read_dir(roster.join("held"))
        .expect("held")
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "json") {
            let mut info: Value = serde_json::from_slice(&std::fs::read(&path).expect("read"))
                .expect("a holder's file");
            info["init"] = Value::Null;
            info["sessions"] = json!([]);
            std::fs::write(&path, serde_json::to_vec(&info).expect("json")).expect("write");
        }
    }
}

/// An editor restoring its windows loads a session a moment after another window began it,
/// before the holders' files say so: its front asks the holders themselves, and the one that
/// keeps the session takes it (beside the client that has it), not an idle holder of the
/// same command line nor a new one. One session, one agent.
#[tokio::test]
async fn a_session_loaded_before_the_holders_files_say_so_goes_to_the_agent_that_has_it() {
    let (roster, cwd) = folders("linger-lag");
    // (The mock agent numbers its sessions: the first holder's second session is its own.)
    let mut a = front(&roster, &cwd, "5m");
    start_session(&mut a).await;
    let sid = a.new_session(5).await;
    let pid = agent_pid(&mut a, 2, &sid).await;
    // A newer holder with no client: the first a front tries.
    let mut idle = front(&roster, &cwd, "5m");
    let (_, other) = start_session(&mut idle).await;
    let idle_pid = agent_pid(&mut idle, 2, &other).await;
    idle.close_stdin();
    assert_eq!(idle.wait().await, 0);
    tokio::time::timeout(WAIT, async {
        while holders(&roster).iter().any(|h| !h["init"].is_string()) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the holders' files say their result");
    files_lag(&roster);

    let mut b = front(&roster, &cwd, "5m");
    b.initialize(json!({})).await;
    b.send(&json!({"jsonrpc":"2.0","id":1,"method":"session/load",
        "params":{"sessionId":sid,"cwd":cwd,"mcpServers":[]}}))
        .await;
    let (loaded, _) = b.response(json!(1)).await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let got = agent_pid(&mut b, 2, &sid).await;
    assert_eq!(got, pid, "the agent that has it: {}", b.stderr());
    assert_eq!(holders(&roster).len(), 2, "no holder started for it");
    assert!(alive(idle_pid));
    for x in [&mut a, &mut b] {
        x.close_stdin();
        x.wait().await;
    }
    sessions_stop_all(&roster).await;
}

/// Whether a holder's file lists `session`.
fn lists(holder: &Value, session: &str) -> bool {
    holder["sessions"]
        .as_array()
        .is_some_and(|s| s.iter().any(|x| x == session))
}

/// Waits until a holder's file in `roster` lists `session` (it is written off the holder's
/// loop).
async fn until_a_holder_lists(roster: &Path, session: &str) {
    tokio::time::timeout(WAIT, async {
        while !holders(roster).iter().any(|h| lists(h, session)) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the holder's file lists the session");
}

/// Loads `session` through `b` (which is initialized) under `id`: the response.
async fn load(b: &mut Bridge, id: i64, session: &str, cwd: &Path) -> Value {
    b.send(&json!({"jsonrpc":"2.0","id":id,"method":"session/load",
        "params":{"sessionId":session,"cwd":cwd,"mcpServers":[]}}))
        .await;
    b.response(json!(id)).await.0
}

/// A held session whose agent died, or whose holder was killed, while no editor was
/// attached is not lost silently: the next load of it is answered with what happened and
/// when (`-32002`), once; the editor then goes on with a fresh agent, which a second load
/// of the session reaches.
#[tokio::test]
async fn a_held_session_lost_while_no_editor_was_there_is_told_to_the_next_load() {
    // The agent dies.
    let (roster, cwd) = folders("linger-lost-agent");
    let mut a = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut a).await;
    let pid = agent_pid(&mut a, 2, &sid).await;
    a.prompt(3, &sid, "permission").await;
    a.recv_until(is_permission).await;
    kill_editor(&mut a).await;
    let holder = holders(&roster)[0]["pid"].as_u64().expect("pid") as u32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    gone(holder, WAIT).await;
    // `sessions` lists it as lost, with why, until an editor is told.
    let table = sessions(&roster, &[]).await;
    let row = table
        .lines()
        .find(|l| l.starts_with(sid.as_str()))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.contains(" lost ") && row.contains("killed by signal 9"),
        "{row}"
    );
    let listed: Value = serde_json::from_str(&sessions(&roster, &["--json"]).await).expect("JSON");
    let ended = listed
        .as_array()
        .and_then(|a| a.iter().find(|h| h["holderPid"] == holder))
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(
        ended["sessions"],
        json!([{"sessionId": sid, "lost": true}]),
        "{ended}"
    );
    assert_eq!(ended["ended"]["foundGone"], false, "{ended}");
    assert_eq!(ended["cwd"], cwd.to_str().expect("UTF-8"), "{ended}");
    let mut b = front(&roster, &cwd, "5m");
    b.initialize(json!({})).await;
    let told = load(&mut b, 1, &sid, &cwd).await;
    assert_eq!(told["error"]["code"], -32002, "{told}");
    let msg = told["error"]["message"].as_str().expect("a message");
    assert!(msg.contains("killed by signal 9"), "{msg}");
    assert_eq!(told["error"]["data"]["lost"]["holderPid"], holder);
    let table = sessions(&roster, &[]).await;
    assert!(
        !table.contains(" lost "),
        "told, so no longer listed: {table}"
    );
    // The editor goes on: a new session, and the lost one again (the agent's now).
    let fresh = b.new_session(2).await;
    assert_ne!(agent_pid(&mut b, 3, &fresh).await, pid);
    let again = load(&mut b, 4, &sid, &cwd).await;
    assert!(again.get("result").is_some(), "told once: {again}");
    b.close_stdin();
    b.wait().await;
    sessions_stop_all(&roster).await;

    // The holder is killed.
    let (roster, cwd) = folders("linger-lost-holder");
    let mut c = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut c).await;
    let pid = agent_pid(&mut c, 2, &sid).await;
    kill_editor(&mut c).await;
    until_a_holder_lists(&roster, &sid).await;
    let holder = holders(&roster)[0]["pid"].as_u64().expect("pid") as u32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    gone(pid, WAIT).await;
    let mut d = front(&roster, &cwd, "5m");
    d.initialize(json!({})).await;
    let told = load(&mut d, 1, &sid, &cwd).await;
    assert_eq!(told["error"]["code"], -32002, "{told}");
    assert_eq!(told["error"]["data"]["lost"]["foundGone"], true, "{told}");
    let msg = told["error"]["message"].as_str().expect("a message");
    assert!(msg.contains("without a word"), "{msg}");
    assert!(
        holders(&roster).iter().all(|h| h["pid"] != holder),
        "the dead holder's file is gone"
    );
    // And its registry entry (what the inbox reads), which it could not remove itself.
    let entries: Vec<Value> = std::fs::read_dir(&roster)
        .expect("roster")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect();
    assert!(
        entries.iter().all(|e| e["pid"] != holder),
        "the dead holder's registry entry is gone: {entries:?}"
    );
    d.close_stdin();
    d.wait().await;
    sessions_stop_all(&roster).await;
}

/// `sessions stop SESSION` stops a holder that has no control server (found by the session
/// its file lists), and its client is told who stopped it, not only the agent's signal.
#[tokio::test]
async fn sessions_stop_finds_a_holder_without_control_and_its_client_is_told_who_stopped_it() {
    let (roster, cwd) = folders("linger-stop");
    let mut cmd = Command::new(BRIDGE);
    cmd.args(["--linger", "5m", "--no-policy", "--no-control", "--", MOCK])
        .current_dir(&cwd)
        .env("ACP_QUESTION_BRIDGE_REGISTRY", &roster)
        .process_group(0);
    let mut a = Bridge::from_command(cmd);
    let (_, sid) = start_session(&mut a).await;
    a.prompt(2, &sid, "pid 600000").await;
    a.recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("pid: in ")))
        .await;
    until_a_holder_lists(&roster, &sid).await;
    let listed = sessions(&roster, &[]).await;
    assert!(listed.contains(&sid), "{listed}");
    sessions(&roster, &["stop", &sid]).await;
    let (ended, _) = a.response(json!(2)).await;
    let msg = ended["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("stopped with `acp-question-bridge sessions stop`"),
        "{ended}"
    );
    assert_eq!(a.wait().await, 143);
    assert!(holders(&roster).is_empty());
}

/// The holder that keeps a session has room for 8 editors beside the first: a ninth that
/// loads it is refused (it stays connected, with no session), and the session never gets a
/// second agent.
#[tokio::test]
async fn a_session_full_of_editors_refuses_one_more_instead_of_giving_it_a_second_agent() {
    let (roster, cwd) = folders("linger-full");
    let mut a = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut a).await;
    let mut joined = Vec::new();
    for _ in 0..8 {
        let mut b = front(&roster, &cwd, "5m");
        b.initialize(json!({})).await;
        let loaded = load(&mut b, 1, &sid, &cwd).await;
        assert!(loaded.get("result").is_some(), "{loaded}");
        joined.push(b);
    }
    let mut ninth = front(&roster, &cwd, "5m");
    ninth.initialize(json!({})).await;
    let refused = load(&mut ninth, 1, &sid, &cwd).await;
    let msg = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("cannot be opened here"), "{refused}");
    let keeping = holders(&roster).iter().filter(|h| lists(h, &sid)).count();
    assert!(keeping <= 1, "one agent for {sid}: {:?}", holders(&roster));
    // Still a client: its own session works (in an agent of its own, whose first session
    // the mock names as the other agent's first: the count above is taken before it).
    let own = ninth.new_session(2).await;
    assert_ne!(own, "");
    for b in joined.iter_mut().chain([&mut a, &mut ninth]) {
        b.close_stdin();
        b.wait().await;
    }
    sessions_stop_all(&roster).await;
}

/// A client that was told its agent crashed (its request's error) is not told again that
/// the session is lost: only sessions no client had are recorded so.
#[tokio::test]
async fn a_crash_the_editor_saw_is_not_reported_again_as_a_lost_session() {
    let (roster, cwd) = folders("linger-crash-seen");
    let mut a = front(&roster, &cwd, "5m");
    let (_, sid) = start_session(&mut a).await;
    a.prompt(2, &sid, "crash 3").await;
    let (crashed, _) = a.response(json!(2)).await;
    assert!(crashed.get("error").is_some(), "{crashed}");
    assert_eq!(a.wait().await, 3);
    let mut b = front(&roster, &cwd, "5m");
    b.initialize(json!({})).await;
    let loaded = load(&mut b, 1, &sid, &cwd).await;
    assert!(loaded.get("result").is_some(), "not told twice: {loaded}");
    b.close_stdin();
    b.wait().await;
    sessions_stop_all(&roster).await;
}

/// One session, one agent, for a load sent after the client's first request too: an
/// editor already attached to one holder that loads a session another holder keeps is
/// refused, naming that holder, instead of having its own agent load it as well; once
/// that holder is gone, the same load reaches its agent.
#[tokio::test]
async fn a_later_load_of_a_session_another_holder_keeps_is_refused_not_loaded_twice() {
    let (roster, cwd) = folders("linger-later-load");
    let mut a = front(&roster, &cwd, "5m");
    let (_, s1) = start_session(&mut a).await;
    let s2 = a.new_session(2).await;
    assert_ne!(s1, s2);
    // A second editor while the first is attached: a holder of its own, whose agent names
    // its first session as the other's first.
    let mut c = front(&roster, &cwd, "5m");
    let (_, mine) = start_session(&mut c).await;
    assert_eq!(mine, s1);
    kill_editor(&mut a).await;
    until_a_holder_lists(&roster, &s2).await;
    let keeper = holders(&roster)
        .into_iter()
        .find(|h| {
            h["sessions"]
                .as_array()
                .is_some_and(|s| s.contains(&json!(s2)))
        })
        .and_then(|h| h["pid"].as_u64())
        .expect("the holder that keeps the second session");
    let refused = load(&mut c, 3, &s2, &cwd).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(
        refused["error"]["data"]["keptBy"]["holderPid"], keeper,
        "{refused}"
    );
    let msg = refused["error"]["message"].as_str().expect("a message");
    assert!(msg.contains("sessions stop"), "{msg}");
    // The editor goes on in its own session.
    agent_pid(&mut c, 4, &mine).await;
    // That holder stopped, the load is its own agent's.
    sessions(&roster, &["stop", &keeper.to_string()]).await;
    let loaded = load(&mut c, 5, &s2, &cwd).await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    c.close_stdin();
    c.wait().await;
    sessions_stop_all(&roster).await;
}
