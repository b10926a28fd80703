//! Property tests of the sans-IO router: random interleavings of both peers' messages,
//! timer ticks, client EOF and agent exit, checked after every step by `router_check`
//! (the same checker the `router` fuzz target uses). See `docs/RELIABILITY.md`.

use crate::router_check::{End, Op, Script, Setup, Strictness};
use proptest::prelude::*;

fn setup() -> impl Strategy<Value = Setup> {
    (
        0u8..4,
        any::<bool>(),
        proptest::option::of(1u32..5000),
        1usize..5,
    )
        .prop_map(
            |(dialect, advertise_elicitation, question_timeout_ms, max_pending_per_session)| {
                Setup {
                    dialect,
                    advertise_elicitation,
                    question_timeout_ms,
                    max_pending_per_session,
                }
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    let b = any::<u8>;
    prop_oneof![
        2 => (b(), b()).prop_map(|(caps, id)| Op::Init { caps, id }),
        8 => (b(), b(), b(), proptest::option::of(1u64..4000), b()).prop_map(
            |(session, qid, form, timeout_ms, id)| Op::Ask { session, qid, form, timeout_ms, id }
        ),
        2 => (b(), b()).prop_map(|(session, id)| Op::AgentPermission { session, id }),
        2 => (b(), b(), b()).prop_map(|(session, form, id)| Op::AgentElicit { session, form, id }),
        2 => (b(), b()).prop_map(|(session, id)| Op::AgentPlain { session, id }),
        1 => Just(Op::AgentNote),
        2 => b().prop_map(|pick| Op::AgentCancel { pick }),
        3 => (b(), any::<bool>()).prop_map(|(pick, error)| Op::AgentRespond { pick, error }),
        1 => b().prop_map(|kind| Op::AgentBad { kind }),
        2 => (b(), b()).prop_map(|(session, id)| Op::ClientRequest { session, id }),
        1 => Just(Op::ClientNote),
        2 => b().prop_map(|session| Op::ClientCancel { session }),
        10 => (b(), b()).prop_map(|(pick, kind)| Op::ClientAnswer { pick, kind }),
        1 => b().prop_map(|kind| Op::ClientBad { kind }),
        3 => (0u32..3000).prop_map(|ms| Op::Tick { ms }),
        1 => Just(Op::TickToDeadline),
    ]
}

fn script() -> impl Strategy<Value = Script> {
    (
        setup(),
        proptest::collection::vec(op(), 0..80),
        prop_oneof![
            Just(End::ClientEof),
            Just(End::AgentGone),
            Just(End::ClientEofThenAgentGone)
        ],
    )
        .prop_map(|(setup, ops, end)| Script { setup, ops, end })
}

/// 1000 cases by default; `PROPTEST_CASES` for longer runs.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

proptest! {
    #![proptest_config(crate::common::proptest_config(cases()))]

    /// Invariants 1-4 of docs/RELIABILITY.md on the router, every check on
    /// (`Strictness::ALL`, which includes the checks for findings F1-F5 and F10).
    #[test]
    fn router_keeps_its_invariants(s in script()) {
        if let Err(e) = s.run(Strictness::ALL) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// The checker itself catches what it claims to: a script of the fuzz target's format
/// decodes and runs clean.
#[test]
fn decoded_scripts_run() {
    for seed in 0u8..=255 {
        let bytes: Vec<u8> = (0..200u16)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect();
        let s = Script::decode(&bytes);
        assert!(!s.ops.is_empty());
        s.run(Strictness::ALL)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}
