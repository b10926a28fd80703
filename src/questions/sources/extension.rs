//! `_sandboxagent/session/request_question`, the extension (PROTOCOL.md section 1): its
//! agent gets the canonical result, with the members the client added.

use serde_json::value::RawValue;

use super::{Reply, Source};
use crate::questions::answer::{self, Extras, Outcome};
use crate::questions::model::Question;

/// The extension's source: nothing to remember beyond the question.
#[derive(Debug, Default)]
pub struct Extension;

impl Source for Extension {
    fn method(&self) -> &'static str {
        crate::methods::SESSION_REQUEST_QUESTION
    }

    fn name(&self) -> &'static str {
        "question"
    }

    fn reply(&self, _q: &Question, outcome: &Outcome, extras: &Extras) -> Reply {
        Reply::Result(outcome.to_result(extras))
    }

    fn read(&self, q: &Question, result: &RawValue) -> Result<Outcome, String> {
        answer::normalize(q, result).map(|(o, _)| o)
    }

    fn form_after_extension(&self) -> bool {
        true
    }
}
