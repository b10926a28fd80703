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
    if adds(&seen) || !words.ends_with(run) {
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
    if let Some(why) = own_words(&words[..k]) {
        return Inner::Unread(format!(
            "{why}: what the wrapper does of its own is not read by `{program}`'s model"
        ));
    }
    Inner::Runs {
        words: &words[k..],
        prefix: pattern.saturating_sub(k).max(1),
    }
}

/// Whether `words` run a program that may open files through `xargs` or `parallel`, which
/// add the words they read (`ls -a | xargs nl` printed `.env`): what those name cannot be
/// told. `echo` and the like open none.
pub(super) fn adds_words(words: &[String]) -> bool {
    if words.is_empty() || !wrappers::is_wrapper(words) {
        return false;
    }
    let mut seen = wrappers::Seen::default();
    wrappers::see(words, 0, unread_script, &mut seen);
    let run = seen
        .commands
        .iter()
        .find(|w| !w.is_empty() && !wrappers::is_wrapper(w));
    let opens = run.is_none_or(|w| !wrappers::OPENS_NOTHING.contains(&args::base(&w[0])));
    opens && adds(&seen)
}

fn adds(seen: &wrappers::Seen) -> bool {
    seen.commands.iter().any(|w| {
        w.first()
            .is_some_and(|p| matches!(args::base(p), "xargs" | "parallel"))
    })
}

/// The wrappers whose own words may stand before a modelled program under a prefix rule,
/// each with the options it takes that write, read and run nothing of their own (getopt's
/// spelling: a letter, `:` after one that takes a value; a long name, `=` after one that
/// takes a value, written whole). Its other words are values and operands of the same
/// kind (a duration, a mask, a niceness) or, for `env`, assignments of harmless variables.
/// Any other option of these, and any word at all of another wrapper (`time -o FILE`,
/// `strace -o FILE`, `flock FILE`, `valgrind --log-file=FILE`, `env GIT_DIR=x`), leaves
/// the program unread: a list of what is harmless, never of what is not.
const OWN_WORDS: &[OwnWords] = &[
    (
        "timeout",
        "fk:ps:v",
        &[
            "foreground",
            "kill-after=",
            "preserve-status",
            "signal=",
            "verbose",
        ],
    ),
    ("nice", "n:", &["adjustment="]),
    ("env", "0iu:v", &["null", "ignore-environment", "unset="]),
    ("stdbuf", "i:o:e:", &["input=", "output=", "error="]),
    ("ionice", "c:n:t", &["class=", "classdata=", "ignore"]),
    // Not `-f`: see [`own_words`].
    ("setsid", "cw", &["ctty", "wait"]),
    ("taskset", "ac", &["all-tasks", "cpu-list"]),
    ("time", "pvq", &["portability", "verbose", "quiet"]),
    ("command", "p", &[]),
];

/// A wrapper's name, its harmless short options and its harmless long ones.
type OwnWords = (&'static str, &'static str, &'static [&'static str]);

/// Wrappers that write a file of their own with no option asking for it: `nohup` writes
/// `nohup.out` (in the folder, or the home folder) when its output is a terminal.
const WRITE_ALONE: &[&str] = &["nohup"];

/// Why the wrappers' own words (each wrapper's name, then its words) may do more than run
/// the program, if they may.
fn own_words(words: &[String]) -> Option<String> {
    // setsid forks when it leads its process group (an agent that starts each command in a
    // group of its own), or with `-f`, and returns at once unless told to wait (`-w`):
    // the program then runs on, as in the background, while later commands change what
    // its paths name.
    let waits = |w: &String| {
        w == "--wait" || (w.starts_with('-') && !w.starts_with("--") && w.contains('w'))
    };
    for (k, _) in words
        .iter()
        .enumerate()
        .filter(|(_, w)| args::base(w) == "setsid")
    {
        let mut own = words[k + 1..]
            .iter()
            .take_while(|w| !wrappers::is_wrapper(std::slice::from_ref(*w)));
        if !own.any(waits) {
            return Some(
                "`setsid` without `-w` may leave the program running after it returns".into(),
            );
        }
    }
    let mut wrapper: Option<(&str, Option<&OwnWords>)> = None;
    for w in words {
        let name = args::base(w);
        if wrappers::is_wrapper(std::slice::from_ref(w)) {
            if WRITE_ALONE.contains(&name) {
                return Some(format!("`{name}` may write a file of its own"));
            }
            wrapper = Some((name, OWN_WORDS.iter().find(|(n, ..)| *n == name)));
            continue;
        }
        let Some((name, known)) = wrapper else {
            continue;
        };
        let Some((_, short, long)) = known else {
            return Some(format!(
                "`{name} {w}`: no word of `{name}`'s is known harmless"
            ));
        };
        if !own_word(name, w, short, long) {
            return Some(format!("`{name} {w}` is not known harmless"));
        }
    }
    None
}

/// Whether `w`, a word of wrapper `name` with the harmless options `short` and `long`, is
/// one of them, a value, or (for `env`) a harmless assignment.
fn own_word(name: &str, w: &str, short: &str, long: &[&str]) -> bool {
    if w == "--" {
        return true;
    }
    if let Some(l) = w.strip_prefix("--") {
        return match l.split_once('=') {
            Some((l, _)) => long.iter().any(|o| o.strip_suffix('=') == Some(l)),
            None => long.iter().any(|o| o.trim_end_matches('=') == l),
        };
    }
    if let Some(cluster) = w.strip_prefix('-') {
        if name == "nice" && !cluster.is_empty() && cluster.bytes().all(|b| b.is_ascii_digit()) {
            return true;
        }
        // Each letter harmless, up to one that takes a value (the rest is that value).
        for c in cluster.chars() {
            match short.find(c) {
                Some(at) if short[at + c.len_utf8()..].starts_with(':') => return true,
                Some(_) if c != ':' => {}
                _ => return false,
            }
        }
        return !cluster.is_empty();
    }
    if name == "env" && w.contains('=') {
        return super::shell::harmless_assignment(w);
    }
    true
}

/// Whether the wrappers' words (each wrapper's name, then its options) ask for another
/// folder or root: by [`wrappers::ELSEWHERE_LONG`] (any beginning of one: getopt takes an
/// abbreviation, `--ch=DIR`), by each wrapper's own short options, or by `-C` of any, to
/// be sure.
fn elsewhere(words: &[String]) -> bool {
    let mut wrapper = "";
    for w in words {
        if let Some(long) = w.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            if !name.is_empty() && wrappers::ELSEWHERE_LONG.iter().any(|o| o.starts_with(name)) {
                return true;
            }
        } else if let Some(short) = w.strip_prefix('-') {
            if short
                .chars()
                .any(|c| c == 'C' || wrappers::elsewhere_short(wrapper).contains(c))
            {
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
        unplain_only: false,
    }
}
