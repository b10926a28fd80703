//! The user's side of what the agent asks: a question or a permission prompt shown item by
//! item, each answer taken from `--answer` or read from the terminal (re-asked until it
//! fits, while watching the bridge for a withdrawal), then the reply in the request's shape.

use acp_question_bridge::methods;
use std::io::Write as _;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use acp_question_bridge::questions::answer::check_answers;
use acp_question_bridge::questions::model::{parse_request, Item, Question};
use acp_question_bridge::questions::METHOD;

use super::typing::{self, parse_answer, typed, Answer, REJECT};
use super::{bad_answer, fail, Answers, Demo, Res, BRIDGE_WAIT, TERMINAL_WAIT};

impl Demo {
    /// A permission prompt (a tool approval, or a question the bridge asks one option at a
    /// time): its title, content and options, and the user's choice, like any question.
    pub(super) async fn on_permission(&mut self, id: Value, params: &Value) -> Res<()> {
        let title = params["toolCall"]["title"].as_str().unwrap_or("(untitled)");
        self.say(&format!("<- session/request_permission: {title}"));
        if let Some(command) = params["toolCall"]["rawInput"]["command"].as_str() {
            self.say(&format!("   command: {command}"));
        }
        let (options, reject) = typing::permission_options(&params["options"]);
        let say_no = |demo: &mut Self| {
            let outcome = match &reject {
                Some(r) => json!({"outcome": "selected", "optionId": r}),
                None => json!({"outcome": "cancelled"}),
            };
            demo.say(&format!("-> {}", outcome));
            outcome
        };
        let item = Item {
            prompt: title.to_owned(),
            options,
            ..Item::default()
        };
        if item.options.is_empty() || self.reject {
            let outcome = say_no(self);
            return self.respond(&id, json!({ "outcome": outcome })).await;
        }
        let q = Question {
            session_id: String::new(),
            question_id: String::new(),
            items: vec![item],
            timeout_ms: None,
        };
        self.render_item(&q, 0);
        let item = &q.items[0];
        let outcome = loop {
            let text = match self.next_answer(&id, item).await? {
                Answer::Text(text) => text,
                Answer::Reject(_) => break say_no(self),
                Answer::Withdrawn => return Ok(()),
            };
            match parse_answer(item, &text) {
                Ok(values) => {
                    let oid = values.into_iter().next().unwrap_or_default();
                    self.say(&format!("-> selected: {oid}"));
                    break json!({"outcome": "selected", "optionId": oid});
                }
                Err(e) if self.answers.is_some() => {
                    return bad_answer(format!("--answer for {title:?}: {e}"));
                }
                Err(e) => self.say(&format!("   {e}; try again")),
            }
        };
        self.respond(&id, json!({ "outcome": outcome })).await
    }

    pub(super) async fn on_question(&mut self, id: Value, params: &Value) -> Res<()> {
        let qid = params["questionId"].as_str().unwrap_or("?");
        self.say(&format!("<- {METHOD} {qid}"));
        if let Some(at) = params.get("expiresAt") {
            self.say(&format!(
                "   expires at {}",
                at.as_str().unwrap_or(&at.to_string())
            ));
        }
        let raw = serde_json::value::to_raw_value(params).ok();
        let q = match parse_request(raw.as_deref()) {
            Ok(q) => q,
            Err(e) => {
                self.say(&format!("   invalid question ({e}): rejecting"));
                return self.resolve(&id, None, "unsupported").await;
            }
        };
        if self.reject {
            (0..q.items.len()).for_each(|i| self.render_item(&q, i));
            self.say("   answer: rejected (--reject)");
            return self.resolve(&id, None, "declined").await;
        }
        let mut answers = Vec::new();
        for (i, item) in q.items.iter().enumerate() {
            self.render_item(&q, i);
            loop {
                let text = match self.next_answer(&id, item).await? {
                    Answer::Text(text) => text,
                    Answer::Reject(reason) => return self.resolve(&id, None, reason).await,
                    Answer::Withdrawn => return Ok(()),
                };
                match parse_answer(item, &text) {
                    Ok(values) => {
                        answers.push(values);
                        break;
                    }
                    Err(e) if self.answers.is_some() => {
                        return bad_answer(format!("--answer for {:?}: {e}", item.prompt));
                    }
                    Err(e) => self.say(&format!("   {e}; try again")),
                }
            }
        }
        let checked = check_answers(&q, &json!(answers))
            .or_else(|e| fail(format!("the demo built an invalid answer: {e}")))?;
        self.resolve(&id, Some(checked), "").await
    }

    /// Answers (`Some`) or rejects with `reason` (`None`) the question `id`.
    async fn resolve(&mut self, id: &Value, answers: Option<Answers>, reason: &str) -> Res<()> {
        let result = match answers {
            Some(answers) => {
                self.say(&format!("-> answered: {}", json!(answers)));
                json!({"status": "answered", "answers": answers})
            }
            None => {
                self.say(&format!("-> rejected: {reason}"));
                json!({"status": "rejected", "reason": reason})
            }
        };
        self.respond(id, result).await
    }

    /// The answer to one item: the next --answer, or a line on stdin (while watching
    /// the bridge for a withdrawal of question `id`).
    async fn next_answer(&mut self, id: &Value, item: &Item) -> Res<Answer> {
        if let Some(queue) = self.answers.as_mut() {
            let Some(text) = queue.pop_front() else {
                let n = item.prompt.as_str();
                return bad_answer(format!("no --answer left for {n:?}: give one per item"));
            };
            self.say(&format!("   answer: {text} (from --answer)"));
            return Ok(Answer::Text(text));
        }
        if self.user_eof {
            self.say("   (end of input: rejecting)");
            return Ok(Answer::Reject("declined"));
        }
        if self.user.is_none() {
            let (tx, rx) = mpsc::channel(16);
            std::thread::spawn(move || {
                for line in std::io::stdin().lines().map_while(Result::ok) {
                    if tx.blocking_send(line).is_err() {
                        break;
                    }
                }
            });
            self.user = Some(rx);
        }
        if self.interactive {
            let hint = typing::hint(item);
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "   answer [{hint}; empty or {REJECT} rejects]> ");
            let _ = out.flush();
        }
        let wait = if self.interactive {
            TERMINAL_WAIT
        } else {
            BRIDGE_WAIT
        };
        let deadline = tokio::time::Instant::now() + wait;
        let nl = if self.interactive { "\n" } else { "" };
        let line = loop {
            let Some(user) = self.user.as_mut() else {
                return fail("no stdin reader");
            };
            let got = tokio::select! {
                line = user.recv() => Ok(line),
                line = self.lines.next_line() => Err(Some(line)),
                _ = tokio::time::sleep_until(deadline) => Err(None),
            };
            match got {
                Ok(line) => break line,
                Err(Some(line)) => {
                    let msg = self.received(line, "an answer")?;
                    if msg["method"] == methods::CANCEL_REQUEST && msg["params"]["requestId"] == *id
                    {
                        self.say(&format!(
                            "{nl}<- $/cancel_request {id}: the question was withdrawn"
                        ));
                        return Ok(Answer::Withdrawn);
                    }
                    self.backlog.push_back(msg);
                }
                Err(None) => {
                    self.say(&format!("{nl}   no answer within {wait:?}: rejecting"));
                    return Ok(Answer::Reject("timeout"));
                }
            }
        };
        let Some(line) = line else {
            self.user_eof = true;
            self.say(&format!("{nl}   (end of input: rejecting)"));
            return Ok(Answer::Reject("declined"));
        };
        let text = line.trim();
        if !self.interactive {
            self.say(&format!("   answer: {text} (from stdin)"));
        }
        Ok(typed(text))
    }

    fn render_item(&mut self, q: &Question, i: usize) {
        for line in typing::render(q, i) {
            self.say(&line);
        }
    }
}
