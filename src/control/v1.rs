//! sandbox-agent's v1 question routes on the control server (and so on the inbox's), so a
//! tool written for sandbox-agent answers the bridge's questions unchanged:
//! - `POST /v1/sessions/{sessionId}/questions/{questionId}/reply` with `{"answers": [[...]]}`:
//!   `questions.answer`;
//! - `POST /v1/sessions/{sessionId}/questions/{questionId}/reject` (an optional
//!   `{"reason": "..."}`): `questions.reject`.
//!
//! Each answers `204 No Content` when the question took it; `404` with a JSON error when no
//! such question is pending (with who resolved it, when known); `400` for answers the
//! question does not take; `503` when the bridge is stopping. The gate checks the bearer
//! token first, as for every call (`401` without it). The answers are checked exactly as a
//! `questions.answer` call's, and reach the agent in its own shape (docs/PROTOCOL.md).

use http::{Method, StatusCode};
use jsonrpsee::server::{HttpRequest, HttpResponse};
use jsonrpsee::types::ErrorObjectOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::gate::json as reply;
use super::{AnswerParams, Call, RejectParams, NOT_PENDING, SHUTTING_DOWN};

/// The largest body a route reads.
const MAX_BODY: usize = 1 << 20;

/// What a v1 path asks.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Reply { session: String, question: String },
    Reject { session: String, question: String },
}

/// The route of `method` on `path`, when it is a v1 question route (`None`: not one of
/// them). `Err` for a `/v1/` path that is none of them (answered 404 or 405).
pub fn route_of(method: &Method, path: &str) -> Option<Result<Route, StatusCode>> {
    let rest = path.strip_prefix("/v1/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let (session, question, action) = match parts.as_slice() {
        ["sessions", s, "questions", q, a] if !s.is_empty() && !q.is_empty() => (*s, *q, *a),
        _ => return Some(Err(StatusCode::NOT_FOUND)),
    };
    if !matches!(action, "reply" | "reject") {
        return Some(Err(StatusCode::NOT_FOUND));
    }
    if method != Method::POST {
        return Some(Err(StatusCode::METHOD_NOT_ALLOWED));
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .map(|c| c.into_owned())
    };
    let (Ok(session), Ok(question)) = (decode(session), decode(question)) else {
        return Some(Err(StatusCode::BAD_REQUEST));
    };
    Some(Ok(match action {
        "reply" => Route::Reply { session, question },
        _ => Route::Reject { session, question },
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyBody {
    answers: Value,
    /// Ours, beside sandbox-agent's: the bridge, for an inbox where two have the same ids.
    #[serde(default)]
    bridge: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RejectBody {
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    bridge: Option<String>,
}

/// Answers a v1 route: the call goes to the loop that owns the questions, as the JSON-RPC
/// method's would.
pub async fn serve<B>(
    calls: Option<mpsc::Sender<Call>>,
    route: Result<Route, StatusCode>,
    req: HttpRequest<B>,
) -> HttpResponse
where
    B: http_body::Body + Send,
    B::Data: Send,
    B::Error: Into<jsonrpsee::core::BoxError>,
{
    let route = match route {
        Ok(r) => r,
        Err(status) => {
            let why = match status {
                StatusCode::METHOD_NOT_ALLOWED => "use POST",
                StatusCode::BAD_REQUEST => "the path is not UTF-8 once decoded",
                _ => "no such route: POST /v1/sessions/{sessionId}/questions/{questionId}/reply or /reject",
            };
            return reply(status, &json!({ "error": why }));
        }
    };
    let Some(calls) = calls else {
        return reply(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"error": "this server takes no answers"}),
        );
    };
    let body = match super::gate::body_within(req, MAX_BODY).await {
        Ok(b) => b,
        Err(too_large) => return too_large,
    };
    let (tx, rx) = oneshot::channel();
    let call = match route {
        Route::Reply { session, question } => {
            let body: ReplyBody = match serde_json::from_slice(&body) {
                Ok(b) => b,
                Err(e) => return bad_body(&e.to_string(), r#"{"answers": [["..."]]}"#),
            };
            Call::Answer(
                AnswerParams {
                    bridge: body.bridge,
                    session_id: session,
                    question_id: question,
                    answers: body.answers,
                    device: None,
                    remember: None,
                },
                tx,
            )
        }
        Route::Reject { session, question } => {
            let body: RejectBody = if body.iter().all(u8::is_ascii_whitespace) {
                RejectBody::default()
            } else {
                match serde_json::from_slice(&body) {
                    Ok(b) => b,
                    Err(e) => return bad_body(&e.to_string(), r#"{} or {"reason": "declined"}"#),
                }
            };
            Call::Reject(
                RejectParams {
                    bridge: body.bridge,
                    session_id: session,
                    question_id: question,
                    reason: body.reason,
                    device: None,
                },
                tx,
            )
        }
    };
    if calls.send(call).await.is_err() {
        return stopping();
    }
    match rx.await {
        Err(_) => stopping(),
        Ok(Ok(_)) => {
            let mut r = HttpResponse::new(jsonrpsee::server::HttpBody::from(String::new()));
            *r.status_mut() = StatusCode::NO_CONTENT;
            r
        }
        Ok(Err(e)) => refused(&e),
    }
}

fn bad_body(error: &str, want: &str) -> HttpResponse {
    reply(
        StatusCode::BAD_REQUEST,
        &json!({ "error": format!("the body is not {want}: {error}") }),
    )
}

fn stopping() -> HttpResponse {
    reply(
        StatusCode::SERVICE_UNAVAILABLE,
        &json!({"error": "the bridge is shutting down"}),
    )
}

/// A call the loop did not take, as the route's status and JSON error.
fn refused(e: &ErrorObjectOwned) -> HttpResponse {
    let status = match e.code() {
        NOT_PENDING => StatusCode::NOT_FOUND,
        SHUTTING_DOWN => StatusCode::SERVICE_UNAVAILABLE,
        -32602 => StatusCode::BAD_REQUEST,
        super::NO_BRIDGE => StatusCode::BAD_GATEWAY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let mut body = json!({ "error": e.message(), "code": e.code() });
    if let Some(data) = e.data() {
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(data.get()) {
            body.as_object_mut().expect("an object").extend(m);
        }
    }
    reply(status, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_two_routes_under_v1_are_taken() {
        let post = Method::POST;
        assert_eq!(route_of(&post, "/"), None);
        assert_eq!(route_of(&post, "/v2/sessions/s/questions/q/reply"), None);
        assert_eq!(
            route_of(&post, "/v1/sessions/s%201/questions/q%2F2/reply"),
            Some(Ok(Route::Reply {
                session: "s 1".into(),
                question: "q/2".into()
            }))
        );
        assert_eq!(
            route_of(&post, "/v1/sessions/s/questions/q/reject"),
            Some(Ok(Route::Reject {
                session: "s".into(),
                question: "q".into()
            }))
        );
        for path in [
            "/v1/sessions/s/questions/q/answer",
            "/v1/sessions//questions/q/reply",
            "/v1/sessions/s/questions/q/reply/more",
            "/v1/x",
        ] {
            assert_eq!(
                route_of(&post, path),
                Some(Err(StatusCode::NOT_FOUND)),
                "{path}"
            );
        }
        assert_eq!(
            route_of(&Method::GET, "/v1/sessions/s/questions/q/reply"),
            Some(Err(StatusCode::METHOD_NOT_ALLOWED))
        );
        assert_eq!(
            route_of(&post, "/v1/sessions/%FF/questions/q/reply"),
            Some(Err(StatusCode::BAD_REQUEST))
        );
    }
}
