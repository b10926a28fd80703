//! The control server's calls on the inbox: the listing from what it keeps, answers and
//! rejections relayed to the bridge that has the question (over its control server, or
//! NATS), its status, and the page's word that the user is at the desk.

use jsonrpsee::core::client::{ClientT, Error as RpcError};
use jsonrpsee::core::params::ObjectParams;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::{json, Value};
use std::time::Instant;

use super::{bridges, key_of, nats, Inbox};
use crate::control::{self, Call};
use crate::methods;

impl Inbox {
    pub(super) fn on_call(&mut self, call: Call) {
        match call {
            Call::List(reply) => {
                let _ = reply.send(bridges::questions(&self.bridges));
            }
            Call::Answer(a, reply) => {
                let mut params = json!({"sessionId": a.session_id, "questionId": a.question_id, "answers": a.answers});
                if let Some(d) = a.device {
                    params["device"] = d.into();
                }
                if let Some(r) = a.remember {
                    params["remember"] = json!(r);
                }
                self.relay(a.bridge, methods::QUESTIONS_ANSWER, params, reply);
            }
            Call::Reject(r, reply) => {
                let mut params = json!({"sessionId": r.session_id, "questionId": r.question_id});
                if let Some(reason) = r.reason {
                    params["reason"] = reason.into();
                }
                if let Some(d) = r.device {
                    params["device"] = d.into();
                }
                self.relay(r.bridge, methods::QUESTIONS_REJECT, params, reply);
            }
            Call::Status(reply) => {
                let pending: usize = self.bridges.values().map(|b| b.pending.len()).sum();
                let _ = reply.send(json!({
                    "inbox": true,
                    "bridges": self.bridges.len(),
                    "pendingQuestions": pending,
                    "registry": self.cfg.roster.display().to_string(),
                    "uptimeMs": self.started.elapsed().as_millis() as u64,
                    "version": env!("CARGO_PKG_VERSION"),
                    "ringing": self.ringer.borrow().status(Instant::now()),
                }));
            }
            Call::Bridges(reply) => {
                let _ = reply.send(bridges::listing(&self.bridges));
            }
            Call::Page {
                visible,
                device,
                reply,
            } => {
                // A paired device's page says nothing of the desk.
                if device.is_none() {
                    self.ringer.borrow_mut().page(visible, Instant::now());
                }
                let _ = reply.send(Value::Bool(true));
            }
        }
    }

    /// Sends an answer or rejection to the bridge that has the question; its reply
    /// (result or error) goes back as it is.
    fn relay(
        &self,
        bridge: Option<String>,
        method: &'static str,
        params: Value,
        reply: control::Reply,
    ) {
        let key = key_of(&params);
        let b = match bridges::holder(&self.bridges, bridge.clone(), &key) {
            Ok(b) => b,
            // Ended while the inbox watched: the bridge that had it says by whom.
            Err(e) if e.code() == control::NOT_PENDING && bridge.is_none() => {
                let had = self.ended.iter().rev().find(|(k, _)| *k == key);
                match had.and_then(|(_, id)| self.bridges.get(id)) {
                    Some(b) => b,
                    None => {
                        let _ = reply.send(Err(e));
                        return;
                    }
                }
            }
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let id = b.id.clone();
        if b.entry.is_none() {
            let Some(f) = self.nats.clone() else {
                return;
            };
            tokio::spawn(async move {
                let _ = reply.send(nats::relay(&f.client, &f.cfg, &id, method, params).await);
            });
            return;
        }
        let Some(client) = b.client.clone() else {
            let _ = reply.send(Err(ErrorObjectOwned::owned(
                control::NO_BRIDGE,
                format!("bridge {id:?} cannot be reached now"),
                None::<()>,
            )));
            return;
        };
        tokio::spawn(async move {
            let mut p = ObjectParams::new();
            for (k, v) in params.as_object().into_iter().flatten() {
                let _ = p.insert(k, v.clone());
            }
            let r: Result<Value, RpcError> = client.request(method, p).await;
            let r = r.map_err(|e| match e {
                RpcError::Call(obj) => obj,
                other => ErrorObjectOwned::owned(
                    control::NO_BRIDGE,
                    format!("bridge {id:?} cannot be reached: {other}"),
                    None::<()>,
                ),
            });
            let _ = reply.send(r);
        });
    }
}
