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
    if words[..k].iter().any(|w| args::base(w) == "chroot") || elsewhere(&words[..k]) {
        return Inner::Unread(format!(
            "`{wrapper}` runs `{program}` in another folder than the session's, where its paths are not what its model reads"
        ));
    }
    Inner::Runs {
        words: &words[k..],
        prefix: pattern.saturating_sub(k).max(1),
    }
}

/// The long options by which a wrapper runs its program in another folder or root. A
/// word names one when it is any beginning of one of them (`--ch=DIR`): getopt takes an
/// abbreviation, and one that could be another option too is at worst asked.
const ELSEWHERE_LONG: &[&str] = &["chdir", "wd", "wdns", "working-directory", "root", "chroot"];

/// Each wrapper's short options that do the same (`env -C`, `sudo -D`/`-R`, `unshare
/// -w`/`-R`, `nsenter -w`/`-W`/`-r`), in any cluster; `-C` of any wrapper, to be sure.
fn elsewhere_short(wrapper: &str) -> &'static str {
    match wrapper {
        "sudo" => "CDR",
        "unshare" => "CwR",
        "nsenter" => "CwWr",
        _ => "C",
    }
}

/// Whether the wrappers' words (each wrapper's name, then its options) ask for another
/// folder or root.
fn elsewhere(words: &[String]) -> bool {
    let mut wrapper = "";
    for w in words {
        if let Some(long) = w.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            if !name.is_empty() && ELSEWHERE_LONG.iter().any(|o| o.starts_with(name)) {
                return true;
            }
        } else if let Some(short) = w.strip_prefix('-') {
            if short.chars().any(|c| elsewhere_short(wrapper).contains(c)) {
                return true;
            }
        } else if wrappers::is_wrapper(std::slice::from_ref(w)) {
            wrapper = args::base(w);
        }
    }
    false
}

/// A shell's script under a wrapper: not read here.
fn unread_script(_: &str, _: usize) -> wrappers::Seen {
    wrappers::Seen {
        commands: Vec::new(),
        unclear: Some("a shell runs a script".into()),
    }
}
