//! docs/OPTIONS.md is the options reference, generated from the binary's own `--help` (clap):
//! the bridge's, and every subcommand's, nested ones included. This test fails when the
//! document is not what the binary prints now; `ACP_QB_BLESS=1 cargo test --test it options::`
//! writes it anew.

use std::path::Path;
use std::process::Command;

const BRIDGE: &str = env!("CARGO_BIN_EXE_acp-question-bridge");

/// `acp-question-bridge <path> --help`.
fn help(path: &[String]) -> String {
    let out = Command::new(BRIDGE)
        .args(path)
        .arg("--help")
        .env_remove("COLUMNS")
        .output()
        .expect("the bridge runs");
    assert!(out.status.success(), "{path:?} --help failed");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The subcommands listed under `Commands:` in a help text (`help` left out).
fn subcommands(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // A command's line is indented by two; a wrapped description, by more.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The reference: every command's help, depth first, in the order `--help` lists them.
fn reference() -> String {
    let mut doc = String::from(
        "# Options reference\n\n\
         Every option of `acp-question-bridge` and its subcommands, as `--help` prints them.\n\
         Generated from the binary by `tests/it/options.rs`, which fails when this file is not\n\
         current; `ACP_QB_BLESS=1 cargo test --test it options::` writes it anew. What the options\n\
         do together: [`GUIDE.md`](GUIDE.md).\n",
    );
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let text = help(&path);
        let title = std::iter::once("acp-question-bridge")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        doc.push_str(&format!("\n## `{title}`\n\n```text\n{}```\n", text));
        for sub in subcommands(&text).into_iter().rev() {
            let mut next = path.clone();
            next.push(sub);
            todo.push(next);
        }
    }
    doc
}

#[test]
fn options_md_is_what_the_binary_prints() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/OPTIONS.md");
    let now = reference();
    if std::env::var_os("ACP_QB_BLESS").is_some() {
        std::fs::write(&file, &now).expect("write docs/OPTIONS.md");
        return;
    }
    let written = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        written == now,
        "docs/OPTIONS.md is not what the binary prints; run `ACP_QB_BLESS=1 cargo test --test it options::` and commit it"
    );
    // Every subcommand is in it.
    for sub in ["demo", "questions", "inbox", "setup"] {
        assert!(
            now.contains(&format!("## `acp-question-bridge {sub}`")),
            "{sub}"
        );
    }
}
