//! What the [`super::Router`] knows of the client, and so how questions reach it: what its
//! `initialize` said it can show, the dialect chosen from that (or forced by the command
//! line, or fallen back to after a `-32601`), and the settings that decide how a question
//! the client cannot show is asked. It owns this state; the router asks it questions.

use crate::capabilities::ClientSupport;
use crate::questions::open::Choose;
use crate::questions::prompts::Style;
use crate::questions::sources::Origin;
use crate::questions::sources::{self, OptIn};
use crate::questions::Dialect;

use super::RouterConfig;

/// The client as the router sees it.
#[derive(Debug)]
pub(super) struct ClientView {
    /// What the client's `initialize` said it can show (None before `initialize`).
    support: Option<ClientSupport>,
    /// The dialect chosen in auto mode after a `-32601` fallback.
    fallback: Option<Dialect>,
    /// `--client-dialect`.
    forced: Option<Dialect>,
    /// `--permission-prompts`.
    permission_prompts: Option<Style>,
    /// `--client-cancel-requests`.
    cancel_requests: bool,
    /// Forms are offered to the agent (unless `--no-opt-in form`).
    advertise_elicitation: bool,
    /// `--advertise-elicitation`: offer forms even where no surface could take them.
    force_forms: bool,
    /// A question the client cannot show waits for the control server.
    hold_unsupported: bool,
    /// The vendors' opt-ins the command line lets the bridge offer.
    opt_ins: Vec<&'static str>,
}

impl ClientView {
    pub(super) fn new(cfg: &RouterConfig) -> Self {
        Self {
            support: None,
            fallback: None,
            forced: cfg.client_dialect,
            permission_prompts: cfg.permission_prompts,
            cancel_requests: cfg.client_cancel_requests,
            advertise_elicitation: cfg.advertise_elicitation,
            force_forms: cfg.force_forms,
            hold_unsupported: cfg.hold_unsupported,
            opt_ins: cfg.opt_ins.clone(),
        }
    }

    /// The client's `initialize` arrived: what it can show, and no fallback yet.
    pub(super) fn initialized(&mut self, support: ClientSupport) {
        self.support = Some(support);
        self.fallback = None;
    }

    pub(super) fn support(&self) -> Option<&ClientSupport> {
        self.support.as_ref()
    }

    /// The dialect is forced by `--client-dialect`.
    pub(super) fn forced(&self) -> Option<Dialect> {
        self.forced
    }

    /// A question the client cannot show waits for the control server.
    pub(super) fn holds_unsupported(&self) -> bool {
        self.hold_unsupported
    }

    /// The client said it knows the vendor method `method`.
    pub(super) fn understands(&self, method: &str) -> bool {
        self.support.as_ref().is_some_and(|c| c.understands(method))
    }

    /// The dialect new questions are shown in on this connection.
    pub(super) fn dialect(&self) -> Dialect {
        if let Some(forced) = self.forced {
            return forced;
        }
        self.fallback.unwrap_or_else(|| self.advertised())
    }

    /// The client refused a dialect: later questions use `next`.
    pub(super) fn fall_back_to(&mut self, next: Dialect) {
        self.fallback = Some(next);
    }

    /// The best standard dialect the client's `initialize` advertised.
    fn advertised(&self) -> Dialect {
        match &self.support {
            Some(c) if c.native_questions => Dialect::Extension,
            Some(c) if c.elicitation_form => Dialect::Elicitation,
            _ => Dialect::Permission,
        }
    }

    /// How questions are asked as permission prompts on this connection: `--permission-prompts`,
    /// else every option in one prompt for a client known to show them all by name, else
    /// yes/no prompts (`crate::clients`).
    pub(super) fn prompt_style(&self) -> Style {
        self.permission_prompts.unwrap_or_else(|| {
            match self.support.as_ref().and_then(|c| c.known) {
                Some(k) if k.shows_option_names => Style::List,
                _ => Style::Binary,
            }
        })
    }

    /// Whether the client is sent `$/cancel_request` for a request it shows that is over:
    /// only when `--client-cancel-requests` says so or it is known to handle it; else the
    /// chat says so (`crate::questions::chat`).
    pub(super) fn sends_cancel_requests(&self) -> bool {
        self.cancel_requests
            || self
                .support
                .as_ref()
                .and_then(|c| c.known)
                .is_some_and(|k| k.handles_cancel_request)
    }

    /// Whether the agent's form elicitations are shown as questions (the client cannot
    /// render them, and the bridge told the agent it may send them).
    /// The dialect a question is shown in on this connection, by its source's rule, and
    /// whether the client gets the agent's request as it was sent (rather than one the
    /// bridge builds for the dialect).
    pub(super) fn pick(&self, choose: &Choose) -> (Dialect, bool) {
        match choose {
            Choose::Question => (self.dialect(), true),
            Choose::Permission { asks_questions } => match self.dialect() {
                d @ (Dialect::Extension | Dialect::Elicitation) if *asks_questions => (d, false),
                _ => (Dialect::Native, true),
            },
            Choose::Vendor { method } if self.understands(method) => (Dialect::Native, true),
            Choose::Vendor { .. } => (self.dialect(), false),
            Choose::Form if !self.translates_agent_elicitations() => (Dialect::Native, true),
            Choose::Form if self.dialect() == Dialect::Extension => (Dialect::Extension, true),
            Choose::Form => (Dialect::Permission, true),
        }
    }

    pub(super) fn translates_agent_elicitations(&self) -> bool {
        self.advertise_elicitation
            && !self.renders_forms()
            && (self.can_take_questions() || self.force_forms)
    }

    fn renders_forms(&self) -> bool {
        match self.forced {
            Some(forced) => forced == Dialect::Elicitation,
            None => self.support.as_ref().is_some_and(|c| c.elicitation_form),
        }
    }

    /// Whether some surface can take any question an agent asks: the client shows forms or
    /// the extension itself (a translation loses nothing), or the control server runs (a
    /// question the client cannot show waits there, and in the inbox). Only then are agents
    /// offered forms and the vendors' opt-ins: without one, an agent that asked would have
    /// its question ended unseen, where without the offer it knows not to ask.
    pub(super) fn can_take_questions(&self) -> bool {
        self.hold_unsupported
            || self.support.as_ref().is_some_and(|c| c.native_questions)
            || self.renders_forms()
            || matches!(self.forced, Some(Dialect::Extension | Dialect::Elicitation))
    }

    /// The vendors' opt-ins offered to the agent: those the command line allows, and only
    /// where some surface can take what they ask ([`ClientView::can_take_questions`]).
    pub(super) fn opt_ins(&self) -> impl Iterator<Item = &'static OptIn> + '_ {
        let offer = self.can_take_questions();
        sources::VENDORS
            .iter()
            .filter_map(|v| v.opt_in.as_ref())
            .filter(move |o| offer && self.opt_ins.contains(&o.name))
    }

    /// The dialect to try after `failed` answered `-32601` (auto mode only).
    pub(super) fn next_dialect(&self, failed: Dialect, origin: &Origin) -> Option<Dialect> {
        if self.forced.is_some() {
            return None;
        }
        let forms = self.support.as_ref().is_some_and(|c| c.elicitation_form);
        match failed {
            Dialect::Extension if forms && origin.form_after_extension() => {
                Some(Dialect::Elicitation)
            }
            Dialect::Extension | Dialect::Elicitation => Some(Dialect::Permission),
            // A vendor's method the client said it knows, but does not: the client's own
            // standard shape.
            Dialect::Native if !origin.standard() => Some(self.advertised()),
            // A standard request shown as it was sent: the client's error is its answer.
            Dialect::Permission | Dialect::Native | Dialect::Control => None,
        }
    }
}
