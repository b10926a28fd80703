//! Replays the transcript fixtures in `fixtures/*.jsonl` through the real bridge around the
//! real mock agent, and compares every message the client receives, in order.
//!
//! Fixture lines (direction-marked JSONL):
//! - `{"args": [...]}`: bridge flags (first line, optional);
//! - `{"client": msg}`: the IDE client sends `msg`;
//! - `{"bridge": msg}`: the client must receive exactly `msg` next (`"<timestamp>"` matches
//!   any RFC 3339 time, `"<any>"` matches anything);
//! - `{"sleep_ms": n}`: wait; `{"close": true}`: close the bridge's stdin;
//! - `{"exit": code}`: the bridge must exit with `code`, and nothing unlisted may follow;
//! - `{"comment": "..."}`: ignored.
//!
//! `ACP_QB_RECORD=1 cargo test --test fixtures` rewrites each fixture's `bridge` lines from a
//! real run (keeping its other lines), for review before committing.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

fn fixture_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures/")
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

/// Whether `got` matches `want` (with placeholders).
fn matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::String(w), _) if w == "<any>" => true,
        (Value::String(w), Value::String(g)) if w == "<timestamp>" => is_timestamp(g),
        (Value::Object(w), Value::Object(g)) => {
            w.len() == g.len()
                && w.iter()
                    .all(|(k, wv)| g.get(k).is_some_and(|gv| matches(wv, gv)))
        }
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(a, b)| matches(a, b))
        }
        _ => want == got,
    }
}

/// Replaces what legitimately varies between runs with placeholders (record mode).
fn normalize(v: &mut Value) {
    match v {
        Value::String(s) if is_timestamp(s) => *s = "<timestamp>".into(),
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

async fn replay(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let steps: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
        .collect();
    let args: Vec<&str> = steps
        .first()
        .and_then(|s| s.get("args"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut b = Bridge::mock(&args);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    for (n, step) in steps.iter().enumerate() {
        if let Some(msg) = step.get("client") {
            b.send(msg).await;
        } else if let Some(want) = step.get("bridge") {
            let got = b.recv().await;
            assert!(
                matches(want, &got),
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
    let text = std::fs::read_to_string(path).unwrap();
    let steps: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|s: &Value| s.get("bridge").is_none())
        .collect();
    let args: Vec<&str> = steps
        .first()
        .and_then(|s| s.get("args"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut b = Bridge::mock(&args);
    let mut out: Vec<Value> = Vec::new();
    async fn quiet(b: &mut Bridge, out: &mut Vec<Value>) {
        while let Some(mut m) = b.try_recv(Duration::from_millis(400)).await {
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
            b.send(msg).await;
        } else if let Some(ms) = step.get("sleep_ms").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        } else if step.get("close").is_some() {
            b.close_stdin();
        }
        out.push(step.clone());
        if step.get("client").is_some() || step.get("sleep_ms").is_some() {
            quiet(&mut b, &mut out).await;
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
    assert!(matches(&json!({"a":"<any>"}), &json!({"a":[1,2]})));
    assert!(!matches(&json!({"a":"<any>"}), &json!({"a":1,"b":2})));
    assert!(matches(
        &json!("<timestamp>"),
        &json!("2026-11-20T23:35:54.123Z")
    ));
    assert!(!matches(&json!("<timestamp>"), &json!("soon")));
    assert!(!matches(&json!([1, 2]), &json!([2, 1])));
}
