//! The sans-IO router driven by a byte script: both peers' messages (valid and invalid
//! questions in both forms, answers valid/invalid/late/duplicate/-32601/other errors,
//! `session/cancel`, `$/cancel_request`, the agent's own permission requests and
//! elicitations, garbage), timer ticks, client EOF and agent exit, under every dialect
//! setting. After every step the checker in `tests/it/router_check` (shared with
//! `tests/it/router_props.rs`) asserts invariants 1-4 of docs/RELIABILITY.md.
//!
//! Every invariant is checked (`Strictness::ALL`, including the checks for the fixed
//! findings F1-F5 and F10 of docs/RELIABILITY.md).
#![no_main]

#[path = "../../tests/it/router_check/mod.rs"]
mod router_check;

use libfuzzer_sys::fuzz_target;
use router_check::{Script, Strictness};

fuzz_target!(|data: &[u8]| {
    let script = Script::decode(data);
    if let Err(e) = script.run(Strictness::ALL) {
        panic!("{e}");
    }
});
