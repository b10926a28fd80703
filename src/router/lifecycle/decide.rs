//! The approval policy's part in [`Router::ask`] (docs/POLICY.md): a plain tool approval
//! (`session/request_permission` without questions) that a rule allows or denies is answered
//! here with the agent's own `allow_once` or `reject_once` option, and never asked.
//!
//! A decision reads files (the policy's, and the links on the call's paths), so the router
//! does not make it: it asks the shell with an [`Effect::Decide`] and waits, the approval
//! parked in [`PolicyState`], for the [`Ruling`] ([`Router::on_ruling`]). Meanwhile the
//! approval takes no slot, and ends like a question: `session/cancel`, the client's EOF and
//! the agent's `$/cancel_request` answer it; the agent gone drops it; a late ruling is
//! dropped.
//!
//! Invariants:
//! - Only tool approvals: the agents' questions are always asked.
//! - Never fail open: `allow` needs the agent's `allow_once` option and `deny` its
//!   `reject_once` (never an `*_always`: the agent's own state is not changed behind the
//!   user's back); without it, or with a broken policy, the approval is asked.
//! - A decided approval is still seen: a note in the client's chat, a `decided` event (the
//!   journal, the page, the inbox; never a notification), the log, and `bridge.status`.
//! - A broken policy is said in the chat once per session, on stderr, and on the page; a
//!   project file ignored, or its allow rules left out since its content changed, once per
//!   change of the file.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::ask::Rest;
use super::{Outbox, Router};
use crate::envelope::{IdMap, RequestId};
use crate::events::{By, Event, PolicyView};
use crate::jsonrpc::{self, code};
use crate::policy::desk::{Change, Ruling};
use crate::policy::remember::{self, ForAgent, Place, Remember};
use crate::policy::{Call, Decision, Verdict};
use crate::questions::answer::ControlError;
use crate::questions::answer::{Outcome, Reason};
use crate::questions::open::Pending;
use crate::questions::sources::Reply;
use crate::router::Effect;

/// How many decisions `bridge.status` keeps.
const RECENT: usize = 20;

/// The approval policy of a bridge as the router knows it: the approvals waiting for their
/// ruling, and what it told.
#[derive(Debug, Default)]
pub(in crate::router) struct PolicyState {
    /// Approvals waiting for the shell's ruling, by the agent's request id.
    deciding: IdMap<RequestId, Parked>,
    /// The sessions told that the policy is broken.
    told: HashSet<String>,
    /// The latest decisions, newest last.
    recent: VecDeque<Value>,
    /// The last token given to an "Always allow" write, or ticket to a decision.
    tokens: u64,
    /// The questions whose answer waits for its "Always allow" write: by token, the
    /// question's serial.
    remembering: HashMap<u64, u64>,
}

/// A tool approval waiting for its ruling: what was asked, the call the policy reads, and
/// how it is asked if the policy does not answer it.
#[derive(Debug)]
struct Parked {
    /// The decision's own ticket ([`Effect::Decide`]).
    ticket: u64,
    pending: Pending,
    call: Call,
    rest: Rest,
}

impl Router {
    /// The latest decisions for `bridge.status` (`null`: no policy, `--no-policy`); the
    /// shell adds its files' state.
    pub fn policy_decisions(&self) -> Value {
        match &self.policy {
            Some(state) => json!(state.recent),
            None => Value::Null,
        }
    }

    /// Whether `id` is a tool approval waiting for its ruling.
    pub(in crate::router) fn deciding(&self, id: &RequestId) -> bool {
        self.policy
            .as_ref()
            .is_some_and(|s| s.deciding.contains_key(id))
    }

    /// Asks the shell to decide the tool approval `p` (its tool call `tool_call`); it
    /// waits, parked, for [`Router::on_ruling`]. Without a policy in force, it is asked.
    pub(super) fn ask_policy(
        &mut self,
        p: Pending,
        tool_call: &Value,
        rest: Rest,
        out: &mut Outbox,
    ) {
        let session = p.question.session_id.clone();
        let cwd = self.session_cwd(&session);
        // This call's own command moves the shell for the next one.
        self.shells.seen(&session, tool_call);
        let mut call = self.policy_call(tool_call, cwd.as_deref());
        if crate::policy::with_its_shell(call.tool.as_deref(), &call.agent) {
            call.shell = self
                .shells
                .before(&session, tool_call["toolCallId"].as_str());
        }
        let limit = self.cfg.max_in_flight;
        let Some(state) = self.policy.as_mut() else {
            return self.admit_and_show(p, rest, out);
        };
        if state.deciding.len() >= limit {
            let msg =
                format!("too many tool approvals waiting for the approval policy (limit {limit})");
            return super::refuse(&p.agent_id, code::SERVER_ERROR, msg, out);
        }
        state.tokens += 1;
        let ticket = state.tokens;
        out.effects.push(Effect::Decide {
            id: p.agent_id.clone(),
            ticket,
            call: Box::new(call.clone()),
            cwd,
        });
        let id = p.agent_id.clone();
        let parked = Parked {
            ticket,
            pending: p,
            call,
            rest,
        };
        state.deciding.insert(id, parked);
    }

    /// The shell's ruling on the tool approval the agent asked with `id`, decided under
    /// `ticket`: answered by the policy, or asked. A ruling for an approval that has ended
    /// since is dropped, also when the agent has asked another one under the same id.
    pub(in crate::router) fn on_ruling(
        &mut self,
        id: &RequestId,
        ticket: u64,
        ruling: Ruling,
        out: &mut Outbox,
    ) {
        let state = self.policy.as_mut();
        let Some(parked) = state.and_then(|s| match s.deciding.get(id) {
            Some(p) if p.ticket == ticket => s.deciding.remove(id),
            _ => None,
        }) else {
            tracing::debug!(%id, "a ruling for a tool approval that has ended; dropped");
            return;
        };
        if self.decided_by_policy(&parked.pending, &parked.call, ruling, out) {
            return;
        }
        self.admit_and_show(parked.pending, parked.rest, out);
    }

    /// Ends the approvals waiting for their ruling that `which` picks: the agent gets
    /// `reason` in its shape (none when `reason` is `None`: the agent is gone).
    pub(super) fn end_deciding(
        &mut self,
        which: impl Fn(&Pending) -> bool,
        reason: Option<Reason>,
        by: By,
        out: &mut Outbox,
    ) {
        let Some(state) = self.policy.as_mut() else {
            return;
        };
        let ids: Vec<RequestId> = state
            .deciding
            .iter()
            .filter(|(_, parked)| which(&parked.pending))
            .map(|(id, _)| id.clone())
            .collect();
        let ended: Vec<Parked> = ids
            .iter()
            .filter_map(|id| state.deciding.remove(id))
            .collect();
        let Some(reason) = reason else { return };
        for parked in ended {
            let p = parked.pending;
            let outcome = Outcome::Rejected(reason);
            self.count_outcome(&p, Some(&outcome), by);
            match p.origin.reply(&p.question, &outcome, &Vec::new()) {
                Reply::Result(result) => out.agent(jsonrpc::result_text(&p.agent_id, &result)),
                Reply::Error { code, message } => {
                    out.agent(jsonrpc::error(Some(&p.agent_id), code, &message, None))
                }
            }
        }
    }

    /// The agent's `$/cancel_request` for an approval waiting for its ruling: it gets
    /// `-32800`, and true is returned.
    pub(super) fn cancel_deciding(&mut self, id: &RequestId, out: &mut Outbox) -> bool {
        let Some(_) = self.policy.as_mut().and_then(|s| s.deciding.remove(id)) else {
            return false;
        };
        out.agent(jsonrpc::error(
            Some(id),
            code::REQUEST_CANCELLED,
            "Request cancelled",
            None,
        ));
        true
    }

    /// "Always allow" with an answer: checks the rule the question's `alwaysAllow` shows
    /// for `remember` (the answer must pick one option that allows) and asks the shell to
    /// write it ([`Effect::Remember`]); the answer waits for the write under the token
    /// returned.
    pub(in crate::router) fn control_remember(
        &mut self,
        session: &str,
        question_id: &str,
        answers: &Value,
        remember: Remember,
        out: &mut Outbox,
    ) -> Result<u64, ControlError> {
        let (rule, said) = self.always_allow_rule(session, question_id, answers, remember)?;
        let serial = self
            .questions
            .get_by_key(session, question_id)
            .map_or(0, |o| o.serial);
        let state = self
            .policy
            .as_mut()
            .ok_or_else(|| ControlError::Invalid("remember: no policy in force".into()))?;
        state.tokens += 1;
        let token = state.tokens;
        if state.remembering.len() >= 4096 {
            state.remembering.clear();
        }
        state.remembering.insert(token, serial);
        out.effects.push(Effect::Remember { token, rule, said });
        Ok(token)
    }

    /// The answer of [`Router::control_remember`] once its rule is written (`token`): given
    /// only to the question that was checked. One the agent ended and asked again under the
    /// same id since (another command, the same question id) is not answered.
    pub(in crate::router) fn control_answer_remembered(
        &mut self,
        token: u64,
        session: &str,
        question_id: &str,
        answers: &Value,
        device: Option<&str>,
        out: &mut Outbox,
    ) -> Result<Value, ControlError> {
        let checked = self
            .policy
            .as_mut()
            .and_then(|s| s.remembering.remove(&token));
        let now = self
            .questions
            .get_by_key(session, question_id)
            .map(|o| o.serial);
        // Not pending any more: `control_answer` says who resolved it.
        if checked.is_none() || (now.is_some() && checked != now) {
            return Err(ControlError::Invalid(
                "remember: the question changed while its rule was written; it is not answered"
                    .into(),
            ));
        }
        self.control_answer(session, question_id, answers, device, out)
    }

    /// Whether the policy answered the tool approval `p` (read as `call`) by `ruling`:
    /// then the agent has its answer, and `p` is over. What changed in the policy's files is
    /// said in the session's chat either way.
    fn decided_by_policy(
        &mut self,
        p: &Pending,
        call: &Call,
        ruling: Ruling,
        out: &mut Outbox,
    ) -> bool {
        let session = p.question.session_id.clone();
        let Some(state) = self.policy.as_mut() else {
            return false;
        };
        let mut notes: Vec<String> = ruling
            .changes
            .iter()
            .map(|c| match c {
                Change::Reloaded(f) => format!("Approval policy: {} read again; in force.", f.display()),
                Change::KeptLastGood { error, .. } => format!(
                    "Approval policy: a changed file is broken, so its last good rules stay in force: {error}"
                ),
                Change::Ignored { file, why } => format!(
                    "Approval policy: the project file {} is ignored as a whole, and your own rules stay in force: {why}",
                    file.display()
                ),
                Change::Untrusted { why, .. } => format!("Approval policy: {why}"),
            })
            .collect();
        if let Some(why) = &ruling.broken {
            if state.told.len() < 4096 && state.told.insert(session.clone()) {
                notes.push(format!(
                    "Approval policy broken, so every tool approval is asked: {why}"
                ));
            }
        }
        let verdict = ruling.verdict;
        let chosen = self.option_for(p, &verdict);
        for n in &notes {
            self.session_note(&session, n, out);
        }
        let (Some(option), Some(rule)) = (chosen, verdict.rule.as_ref()) else {
            return false;
        };
        // What decided, as the policy read it: the command as parsed, else the paths; never
        // the agent's own title. Escaped, so it cannot forge a line of the chat.
        let subject = match &call.command {
            Some(c) => c.text(),
            None if !call.paths.is_empty() => {
                let paths: Vec<String> = call
                    .paths
                    .iter()
                    .map(|p| crate::policy::shell::escape(&p.to_string_lossy()))
                    .collect();
                format!(
                    "{} {}",
                    call.kind.as_deref().unwrap_or("call"),
                    paths.join(", ")
                )
            }
            None => crate::policy::shell::escape(&call.title),
        };
        let subject: String = if subject.chars().count() > 200 {
            subject.chars().take(199).chain(['…']).collect()
        } else {
            subject
        };
        let view = PolicyView {
            decision: verdict.decision.as_str(),
            rule: rule.id.clone(),
            file: rule.file.display().to_string(),
            line: rule.line,
            why: verdict.why.clone(),
            justification: rule.justification.clone(),
            subject: subject.clone(),
        };
        let outcome = Outcome::Answered(vec![vec![option]]);
        self.counters.decided_by_policy += 1;
        tracing::info!(
            session_id = ?session,
            decision = view.decision,
            rule = %view.rule,
            file = %view.file,
            line = view.line,
            "tool approval decided by the approval policy"
        );
        let said = format!(
            "{} by policy rule `{}`: {subject}{}",
            match verdict.decision {
                Decision::Allow => "Allowed",
                _ => "Denied",
            },
            // A rule's id and justification come from files a cloned project may have
            // written: escaped too.
            crate::policy::shell::escape(&rule.id),
            rule.justification
                .as_ref()
                .map(|j| format!(" ({})", crate::policy::shell::escape(j)))
                .unwrap_or_default()
        );
        self.session_note(&session, &said, out);
        let result = outcome.to_event();
        if let Some(state) = self.policy.as_mut() {
            if state.recent.len() >= RECENT {
                state.recent.pop_front();
            }
            state.recent.push_back(json!({
                "sessionId": session,
                "at": super::rfc3339(p.created_wall),
                "policy": &view,
            }));
        }
        if self.cfg.events {
            self.ledger.session(&session);
            let question = self.view_as(p, "policy");
            out.events.push(Event::Decided {
                question,
                policy: Box::new(view.clone()),
                result,
            });
        }
        match p.origin.reply(&p.question, &outcome, &Vec::new()) {
            Reply::Result(result) => {
                // The only place an ACP permission response can carry why.
                let mut result: Value = serde_json::from_str(&result).unwrap_or(Value::Null);
                result["_meta"] = json!({ "acpQuestionBridge": { "policy": {
                    "decision": view.decision, "rule": view.rule, "justification": view.justification,
                }}});
                out.agent(jsonrpc::result_text(&p.agent_id, &result.to_string()));
            }
            Reply::Error { code, message } => {
                out.agent(jsonrpc::error(Some(&p.agent_id), code, &message, None))
            }
        }
        true
    }

    /// The call the policy reads from `tool_call`, in a session in `cwd`.
    fn policy_call(&self, tool_call: &Value, cwd: Option<&Path>) -> Call {
        let mut call = Call::from_tool_call(
            tool_call,
            self.agent_info_name.as_deref().unwrap_or(&self.cfg.agent),
            cwd.unwrap_or(Path::new("/")),
        );
        if self.agent_info_name.is_some() {
            call.program = Some(self.cfg.agent.clone());
        }
        call
    }

    /// The session's folder: the one its client named, else the agent's.
    fn session_cwd(&self, session: &str) -> Option<PathBuf> {
        self.sessions
            .cwd(session)
            .map(Path::to_owned)
            .or_else(|| self.cfg.cwd.clone())
    }

    /// What "Always allow" would write for the tool approval `tool_call` of `session`
    /// (only while a policy is in force).
    pub(super) fn always_allow_drafts(&self, session: &str, tool_call: &Value) -> Option<Value> {
        self.policy.as_ref()?;
        let call = self.policy_call(tool_call, self.session_cwd(session).as_deref());
        remember::drafts(&call)
    }

    /// The rule "Always allow" writes for the pending approval `question_id` of `session`,
    /// answered with `answers`, as `remember` chose; and the sentence that says what it does.
    fn always_allow_rule(
        &self,
        session: &str,
        question_id: &str,
        answers: &Value,
        remember: Remember,
    ) -> Result<(String, String), ControlError> {
        let invalid = |m: &str| ControlError::Invalid(format!("remember: {m}"));
        let p = self
            .questions
            .get_by_key(session, question_id)
            .ok_or(ControlError::NotPending { resolved_by: None })?;
        let drafts = p
            .always_allow
            .as_ref()
            .ok_or_else(|| invalid("this question cannot be remembered (not a tool approval with one command or exact paths, or no policy in force)"))?;
        // The answer as the agent will get it (checked, labels made values): one option,
        // and one that allows.
        let checked = crate::questions::answer::check_answers(&p.question, answers)
            .map_err(ControlError::Invalid)?;
        let allows = match checked.as_slice() {
            [one] if one.len() == 1 => p.question.items.first().is_some_and(|i| {
                i.options.iter().any(|o| {
                    o.value == one[0] && o.kind.as_deref().is_some_and(|k| k.starts_with("allow"))
                })
            }),
            _ => false,
        };
        if !allows {
            return Err(invalid(
                "only an answer that allows can be remembered as always allowed",
            ));
        }
        let rule = drafts["rules"][remember.key()]
            .as_str()
            .ok_or_else(|| invalid("no such draft"))?
            .to_owned();
        let who = match remember.agent {
            ForAgent::This => format!("for {}", drafts["agent"].as_str().unwrap_or("this agent")),
            ForAgent::Every => "for every agent".to_owned(),
        };
        let place = match remember.place {
            Place::Project => format!(
                "in {}",
                drafts["project"].as_str().unwrap_or("this project")
            ),
            Place::Everywhere => "everywhere".to_owned(),
        };
        let said = format!(
            "Always allow `{}` {who} {place}",
            drafts["subject"].as_str().unwrap_or_default()
        );
        Ok((rule, said))
    }

    /// The agent's option that `verdict` picks: `allow_once` for allow, `reject_once` for
    /// deny; none for ask, or when the agent offers no such option.
    fn option_for(&self, p: &Pending, verdict: &Verdict) -> Option<String> {
        let kind = match verdict.decision {
            Decision::Allow => "allow_once",
            Decision::Deny => "reject_once",
            Decision::Ask => return None,
        };
        let option = p
            .question
            .items
            .first()?
            .options
            .iter()
            .find(|o| o.kind.as_deref() == Some(kind));
        if option.is_none() {
            tracing::warn!(
                decision = verdict.decision.as_str(),
                "the approval policy decided, but the agent offers no {kind} option; asked instead"
            );
        }
        option.map(|o| o.value.clone())
    }
}
