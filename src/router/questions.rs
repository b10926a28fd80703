//! Question routing inside the [`Router`]: the agent's `_sandboxagent/session/request_question`
//! requests, the client's answers, and every way a question can end.
//!
//! Invariant: every question that enters the registry leaves it exactly once, and the agent
//! receives exactly one response for it: the client's normalized answer, an error for an
//! invalid answer, or a bridge-made rejection (`cancelled`, `timeout`,
//! `client_disconnected`, `unsupported`). Late and duplicate answers are dropped.

use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{rewrite, Outbox, Router, Side};
use crate::capabilities::{self, Existing};
use crate::envelope::RequestId;
use crate::jsonrpc::{self, code};
use crate::questions::answer::{self, Outcome, Reason};
use crate::questions::model;
use crate::questions::registry::Pending;
use crate::questions::Dialect;

impl Router {
    /// The agent asks a question: validate, register, deliver to the client.
    pub(super) fn on_question_request(
        &mut self,
        id: RequestId,
        params: Option<&RawValue>,
        line: &Bytes,
        now: std::time::Instant,
        out: &mut Outbox,
    ) {
        let refuse = |out: &mut Outbox, code: i64, msg: String| {
            tracing::warn!(error = %msg, "question refused");
            out.reply(Side::Agent, jsonrpc::error(Some(&id), code, &msg, None));
        };
        let q = match model::parse_request(params) {
            Ok(q) => q,
            Err(e) => {
                self.counters.questions_invalid += 1;
                return refuse(out, code::INVALID_PARAMS, format!("Invalid params: {e}"));
            }
        };
        if self.questions.has_question(&q.session_id, &q.question_id) {
            return refuse(
                out,
                code::INVALID_PARAMS,
                format!(
                    "Invalid params: questionId: {:?} is already pending in session {:?}",
                    q.question_id, q.session_id
                ),
            );
        }
        if self.questions.has_agent_id(&id) || self.agent_requests.contains_key(&id) {
            return refuse(
                out,
                code::INVALID_REQUEST,
                format!("Invalid Request: id {id} is already used by a request in flight"),
            );
        }
        let limit = self.cfg.max_pending_per_session;
        if self.questions.session_len(&q.session_id) >= limit {
            return refuse(
                out,
                code::SERVER_ERROR,
                format!(
                    "too many pending questions in session {:?} (limit {limit}, \
                     --max-pending-per-session); answer or cancel some first",
                    q.session_id
                ),
            );
        }
        let timeout = [
            self.cfg.question_timeout,
            q.timeout_ms.map(Duration::from_millis),
        ]
        .into_iter()
        .flatten()
        .min();
        let deadline = timeout.map(|t| now + t);
        let expires_wall = deadline.map(|d| self.wall(d));
        let to_client = match expires_wall {
            Some(w) => {
                let at = Value::String(humantime::format_rfc3339_millis(w).to_string());
                rewrite(line.clone(), |l| {
                    capabilities::merge(l, &["params"], "expiresAt", &at, Existing::Replace)
                })
            }
            None => line.clone(),
        };
        tracing::info!(
            session_id = %q.session_id,
            question_id = %q.question_id,
            items = q.items.len(),
            timeout_ms = timeout.map(|t| t.as_millis() as u64),
            dialect = Dialect::Extension.as_str(),
            "question asked"
        );
        tracing::trace!(question = ?q, "question content");
        self.counters.questions_asked += 1;
        self.questions.insert(Pending {
            question: q,
            agent_id: id.clone(),
            client_id: id,
            dialect: Dialect::Extension,
            created: now,
            created_wall: self.wall(now),
            deadline,
            expires_wall,
        });
        out.client(to_client);
    }

    /// A response from the client: when it answers a question (pending, or already
    /// resolved), handles it and returns true.
    pub(super) fn on_client_response_to_question(
        &mut self,
        id: &RequestId,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) -> bool {
        if let Some(p) = self.questions.take_by_client_id(id) {
            self.answer_from_client(p, outcome, line, out);
            return true;
        }
        if self.questions.was_resolved(id) && !self.agent_requests.contains_key(id) {
            self.counters.late_answers_dropped += 1;
            tracing::warn!(%id, "answer to a question that is already resolved (late or duplicate); dropped");
            tracing::trace!(payload = %String::from_utf8_lossy(line), "dropped answer");
            return true;
        }
        false
    }

    fn answer_from_client(
        &mut self,
        p: Pending,
        outcome: Result<&RawValue, &RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) {
        match outcome {
            Ok(result) => match answer::normalize(&p.question, result) {
                Ok((o, extras)) => self.finish(&p, o, &extras, out),
                Err(msg) => {
                    self.counters.questions_invalid += 1;
                    tracing::warn!(
                        session_id = %p.question.session_id,
                        question_id = %p.question.question_id,
                        error = %msg,
                        "invalid answer from the client; the agent gets -32603 with it"
                    );
                    out.agent(jsonrpc::error_with_raw_data(
                        &p.agent_id,
                        code::INTERNAL_ERROR,
                        &format!("Invalid answer from the client: {msg}"),
                        &format!("{{\"clientResult\":{}}}", result.get()),
                    ));
                }
            },
            Err(error) => {
                #[derive(Deserialize)]
                struct E {
                    code: Option<i64>,
                }
                let code = serde_json::from_str::<E>(error.get())
                    .ok()
                    .and_then(|e| e.code);
                if code == Some(code::METHOD_NOT_FOUND) {
                    tracing::warn!(
                        question_id = %p.question.question_id,
                        "the client does not know the question extension (-32601)"
                    );
                    self.finish(&p, Outcome::Rejected(Reason::Unsupported), &Vec::new(), out);
                } else if p.client_id == p.agent_id {
                    self.counters.forwarded_to_agent += 1;
                    out.agent(line.clone());
                } else {
                    let mut v: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
                    let message = v["message"].as_str().unwrap_or("error").to_owned();
                    out.agent(jsonrpc::error(
                        Some(&p.agent_id),
                        code.unwrap_or(code::INTERNAL_ERROR),
                        &message,
                        v.get_mut("data").map(Value::take),
                    ));
                }
            }
        }
    }

    /// Sends the agent its one response for `p`.
    fn finish(&mut self, p: &Pending, outcome: Outcome, extras: &answer::Extras, out: &mut Outbox) {
        let reason = match &outcome {
            Outcome::Answered(_) => {
                self.counters.questions_answered += 1;
                None
            }
            Outcome::Rejected(r) => {
                self.counters.questions_rejected += 1;
                Some(r.as_str())
            }
        };
        tracing::info!(
            session_id = %p.question.session_id,
            question_id = %p.question.question_id,
            answered = reason.is_none(),
            reason,
            "question resolved"
        );
        let result = outcome.to_result(extras);
        tracing::trace!(%result, "question result");
        out.agent(jsonrpc::result_text(&p.agent_id, &result));
    }

    /// `session/cancel`: the session's questions are rejected (`cancelled`) and the client
    /// is told to close them.
    pub(super) fn cancel_session_questions(&mut self, session: &str, out: &mut Outbox) {
        for p in self.questions.take_session(session) {
            self.finish(&p, Outcome::Rejected(Reason::Cancelled), &Vec::new(), out);
            out.client(jsonrpc::cancel_request(&p.client_id));
        }
    }

    /// The agent's `$/cancel_request`: when it names a pending question, the client is told,
    /// the agent gets `-32800`, and true is returned.
    pub(super) fn on_agent_cancel_request(
        &mut self,
        params: Option<&RawValue>,
        line: &Bytes,
        out: &mut Outbox,
    ) -> bool {
        #[derive(Deserialize)]
        struct P<'a> {
            #[serde(rename = "requestId", borrow)]
            request_id: Option<&'a RawValue>,
        }
        let Some(rid) = params
            .and_then(|p| serde_json::from_str::<P<'_>>(p.get()).ok())
            .and_then(|p| p.request_id)
            .map(RequestId::from_raw)
        else {
            return false;
        };
        let Some(p) = self.questions.take(&rid) else {
            return false;
        };
        tracing::info!(question_id = %p.question.question_id, "agent cancelled its question");
        if p.client_id == p.agent_id {
            self.counters.forwarded_to_client += 1;
            out.client(line.clone());
        } else {
            out.client(jsonrpc::cancel_request(&p.client_id));
        }
        out.agent(jsonrpc::error(
            Some(&p.agent_id),
            code::REQUEST_CANCELLED,
            "Request cancelled",
            None,
        ));
        true
    }

    /// Questions past their deadline: rejected (`timeout`), and the client closes them.
    pub(super) fn expire_questions(&mut self, now: std::time::Instant, out: &mut Outbox) {
        for p in self.questions.take_due(now) {
            self.finish(&p, Outcome::Rejected(Reason::Timeout), &Vec::new(), out);
            out.client(jsonrpc::cancel_request(&p.client_id));
        }
    }

    /// The client is gone: every question is rejected (`client_disconnected`).
    pub(super) fn reject_all_questions(&mut self, out: &mut Outbox) {
        for p in self.questions.take_all() {
            self.finish(
                &p,
                Outcome::Rejected(Reason::ClientDisconnected),
                &Vec::new(),
                out,
            );
        }
    }

    /// The agent is gone: the client closes every question it still shows.
    pub(super) fn withdraw_all_questions(&mut self, out: &mut Outbox) {
        for p in self.questions.take_all() {
            out.client(jsonrpc::cancel_request(&p.client_id));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant, SystemTime};

    use bytes::Bytes;
    use serde_json::{json, Value};

    use crate::codec::Frame;
    use crate::router::{lines, parse, Outbox, Router, RouterConfig};

    const ASK: &str = r#"{"jsonrpc":"2.0","id":5,"method":"_sandboxagent/session/request_question","params":{"sessionId":"s1","questionId":"q-7","prompt":"Which option?","options":[["option-a","Option A"],["option-b","Option B"]],"x":1e400}}"#;

    fn frame(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    struct T {
        r: Router,
        out: Outbox,
        now: Instant,
    }

    impl T {
        fn new(cfg: RouterConfig) -> Self {
            let now = Instant::now();
            let mut r = Router::new(cfg);
            // 2026-11-20T00:00:00Z
            r.set_wall_anchor(
                now,
                SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_132_800),
            );
            T {
                r,
                out: Outbox::default(),
                now,
            }
        }
        fn agent(&mut self, s: &str) {
            self.r.on_agent_frame(frame(s), self.now, &mut self.out);
        }
        fn client(&mut self, s: &str) {
            self.r.on_client_frame(frame(s), self.now, &mut self.out);
        }
        fn take_agent(&mut self) -> Vec<String> {
            let l = lines(&self.out.to_agent);
            self.out.to_agent.clear();
            l
        }
        fn take_client(&mut self) -> Vec<String> {
            let l = lines(&self.out.to_client);
            self.out.to_client.clear();
            l
        }
    }

    fn ask(session: &str, qid: &str, id: Value) -> String {
        json!({"jsonrpc":"2.0","id":id,"method":"_sandboxagent/session/request_question",
            "params":{"sessionId":session,"questionId":qid,"prompt":"p","options":["a","b"]}})
        .to_string()
    }

    #[test]
    fn question_is_forwarded_unchanged_and_answer_normalized() {
        let mut t = T::new(RouterConfig::default());
        t.agent(ASK);
        assert_eq!(t.take_client(), vec![ASK]);
        assert_eq!(t.r.questions().len(), 1);
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"result":{"outcome":"answered","answers":[["Option B"]]}}"#,
        );
        assert_eq!(
            t.take_agent(),
            vec![
                r#"{"jsonrpc":"2.0","id":5,"result":{"status":"answered","answers":[["option-b"]]}}"#
            ]
        );
        assert!(t.r.questions().is_empty());
        // A duplicate answer is dropped, not forwarded twice.
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"result":{"status":"answered","answers":[["option-a"]]}}"#,
        );
        assert!(t.take_agent().is_empty());
        assert_eq!(t.r.counters.late_answers_dropped, 1);
    }

    #[test]
    fn invalid_params_never_reach_the_client() {
        let mut t = T::new(RouterConfig::default());
        t.agent(r#"{"jsonrpc":"2.0","id":"x","method":"_sandboxagent/session/request_question","params":{"sessionId":"s","questionId":"q","questions":[{"question":"a","options":[{"value":1,"label":"l"}]}]}}"#);
        assert!(t.take_client().is_empty());
        assert_eq!(
            t.take_agent(),
            vec![
                r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"Invalid params: questions[0].options[0]: value must be a string"}}"#
            ]
        );
    }

    #[test]
    fn duplicate_question_id_and_pending_cap() {
        let mut t = T::new(RouterConfig {
            max_pending_per_session: 2,
            ..RouterConfig::default()
        });
        t.agent(&ask("s", "a", json!(1)));
        t.agent(&ask("s", "a", json!(2)));
        let dup = parse(&t.take_agent()[0]);
        assert_eq!(dup["id"], 2);
        assert_eq!(dup["error"]["code"], -32602);
        t.agent(&ask("s", "b", json!(3)));
        t.agent(&ask("s", "c", json!(4)));
        let cap = parse(&t.take_agent()[0]);
        assert_eq!(cap["error"]["code"], -32000);
        assert!(cap["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit 2"));
        // Another session is not affected by the cap.
        t.agent(&ask("other", "c", json!(5)));
        assert!(t.take_agent().is_empty());
        assert_eq!(t.take_client().len(), 3);
    }

    #[test]
    fn invalid_answer_carries_the_original() {
        let mut t = T::new(RouterConfig::default());
        t.agent(ASK);
        t.client(r#"{"jsonrpc":"2.0","id":5,"result":{"status":"answered","answers":[["zzz"]]}}"#);
        let e = parse(&t.take_agent()[0]);
        assert_eq!(e["error"]["code"], -32603);
        assert_eq!(
            e["error"]["data"]["clientResult"],
            json!({"status":"answered","answers":[["zzz"]]})
        );
    }

    #[test]
    fn client_errors() {
        let mut t = T::new(RouterConfig::default());
        t.agent(ASK);
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#,
        );
        assert_eq!(
            t.take_agent(),
            vec![
                r#"{"jsonrpc":"2.0","id":5,"result":{"status":"rejected","reason":"unsupported"}}"#
            ]
        );
        t.agent(ASK);
        let other = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"busy"}}"#;
        t.client(other);
        assert_eq!(t.take_agent(), vec![other]);
    }

    #[test]
    fn session_cancel_rejects_only_that_session() {
        let mut t = T::new(RouterConfig::default());
        t.agent(&ask("s1", "a", json!(1)));
        t.agent(&ask("s2", "a", json!(2)));
        t.take_client();
        let cancel = r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#;
        t.client(cancel);
        assert_eq!(
            t.take_agent(),
            vec![
                cancel.to_owned(),
                r#"{"jsonrpc":"2.0","id":1,"result":{"status":"rejected","reason":"cancelled"}}"#
                    .to_owned()
            ]
        );
        assert_eq!(
            t.take_client(),
            vec![r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}"#]
        );
        assert_eq!(t.r.questions().len(), 1);
    }

    #[test]
    fn agent_cancel_request() {
        let mut t = T::new(RouterConfig::default());
        t.agent(ASK);
        t.take_client();
        let cancel = r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}"#;
        t.agent(cancel);
        assert_eq!(t.take_client(), vec![cancel]);
        assert_eq!(
            t.take_agent(),
            vec![
                r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32800,"message":"Request cancelled"}}"#
            ]
        );
        t.client(
            r#"{"jsonrpc":"2.0","id":5,"result":{"status":"answered","answers":[["option-a"]]}}"#,
        );
        assert!(t.take_agent().is_empty());
        // A cancel for something else is just forwarded.
        let other = r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"5"}}"#;
        t.agent(other);
        assert_eq!(t.take_client(), vec![other]);
    }

    #[test]
    fn timeout_adds_expires_at_and_rejects() {
        let mut t = T::new(RouterConfig {
            question_timeout: Some(Duration::from_secs(60)),
            ..RouterConfig::default()
        });
        let ask_short = ASK.replace("\"x\":1e400", "\"x\":1e400,\"timeoutMs\":1500");
        t.agent(&ask_short);
        let sent = t.take_client();
        assert!(
            sent[0].ends_with(
                r#""x":1e400,"timeoutMs":1500,"expiresAt":"2026-11-20T00:00:01.500Z"}}"#
            ),
            "{}",
            sent[0]
        );
        assert_eq!(
            t.r.next_deadline(),
            Some(t.now + Duration::from_millis(1500))
        );
        t.r.on_timer(t.now + Duration::from_millis(1499), &mut t.out);
        assert!(t.take_agent().is_empty());
        t.r.on_timer(t.now + Duration::from_millis(1500), &mut t.out);
        assert_eq!(
            t.take_agent(),
            vec![r#"{"jsonrpc":"2.0","id":5,"result":{"status":"rejected","reason":"timeout"}}"#]
        );
        assert_eq!(
            t.take_client(),
            vec![r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}"#]
        );
        assert_eq!(t.r.next_deadline(), None);
    }

    #[test]
    fn client_eof_rejects_before_closing_and_agent_exit_withdraws() {
        let mut t = T::new(RouterConfig::default());
        t.agent(&ask("s", "a", json!(1)));
        t.take_client();
        t.r.on_client_eof(t.now, &mut t.out);
        assert_eq!(
            t.take_agent(),
            vec![
                r#"{"jsonrpc":"2.0","id":1,"result":{"status":"rejected","reason":"client_disconnected"}}"#,
                "<close>"
            ]
        );
        let mut t = T::new(RouterConfig::default());
        t.agent(&ask("s", "a", json!("1")));
        t.take_client();
        t.r.on_agent_gone(
            &crate::router::AgentExit {
                code: Some(1),
                signal: None,
                stderr_tail: String::new(),
            },
            &mut t.out,
        );
        assert_eq!(
            t.take_client(),
            vec![r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"1"}}"#]
        );
    }

    #[test]
    fn ids_one_and_string_one_are_different_questions() {
        let mut t = T::new(RouterConfig::default());
        t.agent(&ask("s", "a", json!(1)));
        t.agent(&ask("s", "b", json!("1")));
        t.client(r#"{"jsonrpc":"2.0","id":"1","result":{"status":"answered","answers":[["b"]]}}"#);
        t.client(r#"{"jsonrpc":"2.0","id":1,"result":{"status":"answered","answers":[["a"]]}}"#);
        assert_eq!(
            t.take_agent(),
            vec![
                r#"{"jsonrpc":"2.0","id":"1","result":{"status":"answered","answers":[["b"]]}}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":{"status":"answered","answers":[["a"]]}}"#
            ]
        );
    }

    #[test]
    fn initialize_is_merged_both_ways() {
        let mut t = T::new(RouterConfig::default());
        t.client(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{}}}}"#);
        assert_eq!(
            t.take_agent(),
            vec![
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{},"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}}}"#
            ]
        );
        assert_eq!(
            t.r.client_support().map(|c| c.native_questions),
            Some(false)
        );
        t.agent(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#);
        let resp = parse(&t.take_client()[0]);
        assert_eq!(
            resp["result"]["agentCapabilities"],
            json!({"loadSession":true,"_meta":{"sandboxagent.dev":{
                "extensions":{"sessionRequestQuestion":true},
                "questionBridge":{"version":env!("CARGO_PKG_VERSION")}}}})
        );
    }
}
