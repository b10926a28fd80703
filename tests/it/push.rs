//! Web Push from the inbox's remote listener, through the real binaries: a paired phone
//! subscribes with a push service the test owns (HTTPS on 127.0.0.3, trusted by
//! `--push-ca`); a real mock agent's question and tool approval reach it as pushes, which
//! the test decrypts with the subscription's keys (RFC 8291) and whose VAPID token (RFC 8292)
//! it verifies. A second device's push service never answers, and delivery goes on all the
//! same. A subscription is forgotten when its service says it is gone, and when its device
//! is revoked; an endpoint that is not a push service is refused.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::inbox::{pairing as printed, registered_bridge, Inbox};
use crate::common::phone::Phone;
use crate::common::push_service::{Browser, PushService, Received};
use crate::common::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use serde_json::{json, Value};

async fn post(phone: &mut Phone, path: &str, body: &str) -> (u16, String) {
    let origin = phone.origin();
    let r = phone
        .request(
            "POST",
            path,
            Some(body),
            &[("content-type", "application/json"), ("origin", &origin)],
        )
        .await;
    (r.status, r.body)
}

/// Checks a push's headers and VAPID token (ES256 by `key`, for the service's origin).
fn check_vapid(push: &Received, service: &PushService, key: &str) {
    assert_eq!(push.method, "POST");
    assert_eq!(push.header("content-encoding"), Some("aes128gcm"));
    assert_eq!(push.header("ttl"), Some("3600"));
    assert_eq!(push.header("urgency"), Some("high"));
    let auth = push.header("authorization").expect("a VAPID authorization");
    let (token, k) = auth
        .strip_prefix("vapid t=")
        .and_then(|r| r.split_once(", k="))
        .expect("vapid t=..., k=...");
    assert_eq!(k, key, "the key the page subscribed with");
    // Verified by another implementation than the one that signed (ring, not p256), as a
    // push service would: ES256 is ECDSA P-256 with SHA-256, the signature r || s.
    let (signed, sig) = token.rsplit_once('.').unwrap();
    let key_bytes = B64.decode(k).unwrap();
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &key_bytes)
        .verify(signed.as_bytes(), &B64.decode(sig).unwrap())
        .expect("the token is signed by the inbox's VAPID key");
    let (head, claims) = signed.split_once('.').unwrap();
    let head: Value = serde_json::from_slice(&B64.decode(head).unwrap()).unwrap();
    assert_eq!(head["alg"], "ES256");
    let claims: Value = serde_json::from_slice(&B64.decode(claims).unwrap()).unwrap();
    assert_eq!(claims["aud"], format!("https://{}", service.authority()));
    assert_eq!(claims["sub"], "mailto:ops@example.org");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let exp = claims["exp"].as_u64().unwrap();
    assert!(exp > now && exp <= now + 24 * 3600, "{claims}");
}

/// Checks `payload` against `schema/push-payload.schema.json`.
fn check_schema(payload: &Value) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schema/push-payload.schema.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::options().build(&schema).unwrap();
    assert!(v.is_valid(payload), "{payload} is not a push payload");
}

/// The subscriptions' endpoints kept in the state folder.
fn kept(state: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(state.join("push.json")).unwrap_or_default();
    let v: Value = serde_json::from_str(&text).unwrap_or(json!([]));
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s["endpoint"].as_str().unwrap().to_owned())
        .collect()
}

async fn until_kept(state: &std::path::Path, wanted: impl Fn(&[String]) -> bool) {
    let r = tokio::time::timeout(WAIT, async {
        while !wanted(&kept(state)) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        r.is_ok(),
        "the subscriptions change in time: {:?}",
        kept(state)
    );
}

#[tokio::test]
async fn questions_reach_a_subscribed_phone_as_encrypted_pushes() {
    let dir = temp_dir("push");
    let reg = dir.join("registry");
    let state = dir.join("state");
    let mut service = PushService::start("127.0.0.3", &dir, false).await;
    let dark = PushService::start("127.0.0.4", &dir, true).await;
    let mut b = registered_bridge(&reg, &[]).await;
    let (services, dark_service) = (service.authority(), dark.authority());
    let (inbox, (base, code, fingerprint)) = Inbox::start_remote_with(
        &reg,
        &state,
        &[
            // (Ring at once, whoever is at the desk: what is tested here is the push.)
            "--notify-after",
            "0",
            "--quiet-at-desk",
            "0",
            "--push-service",
            &services,
            "--push-service",
            &dark_service,
            "--push-ca",
            service.ca.to_str().unwrap(),
            "--push-contact",
            "mailto:ops@example.org",
        ],
    )
    .await;
    let mut phone = Phone::new(&base, &fingerprint);
    assert_eq!(phone.pair(&code, "Ada's phone").await.status, 200);
    let args = ["inbox", "pair", "--state-dir", state.to_str().unwrap()];
    let (_, second, _) = printed(&run_bridge(&args).await.2).unwrap();
    let mut tablet = Phone::new(&base, &fingerprint);
    assert_eq!(tablet.pair(&second, "Bob's tablet").await.status, 200);

    // The key to subscribe with is the inbox's VAPID public key (an uncompressed P-256 point).
    let r = phone.request("GET", "/push/key", None, &[]).await;
    assert_eq!(r.status, 200, "{r:?}");
    let key: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(key["subscribed"], false);
    let public = key["publicKey"].as_str().unwrap().to_owned();
    assert_eq!(B64.decode(&public).unwrap().len(), 65);

    // Only a paired device subscribes, and only with an https endpoint of a push service.
    let ada = Browser::new(7);
    let endpoint = format!("https://{services}/push/ada");
    let mut stranger = Phone::new(&base, &fingerprint);
    let refused = post(
        &mut stranger,
        "/push/subscribe",
        &ada.subscription(&endpoint),
    )
    .await;
    assert_eq!(refused.0, 401, "{refused:?}");
    for bad in [
        "https://127.0.0.5:4443/push/x".to_owned(),
        format!("http://{services}/push/ada"),
    ] {
        let (status, body) = post(&mut phone, "/push/subscribe", &ada.subscription(&bad)).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, body) = post(&mut phone, "/push/subscribe", &ada.subscription(&endpoint)).await;
    assert_eq!(status, 200, "{body}");
    let bob = Browser::new(9);
    let dark_endpoint = format!("https://{dark_service}/push/bob");
    let (status, body) = post(
        &mut tablet,
        "/push/subscribe",
        &bob.subscription(&dark_endpoint),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(kept(&state).len(), 2);

    // A question: pushed to Ada's phone while Bob's push service never answers.
    b.prompt(2, "mock-session-1", "question").await;
    let push = service.next().await;
    assert_eq!(push.path, "/push/ada");
    check_vapid(&push, &service, &public);
    let payload = ada.read(&push);
    check_schema(&payload);
    let list = phone.list_until(1).await;
    let q = &list[0];
    let tag = serde_json::to_string(&[
        q["bridge"]["id"].as_str().unwrap(),
        "mock-session-1",
        q["questionId"].as_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(payload["body"], "Which option?", "{payload}");
    assert!(
        payload["title"]
            .as_str()
            .unwrap()
            .starts_with("acp-mock-agent"),
        "{payload}"
    );
    assert_eq!(payload["tag"], tag.as_str());
    // A tap opens the page on this question.
    let focus: String =
        percent_encoding::utf8_percent_encode(&tag, percent_encoding::NON_ALPHANUMERIC).collect();
    assert_eq!(payload["url"], format!("/?focus={focus}"));
    // Delivery does not wait for pushes: the phone answers, the agent gets it.
    let (r, v) = phone
        .rpc(
            "questions.answer",
            json!({"sessionId": "mock-session-1", "questionId": q["questionId"], "answers": [["option-b"]]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(v.unwrap().get("error").is_none());
    b.recv_until(|m| chunk_text(m).is_some_and(|t| t.starts_with("answered:")))
        .await;

    // A tool approval: the push says so, without the tool call's title or command. Its
    // service now says the subscription is gone: it is forgotten.
    service
        .status
        .store(410, std::sync::atomic::Ordering::SeqCst);
    b.prompt(3, "mock-session-1", "permission").await;
    let push = service.next().await;
    check_vapid(&push, &service, &public);
    let payload = ada.read(&push);
    check_schema(&payload);
    assert_eq!(
        payload["body"], "Approve a tool call (execute)",
        "{payload}"
    );
    assert_eq!(payload["approval"], true);
    assert!(!payload.to_string().contains("mock tool"), "{payload}");
    until_kept(&state, |k| k == [dark_endpoint.clone()]).await;

    // A device unsubscribes: its subscription goes, the other device's stays.
    let again = format!("https://{services}/push/ada-again");
    let (status, body) = post(&mut phone, "/push/subscribe", &ada.subscription(&again)).await;
    assert_eq!(status, 200, "{body}");
    until_kept(&state, |k| k.contains(&again)).await;
    let (status, body) = post(&mut phone, "/push/unsubscribe", "{}").await;
    assert_eq!(status, 200, "{body}");
    until_kept(&state, |k| k == [dark_endpoint.clone()]).await;

    // Revoking a device drops its subscription with it.
    let args = [
        "inbox",
        "devices",
        "revoke",
        "Bob's tablet",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    assert_eq!(run_bridge(&args).await.0, 0);
    until_kept(&state, |k| k.is_empty()).await;
    let stderr = inbox.stderr.lock().unwrap().clone();
    assert!(stderr.contains("push: a device subscribed"), "{stderr}");
}
