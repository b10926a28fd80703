//! When a pending question rings (`--notify-after`, `--remind-every`, quiet at the desk):
//! the `--on-question` command, the page's notifications and Web Push ring for a question
//! only once it has waited `--notify-after`, never while the user is visibly at the desk,
//! and again every `--remind-every` while it is still pending, at most [`MAX_REMINDERS`]
//! times. The listing, the journal and the events are not delayed: only the ringing is.
//!
//! Sans-IO: the loop that owns it (the bridge's, the inbox's) feeds it questions asked and
//! ended, signs of the user at the desk and the clock, and rings what [`Ringer::due`] says.
//!
//! Invariants: a question rings at most `1 + MAX_REMINDERS` times, never before
//! `--notify-after` has passed since it was asked, never after it ended, and never while
//! the user is at the desk (it rings when they leave, if it is still pending).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The longest delay or quiet taken: longer ones mean "never", and are kept within what
/// the clock can add.
const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// How many times a question rings again after its first ring, at most.
pub const MAX_REMINDERS: u32 = 10;
/// How long the page counts as open and visible after it last said so (it says so every
/// 20 s while it is).
pub const PAGE_SEEN_FOR: Duration = Duration::from_secs(60);

/// `--notify-after`, `--remind-every`, `--quiet-at-desk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    /// How long a question waits before it rings (0: at once).
    pub after: Duration,
    /// How often a question still pending rings again (`None`: once only).
    pub remind_every: Option<Duration>,
    /// How long the user counts as at the desk after they answered a question or sent a
    /// prompt in the editor (0: never).
    pub quiet_at_desk: Duration,
}

impl Default for RingConfig {
    /// The defaults: 20 s, no reminders, 60 s.
    fn default() -> Self {
        RingConfig {
            after: Duration::from_secs(20),
            remind_every: None,
            quiet_at_desk: Duration::from_secs(60),
        }
    }
}

/// A question, by (bridge, session, question).
pub type Key = (String, String, String);

/// A question that rings now: what to ring with, and how many times it rang before.
#[derive(Debug, Clone, PartialEq)]
pub struct Ring {
    pub key: Key,
    pub question: Value,
    /// 0 for the first ring, then 1, 2, ... for the reminders.
    pub reminder: u32,
}

#[derive(Debug)]
struct Waiting {
    question: Value,
    /// When it rings next (`None`: it rang for the last time).
    next: Option<Instant>,
    rang: u32,
}

/// Why a pending question has not rung (yet), for `bridge.status` and the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quiet {
    /// It waits for `--notify-after`.
    Delay,
    /// The user answered a question or sent a prompt a moment ago.
    AtDesk,
    /// The Questions page is open and visible on this machine.
    PageOpen,
}

impl Quiet {
    pub fn as_str(self) -> &'static str {
        match self {
            Quiet::Delay => "waiting for --notify-after",
            Quiet::AtDesk => "quiet: you answered or prompted in the editor a moment ago",
            Quiet::PageOpen => "quiet: the Questions page is open on this machine",
        }
    }
}

/// The questions waiting to ring, and what says the user is at the desk.
#[derive(Debug)]
pub struct Ringer {
    cfg: RingConfig,
    waiting: BTreeMap<Key, Waiting>,
    /// The user is at the desk until then (they answered or prompted in the editor).
    desk_until: Option<Instant>,
    /// The page said it is visible; it counts as such until then.
    page_until: Option<Instant>,
}

impl Ringer {
    pub fn new(cfg: RingConfig) -> Self {
        // A duration the clock cannot reach means "never": kept within it.
        let far = |d: Duration| d.min(FAR);
        let cfg = RingConfig {
            after: far(cfg.after),
            remind_every: cfg.remind_every.map(far),
            quiet_at_desk: far(cfg.quiet_at_desk),
        };
        Ringer {
            cfg,
            waiting: BTreeMap::new(),
            desk_until: None,
            page_until: None,
        }
    }

    pub fn config(&self) -> RingConfig {
        self.cfg
    }

    /// Nothing waits to ring (the relay's steady state: nothing to look at).
    #[inline]
    pub fn idle(&self) -> bool {
        self.waiting.is_empty()
    }

    /// `question` was asked at `now`. One it already has (announced again: an inbox that
    /// reached its bridge again) keeps its schedule and its count.
    pub fn asked(&mut self, key: Key, question: Value, now: Instant) {
        let next = now.checked_add(self.cfg.after);
        self.waiting.entry(key).or_insert(Waiting {
            question,
            next,
            rang: 0,
        });
    }

    /// Of `bridge`'s questions, only those in `pending` are still pending (its list, once
    /// reached again): the others ended meanwhile.
    pub fn keep_only(
        &mut self,
        bridge: &str,
        pending: &std::collections::HashSet<(String, String)>,
    ) {
        self.waiting
            .retain(|k, _| k.0 != bridge || pending.contains(&(k.1.clone(), k.2.clone())));
    }

    /// The question ended (answered, rejected, withdrawn): it never rings again.
    pub fn ended(&mut self, key: &Key) {
        self.waiting.remove(key);
    }

    /// Every question of `bridge` ended (it is gone).
    pub fn ended_bridge(&mut self, bridge: &str) {
        self.waiting.retain(|k, _| k.0 != bridge);
    }

    /// The user answered a question or sent a prompt in the editor at `now`.
    pub fn at_desk(&mut self, now: Instant) {
        if self.cfg.quiet_at_desk.is_zero() {
            return;
        }
        let Some(until) = now.checked_add(self.cfg.quiet_at_desk) else {
            return;
        };
        self.desk_until = Some(self.desk_until.map_or(until, |u| u.max(until)));
    }

    /// The Questions page on this machine said it is visible (`true`) or hidden.
    pub fn page(&mut self, visible: bool, now: Instant) {
        self.page_until = visible.then(|| now + PAGE_SEEN_FOR);
    }

    /// Why nothing rings now, if the user is at the desk.
    fn quiet(&self, now: Instant) -> Option<(Quiet, Instant)> {
        let desk = self
            .desk_until
            .filter(|u| *u > now)
            .map(|u| (Quiet::AtDesk, u));
        let page = self
            .page_until
            .filter(|u| *u > now)
            .map(|u| (Quiet::PageOpen, u));
        match (desk, page) {
            (Some(d), Some(p)) => Some(if d.1 >= p.1 { d } else { p }),
            (d, p) => d.or(p),
        }
    }

    /// What rings at `now`: each question whose time has come, unless the user is at the
    /// desk (then it rings when they leave). Each is then scheduled again per
    /// `--remind-every`.
    pub fn due(&mut self, now: Instant) -> Vec<Ring> {
        if self.quiet(now).is_some() {
            return Vec::new();
        }
        let mut rings = Vec::new();
        for (key, w) in &mut self.waiting {
            if w.next.is_none_or(|n| n > now) {
                continue;
            }
            rings.push(Ring {
                key: key.clone(),
                question: w.question.clone(),
                reminder: w.rang,
            });
            w.rang += 1;
            w.next = match self.cfg.remind_every {
                Some(every) if w.rang <= MAX_REMINDERS => now.checked_add(every),
                _ => None,
            };
        }
        rings
    }

    /// When [`Ringer::due`] may have something next, seen at `now`.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let first = self.waiting.values().filter_map(|w| w.next).min()?;
        // While quiet, nothing rings before the quiet ends.
        Some(match self.quiet(now) {
            Some((_, until)) => first.max(until),
            None => first,
        })
    }

    /// For `bridge.status`: the settings, whether the user counts as at the desk, and for
    /// each question not rung yet, why.
    pub fn status(&self, now: Instant) -> Value {
        let ms = |d: Duration| d.as_millis() as u64;
        let quiet = self.quiet(now);
        let questions: Vec<Value> = self
            .waiting
            .iter()
            .map(|((bridge, session, question), w)| {
                let why = match (w.next, quiet) {
                    (None, _) => None,
                    (Some(n), _) if n > now && w.rang == 0 => Some(Quiet::Delay),
                    (Some(n), _) if n > now => None,
                    (Some(_), Some((q, _))) => Some(q),
                    (Some(_), None) => None,
                };
                let mut v = json!({
                    "sessionId": session,
                    "questionId": question,
                    "rang": w.rang,
                    "nextRingInMs": w.next.map(|n| ms(n.saturating_duration_since(now))),
                    "notRungBecause": why.map(Quiet::as_str),
                });
                if !bridge.is_empty() {
                    v["bridge"] = bridge.as_str().into();
                }
                v
            })
            .collect();
        json!({
            "notifyAfterMs": ms(self.cfg.after),
            "remindEveryMs": self.cfg.remind_every.map(ms),
            "quietAtDeskMs": ms(self.cfg.quiet_at_desk),
            "quiet": quiet.map(|(q, _)| q.as_str()),
            "quietForMs": quiet.map(|(_, u)| ms(u.saturating_duration_since(now))),
            "questions": questions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(q: &str) -> Key {
        (String::new(), "s".into(), q.into())
    }

    fn cfg(after: u64, remind: Option<u64>, desk: u64) -> RingConfig {
        RingConfig {
            after: Duration::from_secs(after),
            remind_every: remind.map(Duration::from_secs),
            quiet_at_desk: Duration::from_secs(desk),
        }
    }

    fn rung(r: &mut Ringer, at: Instant) -> Vec<(String, u32)> {
        r.due(at)
            .into_iter()
            .map(|g| (g.key.2, g.reminder))
            .collect()
    }

    #[test]
    fn a_question_answered_before_the_delay_never_rings() {
        let t = Instant::now();
        let mut r = Ringer::new(cfg(2, None, 0));
        r.asked(key("a"), json!({}), t);
        assert!(rung(&mut r, t + Duration::from_millis(500)).is_empty());
        r.ended(&key("a"));
        assert!(rung(&mut r, t + Duration::from_secs(5)).is_empty());
        assert_eq!(r.next_deadline(t), None);
    }

    #[test]
    fn a_pending_question_rings_after_the_delay_then_per_reminder_up_to_the_bound() {
        let t = Instant::now();
        let mut r = Ringer::new(cfg(2, Some(3), 0));
        r.asked(key("a"), json!({}), t);
        assert!(rung(&mut r, t + Duration::from_secs(1)).is_empty());
        assert_eq!(rung(&mut r, t + Duration::from_secs(2)), [("a".into(), 0)]);
        assert!(rung(&mut r, t + Duration::from_secs(4)).is_empty());
        assert_eq!(rung(&mut r, t + Duration::from_secs(5)), [("a".into(), 1)]);
        let mut at = t + Duration::from_secs(5);
        let mut total = 2;
        for _ in 0..50 {
            at += Duration::from_secs(3);
            total += rung(&mut r, at).len();
        }
        assert_eq!(total as u32, 1 + MAX_REMINDERS, "bounded");
        let zero = Ringer::new(cfg(0, None, 0));
        assert_eq!(zero.config().after, Duration::ZERO);
    }

    #[test]
    fn at_the_desk_nothing_rings_until_the_user_leaves() {
        let t = Instant::now();
        let mut r = Ringer::new(cfg(0, None, 60));
        r.at_desk(t);
        r.asked(key("a"), json!({}), t + Duration::from_secs(1));
        assert!(rung(&mut r, t + Duration::from_secs(2)).is_empty());
        assert_eq!(
            r.status(t + Duration::from_secs(2))["questions"][0]["notRungBecause"],
            Quiet::AtDesk.as_str()
        );
        assert_eq!(rung(&mut r, t + Duration::from_secs(60)), [("a".into(), 0)]);
        // The page open and visible is the desk too, while it keeps saying so.
        r.asked(key("b"), json!({}), t + Duration::from_secs(61));
        r.page(true, t + Duration::from_secs(61));
        assert!(rung(&mut r, t + Duration::from_secs(62)).is_empty());
        r.page(false, t + Duration::from_secs(63));
        assert_eq!(rung(&mut r, t + Duration::from_secs(63)), [("b".into(), 0)]);
        r.asked(key("c"), json!({}), t + Duration::from_secs(64));
        r.page(true, t + Duration::from_secs(64));
        assert!(rung(&mut r, t + Duration::from_secs(65)).is_empty());
        // A page that stopped saying so (closed without a word) counts no more.
        let later = t + Duration::from_secs(64) + PAGE_SEEN_FOR;
        assert_eq!(rung(&mut r, later), [("c".into(), 0)]);
    }
}

#[cfg(test)]
mod review_tests {
    use super::*;

    fn key(q: &str) -> Key {
        (String::new(), "s".into(), q.into())
    }

    /// `--notify-after 400000000000y` (as "never") or any delay past what an `Instant` holds:
    /// `checked_add` fails and the question is due at once, before its delay.
    #[test]
    fn review_a_delay_too_long_for_the_clock_never_rings_at_once() {
        let t = Instant::now();
        let mut r = Ringer::new(RingConfig {
            after: Duration::MAX,
            remind_every: None,
            quiet_at_desk: Duration::ZERO,
        });
        r.asked(key("a"), json!({}), t);
        assert!(
            r.due(t + Duration::from_secs(1)).is_empty(),
            "rang 1 s after it was asked, with --notify-after of {:?}",
            Duration::MAX
        );
    }

    /// `--quiet-at-desk` too long for the clock: the user counts as never at the desk.
    #[test]
    fn review_a_quiet_too_long_for_the_clock_is_still_quiet() {
        let t = Instant::now();
        let mut r = Ringer::new(RingConfig {
            after: Duration::ZERO,
            remind_every: None,
            quiet_at_desk: Duration::MAX,
        });
        r.at_desk(t);
        r.asked(key("a"), json!({}), t);
        assert!(r.due(t).is_empty(), "rang while at the desk");
    }

    /// The same question announced twice (the inbox re-lists a bridge's questions after a
    /// reconnection, and calls `asked` for each): its count starts again from 0, so it rings
    /// 1 + MAX_REMINDERS times per announcement.
    #[test]
    fn review_a_question_announced_again_keeps_its_count() {
        let t = Instant::now();
        let mut r = Ringer::new(RingConfig {
            after: Duration::ZERO,
            remind_every: Some(Duration::from_secs(1)),
            quiet_at_desk: Duration::ZERO,
        });
        r.asked(key("a"), json!({}), t);
        let mut total = 0;
        let mut at = t;
        for i in 0..40 {
            at = t + Duration::from_secs(i);
            total += r.due(at).len();
        }
        assert_eq!(total as u32, 1 + MAX_REMINDERS);
        r.asked(key("a"), json!({}), at);
        for i in 40..80 {
            total += r.due(t + Duration::from_secs(i)).len();
        }
        assert!(
            total as u32 <= 1 + MAX_REMINDERS,
            "one question rang {total} times"
        );
    }
}
