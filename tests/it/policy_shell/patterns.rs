//! A pattern (`ls ./v*`) is allowed by the names it matches (docs/POLICY.md, "Patterns"):
//! the real shells must start the program with those names, in their place, or with the
//! pattern itself where they match fewer (the policy matches either case and hidden names,
//! whatever the shell's options).

use acp_question_bridge::policy::{command, glob, Decision};
use serde_json::json;

use super::runner::{self, decide_in, Twin};

/// What the policy put in place of each pattern of `cmd`, deciding in `twin`.
fn decided_words(cmd: &str, twin: &Twin) -> Vec<String> {
    let c = command::parse(cmd)
        .expanded(
            &twin.0,
            &mut glob::Bound {
                names: 64,
                step: &mut || true,
            },
        )
        .unwrap_or_else(|| panic!("{cmd:?} has a pattern"));
    let parts = c
        .parts()
        .unwrap_or_else(|| panic!("{cmd:?} expands: {:?}", c.not_allowable()));
    assert_eq!(parts.len(), 1, "{cmd:?} is one command");
    parts[0].words.clone()
}

#[test]
fn patterns_run_with_the_names_the_policy_decided_on() {
    let policy = runner::policy();
    let mut sb = super::sandbox("patterns");
    let twin = Twin::new(
        &std::env::temp_dir().join(format!("acp-qb-policy-shell-twin-{}", std::process::id())),
    );
    let mut wrong = Vec::new();
    // (command, the pattern as written where the shells match fewer names)
    let cases: &[(&str, Option<&str>)] = &[
        ("ls ./v*", None),
        ("ls victimdir/*", None),
        ("ls ./?ictim", None),
        ("ls -l ./victim* victimdir/k??p", None),
        ("ls ./V*", Some("./V*")),
    ];
    for &(cmd, literal) in cases {
        if decide_in(&policy, json!(cmd), &twin.0) != Decision::Allow {
            wrong.push(format!("{cmd:?} is not allowed"));
            continue;
        }
        let want = decided_words(cmd, &twin);
        for shell in runner::SHELLS {
            let run = sb.run(shell, cmd);
            let got: Vec<&Vec<String>> = run.execs.iter().map(|e| &e.argv).collect();
            let fits = match (got.as_slice(), literal) {
                ([argv], None) => **argv == want,
                // Fewer names: the pattern as written, every other word the same.
                ([argv], Some(p)) => {
                    argv.iter().any(|w| w == p) && argv.iter().all(|w| w == p || want.contains(w))
                }
                _ => false,
            };
            if !fits || !run.changes.is_empty() {
                wrong.push(format!(
                    "{shell} -c {cmd:?} ran {got:?}, the policy decided on {want:?}: {run:?}"
                ));
            }
        }
    }
    // A pattern that matches nothing is not allowed: `nullglob` would drop the word.
    for cmd in ["ls ./nothing*", "cd victimdir && ls ./*"] {
        if decide_in(&policy, json!(cmd), &twin.0) == Decision::Allow {
            wrong.push(format!("{cmd:?} is allowed"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
