//! Replays the transcript fixtures in `fixtures/*.jsonl` through the real bridge around the
//! real mock agent, and compares every message the client receives, in order.
//!
//! Fixture lines (direction-marked JSONL):
//! - `{"args": [...]}`: bridge flags (first line, optional);
//! - `{"client": msg}`: the IDE client sends `msg`;
//! - `{"bridge": msg}`: the client must receive exactly `msg` next (`"<timestamp>"` matches
//!   any RFC 3339 time, `"<any>"` matches anything, and `<prefix>` inside a string stands
//!   for the random prefix of the bridge's own request ids, learned from the first match
//!   and substituted into later `client` messages);
//! - `{"sleep_ms": n}`: wait; `{"close": true}`: close the bridge's stdin;
//! - `{"exit": code}`: the bridge must exit with `code`, and nothing unlisted may follow;
//! - `{"comment": "..."}`: ignored.
//!
//! `ACP_QB_RECORD=1 cargo test --test it fixtures::` rewrites each fixture's `bridge` lines from a
//! real run (keeping its other lines), for review before committing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;
use serde_json::{json, Value};

/// `fixtures/*.jsonl`, and `fixtures/clients/*.jsonl`: what real editors (codecompanion.nvim,
/// agentic.nvim) sent on the wire, recorded by driving them in Neovim (docs/CLIENTS.md); their
/// client lines are replayed exactly as the editors sent them.
fn fixture_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files: Vec<PathBuf> = [root.clone(), root.join("clients")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).expect("fixtures/"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && s.ends_with('Z')
        && humantime::parse_rfc3339(s).is_ok()
}

const PREFIX: &str = "acp-question-bridge:";

/// The random id prefix of the bridge (`acp-question-bridge:<16 hex>:`) inside `s`.
fn bridge_prefix(s: &str) -> Option<&str> {
    let start = s.find(PREFIX)?;
    let end = start + PREFIX.len() + 17;
    let p = s.get(start..end)?;
    (p.ends_with(':')
        && p[PREFIX.len()..end - start - 1]
            .bytes()
            .all(|b| b.is_ascii_hexdigit()))
    .then_some(p)
}

/// Whether `got` matches `want` (with placeholders); learns the bridge's id prefix.
fn matches(want: &Value, got: &Value, prefix: &mut Option<String>) -> bool {
    match (want, got) {
        (Value::String(w), _) if w == "<any>" => true,
        (Value::String(w), Value::String(g)) if w == "<timestamp>" => is_timestamp(g),
        (Value::String(w), Value::String(g)) if w.contains("<prefix>") => {
            let Some(actual) = bridge_prefix(g) else {
                return false;
            };
            if prefix.as_deref().is_some_and(|p| p != actual) {
                return false;
            }
            *prefix = Some(actual.to_owned());
            &w.replace("<prefix>", actual) == g
        }
        (Value::Object(w), Value::Object(g)) => {
            w.len() == g.len()
                && w.iter()
                    .all(|(k, wv)| g.get(k).is_some_and(|gv| matches(wv, gv, prefix)))
        }
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(a, b)| matches(a, b, prefix))
        }
        _ => want == got,
    }
}

/// A client message with `<prefix>` replaced by the bridge's actual id prefix.
fn substitute(msg: &Value, prefix: &Option<String>) -> Value {
    match prefix {
        Some(p) => serde_json::from_str(&msg.to_string().replace("<prefix>", p)).unwrap(),
        None => msg.clone(),
    }
}

/// Replaces what legitimately varies between runs with placeholders (record mode).
fn normalize(v: &mut Value) {
    match v {
        Value::String(s) if is_timestamp(s) => *s = "<timestamp>".into(),
        Value::String(s) if bridge_prefix(s).is_some() => {
            let p = bridge_prefix(s).unwrap_or_default().to_owned();
            *s = s.replace(&p, "<prefix>");
        }
        Value::Object(m) => {
            // Our own version changes with every release.
            if let Some(v) = m.get_mut("version") {
                if v == env!("CARGO_PKG_VERSION") {
                    *v = json!("<any>");
                }
            }
            m.values_mut().for_each(normalize);
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// The steps of a fixture.
pub(crate) fn steps(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
        .collect()
}

/// The steps of a fixture, and a bridge started with its `args`.
fn load(path: &Path) -> (Vec<Value>, Bridge) {
    let steps = steps(path);
    let args: Vec<&str> = steps
        .first()
        .and_then(|s| s.get("args"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let b = Bridge::mock(&args);
    (steps, b)
}

async fn replay(path: &Path) {
    let (steps, mut b) = load(path);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    replay_on(&name, &steps, &mut b).await;
}

/// Plays the client's side of `steps` on `b` and checks each of the bridge's lines.
pub(crate) async fn replay_on(name: &str, steps: &[Value], b: &mut Bridge) {
    let mut prefix = None;
    for (n, step) in steps.iter().enumerate() {
        if let Some(msg) = step.get("client") {
            b.send(&substitute(msg, &prefix)).await;
        } else if let Some(want) = step.get("bridge") {
            let got = b.recv().await;
            assert!(
                matches(want, &got, &mut prefix),
                "{name} step {n}: expected\n  {want}\ngot\n  {got}\nstderr:\n{}",
                b.stderr()
            );
        } else if let Some(ms) = step.get("sleep_ms").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        } else if step.get("close").is_some() {
            b.close_stdin();
        } else if let Some(code) = step.get("exit").and_then(Value::as_i64) {
            let rest = b.drain().await;
            assert!(rest.is_empty(), "{name}: unexpected extra output: {rest:?}");
            assert_eq!(i64::from(b.wait().await), code, "{name}: exit code");
        }
    }
}

/// Runs the fixture's client side and rewrites its `bridge` lines from what arrives.
async fn record(path: &Path) {
    let (steps, mut b) = load(path);
    let steps: Vec<Value> = steps
        .into_iter()
        .filter(|s| s.get("bridge").is_none())
        .collect();
    let mut out: Vec<Value> = Vec::new();
    let mut prefix: Option<String> = None;
    async fn quiet(b: &mut Bridge, out: &mut Vec<Value>, prefix: &mut Option<String>) {
        while let Some(mut m) = b.try_recv(Duration::from_millis(400)).await {
            if prefix.is_none() {
                *prefix = bridge_prefix(&m.to_string()).map(str::to_owned);
            }
            normalize(&mut m);
            out.push(json!({ "bridge": m }));
        }
    }
    for step in steps {
        let is_exit = step.get("exit").is_some();
        if is_exit {
            for line in b.drain().await {
                let mut m: Value = serde_json::from_str(&line).unwrap();
                normalize(&mut m);
                out.push(json!({ "bridge": m }));
            }
            let code = b.wait().await;
            out.push(json!({ "exit": code }));
            continue;
        }
        if let Some(msg) = step.get("client") {
            b.send(&substitute(msg, &prefix)).await;
        } else if let Some(ms) = step.get("sleep_ms").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        } else if step.get("close").is_some() {
            b.close_stdin();
        }
        out.push(step.clone());
        if step.get("client").is_some() || step.get("sleep_ms").is_some() {
            quiet(&mut b, &mut out, &mut prefix).await;
        }
    }
    let text: String = out.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn every_fixture_replays() {
    let files = fixture_files();
    assert!(
        files.len() >= 10,
        "expected the question flow fixtures, found {files:?}"
    );
    let recording = std::env::var_os("ACP_QB_RECORD").is_some();
    // Fixtures are independent: run them concurrently.
    let tasks: Vec<_> = files
        .into_iter()
        .map(|f| {
            tokio::spawn(async move {
                if recording {
                    record(&f).await;
                }
                replay(&f).await;
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

#[test]
fn placeholders_match_only_what_they_should() {
    let p = &mut None;
    assert!(matches(&json!({"a":"<any>"}), &json!({"a":[1,2]}), p));
    assert!(!matches(&json!({"a":"<any>"}), &json!({"a":1,"b":2}), p));
    assert!(matches(
        &json!("<timestamp>"),
        &json!("2026-11-20T23:35:54.123Z"),
        p
    ));
    assert!(!matches(&json!("<timestamp>"), &json!("soon"), p));
    assert!(!matches(&json!([1, 2]), &json!([2, 1]), p));
    let id = "acp-question-bridge:0123456789abcdef:1";
    assert!(matches(&json!("<prefix>1"), &json!(id), p));
    assert_eq!(p.as_deref(), Some("acp-question-bridge:0123456789abcdef:"));
    // Once learned, another prefix does not match.
    assert!(!matches(
        &json!("<prefix>2"),
        &json!("acp-question-bridge:ffffffffffffffff:2"),
        p
    ));
    assert!(!matches(
        &json!("<prefix>1"),
        &json!("acp-question-bridge:nothex:1"),
        &mut None
    ));
    assert_eq!(substitute(&json!({"id":"<prefix>1"}), p), json!({"id": id}));
}
