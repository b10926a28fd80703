//! Hostile review of ringing (today's commits): scenarios through the real binaries.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::control::list_until;
use crate::common::inbox::{registered_bridge, Inbox};
use crate::common::*;
use serde_json::Value;

use crate::ringing::{ring_logger, rings};

/// A TCP proxy to `to` whose connections can all be cut at once.
struct Proxy {
    addr: std::net::SocketAddr,
    conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(to: std::net::SocketAddr) -> Proxy {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let held = conns.clone();
        tokio::spawn(async move {
            while let Ok((mut a, _)) = l.accept().await {
                let h = tokio::spawn(async move {
                    if let Ok(mut b) = tokio::net::TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
                    }
                });
                held.lock().unwrap().push(h);
            }
        });
        Proxy { addr, conns }
    }

    fn cut(&self) {
        for h in self.conns.lock().unwrap().drain(..) {
            h.abort();
        }
    }
}

/// A question rings once (`--notify-after 0`, no reminders). The inbox's connection to its
/// bridge drops for a moment and comes back: the question is still the same one, pending
/// all along, and must not ring again (at most 1 + 10 rings, whatever the network does).
#[tokio::test]
async fn review_a_bridge_that_reconnects_does_not_ring_its_questions_again() {
    let log = temp_dir("ring-review-flap").join("rings.log");
    let reg = temp_dir("ring-review-flap-reg").join("registry");
    let mut b = registered_bridge(&reg, &[]).await;
    // Route the inbox to the bridge through a proxy (the roster entry's URL rewritten).
    let entry_path = std::fs::read_dir(&reg)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let mut entry: Value =
        serde_json::from_str(&std::fs::read_to_string(&entry_path).unwrap()).unwrap();
    let real: std::net::SocketAddr = entry["url"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let proxy = Proxy::start(real).await;
    entry["url"] = format!("http://{}/", proxy.addr).into();
    std::fs::write(&entry_path, entry.to_string()).unwrap();
    let cmd = ring_logger(&log);
    let inbox = Inbox::start(&[
        "--registry",
        reg.to_str().unwrap(),
        "--notify-after",
        "0",
        "--quiet-at-desk",
        "0",
        "--on-question",
        &cmd,
    ])
    .await;
    let c = inbox.http();
    b.prompt(10, "mock-session-1", "approve").await;
    let first = list_until(&c, 1).await;
    let qid = first[0]["questionId"].as_str().unwrap().to_owned();
    tokio::time::timeout(Duration::from_secs(20), async {
        while rings(&log).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("rang once");
    // The network blinks: the inbox loses the bridge, then reaches it again.
    proxy.cut();
    list_until(&c, 0).await;
    let again = list_until(&c, 1).await;
    assert_eq!(again[0]["questionId"], qid.as_str(), "the same question");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let r = rings(&log);
    assert_eq!(
        r,
        [(0, qid.clone())],
        "a question still pending, rung once, rang again after the inbox reconnected: {r:?}"
    );
    b.close_stdin();
    b.drain().await;
}
