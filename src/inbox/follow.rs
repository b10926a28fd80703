//! Following one bridge from the roster: its control server over WebSocket, the pending
//! list once and then its events, reported to the inbox's loop until the bridge goes.

use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::core::client::{ClientT, SubscriptionClientT};
use jsonrpsee::rpc_params;
use jsonrpsee_ws_client::WsClient;
use serde_json::Value;
use tokio::sync::mpsc;

use super::roster::Entry;
use crate::control;
use crate::methods;

/// How long connecting to one bridge may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a bridge's connection task reports.
pub(super) enum FromBridge {
    Connected {
        id: String,
        generation: u64,
        client: Arc<WsClient>,
        list: Vec<Value>,
    },
    Event {
        id: String,
        generation: u64,
        event: Value,
    },
    Lost {
        id: String,
        generation: u64,
        why: String,
    },
}

/// Connects to one bridge's control server and reports what it says until it goes.
pub(super) async fn connect(entry: Entry, generation: u64, tx: mpsc::Sender<FromBridge>) {
    let id = entry.id.clone();
    let why = match follow(&entry, generation, &tx).await {
        Ok(()) => "the bridge's control server ended the subscription".to_owned(),
        Err(e) => e,
    };
    let _ = tx
        .send(FromBridge::Lost {
            id,
            generation,
            why,
        })
        .await;
}

async fn follow(
    entry: &Entry,
    generation: u64,
    tx: &mpsc::Sender<FromBridge>,
) -> Result<(), String> {
    let ws = entry.url.replacen("http://", "ws://", 1);
    let setup = async {
        let c = control::client::ws_client(&ws, &entry.token).await?;
        let sub = c
            .subscribe::<Value, _>(
                methods::QUESTIONS_SUBSCRIBE,
                rpc_params![],
                methods::QUESTIONS_UNSUBSCRIBE,
            )
            .await
            .map_err(|e| e.to_string())?;
        let list: Vec<Value> = c
            .request(methods::QUESTIONS_LIST, rpc_params![])
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((c, sub, list))
    };
    let (c, mut sub, list) = tokio::time::timeout(CONNECT_TIMEOUT, setup)
        .await
        .map_err(|_| format!("no answer from {ws} within {CONNECT_TIMEOUT:?}"))??;
    let id = entry.id.clone();
    tx.send(FromBridge::Connected {
        id: id.clone(),
        generation,
        client: Arc::new(c),
        list,
    })
    .await
    .map_err(|_| "the inbox is stopping".to_owned())?;
    while let Some(ev) = sub.next().await {
        let event = ev.map_err(|e| e.to_string())?;
        tx.send(FromBridge::Event {
            id: id.clone(),
            generation,
            event,
        })
        .await
        .map_err(|_| "the inbox is stopping".to_owned())?;
    }
    Ok(())
}
