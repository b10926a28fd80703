//! The policy's decisions on paths, as a hostile review found them wanting (findings 4, 5
//! and 7): paths resolved as the OS does, `dir/**` and searches above a denied folder, the
//! policy's own files, and a path too long to resolve. Real folders and links, each test in
//! a folder of its own.

use std::path::{Path, PathBuf};

use super::file::parse_rules;
use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("acp-qb-paths-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d.canonicalize().unwrap()
}

fn policy(user: &str, project: &str) -> Policy {
    Policy {
        tiers: vec![
            Tier::new(
                "user",
                parse_rules(user, Path::new("/u/policy.toml")).unwrap(),
            ),
            Tier::new(
                "project",
                parse_rules(project, Path::new("/p/.acp-question-bridge/policy.toml")).unwrap(),
            ),
        ],
        broken: None,
        protected: Vec::new(),
    }
}

fn call(kind: &str, paths: &[&str], cwd: &Path) -> Call {
    Call {
        agent: "claude-agent-acp".into(),
        program: None,
        tool: None,
        url: None,
        kind: Some(kind.into()),
        title: format!("{kind} {}", paths.join(" ")),
        command: None,
        paths: paths.iter().map(PathBuf::from).collect(),
        cwd: cwd.to_owned(),
        shell: Default::default(),
        unsaid: None,
    }
}

fn exec(cmd: &str, cwd: &Path) -> Call {
    Call {
        kind: Some("execute".into()),
        title: cmd.into(),
        command: Some(command::parse(cmd)),
        ..call("execute", &[], cwd)
    }
}

fn decision(p: &Policy, c: &Call) -> Decision {
    p.decide(c).decision
}

/// `cmd`, run in `cwd`, decided by `p` with an exact allow rule for each of its parts: what
/// these tests prove is the guard's (`guard.rs`), which asks whatever rule allows; a prefix
/// rule's model of a program (`tar -C..`, `sed -i`) may ask on its own first.
fn decide_exactly(p: &Policy, cmd: &str, cwd: &Path) -> Verdict {
    let c = command::parse(cmd);
    let mut rules = String::new();
    for (i, part) in c.parts().unwrap_or_default().iter().enumerate() {
        let words: Vec<String> = part.words.iter().map(|w| format!("{w:?}")).collect();
        rules.push_str(&format!(
            "[[rule]]\nid = \"exactly-{i}\"\ndecision = \"allow\"\ncommand = [{}]\nexact = true\n",
            words.join(", ")
        ));
    }
    let mut p = p.clone();
    // First, so they are the rules that allow it.
    let first = parse_rules(&rules, Path::new("/u/exactly.toml")).unwrap();
    p.tiers[0] = p.tiers[0].clone().changed(|r| drop(r.splice(0..0, first)));
    p.decide(&exec(cmd, cwd))
}

const READS: &str = r#"
[[rule]]
id = "read-all"
decision = "allow"
kind = ["read", "search"]
paths = ["**"]

[[rule]]
id = "read-anything"
decision = "allow"
kind = ["search"]

[[rule]]
id = "no-secrets"
decision = "deny"
paths = ["./secrets/**"]
"#;

/// `src/lnk -> ../secrets/sub`: `src/lnk/../key` is `secrets/key` to the OS (the old
/// resolver cleaned `..` first and allowed it as `src/key`).
#[test]
fn finding_4_a_link_before_dotdot_is_decided_where_the_os_opens() {
    let d = scratch("link");
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::create_dir_all(d.join("secrets/sub")).unwrap();
    std::fs::write(d.join("secrets/key"), "k").unwrap();
    std::os::unix::fs::symlink("../secrets/sub", d.join("src/lnk")).unwrap();
    let p = policy(READS, "");
    let v = p.decide(&call("read", &["src/lnk/../key"], &d));
    assert_eq!(
        (v.decision, v.rule.map(|r| r.id)),
        (Decision::Deny, Some("no-secrets".into())),
        "{}",
        v.why
    );
    // The other way round: the OS opens `x/secrets/key`, a tool that cleans `..` first
    // `secrets/key`; a deny of either reading denies.
    std::fs::create_dir_all(d.join("x/y/z")).unwrap();
    std::os::unix::fs::symlink("../x/y/z", d.join("src/deep")).unwrap();
    assert_eq!(
        decision(&p, &call("read", &["src/deep/../../secrets/key"], &d)),
        Decision::Deny,
        "as a tool that cleans `..` first opens it"
    );
    assert_eq!(
        decision(&p, &call("read", &["src/a.rs"], &d)),
        Decision::Allow
    );
    // A denied name that is a link: denied by its name too, not only where it leads.
    std::os::unix::fs::symlink("secrets/key", d.join(".env")).unwrap();
    let p = policy(
        &format!("{READS}[[rule]]\nid = \"no-env\"\ndecision = \"deny\"\npaths = [\"**/.env\"]\n"),
        "",
    );
    let v = p.decide(&call("read", &[".env"], &d));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(
        decision(&p, &call("read", &["src/lnk/../key"], &d)),
        Decision::Deny
    );
}

/// A deny of `./secrets/**` covers a Grep of `secrets` itself.
#[test]
fn finding_4_a_deny_of_dir_glob_covers_dir_itself() {
    let d = scratch("dir");
    std::fs::create_dir_all(d.join("secrets")).unwrap();
    let p = policy(READS, "");
    for path in ["secrets", "./secrets/", "secrets/."] {
        assert_eq!(
            decision(&p, &call("search", &[path], &d)),
            Decision::Deny,
            "{path}"
        );
    }
    assert_eq!(
        decision(&p, &call("read", &["secrets"], &d)),
        Decision::Deny
    );
    // An ask of `dir/**` too; an allow of `dir/**` stays inside it.
    let p = policy(
        "[[rule]]\nid = \"a\"\ndecision = \"ask\"\npaths = [\"docs/**\"]\n\
         [[rule]]\nid = \"b\"\ndecision = \"allow\"\nkind = [\"edit\"]\npaths = [\"src/**\"]\n",
        "",
    );
    let v = p.decide(&call("delete", &["docs"], &d));
    assert_eq!(v.rule.map(|r| r.id), Some("a".into()));
    assert_eq!(decision(&p, &call("edit", &["src"], &d)), Decision::Ask);
    assert_eq!(decision(&p, &call("edit", &["src/x"], &d)), Decision::Allow);
}

/// A search of `.` or `src` while `src/secrets/**` is denied, or of any folder while
/// `**/.env` is, could find what is denied: it is asked, never allowed.
#[test]
fn finding_4_a_search_above_a_denied_folder_is_asked() {
    let d = scratch("above");
    std::fs::create_dir_all(d.join("src/secrets")).unwrap();
    std::fs::create_dir_all(d.join("docs")).unwrap();
    std::fs::write(d.join("src/a.rs"), "").unwrap();
    let allow = "[[rule]]\nid = \"read-all\"\ndecision = \"allow\"\nkind = [\"read\", \"search\"]\npaths = [\"**\"]\n\
                 [[rule]]\nid = \"any-search\"\ndecision = \"allow\"\nkind = [\"search\"]\n";
    let p = policy(
        &format!("{allow}[[rule]]\nid = \"no-secrets\"\ndecision = \"deny\"\npaths = [\"src/secrets/**\"]\n"),
        "",
    );
    for (kind, path) in [
        ("search", "."),
        ("search", "src"),
        ("read", "src"),
        ("search", "/"),
    ] {
        let v = p.decide(&call(kind, &[path], &d));
        assert_eq!(v.decision, Decision::Ask, "{kind} {path}: {}", v.why);
        assert!(v.why.contains("no-secrets"), "{}", v.why);
    }
    // A search with no path is of the session's folder.
    assert_eq!(decision(&p, &call("search", &[], &d)), Decision::Ask);
    // Beside the denied folder, and a file: allowed.
    assert_eq!(
        decision(&p, &call("search", &["docs"], &d)),
        Decision::Allow
    );
    assert_eq!(
        decision(&p, &call("read", &["src/a.rs"], &d)),
        Decision::Allow
    );
    // Inside it: denied.
    assert_eq!(
        decision(&p, &call("search", &["src/secrets"], &d)),
        Decision::Deny
    );

    // `**/.env` can be beneath any folder of the project.
    let p = policy(
        &format!(
            "{allow}[[rule]]\nid = \"no-env\"\ndecision = \"deny\"\nclaude = \"Read(.env)\"\n"
        ),
        "",
    );
    for path in [".", "docs", "src/secrets"] {
        assert_eq!(
            decision(&p, &call("search", &[path], &d)),
            Decision::Ask,
            "{path}"
        );
    }
    let elsewhere = scratch("above-elsewhere");
    assert_eq!(
        decision(&p, &call("search", &[elsewhere.to_str().unwrap()], &d)),
        Decision::Allow,
        "a relative pattern is of the session's folder only"
    );
    // A deny of edits says nothing of a search.
    let p = policy(
        &format!("{allow}[[rule]]\nid = \"no-edit\"\ndecision = \"deny\"\nkind = [\"edit\"]\npaths = [\"src/secrets/**\"]\n"),
        "",
    );
    assert_eq!(decision(&p, &call("search", &["."], &d)), Decision::Allow);
    // A higher tier's allow is not undone by a lower tier's deny; a lower tier's allow is
    // by a higher tier's.
    let deny = "[[rule]]\nid = \"no-secrets\"\ndecision = \"deny\"\npaths = [\"src/secrets/**\"]\n";
    assert_eq!(
        decision(&policy(allow, deny), &call("search", &["."], &d)),
        Decision::Allow
    );
    assert_eq!(
        decision(&policy(deny, allow), &call("search", &["."], &d)),
        Decision::Ask
    );
}

/// `~`, `~/x`, `$HOME/x` and `${HOME}/x` are in the home folder, not a folder named `~` in
/// the project.
#[test]
fn finding_4_tilde_is_home() {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return;
    };
    let d = scratch("tilde");
    let p = policy(
        "[[rule]]\nid = \"project\"\ndecision = \"allow\"\nkind = [\"read\"]\npaths = [\"**\"]\n",
        "",
    );
    for path in [
        "~/.ssh/id_rsa",
        "$HOME/.ssh/id_rsa",
        "${HOME}/.ssh/id_rsa",
        "~",
    ] {
        let v = p.decide(&call("read", &[path], &d));
        assert_eq!(v.decision, Decision::Ask, "{path}: {}", v.why);
    }
    let ssh = resolve(&home.join(".ssh"), Path::new("/")).unwrap();
    let p = policy(
        &format!(
            "[[rule]]\nid = \"no-ssh\"\ndecision = \"deny\"\npaths = [\"{}/**\"]\n",
            ssh.display()
        ),
        "",
    );
    assert_eq!(
        decision(&p, &call("read", &["~/.ssh/id_rsa"], &d)),
        Decision::Deny
    );
}

/// A trusted project's file allowing `Edit(./**)` does not allow an edit of that file, of its
/// folder, of the user's file (by a link or a hard link), or a command naming them.
#[test]
fn finding_5_the_policys_own_files_are_never_edited_on_an_allow() {
    let d = scratch("own");
    let cwd = d.join("project");
    std::fs::create_dir_all(cwd.join(".acp-question-bridge")).unwrap();
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::write(cwd.join(".acp-question-bridge/policy.toml"), "").unwrap();
    let user = d.join("config/policy.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "").unwrap();
    std::os::unix::fs::symlink(&user, cwd.join("src/innocent.toml")).unwrap();
    std::fs::hard_link(&user, cwd.join("src/hard.toml")).unwrap();
    let mut p = policy(
        "[[rule]]\nid = \"sed\"\ndecision = \"allow\"\ncommand = [\"sed\"]\n\
         [[rule]]\nid = \"no-delete-src\"\ndecision = \"deny\"\nkind = [\"delete\"]\npaths = [\"src/**\"]\n",
        "[[rule]]\nid = \"edit-all\"\ndecision = \"allow\"\nclaude = \"Edit(./**)\"\n\
         [[rule]]\nid = \"change-all\"\ndecision = \"allow\"\nkind = [\"edit\", \"delete\", \"move\", \"other\"]\npaths = [\"**\", \"/**\"]\n",
    );
    p.protected = guard::own_files([user.clone()].into_iter(), Some(&cwd));
    assert_eq!(
        decision(&p, &call("edit", &["src/a.rs"], &cwd)),
        Decision::Allow
    );
    for (kind, path) in [
        ("edit", ".acp-question-bridge/policy.toml"),
        ("edit", "./src/../.acp-question-bridge/policy.toml"),
        ("edit", ".acp-question-bridge/other.toml"),
        ("delete", ".acp-question-bridge"),
        ("move", "."),
        ("edit", "src/innocent.toml"),
        ("edit", "src/hard.toml"),
        ("other", user.to_str().unwrap()),
        ("move", d.join("config").to_str().unwrap()),
    ] {
        let v = p.decide(&call(kind, &[path], &cwd));
        assert_eq!(v.decision, Decision::Ask, "{kind} {path}: {}", v.why);
        assert!(v.why.contains("own files"), "{}", v.why);
    }
    // A read of them is not a change.
    let mut read = p.clone();
    let more = parse_rules(
        "[[rule]]\nid = \"read\"\ndecision = \"allow\"\nkind = [\"read\"]\npaths = [\"**\"]\n",
        Path::new("/p/x.toml"),
    )
    .unwrap();
    read.tiers[1] = read.tiers[1].clone().changed(|r| r.extend(more));
    assert_eq!(
        decision(
            &read,
            &call("read", &[".acp-question-bridge/policy.toml"], &cwd)
        ),
        Decision::Allow
    );
    // A deny still denies.
    assert_eq!(
        decision(&p, &call("delete", &["src/innocent.toml"], &cwd)),
        Decision::Deny
    );
    // A command naming one of them, or a folder holding one (other than the session's).
    for cmd in ["sed -i s/a/b/ src/a.rs", "sed -i s/a/b/ ."] {
        let v = decide_exactly(&p, cmd, &cwd);
        assert_eq!(v.decision, Decision::Allow, "{cmd}: {}", v.why);
    }
    for cmd in [
        "sed -i s/a/b/ .acp-question-bridge/policy.toml",
        "sed -i s/a/b/ src/innocent.toml",
        "sed -i s/a/b/ src/hard.toml",
        &format!("sed -i s/a/b/ {}", user.display()),
        &format!("sed --in-place=x s/a/b/ {}", d.join("config").display()),
        &format!("sed --file={}", user.display()),
    ] {
        let v = decide_exactly(&p, cmd, &cwd);
        assert_eq!(v.decision, Decision::Ask, "{cmd}: {}", v.why);
        assert!(v.why.contains("own files"), "{cmd}: {}", v.why);
    }
}

/// A 1.25 MiB path of 640k components (40 s to decide before) is not resolved: asked at
/// once, never allowed; a deny still denies by another path.
#[test]
fn finding_7_a_path_of_640k_components_is_asked_not_resolved() {
    let d = scratch("long");
    let long = "a/".repeat(640 * 1024);
    let p = policy(
        "[[rule]]\nid = \"reads\"\ndecision = \"allow\"\nkind = [\"read\"]\n\
         [[rule]]\nid = \"no-env\"\ndecision = \"deny\"\npaths = [\".env\"]\n",
        "",
    );
    let v = p.decide(&call("read", &[&long], &d));
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(v.why.contains("1310720 bytes"), "{}", v.why);
    assert!(v.why.len() < 400, "the path is not repeated");
    assert_eq!(
        decision(&p, &call("read", &[&long, ".env"], &d)),
        Decision::Deny
    );
    // Within the bound: decided as before.
    assert_eq!(decision(&p, &call("read", &["a/b"], &d)), Decision::Allow);
    // A link loop is not resolved either.
    std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
    assert_eq!(decision(&p, &call("read", &["loop/x"], &d)), Decision::Ask);
}

/// An ask rule with paths covers a call with any one of them (as a deny does): a call that
/// also reads an asked path is asked, even where an allow covers the rest.
#[test]
fn an_ask_of_paths_covers_a_call_with_any_of_them() {
    let d = scratch("ask-any");
    let p = policy(
        "[[rule]]\nid = \"docs\"\ndecision = \"ask\"\npaths = [\"docs/**\"]\n\
         [[rule]]\nid = \"reads\"\ndecision = \"allow\"\nkind = [\"read\"]\npaths = [\"**\"]\n",
        "",
    );
    let v = p.decide(&call("read", &["src/a.rs", "docs/b.txt"], &d));
    assert_eq!(
        (v.decision, v.rule.map(|r| r.id)),
        (Decision::Ask, Some("docs".into()))
    );
}

/// The hostile review of a4bc3b6: a policy that allows `cp`, `sort`, `tar`, `cd`, `ln`,
/// `mkdir` (and `git add`, `cargo test`, `ls`, `git`, `env`), a home folder holding the
/// user's file, the session in a project beneath it.
fn review(name: &str) -> (Policy, PathBuf, PathBuf) {
    let d = scratch(name);
    let home = d.join("home");
    let cwd = home.join("proj");
    let user = home.join(".config/acp-question-bridge/policy.toml");
    for dir in [
        cwd.join(".acp-question-bridge"),
        cwd.join("src"),
        cwd.join("evil/.config/acp-question-bridge"),
        user.parent().unwrap().to_owned(),
    ] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(&user, "").unwrap();
    std::fs::write(cwd.join(".acp-question-bridge/policy.toml"), "").unwrap();
    for f in [
        "x",
        "evil.tar",
        "src/a",
        "evil/.config/acp-question-bridge/policy.toml",
    ] {
        std::fs::write(cwd.join(f), "").unwrap();
    }
    let mut rules = String::new();
    for (i, c) in [
        "\"cp\"",
        "\"sort\"",
        "\"tar\"",
        "\"cd\"",
        "\"ln\"",
        "\"mkdir\"",
        "\"git\", \"add\"",
        "\"cargo\", \"test\"",
        "\"ls\"",
        "\"git\"",
        "\"env\"",
        "\"popd\"",
        "\"pushd\"",
    ]
    .iter()
    .enumerate()
    {
        rules.push_str(&format!(
            "[[rule]]\nid = \"r{i}\"\ndecision = \"allow\"\ncommand = [{c}]\n"
        ));
    }
    let mut p = policy(&rules, "");
    p.protected = guard::own_files([user].into_iter(), Some(&cwd));
    (p, home, cwd)
}

fn asked_as_own(p: &Policy, cmd: &str, cwd: &Path) {
    let v = decide_exactly(p, cmd, cwd);
    assert_eq!(v.decision, Decision::Ask, "{cmd}: {}", v.why);
    assert!(v.why.contains("own files"), "{cmd}: {}", v.why);
}

/// What stays allowed beside the review's bypasses: the session's folder and the folders
/// above it (if not above a file of the user's tier), a move into the project.
#[test]
fn review_a4bc3b6_plain_commands_in_the_project_stay_allowed() {
    let (p, _, cwd) = review("rv-allowed");
    for cmd in [
        "git add .",
        "cargo test",
        "cd src && cargo test",
        "ls -la",
        "cp x src/y",
        "sort -osrc/out x",
        "tar -xf evil.tar -Csrc",
        "ln -s x src/x",
        "env ln -s x src/x",
        "mkdir -p sub && cp x sub/",
    ] {
        let v = decide_exactly(&p, cmd, &cwd);
        assert_eq!(v.decision, Decision::Allow, "{cmd}: {}", v.why);
    }
}

/// `cp -r evil/.config HOME`: the home folder is above the session's (so it was exempt),
/// but it is also above the user's file.
#[test]
fn review_a4bc3b6_a_folder_above_the_users_file_is_asked() {
    let (p, home, cwd) = review("rv-above");
    asked_as_own(&p, &format!("cp -r evil/.config {}", home.display()), &cwd);
    asked_as_own(&p, "cp -r evil/.config ..", &cwd);
    asked_as_own(&p, "cp -r evil/home /", &cwd);
    asked_as_own(
        &p,
        &format!("cp -r evil/.config --target-directory={}", home.display()),
        &cwd,
    );
}

/// `cd .. && cp x .config/acp-question-bridge/policy.toml`: a word after a `cd` is resolved
/// against the folder it moves to (and `env -C`, `--chdir`).
#[test]
fn review_a4bc3b6_words_after_cd_are_resolved_where_it_moves() {
    let (p, _, cwd) = review("rv-cd");
    for cmd in [
        "cd .. && cp x .config/acp-question-bridge/policy.toml",
        // The word resolved against the session's folder names nothing of the policy's.
        "cd src && cp x ../../.config/acp-question-bridge/policy.toml",
        "cd src; cd .. && cd .. && cp x .config/acp-question-bridge/policy.toml",
        "pushd src && cp x ../../.config/acp-question-bridge/policy.toml",
        // Where `cd -` or `popd` goes cannot be told.
        "cd - && cp x y",
        "pushd src && popd && cp x y",
    ] {
        asked_as_own(&p, cmd, &cwd);
    }
    // A runner that changes folder is never allowed at all (a sixty-first review).
    for cmd in [
        "env -C src cp x ../../.config/acp-question-bridge/policy.toml",
        "env --chdir=src cp x ../../.config/acp-question-bridge/policy.toml",
    ] {
        let v = decide_exactly(&p, cmd, &cwd);
        assert_eq!(v.decision, Decision::Ask, "{cmd}: {}", v.why);
        assert!(v.why.contains("another folder"), "{cmd}: {}", v.why);
    }
}

/// `sort -oFILE x`: a short flag's value joined to it is resolved too.
#[test]
fn review_a4bc3b6_a_short_flags_joined_value_is_resolved() {
    let (p, home, cwd) = review("rv-short");
    asked_as_own(
        &p,
        &format!(
            "sort -o{}/.config/acp-question-bridge/policy.toml x",
            home.display()
        ),
        &cwd,
    );
    asked_as_own(&p, "sort -o.acp-question-bridge/policy.toml x", &cwd);
    asked_as_own(&p, "sort -so.acp-question-bridge/policy.toml x", &cwd);
    asked_as_own(&p, "tar -xvC.. -f evil.tar", &cwd);
    // More flag letters than are read: asked, not read.
    asked_as_own(&p, &format!("sort -{}x x", "s".repeat(64)), &cwd);
    let v = decide_exactly(&p, &format!("sort -{}x x", "s".repeat(63)), &cwd);
    assert_eq!(v.decision, Decision::Allow, "{}", v.why);
}

/// `tar -xf evil.tar -C..`: the folder it extracts into is above the user's file.
#[test]
fn review_a4bc3b6_tar_into_a_folder_above_the_users_file_is_asked() {
    let (p, _, cwd) = review("rv-tar");
    asked_as_own(&p, "tar -xf evil.tar -C..", &cwd);
    asked_as_own(&p, "tar -xf evil.tar --directory=..", &cwd);
}

/// `mkdir -p sub && ln -s ../../.config sub/x && cp -r ... sub/x/`: a command that makes a
/// link and does more is asked; the link does not exist when it is decided.
#[test]
fn review_a4bc3b6_a_link_made_then_used_in_one_command_is_asked() {
    let (p, _, cwd) = review("rv-link");
    for cmd in [
        "mkdir -p sub && ln -s ../../.config sub/x && cp -r evil/.config/acp-question-bridge sub/x/",
        "ln -sf ../../.config y; cp -r evil/.config/acp-question-bridge y/",
        "ln --sym ../../.config y && cp -r evil/.config/acp-question-bridge y/",
        "cp -s ../../.config y && cp -r evil/.config/acp-question-bridge y/",
        "ln -s a y && ln -sf evil y/z",
    ] {
        asked_as_own(&p, cmd, &cwd);
    }
    // Once made, the link is resolved: a later call through it is asked.
    std::fs::create_dir_all(cwd.join("sub")).unwrap();
    std::os::unix::fs::symlink("../../.config", cwd.join("sub/x")).unwrap();
    asked_as_own(&p, "cp -r evil/.config/acp-question-bridge sub/x/", &cwd);
}

/// Bounded work on the bridge's loop: a command naming more than `MAX_RESOLVED` words that
/// may be paths is asked, not resolved word by word.
#[test]
fn a_command_naming_too_many_paths_is_asked_not_resolved() {
    let (p, _, cwd) = review("rv-many");
    let names: Vec<String> = (0..=super::guard::MAX_RESOLVED)
        .map(|i| format!("f{i}"))
        .collect();
    for n in &names {
        std::fs::write(cwd.join(n), "").unwrap();
    }
    let v = decide_exactly(&p, &format!("cp {} src", names.join(" ")), &cwd);
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(v.why.contains("not all checked"), "{}", v.why);
    let few = names[..8].join(" ");
    let v = decide_exactly(&p, &format!("cp {few} src"), &cwd);
    assert_eq!(v.decision, Decision::Allow, "{}", v.why);
}

/// The hostile tester's `cp evil.toml /proc/self/cwd/../../.config/acp-question-bridge/
/// policy.toml`: resolved in the bridge's process, `/proc/self/cwd` was the bridge's folder,
/// not the command's. A path through `/proc/self`, `/proc/thread-self`, `/proc/<pid>` or
/// `/dev/fd` is not resolved: the call is asked, by its paths or by its command's words.
#[test]
fn a_path_through_proc_self_is_asked_never_allowed() {
    let (mut p, home, cwd) = review("proc-self");
    let more = parse_rules(
        "[[rule]]\nid = \"edit-all\"\ndecision = \"allow\"\nkind = [\"edit\", \"read\"]\npaths = [\"/**\"]\n",
        Path::new("/u/x.toml"),
    )
    .unwrap();
    p.tiers[0] = p.tiers[0].clone().changed(|r| r.extend(more));
    std::fs::write(cwd.join("evil.toml"), "").unwrap();
    std::os::unix::fs::symlink("/proc/self", cwd.join("me")).unwrap();
    let me = std::process::id();
    let up = home.components().count();
    let to_home = "../".repeat(up + 4);
    for target in [
        format!(
            "/proc/self/cwd/{to_home}{}",
            home.join(".config/acp-question-bridge/policy.toml")
                .display()
        ),
        "/proc/self/cwd/../../.config/acp-question-bridge/policy.toml".to_owned(),
        "/proc/thread-self/cwd/x".to_owned(),
        format!("/proc/{me}/cwd/x"),
        "/dev/fd/3".to_owned(),
        "/dev/stdout".to_owned(),
        "me/cwd/x".to_owned(),
    ] {
        let v = decide_exactly(&p, &format!("cp evil.toml {target}"), &cwd);
        assert_eq!(v.decision, Decision::Ask, "cp to {target}: {}", v.why);
        assert!(v.why.contains("cannot be resolved"), "{}", v.why);
        let v = p.decide(&call("edit", &[&target], &cwd));
        assert_eq!(v.decision, Decision::Ask, "edit {target}: {}", v.why);
    }
    // Beside them, the same command and edit stay allowed.
    let v = decide_exactly(&p, "cp evil.toml src/x.toml", &cwd);
    assert_eq!(v.decision, Decision::Allow, "{}", v.why);
    let v = p.decide(&call("edit", &["src/x.toml"], &cwd));
    assert_eq!(v.decision, Decision::Allow, "{}", v.why);
}

/// The hostile tester's `L -> ./././…` (2,000 components) and `P ->` the user's policy
/// folder: `cp evil.toml L/L/L/P/policy.toml` walks 6,000 components through 4 links. The
/// OS opens it; a walk bound of 4,096 steps left it unresolved, and the guard skipped the
/// word, so it was allowed. Now it is resolved (the kernel's bound: 40 links), and a word
/// that cannot be resolved (41 links) is asked, never skipped.
#[test]
fn a_word_through_a_long_link_is_resolved_or_asked_never_skipped() {
    let (p, home, cwd) = review("long-link");
    std::fs::write(cwd.join("evil.toml"), "").unwrap();
    std::os::unix::fs::symlink("./".repeat(2000), cwd.join("L")).unwrap();
    std::os::unix::fs::symlink(home.join(".config/acp-question-bridge"), cwd.join("P")).unwrap();
    for n in [3, 39] {
        let word = format!("{}P/policy.toml", "L/".repeat(n));
        // What the OS opens: the user's file.
        assert_eq!(
            std::fs::canonicalize(cwd.join(&word)).unwrap(),
            home.join(".config/acp-question-bridge/policy.toml")
        );
        asked_as_own(&p, &format!("cp evil.toml {word}"), &cwd);
    }
    // 41 links: the OS says ELOOP; not resolved, asked.
    let word = format!("{}P/policy.toml", "L/".repeat(40));
    let v = decide_exactly(&p, &format!("cp evil.toml {word}"), &cwd);
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(v.why.contains("cannot be resolved"), "{}", v.why);
    // A word the OS could open but that is past the decision's work: asked too.
    let words: Vec<String> = (0..4).map(|i| format!("{}x{i}", "L/".repeat(39))).collect();
    let v = decide_exactly(&p, &format!("cp evil.toml {}", words.join(" ")), &cwd);
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(
        v.why.contains("steps resolved for one decision"),
        "{}",
        v.why
    );
    // Through the link to a file that is not the policy's: allowed.
    let v = decide_exactly(&p, "cp evil.toml L/L/L/src/y", &cwd);
    assert_eq!(v.decision, Decision::Allow, "{}", v.why);
}

/// One Read call of thousands of paths took 15 s to decide, past the bridge's bound. Past
/// `MAX_PATHS` paths, the call is asked at once: only the first ones are resolved.
#[test]
fn a_call_of_thousands_of_paths_is_asked_with_bounded_work() {
    let d = scratch("many-paths");
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::os::unix::fs::symlink("./".repeat(2000), d.join("L")).unwrap();
    let p = policy(READS, "");
    let steps = || super::path::STEPS.with(|s| s.get());
    let many: Vec<String> = (0..5000)
        .map(|i| format!("{}src/f{i}", "L/".repeat(39)))
        .collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let before = steps();
    let v = p.decide(&call("read", &refs, &d));
    let walked = steps() - before;
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(v.why.contains("5000 paths, more than the 64"), "{}", v.why);
    assert!(
        walked <= super::path::MAX_DECISION_STEPS + d.components().count(),
        "{walked} steps"
    );
    // Short paths: the 64 first only.
    let many: Vec<String> = (0..5000).map(|i| format!("src/f{i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let before = steps();
    let v = p.decide(&call("read", &refs, &d));
    let walked = steps() - before;
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    let per_path = d.components().count() + 2;
    assert!(
        walked <= (guard::MAX_PATHS + 1) * per_path,
        "{walked} steps"
    );
    // Within the count, paths through the long link: the decision's budget, then asked.
    let some: Vec<String> = (0..guard::MAX_PATHS)
        .map(|i| format!("{}src/f{i}", "L/".repeat(39)))
        .collect();
    let refs: Vec<&str> = some.iter().map(String::as_str).collect();
    let before = steps();
    let v = p.decide(&call("read", &refs, &d));
    let walked = steps() - before;
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(
        v.why.contains("steps resolved for one decision"),
        "{}",
        v.why
    );
    assert!(
        walked <= super::path::MAX_DECISION_STEPS + 1,
        "{walked} steps"
    );
    // And a few of them are decided as before.
    let v = p.decide(&call("read", &refs[..2], &d));
    assert_eq!(v.decision, Decision::Allow, "{}", v.why);
    let v = p.decide(&call("read", &["L/L/secrets/key"], &d));
    assert_eq!(v.decision, Decision::Deny, "{}", v.why);
}

/// Claude Code trims a tool's path before it opens it (`expandPath`): a path with
/// whitespace at its start or end is decided as the file it opens too (a deny of that file
/// stands), and is never allowed.
#[test]
fn a_path_with_whitespace_at_its_ends_is_read_trimmed_and_never_allowed() {
    let d = scratch("trimmed");
    std::fs::create_dir_all(d.join("secrets")).unwrap();
    std::fs::write(d.join(".env"), "K=1\n").unwrap();
    std::fs::write(d.join("secrets/key"), "k\n").unwrap();
    std::fs::write(d.join("notes.txt"), "n\n").unwrap();
    let p = policy(
        &format!(
            "[[rule]]\nid = \"all\"\ndecision = \"allow\"\npaths = [\"{0}/**\"]\n\n\
             [[rule]]\nid = \"no-env\"\ndecision = \"deny\"\npaths = [\"**/.env\", \"{0}/secrets/**\"]\n",
            d.display()
        ),
        "",
    );
    let env = format!("{}/.env ", d.display());
    let key = format!("\t{}/secrets/key", d.display());
    for (kind, path) in [
        ("read", env.as_str()),
        ("read", key.as_str()),
        ("edit", env.as_str()),
    ] {
        let v = p.decide(&call(kind, &[path], &d));
        assert_eq!(v.decision, Decision::Deny, "{path:?}: {}", v.why);
    }
    let notes = format!(" {}/notes.txt\u{3000}", d.display());
    let v = p.decide(&call("read", &[&notes], &d));
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(v.why.contains("whitespace"), "{}", v.why);
    let plain = format!("{}/notes.txt", d.display());
    assert_eq!(decision(&p, &call("read", &[&plain], &d)), Decision::Allow);
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        if let Some(ssh) = resolve(&home.join(".ssh"), Path::new("/")) {
            let p = policy(
                &format!(
                    "[[rule]]\nid = \"all\"\ndecision = \"allow\"\npaths = [\"**\"]\n\n\
                     [[rule]]\nid = \"no-ssh\"\ndecision = \"deny\"\npaths = [\"{}/**\"]\n",
                    ssh.display()
                ),
                "",
            );
            let v = p.decide(&call("read", &[" ~/.ssh/id_rsa"], &d));
            assert_eq!(v.decision, Decision::Deny, "{}", v.why);
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// What a twentieth review found the agents do beyond what a tool call's fields say: a
/// Codex patch's approval names only the files it changes, not where one moves; Claude's
/// Glob searches from an absolute pattern's folder, whatever its `path`; and an agent's own
/// permission settings (`.claude/settings.local.json`) let it run anything unasked.
#[test]
fn moves_codex_leaves_unsaid_glob_patterns_and_agents_settings_are_never_allowed() {
    let d = scratch("twentieth");
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::create_dir_all(d.join("secret")).unwrap();
    std::fs::write(d.join("secret/key"), "k\n").unwrap();
    let p = all_but_secret(&d);
    let file = format!("{}/src/a.rs", d.display());
    let decide =
        |agent: &str, tc: serde_json::Value| p.decide(&Call::from_tool_call(&tc, agent, &d));
    // codex-acp's approval: locations only.
    let v = decide(
        "codex-acp",
        serde_json::json!({"kind": "edit", "title": "Edit files", "locations": [{"path": file}]}),
    );
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(v.why.contains("Codex"), "{}", v.why);
    // With its changes, each move is read, tagged by its type too.
    let moved = serde_json::json!({"kind": "edit", "locations": [{"path": file}],
        "rawInput": {"changes": {&file: {"update": {"move_path": format!("{}/secret/key", d.display())}}}}});
    assert_eq!(decide("codex-acp", moved).decision, Decision::Deny);
    let inside = serde_json::json!({"kind": "edit", "locations": [{"path": file}],
        "rawInput": {"changes": {&file: {"type": "update"}}}});
    assert_eq!(decide("codex-acp", inside).decision, Decision::Allow);
    // Claude's Glob of an absolute pattern searches its folder, not `path`.
    let glob = serde_json::json!({"kind": "search", "name": "Glob", "locations": [{"path": "src"}],
        "rawInput": {"pattern": format!("{}/secret/*", d.display()), "path": "src"}});
    assert_ne!(decide("claude-agent-acp", glob).decision, Decision::Allow);
    // claude-agent-acp's approvals name no tool: a search's absolute pattern counts too.
    let glob = serde_json::json!({"kind": "search", "locations": [{"path": "src"}],
        "rawInput": {"pattern": format!("{}/secret/*", d.display()), "path": "src"}});
    assert_ne!(decide("claude-agent-acp", glob).decision, Decision::Allow);
    let glob = serde_json::json!({"kind": "search", "name": "Glob", "locations": [{"path": "src"}],
        "rawInput": {"pattern": "**/*.rs", "path": "src"}});
    assert_eq!(decide("claude-agent-acp", glob).decision, Decision::Allow);
    // An agent's own permission settings are the policy's files too.
    for settings in [
        ".claude/settings.local.json",
        ".claude/settings.json",
        ".mcp.json",
        ".gemini/settings.json",
    ] {
        let path = format!("{}/{settings}", d.display());
        let write = serde_json::json!({"kind": "edit", "name": "Write",
            "rawInput": {"file_path": path, "content": "{}"}, "locations": [{"path": path}]});
        let v = decide("claude-agent-acp", write);
        assert_eq!(v.decision, Decision::Ask, "{settings}: {}", v.why);
        assert!(v.why.contains("an agent's own"), "{}", v.why);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Claude's file tools take a relative path from where its Bash shell last moved: after an
/// allowed `cd .claude && ls`, a Write of `settings.local.json` is a write of the agent's
/// own settings, and after `cd secret` a Read of `key` is a read of the denied file.
#[test]
fn a_relative_path_of_a_file_tool_is_decided_where_the_agents_shell_may_be() {
    let d = scratch("relative-after-cd");
    std::fs::create_dir_all(d.join(".claude")).unwrap();
    std::fs::create_dir_all(d.join("secret")).unwrap();
    let p = all_but_secret(&d);
    let after = |moved: &str, kind: &str, tool: &str, path: &str| {
        let mut c = call(kind, &[path], &d);
        c.tool = Some(tool.into());
        c.shell = Shell {
            moved_by: vec![moved.into()],
            lost: false,
        };
        p.decide(&c)
    };
    let v = after("cd .claude && ls", "edit", "Write", "settings.local.json");
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert!(v.why.contains("an agent's own"), "{}", v.why);
    let v = after("cd secret && ls", "read", "Read", "key");
    assert_eq!(v.decision, Decision::Deny, "{}", v.why);
    // Where the shell did not move, the session's folder decides as before.
    let v = after("ls", "edit", "Write", "notes.txt");
    assert_eq!(v.decision, Decision::Allow, "{}", v.why);
    let _ = std::fs::remove_dir_all(&d);
}

/// A file system that ignores case (macOS's, a casefolded ext4 folder) opens `.ENV` for
/// `.env` and `.CLAUDE/settings.json` for `.claude/settings.json`: a deny or an ask of
/// paths matches in either case, and so do the policy's own files. And what is in an
/// agent's own folder decides what it runs unasked: its commands', skills' and subagents'
/// `allowed-tools` as much as its settings.
#[test]
fn denies_and_the_policys_files_match_in_either_case_and_agents_folders_are_whole() {
    let d = scratch("either-case");
    std::fs::create_dir_all(d.join("secret")).unwrap();
    std::fs::create_dir_all(d.join("src")).unwrap();
    let p = policy(
        "[[rule]]\nid = \"ed\"\ndecision = \"allow\"\nclaude = \"Edit(./**)\"\n\n\
         [[rule]]\nid = \"rd\"\ndecision = \"allow\"\nclaude = \"Read(./**)\"\n\n\
         [[rule]]\nid = \"cat\"\ndecision = \"allow\"\nclaude = \"Bash(cat:*)\"\n\n\
         [[rule]]\nid = \"grep\"\ndecision = \"allow\"\nclaude = \"Bash(grep:*)\"\n\n\
         [[rule]]\nid = \"tee\"\ndecision = \"allow\"\nclaude = \"Bash(tee:*)\"\n\n\
         [[rule]]\nid = \"cp\"\ndecision = \"allow\"\nclaude = \"Bash(cp:*)\"\n\n\
         [[rule]]\nid = \"echo\"\ndecision = \"allow\"\nclaude = \"Bash(echo:*)\"\n\n\
         [[rule]]\nid = \"nenv\"\ndecision = \"deny\"\nclaude = \"Read(.env)\"\n\n\
         [[rule]]\nid = \"nsecret\"\ndecision = \"deny\"\nclaude = \"Read(./secret/**)\"\n",
        "",
    );
    for cmd in ["cat .ENV", "cat .Env", "cat SECRET/key", "grep -r x Secret"] {
        assert_ne!(decision(&p, &exec(cmd, &d)), Decision::Allow, "{cmd}");
    }
    for path in [".ENV", "SECRET/key"] {
        let read = call("read", &[&format!("{}/{path}", d.display())], &d);
        assert_ne!(decision(&p, &read), Decision::Allow, "{path}");
    }
    // An allow stays as written: the project's own files are still read and written.
    assert_eq!(decision(&p, &exec("cat src/a.rs", &d)), Decision::Allow);
    for path in [
        ".CLAUDE/settings.local.json",
        ".claude/Settings.Local.json",
        ".claude/commands/review",
        ".claude/agents/helper",
        ".claude/skills/x/SKILL",
        ".Gemini/settings.json",
        ".CODEX/config.toml",
        ".MCP.json",
        ".Acp-Question-Bridge/policy.toml",
    ] {
        let write = call("edit", &[&format!("{}/{path}", d.display())], &d);
        let v = p.decide(&write);
        assert_eq!(v.decision, Decision::Ask, "{path}: {}", v.why);
        let cmd = format!("echo x | tee {path}");
        assert_ne!(decision(&p, &exec(&cmd, &d)), Decision::Allow, "{cmd}");
    }
    // One made whole, where none is yet.
    for cmd in ["tee .mcp.json", "cp -r src .claude", "cp -r src .Codex"] {
        assert_ne!(decision(&p, &exec(cmd, &d)), Decision::Allow, "{cmd}");
    }
    let write = call("edit", &[&format!("{}/src/a.rs", d.display())], &d);
    assert_eq!(decision(&p, &write), Decision::Allow);
    let _ = std::fs::remove_dir_all(&d);
}

/// A search's relative pattern that climbs (`../secret/*`) searches above its `path`, as
/// an absolute one does: that folder is decided; a `..` after a glob character is asked.
#[test]
fn a_search_pattern_that_climbs_is_decided_where_it_searches() {
    let d = scratch("glob-climbs");
    std::fs::create_dir_all(d.join("src/a")).unwrap();
    std::fs::create_dir_all(d.join("secret")).unwrap();
    let p = all_but_secret(&d);
    let src = format!("{}/src", d.display());
    let search = |pattern: &str| {
        let tc = serde_json::json!({"kind": "search", "locations": [{"path": src}],
            "rawInput": {"pattern": pattern, "path": src}});
        p.decide(&Call::from_tool_call(&tc, "claude-agent-acp", &d))
    };
    assert_eq!(search("../secret/*").decision, Decision::Deny);
    assert_eq!(search("a/../../secret/*").decision, Decision::Deny);
    let v = search("*/../../secret/*");
    assert_eq!(v.decision, Decision::Ask, "{}", v.why);
    assert_eq!(search("**/*.rs").decision, Decision::Allow);
    assert_eq!(search("../src/*.rs").decision, Decision::Allow);
    let _ = std::fs::remove_dir_all(&d);
}

/// Everything in `d` allowed but its `secret` folder, denied.
fn all_but_secret(d: &Path) -> Policy {
    policy(
        &format!(
            "[[rule]]\nid = \"all\"\ndecision = \"allow\"\npaths = [\"{0}/**\"]\n\n\
             [[rule]]\nid = \"no-secret\"\ndecision = \"deny\"\npaths = [\"{0}/secret/**\"]\n",
            d.display()
        ),
        "",
    )
}
