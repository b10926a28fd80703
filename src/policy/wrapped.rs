//! A prefix rule whose words begin with a wrapper (`Bash(timeout 30 rg:*)`,
//! `Bash(nice sort:*)`, `Bash(xargs grep:*)`): the program the wrapper runs is read by its
//! own model, with the rule's words past the wrapper's as its prefix, as a rule that names
//! it would be. A rule on the wrapper alone (`Bash(timeout:*)`) reads it the same way. A
//! wrapper with a model of its own (`find`) is read by that model.
//! Without this a wrapper, which has no model, made "any arguments" of a modelled program's
//! (`timeout 30 rg --pre sh x` ran `sh`; `nice sort -o ~/.profile` wrote it).

use super::{args, wrappers};

/// What a part runs, for a prefix rule.
pub(super) enum Inner<'a> {
    /// No wrapper, or what it runs has no model: the part's words, as they are.
    Itself,
    /// The modelled program the wrapper runs: its words (the end of the part's), and how
    /// many of them the rule's pattern names (its name at least).
    Runs { words: &'a [String], prefix: usize },
    /// What the wrapper runs is not its words as written (xargs adds what it reads; a
    /// shell runs a script): no model can read it.
    Unread(String),
}

/// What `words` run under a prefix rule of `pattern` words.
pub(super) fn inner(words: &[String], pattern: usize) -> Inner<'_> {
    // A wrapper with a model of its own (`find`, whose `-exec` its model refuses) is read
    // by that model.
    if words.is_empty()
        || !wrappers::is_wrapper(words)
        || !matches!(args::read(words), args::Reading::NoModel)
    {
        return Inner::Itself;
    }
    let mut seen = wrappers::Seen::default();
    wrappers::see(words, 0, unread_script, &mut seen);
    // The program the wrappers run, as it is written (not its normalized form).
    let Some(run) = seen
        .commands
        .iter()
        .find(|w| !w.is_empty() && !wrappers::is_wrapper(w))
    else {
        return Inner::Itself;
    };
    if matches!(args::read(run), args::Reading::NoModel) {
        return Inner::Itself;
    }
    let program = args::base(&run[0]);
    let wrapper = args::base(&words[0]);
    if let Some(why) = seen.unclear {
        return Inner::Unread(format!(
            "what `{wrapper}` runs cannot be told ({why}), and `{program}` is read by its model"
        ));
    }
    let adds = seen.commands.iter().any(|w| {
        w.first()
            .is_some_and(|p| matches!(args::base(p), "xargs" | "parallel"))
    });
    if adds || !words.ends_with(run) {
        return Inner::Unread(format!(
            "`{wrapper}` runs `{program}` with words that are not all written in the command (what it reads, or its own), which no model reads"
        ));
    }
    let k = words.len() - run.len();
    // A wrapper that runs the program in another folder (`env -C DIR`, `--chdir`, `nsenter
    // --wd`, `chroot`): its paths are not where the session's folder says.
    let elsewhere = |w: &String| {
        w.starts_with("--chdir")
            || w.starts_with("--wd")
            || w.starts_with("--working-directory")
            || (w.starts_with('-') && !w.starts_with("--") && w.contains('C'))
    };
    if words[..k].iter().any(elsewhere) || words[..k].iter().any(|w| args::base(w) == "chroot") {
        return Inner::Unread(format!(
            "`{wrapper}` runs `{program}` in another folder than the session's, where its paths are not what its model reads"
        ));
    }
    Inner::Runs {
        words: &words[k..],
        prefix: pattern.saturating_sub(k).max(1),
    }
}

/// A shell's script under a wrapper: not read here.
fn unread_script(_: &str, _: usize) -> wrappers::Seen {
    wrappers::Seen {
        commands: Vec::new(),
        unclear: Some("a shell runs a script".into()),
    }
}
