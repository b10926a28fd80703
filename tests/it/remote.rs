//! The inbox's remote listener (`inbox --remote`), through the real binaries: a phone pairs
//! by the printed link and answers real mock agents' questions over TLS (a Claude form, a
//! codex question and a tool approval), and everything the threat model in docs/SECURITY.md
//! names is refused: a spent or expired pairing code, a wrong token (then rate-limited), a
//! revoked device (its WebSocket closed), plain HTTP, TLS older than 1.3, a cross-origin
//! POST, and an idle connection past its minute. The listener binds 127.0.0.2, a loopback
//! address that is not 127.0.0.1, so the code path for a non-default address is the one
//! tested.

use crate::common;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::inbox::{pairing as printed, registered_bridge, Inbox};
use crate::common::phone::{client_config, Phone};
use crate::common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An inbox over `registry` with `--remote 127.0.0.2:0`, and its printed pairing link and
/// certificate fingerprint.
struct Remote {
    inbox: Inbox,
    state: PathBuf,
    /// `https://127.0.0.2:PORT/`.
    base: String,
    fingerprint: String,
    /// The code of the link printed at start.
    code: String,
}

async fn remote(name: &str, registry: &Path) -> Remote {
    let state = temp_dir(name).join("state");
    let (inbox, (base, code, fingerprint)) = Inbox::start_remote(registry, &state).await;
    Remote {
        inbox,
        state,
        base,
        fingerprint,
        code,
    }
}

/// `acp-question-bridge inbox ARGS... --state-dir STATE`: exit code, stdout, stderr.
async fn inbox_cli(state: &Path, args: &[&str]) -> (i32, String, String) {
    let state = state.to_str().unwrap();
    let args: Vec<&str> = ["inbox"]
        .into_iter()
        .chain(args.iter().copied())
        .chain(["--state-dir", state])
        .collect();
    run_bridge(&args).await
}

#[tokio::test]
async fn a_paired_phone_answers_a_tool_approval_over_tls() {
    let reg = temp_dir("remote-answer").join("registry");
    let journal = temp_dir("remote-answer").join("journal.jsonl");
    let mut b = registered_bridge(&reg, &["--journal", journal.to_str().unwrap()]).await;
    let r = remote("remote-answer", &reg).await;
    // What the inbox's subscribers see (on its loopback listener).
    let (_ws, mut events) = common::control::subscribed(&r.inbox.base, &r.inbox.token).await;
    assert!(r.base.starts_with("https://127.0.0.2:"), "{}", r.base);
    let mut phone = Phone::new(&r.base, &r.fingerprint);
    // The pairing page, then the code for a cookie that only the browser keeps.
    let page = phone.request("GET", "/pair", None, &[]).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Pair this device"));
    let paired = phone.pair(&r.code, "Ada's phone").await;
    assert_eq!(paired.status, 200, "{paired:?}");
    let head = paired.head.to_ascii_lowercase();
    for flag in ["secure", "httponly", "samesite=strict", "path=/"] {
        assert!(head.contains(flag), "the cookie is {flag}: {}", paired.head);
    }
    assert!(phone.cookie.is_some());
    // The Questions page is served over TLS too.
    let page = phone.request("GET", "/", None, &[]).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("acp-question-bridge"));

    b.prompt(2, "mock-session-1", "permission").await;
    b.recv_until(|m| m["method"] == "session/request_permission")
        .await;
    let list = phone.list_until(1).await;
    assert_eq!(list[0]["source"], "permission");
    let qid = list[0]["questionId"].as_str().unwrap();
    let (reply, v) = phone
        .rpc(
            "questions.answer",
            json!({"sessionId":"mock-session-1","questionId":qid,"answers":[["reject"]]}),
        )
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(v.unwrap().get("error").is_none());
    let (m, before) = b
        .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("permission:")))
        .await;
    assert_eq!(chunk_text(&m), Some("permission: reject"));
    assert!(
        told_over(&before),
        "the IDE's copy is marked done: {before:?}"
    );
    // Every surface says which device answered: the inbox's event stream and the bridge's
    // journal.
    let resolved = tokio::time::timeout(WAIT, async {
        loop {
            let ev: Value = events.next().await.expect("an event").expect("JSON");
            if ev["event"] == "resolved" {
                return ev;
            }
        }
    })
    .await
    .expect("the resolved event in time");
    assert_eq!(resolved["by"], "device:Ada's phone", "{resolved}");
    let journalled = tokio::time::timeout(WAIT, async {
        loop {
            let text = std::fs::read_to_string(&journal).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.contains("\"resolved\"")) {
                return serde_json::from_str::<Value>(line).unwrap();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("journalled in time");
    assert_eq!(journalled["by"], "device:Ada's phone", "{journalled}");
    // The devices list names it, and the state folder keeps no token.
    let (code, out, err) = inbox_cli(&r.state, &["devices", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Ada's phone\tpaired "), "{out}");
    let cookie = phone.cookie.clone().unwrap();
    let token = cookie.strip_prefix("aqb_device=").unwrap();
    for f in std::fs::read_dir(&r.state).unwrap().flatten() {
        let text = std::fs::read_to_string(f.path()).unwrap_or_default();
        assert!(!text.contains(token), "{:?} holds no token", f.path());
    }
    drop(r);
}

#[tokio::test]
async fn pairing_codes_work_once_and_not_after_they_expire() {
    let reg = temp_dir("remote-codes").join("registry");
    let r = remote("remote-codes", &reg).await;
    let mut phone = Phone::new(&r.base, &r.fingerprint);
    assert_eq!(phone.pair(&r.code, "phone").await.status, 200);
    // A replayed code is refused, from any device.
    let mut other = Phone::new(&r.base, &r.fingerprint);
    let again = other.pair(&r.code, "eve").await;
    assert_eq!(again.status, 403, "{again:?}");
    assert!(other.cookie.is_none());
    // `inbox pair` prints a fresh link; one good for a second is refused once it is over.
    let (code, _, err) = inbox_cli(&r.state, &["pair", "--ttl", "1s"]).await;
    assert_eq!(code, 0, "{err}");
    let (_, short, fingerprint) = printed(&err).expect("a link and fingerprint");
    assert_eq!(fingerprint, r.fingerprint);
    // A margin far above the code's second.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(other.pair(&short, "late").await.status, 403);
    let (_, fresh, _) = printed(&inbox_cli(&r.state, &["pair"]).await.2).unwrap();
    assert_eq!(other.pair(&fresh, "tablet").await.status, 200);
    // Each failure was logged.
    let log = r.inbox.stderr.lock().unwrap().clone();
    assert_eq!(log.matches("remote: a failed attempt").count(), 2, "{log}");
}

#[tokio::test]
async fn wrong_tokens_are_refused_then_rate_limited_per_address() {
    let reg = temp_dir("remote-limit").join("registry");
    let r = remote("remote-limit", &reg).await;
    let mut good = Phone::new(&r.base, &r.fingerprint);
    assert_eq!(good.pair(&r.code, "phone").await.status, 200);
    let mut thief = Phone::new(&r.base, &r.fingerprint);
    thief.from = "127.0.0.3".parse().unwrap();
    // Without a cookie nothing is guessed: refused, and not counted.
    for _ in 0..6 {
        let (reply, _) = thief.rpc("questions.list", json!([])).await;
        assert_eq!(reply.status, 401, "{reply:?}");
    }
    thief.cookie = Some(format!("aqb_device={}", "0".repeat(64)));
    for _ in 0..5 {
        let (reply, _) = thief.rpc("questions.list", json!([])).await;
        assert_eq!(reply.status, 401, "{reply:?}");
    }
    // Refused before anything else is checked, a right pairing code included.
    let (reply, _) = thief.rpc("questions.list", json!([])).await;
    assert_eq!(reply.status, 429, "{reply:?}");
    let (_, code, _) = printed(&inbox_cli(&r.state, &["pair"]).await.2).unwrap();
    assert_eq!(thief.pair(&code, "thief").await.status, 429);
    // Another address is not affected, and a paired device is never held back by its
    // address's failures (a shared NAT): its token guesses nothing.
    let (reply, _) = good.rpc("questions.list", json!([])).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    good.from = "127.0.0.3".parse().unwrap();
    let (reply, _) = good.rpc("questions.list", json!([])).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let log = r.inbox.stderr.lock().unwrap().clone();
    assert!(
        log.contains("ip=127.0.0.3"),
        "failures are logged with their address"
    );
}

#[tokio::test]
async fn a_revoked_device_is_refused_and_its_websocket_closed() {
    let reg = temp_dir("remote-revoke").join("registry");
    let r = remote("remote-revoke", &reg).await;
    let mut phone = Phone::new(&r.base, &r.fingerprint);
    assert_eq!(phone.pair(&r.code, "lost phone").await.status, 200);
    let mut ws = phone.websocket().await.expect("the WebSocket opens");
    let (code, _, err) = inbox_cli(&r.state, &["devices", "revoke", "lost phone"]).await;
    assert_eq!(code, 0, "{err}");
    // Its open connection is closed (EOF or a reset), without a request from it.
    let mut buf = [0u8; 256];
    let closed = tokio::time::timeout(WAIT, async {
        loop {
            match ws.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the revoked device's WebSocket is closed");
    let (reply, _) = phone.rpc("questions.list", json!([])).await;
    assert_eq!(reply.status, 401);
    assert_eq!(phone.websocket().await.err(), Some(401));
    let (code, _, _) = inbox_cli(&r.state, &["devices", "revoke", "lost phone"]).await;
    assert_eq!(code, 1, "a second revoke finds no device");
}

#[tokio::test]
async fn plain_http_old_tls_and_cross_origin_posts_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let reg = temp_dir("remote-refuse").join("registry");
    let r = remote("remote-refuse", &reg).await;
    let mut phone = Phone::new(&r.base, &r.fingerprint);
    // Plain HTTP on the TLS port: a 400 that says why, and nothing else.
    let mut tcp = phone.tcp().await;
    tcp.write_all(format!("GET / HTTP/1.1\r\nhost: {}\r\n\r\n", phone.authority).as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(WAIT, tcp.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.starts_with("HTTP/1.1 400") && text.contains("https only"),
        "{text}"
    );
    // TLS 1.2 and older: no handshake.
    let old = client_config(&r.fingerprint, &[&rustls::version::TLS12]);
    assert!(phone.tls_with(old).await.is_err());
    // A wrong certificate is what a person would see as a fingerprint mismatch.
    let other = client_config(&"00:".repeat(32)[..95], &[&rustls::version::TLS13]);
    assert!(phone.tls_with(other).await.is_err());
    // A cross-origin POST, even with a good code: refused, and the code is not spent.
    let body = json!({"code": r.code, "name": "csrf"}).to_string();
    let csrf = phone
        .request(
            "POST",
            "/pair",
            Some(&body),
            &[
                ("content-type", "application/json"),
                ("origin", "https://evil.example"),
            ],
        )
        .await;
    assert_eq!(csrf.status, 403, "{csrf:?}");
    assert!(phone.cookie.is_none());
    assert_eq!(phone.pair(&r.code, "phone").await.status, 200);
    let body = json!({"jsonrpc":"2.0","id":1,"method":"questions.list","params":[]}).to_string();
    let csrf = phone
        .request(
            "POST",
            "/",
            Some(&body),
            &[
                ("content-type", "application/json"),
                ("origin", "https://evil.example"),
            ],
        )
        .await;
    assert_eq!(csrf.status, 403, "{csrf:?}");
    // The state folder and its files are the user's alone.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&r.state), 0o700);
    for f in [
        "devices.json",
        "remote-cert.pem",
        "remote-key.pem",
        "remote.json",
    ] {
        assert_eq!(mode(&r.state.join(f)), 0o600, "{f}");
    }
}

/// One address cannot hold more than 8 connections (idle ones included), so it cannot fill
/// the listener; another address still gets in.
#[tokio::test]
async fn one_address_holds_at_most_eight_connections() {
    let reg = temp_dir("remote-cap").join("registry");
    let r = remote("remote-cap", &reg).await;
    let mut greedy = Phone::new(&r.base, &r.fingerprint);
    greedy.from = "127.0.0.4".parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(
            greedy
                .tls_with(client_config(&r.fingerprint, &[&rustls::version::TLS13]))
                .await
                .expect("one of the first eight"),
        );
    }
    let ninth = greedy
        .tls_with(client_config(&r.fingerprint, &[&rustls::version::TLS13]))
        .await;
    assert!(ninth.is_err(), "the ninth connection is closed");
    let mut other = Phone::new(&r.base, &r.fingerprint);
    assert_eq!(other.request("GET", "/pair", None, &[]).await.status, 200);
    // Once one is closed, the address gets a place again.
    held.pop();
    let again = tokio::time::timeout(WAIT, async {
        loop {
            match greedy
                .tls_with(client_config(&r.fingerprint, &[&rustls::version::TLS13]))
                .await
            {
                Ok(c) => return c,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await;
    assert!(
        again.is_ok(),
        "a place is given back when a connection ends"
    );
}

/// A connection that makes no paired request (only a handshake, here) is closed within a
/// minute (hyper's own 30 s for a request's head comes first when nothing is sent), so idle
/// connections cannot hold the listener's places; a device's own connection, once it made a
/// paired request, stays open past that minute.
#[tokio::test]
async fn an_idle_connection_is_closed_within_a_minute_and_a_paired_one_is_not() {
    let reg = temp_dir("remote-idle").join("registry");
    let r = remote("remote-idle", &reg).await;
    let mut phone = Phone::new(&r.base, &r.fingerprint);
    assert_eq!(phone.pair(&r.code, "phone").await.status, 200);
    let tls13 = || client_config(&r.fingerprint, &[&rustls::version::TLS13]);
    let started = std::time::Instant::now();
    let mut idle = phone.tls_with(tls13()).await.expect("TLS");
    // A paired WebSocket, quiet all along.
    let mut paired = phone.websocket().await.expect("a paired WebSocket");
    let mut byte = [0u8; 1];
    let ended = tokio::time::timeout(Duration::from_secs(60) + WAIT, idle.read(&mut byte)).await;
    assert!(
        matches!(ended, Ok(Ok(0)) | Ok(Err(_))),
        "the idle connection is closed: {ended:?}"
    );
    // Past the minute, the paired one is still open: a ping is answered with a pong.
    let past = Duration::from_secs(62).saturating_sub(started.elapsed());
    tokio::time::sleep(past).await;
    let ping = [0x89u8, 0x80, 1, 2, 3, 4];
    paired.write_all(&ping).await.unwrap();
    let mut head = [0u8; 2];
    tokio::time::timeout(WAIT, paired.read_exact(&mut head))
        .await
        .expect("a pong in time")
        .expect("the paired WebSocket is open");
    assert_eq!(head[0], 0x8a, "a pong frame");
}

/// What the issue's person does from a phone: a Claude form, a codex question and a tool
/// approval, from three agents, each answered over TLS and each agent given its answer.
#[tokio::test]
async fn a_phone_answers_a_claude_form_a_codex_question_and_a_tool_approval() {
    let reg = temp_dir("remote-three").join("registry");
    let mut agents = Vec::new();
    for word in ["ask-claude", "ask-codex", "approve"] {
        let mut b = registered_bridge(&reg, &[]).await;
        b.prompt(2, "mock-session-1", word).await;
        agents.push((word, b));
    }
    let r = remote("remote-three", &reg).await;
    let mut phone = Phone::new(&r.base, &r.fingerprint);
    assert_eq!(phone.pair(&r.code, "Ada's phone").await.status, 200);
    let list = phone.list_until(3).await;
    for q in &list {
        // Postgres, in the Claude form and the codex question; allowed, the tool call.
        let answer = match q["source"].as_str().unwrap() {
            "permission" => json!([["allow"]]),
            _ => json!([["Postgres"]]),
        };
        let (reply, v) = phone
            .rpc(
                "questions.answer",
                json!({"bridge": q["bridge"]["id"], "sessionId": q["sessionId"],
                       "questionId": q["questionId"], "answers": answer}),
            )
            .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let v = v.unwrap();
        assert!(v.get("error").is_none(), "{q}: {v}");
    }
    for (word, b) in &mut agents {
        let prefix = format!("{word}: ");
        let (m, _) = b
            .recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with(&prefix)))
            .await;
        let text = chunk_text(&m).unwrap();
        let wanted = if *word == "approve" {
            r#""optionId":"allow""#
        } else {
            "Postgres"
        };
        assert!(text.contains(wanted) && !text.contains("error"), "{text}");
    }
}
