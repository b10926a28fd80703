//! The approval policy against the real shells, on arbitrary input (docs/POLICY.md;
//! ENGINEERING.md, "Security"): the input is a command around a prefix an allow rule covers
//! (its first byte picks `cargo test`, `git status`, `npm run test`, `make check`, `echo`,
//! `ls`, or none), and a command the policy allows runs under real `bash -c` and `dash -c`
//! with recording stand-ins on `PATH`, in a fresh folder.
//!
//! Checked: an allowed command starts only what the policy allows on its own, in the
//! environment, folder and streams a plain command gets, leaves the folder as it was, and
//! ends within 4 s per shell. The runner is the differential test's own
//! (tests/it/policy_shell/runner.rs, included by path: one check, no test helper in the crate).
//! Linux only; needs /usr/bin/bash and /usr/bin/dash.
#![no_main]

#[path = "../../tests/it/policy_shell/runner.rs"]
mod runner;

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use acp_question_bridge::policy::{Decision, Policy};
use libfuzzer_sys::fuzz_target;

fn policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(runner::policy)
}

/// One sandbox for the process, under the temporary folder; those of fuzzing processes that
/// are gone are removed first (libFuzzer ends with `exit`, which runs no destructor).
fn sandbox() -> &'static Mutex<runner::Sandbox> {
    static S: OnceLock<Mutex<runner::Sandbox>> = OnceLock::new();
    S.get_or_init(|| {
        let tmp = std::env::temp_dir();
        let prefix = "acp-qb-policy-shell-fuzz-";
        for e in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix(prefix) {
                if !std::path::Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = tmp.join(format!("{prefix}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Mutex::new(runner::Sandbox::new(dir, Duration::from_secs(4)))
    })
}

fuzz_target!(|data: &[u8]| {
    // A NUL cannot be in a shell's argument.
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if rest.contains(&0) {
        return;
    }
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let prefix = runner::PREFIXES
        .get(usize::from(pick) % (runner::PREFIXES.len() + 1))
        .copied()
        .unwrap_or("");
    let cmd = format!("{prefix}{rest}");
    if runner::decide(policy(), serde_json::json!(cmd)) != Decision::Allow {
        return;
    }
    let found = sandbox()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .check(policy(), &cmd);
    if !found.is_empty() {
        let what: Vec<String> = found.iter().map(|v| v.to_string()).collect();
        panic!(
            "the policy allows {cmd:?}, which does more than it allows:\n{}",
            what.join("\n")
        );
    }
});
