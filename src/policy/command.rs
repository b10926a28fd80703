//! A tool call's command, as the policy reads it (docs/POLICY.md, "Commands").
//!
//! A shell line is read with a real grammar ([`super::shell`]): an allow can only be given
//! to a *plain* command, whose every part is literal words; deny and ask rules look at every
//! command that stands anywhere in it, with wrappers seen through ([`super::wrappers`]).
//!
//! Each agent's raw input is normalised first ([`from_raw_input`]): Claude's `command`
//! string, Codex's argv array (and its `bash -lc SCRIPT` wrapper), gemini-cli's, Qwen's and
//! OpenCode's `command` strings, Goose's `command`/`cmd`.
//!
//! Invariants:
//! - Bounded: a line over [`MAX_LEN`] bytes, or with more than [`MAX_COMMANDS`] commands in
//!   it, is not read at all; it is never allowed, and it is asked even where a deny rule
//!   might have covered it.
//! - What is shown of a command ([`Command::text`]) has its control characters and newlines
//!   escaped, so it cannot forge a line where it is shown.

use serde_json::Value;

use super::glob;
pub use super::shell::Part;
use super::shell::{self, escape};
use super::wrappers::{self, Seen};

/// The shells whose `-c SCRIPT` the bash grammar reads as they do.
const BASH_LIKE: &[&str] = &["bash", "sh", "dash", "zsh", "ksh", "mksh", "ash"];

/// The longest command line read; a longer one is asked.
pub const MAX_LEN: usize = 8 * 1024;

/// The most commands one line may hold; more is asked.
pub const MAX_COMMANDS: usize = 256;

/// A command read from a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its parts when it is plain; else why it is not. Only a plain command can be allowed.
    pub plain: Result<Vec<Part>, String>,
    /// Every command that stands in it, wrappers seen through: what deny and ask rules
    /// look at.
    pub seen: Vec<Vec<String>>,
    /// For a plain command, which of `seen` each part stands for (the part itself first).
    pub by_part: Vec<std::ops::Range<usize>>,
    /// Why what some part of it runs could not be told (a shell given a script file, a line
    /// too long to read): never allowed.
    pub unclear: Option<String>,
    /// As the agent wrote it (an argv: its words quoted), for messages.
    source: String,
    /// The folder the agent says it runs in (`rawInput.cwd`, `workdir`), when it says one.
    pub runs_in: Option<std::path::PathBuf>,
    /// The agent runs it in the background (Claude's `run_in_background`, Gemini's and
    /// Qwen's `is_background`): it goes on running after it was decided.
    pub background: bool,
}

impl Command {
    /// Its parts, when it is plain.
    pub fn parts(&self) -> Option<&[Part]> {
        self.plain.as_deref().ok()
    }

    /// Whether `seen[i]` is a part's own words, not what a wrapper in it runs: those with
    /// its global options taken off too (`pnpm -r test` is `pnpm test`).
    pub fn part_own(&self, i: usize) -> bool {
        let own = |i: usize| self.by_part.is_empty() || self.by_part.iter().any(|r| r.start == i);
        own(i)
            || (i > 0
                && own(i - 1)
                && super::wrappers::normalized(&self.seen[i - 1]).as_ref() == self.seen.get(i))
    }

    /// The command with its patterns put in place by the names they match from `cwd`
    /// ([`glob`]), or `None` when it has none. When they cannot be, it is not plain
    /// (deny and ask rules still see its words as written).
    pub fn expanded(&self, cwd: &std::path::Path, bound: &mut glob::Bound) -> Option<Command> {
        let parts = self.parts()?;
        if parts.iter().all(|p| p.globs.is_empty()) {
            return None;
        }
        Some(match glob::expand(parts, cwd, bound) {
            Ok(parts) => {
                let (seen, by_part) = see_parts(&parts, 0);
                Command {
                    plain: Ok(parts),
                    seen: seen.commands,
                    by_part,
                    unclear: self.unclear.clone().or(seen.unclear),
                    source: self.source.clone(),
                    runs_in: self.runs_in.clone(),
                    background: self.background,
                }
            }
            Err(why) => Command {
                plain: Err(why),
                ..self.clone()
            },
        })
    }

    /// The same command, not plain because of `why` (deny and ask rules still see it).
    pub fn not_plain(self, why: String) -> Command {
        Command {
            plain: Err(why),
            ..self
        }
    }

    /// Why no rule can allow it, if none can.
    pub fn not_allowable(&self) -> Option<&str> {
        match (&self.plain, &self.unclear) {
            (Err(why), _) => Some(why),
            (Ok(_), Some(why)) => Some(why),
            (Ok(_), None) => None,
        }
    }

    /// The command as read, on one line: a plain command as its assignments and words
    /// (quoted where a shell would need it; a `~` as the home folder, a commit message's
    /// here-document as its text) and its operators as written (a newline as `\n`); any
    /// other as written. Control characters and newlines escaped.
    pub fn text(&self) -> String {
        match &self.plain {
            Ok(parts) => {
                let mut out = String::new();
                for p in parts {
                    let words: Vec<String> = p
                        .env
                        .iter()
                        .map(|(name, value)| format!("{name}={}", quote(value)))
                        .chain(p.words.iter().enumerate().map(|(i, w)| {
                            if p.globs.contains(&i) && shell::glob_word(w) {
                                w.clone()
                            } else {
                                quote(w)
                            }
                        }))
                        .collect();
                    out.push_str(&words.join(" "));
                    match p.op {
                        Some(";") => out.push_str("; "),
                        Some("\n") => out.push_str(" \\n "),
                        Some(op) => {
                            out.push(' ');
                            out.push_str(op);
                            out.push(' ');
                        }
                        None => {}
                    }
                }
                out
            }
            Err(_) => escape(&self.source),
        }
    }
}

/// A word as a shell would need it written, escaped for showing: as it is when bash and
/// dash read it as itself unquoted (`HEAD^2`, `HEAD~1`), else quoted.
fn quote(word: &str) -> String {
    let b = word.as_bytes();
    let itself = !b.is_empty()
        && b.iter().enumerate().all(|(i, c)| match c {
            b'~' => i > 0 && !matches!(b[i - 1], b'=' | b':'),
            c => c.is_ascii_alphanumeric() || b"_-+=.,/:@%".contains(c),
        });
    if itself {
        return word.to_owned();
    }
    match shlex::try_quote(word) {
        Ok(q) => escape(&q),
        Err(_) => escape(word),
    }
}

/// The command of a tool call's `rawInput`, if it has one.
pub fn from_raw_input(raw: &Value) -> Option<Command> {
    let mut read = command_of(raw)?;
    read.runs_in = ["cwd", "workdir"]
        .iter()
        .find_map(|k| raw[k].as_str())
        .map(std::path::PathBuf::from);
    // Anything there but `false` is taken as "in the background": what the agent writes
    // never makes a command look more harmless than it may be.
    read.background = ["run_in_background", "is_background"]
        .iter()
        .any(|k| !matches!(raw.get(*k), None | Some(Value::Null | Value::Bool(false))));
    Some(read)
}

/// The command of a tool call's `rawInput`, read.
fn command_of(raw: &Value) -> Option<Command> {
    let cmd = raw
        .get("command")
        .or_else(|| raw.get("cmd"))
        .or_else(|| raw.get("commandLine"))?;
    match cmd {
        Value::String(s) => Some(parse(s)),
        Value::Array(words) => {
            let words: Option<Vec<String>> = words
                .iter()
                .map(|w| w.as_str().map(str::to_owned))
                .collect();
            match words.filter(|w| !w.is_empty()) {
                Some(words) => Some(from_argv(words)),
                None => Some(unreadable(
                    "an argv that is not all strings",
                    cmd.to_string(),
                )),
            }
        }
        _ => Some(unreadable(
            "a command that is neither a string nor an argv",
            cmd.to_string(),
        )),
    }
}

fn unreadable(why: &str, source: String) -> Command {
    Command {
        plain: Err(why.into()),
        seen: Vec::new(),
        by_part: Vec::new(),
        unclear: Some(why.into()),
        source,
        runs_in: None,
        background: false,
    }
}

/// An argv: one part as it is, unless it is a shell running a script (`bash -lc SCRIPT`),
/// whose script is read instead.
pub fn from_argv(words: Vec<String>) -> Command {
    let program = words[0].rsplit('/').next().unwrap_or(&words[0]);
    // Only the shells whose quoting is bash's: fish reads `\'` inside single quotes, csh
    // its own syntax; their scripts stay in the argv, where no rule for the shell allows
    // what it runs (the wrappers see them, for denies).
    if BASH_LIKE.contains(&program) && words.len() == 3 {
        let flag = words[1].as_str();
        if flag.starts_with('-')
            && flag.ends_with('c')
            && flag[1..].chars().all(|c| "lic".contains(c))
        {
            return parse(&words[2]);
        }
    }
    let source = words
        .iter()
        .map(|w| {
            shlex::try_quote(w)
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| w.clone())
        })
        .collect::<Vec<_>>()
        .join(" ");
    let mut seen = Seen::default();
    wrappers::see(&words, 0, script, &mut seen);
    let plain = shell::check_program(&words[0]).map(|()| {
        vec![Part {
            env: Vec::new(),
            words: words.clone(),
            runs: Vec::new(),
            globs: Vec::new(),
            op: None,
        }]
    });
    Command {
        plain,
        // The one part stands for every command seen in it.
        by_part: std::iter::once(0..seen.commands.len()).collect(),
        seen: seen.commands,
        unclear: seen.unclear,
        source,
        runs_in: None,
        background: false,
    }
}

/// Whether a command (wrappers seen through: `builtin cd`) changes the shell's folder.
fn changes_folder(words: &[String]) -> bool {
    words.first().is_some_and(|w| {
        matches!(
            w.rsplit('/').next(),
            Some("cd" | "pushd" | "popd" | "chdir")
        )
    })
}

/// A shell command line.
pub fn parse(line: &str) -> Command {
    read(line, 0)
}

/// The commands a shell script given to a wrapper holds (`bash -c SCRIPT`), read `depth`
/// wrappers deep.
/// Only a plain script with no pattern is clear: the words of any other may not be what it
/// runs or opens (`sh -c '/bin/r[m] x'`, `'cat .{e,}nv'`, `'cat < .env'`, `'x > .git/config'`:
/// a fifty-eighth review), and its commands are what deny rules see.
pub fn script(line: &str, depth: usize) -> Seen {
    let c = read(line, depth);
    let unplain_only = c.unclear.is_none() && c.plain.is_err();
    let unclear = c.unclear.or_else(|| match &c.plain {
        Err(why) => Some(format!("a script a program runs is not plain ({why})")),
        Ok(parts) if parts.iter().any(|p| !p.globs.is_empty()) => {
            Some("a script a program runs matches names by a pattern".into())
        }
        // Its later paths are read from another folder than the one the rules are
        // compared in (`timeout 5 bash -c 'cd sub && cat ../secrets/token'`, a sixty-first
        // review): the line's own `cd` is followed ([`super::decide`]), a script's is not.
        Ok(_) if c.seen.iter().any(|w| changes_folder(w)) => {
            Some("a script a program runs changes its folder".into())
        }
        Ok(_) => None,
    });
    Seen {
        commands: c.seen,
        unclear,
        unplain_only,
    }
}

/// A shell command line, read `depth` wrappers deep.
pub fn read(line: &str, depth: usize) -> Command {
    let source = line.to_owned();
    if line.len() > MAX_LEN {
        let why = format!(
            "a command of {} bytes, longer than the {} KiB that are read",
            line.len(),
            MAX_LEN / 1024
        );
        return Command {
            plain: Err(why.clone()),
            seen: Vec::new(),
            by_part: Vec::new(),
            unclear: Some(why),
            source,
            runs_in: None,
            background: false,
        };
    }
    let Some(tree) = shell::parse(line) else {
        return unreadable("the shell grammar could not be loaded", source);
    };
    let plain = shell::plain(line, &tree);
    let mut seen = Seen::default();
    let mut by_part = Vec::new();
    if let Ok(parts) = &plain {
        (seen, by_part) = see_parts(parts, depth);
    } else {
        let mut found = match shell::commands(line, &tree, MAX_COMMANDS) {
            Some(found) => found,
            None => {
                seen.unclear = Some(format!("more than {MAX_COMMANDS} commands"));
                Vec::new()
            }
        };
        if tree.root_node().has_error() {
            // Where the grammar had to recover, a rough split finds what it may have
            // missed.
            found.extend(rough_split(line));
        }
        for words in &found {
            wrappers::see(words, depth, script, &mut seen);
            if seen.commands.len() > 4 * MAX_COMMANDS {
                break;
            }
        }
    }
    if seen.commands.len() > 4 * MAX_COMMANDS {
        seen.unclear = Some(format!("more than {MAX_COMMANDS} commands"));
    }
    Command {
        plain,
        seen: seen.commands,
        by_part,
        unclear: seen.unclear,
        source,
        runs_in: None,
        background: false,
    }
}

/// What deny and ask rules look at in plain `parts`, and which of it each part stands for:
/// each part is one command, read exactly; what its wrappers run beside it, and what the
/// shell runs to make its words (the `cat` of a commit message).
fn see_parts(parts: &[Part], depth: usize) -> (Seen, Vec<std::ops::Range<usize>>) {
    let mut seen = Seen::default();
    let mut by_part = Vec::new();
    if parts.len() > MAX_COMMANDS {
        seen.unclear = Some(format!("more than {MAX_COMMANDS} commands"));
    }
    for p in parts.iter().take(MAX_COMMANDS) {
        let from = seen.commands.len();
        wrappers::see(&p.words, depth, script, &mut seen);
        for run in &p.runs {
            wrappers::see(run, depth, script, &mut seen);
        }
        by_part.push(from..seen.commands.len());
    }
    (seen, by_part)
}

/// A best-effort split of an unparseable line into parts: on every operator character,
/// quotes ignored, each piece split on white space.
fn rough_split(line: &str) -> Vec<Vec<String>> {
    line.split([';', '&', '|', '\n', '(', ')', '`', '<', '>', '$', '{', '}'])
        .map(|p| {
            p.split_whitespace()
                .map(|w| w.trim_matches(['\'', '"']).to_owned())
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|p| !p.is_empty())
        .take(MAX_COMMANDS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parts(line: &str) -> Vec<Vec<String>> {
        let c = parse(line);
        assert_eq!(c.not_allowable(), None, "{line:?}");
        c.parts().unwrap().iter().map(|p| p.words.clone()).collect()
    }

    fn unparseable(line: &str) -> bool {
        parse(line).not_allowable().is_some()
    }

    fn argv(c: Option<Command>) -> Vec<Vec<String>> {
        let c = c.unwrap();
        assert_eq!(c.not_allowable(), None);
        c.parts().unwrap().iter().map(|p| p.words.clone()).collect()
    }

    #[test]
    fn compound_commands_split_into_their_parts() {
        assert_eq!(parts("cargo test"), [["cargo", "test"]]);
        assert_eq!(
            parts("cargo fmt && cargo test -p x || echo 'a && b'; ls | wc -l"),
            vec![
                vec!["cargo", "fmt"],
                vec!["cargo", "test", "-p", "x"],
                vec!["echo", "a && b"],
                vec!["ls"],
                vec!["wc", "-l"],
            ]
        );
        assert_eq!(
            parts("git commit -m \"x; y\""),
            [["git", "commit", "-m", "x; y"]]
        );
        assert_eq!(parts("a\nb"), [["a"], ["b"]]);
    }

    #[test]
    fn what_a_shell_could_expand_is_unparseable() {
        for line in [
            "echo $(rm -rf /)",
            "echo \"$(id)\"",
            "echo `id`",
            "cat < /etc/passwd",
            "echo x > ~/.bashrc",
            "cargo test 2>&1 > out",
            "sleep 100 &",
            "diff <(a) <(b)",
            "cat <<EOF",
            "echo 'unbalanced",
            "",
            "  ;  ",
        ] {
            assert!(unparseable(line), "{line:?}");
        }
        // Quoted, they are just words.
        assert_eq!(parts("echo '$(id)' '>'"), [["echo", "$(id)", ">"]]);
        // Found by the fuzz target: a multi-byte character before what is looked for.
        assert!(unparseable("\u{60b})%' $$~)(s"));
        // Found by the fuzz target: a single quote inside double quotes hid a `$(` after it.
        assert!(unparseable("echo \"'$(rm -rf ~)\""));
        assert!(unparseable("echo \"it's `id`\""));
        // Unquoted, a word is ASCII: anything else is quoted to be read as itself.
        assert!(unparseable("echo ؋ é"));
        assert_eq!(parts("echo '؋' \"é\""), [["echo", "؋", "é"]]);
    }

    #[test]
    fn each_agents_raw_input_is_read() {
        // Claude, gemini-cli, Qwen, OpenCode: a string.
        assert_eq!(
            argv(from_raw_input(&json!({"command": "git status"}))),
            [["git", "status"]]
        );
        // Codex: an argv, and its shell wrapper.
        assert_eq!(
            argv(from_raw_input(
                &json!({"command": ["cargo", "test"], "cwd": "/x"})
            )),
            [["cargo", "test"]]
        );
        assert_eq!(
            argv(from_raw_input(
                &json!({"command": ["bash", "-lc", "cargo fmt && cargo test"]})
            )),
            [["cargo", "fmt"], ["cargo", "test"]]
        );
        assert!(
            from_raw_input(&json!({"command": ["/bin/sh", "script.sh"]}))
                .unwrap()
                .not_allowable()
                .is_some()
        );
        // Goose.
        assert!(from_raw_input(&json!({"cmd": "ls"})).is_some());
        assert_eq!(from_raw_input(&json!({"path": "x"})), None);
        assert!(from_raw_input(&json!({"command": 3}))
            .unwrap()
            .not_allowable()
            .is_some());
    }

    #[test]
    fn every_command_in_an_unparseable_line_is_seen() {
        let c = parse("echo $(rm -rf /tmp/x) > out");
        assert!(
            c.seen
                .iter()
                .any(|p| p.starts_with(&["rm".to_owned(), "-rf".to_owned()])),
            "{:?}",
            c.seen
        );
        // Broken input: the grammar recovers, and a rough split backs it up.
        let c = parse("echo 'x' ) ; rm -rf y (");
        assert!(
            c.seen.iter().any(|p| p.first().is_some_and(|w| w == "rm")),
            "{:?}",
            c.seen
        );
    }

    #[test]
    fn the_text_shown_is_the_command_as_read_and_escaped() {
        assert_eq!(
            parse("cargo fmt && cargo test;git status\nls | wc -l").text(),
            "cargo fmt && cargo test; git status \\n ls | wc -l"
        );
        assert_eq!(parse("echo 'a b'").text(), "echo 'a b'");
        // Not plain: as written, with its newlines and escapes shown, never obeyed.
        let t = parse("cargo test # '\nrm -rf x\n#'\x1b[2K").text();
        assert!(!t.contains('\n') && !t.contains('\x1b'), "{t}");
        assert!(t.contains("\\nrm -rf x"), "{t}");
        // A quoted control character in a plain command is escaped too.
        assert!(!parse("echo 'a\x1b[2Kb'").text().contains('\x1b'));
    }

    #[test]
    fn the_forms_read_as_the_shells_expand_them_are_plain() {
        let c = parse(
            "RUST_BACKTRACE=1 NO_COLOR= cargo test && git commit -m \"$(cat <<'EOF'\nfix: it's done\n\nbody\nEOF\n)\"",
        );
        assert_eq!(c.not_allowable(), None, "{c:?}");
        let read = c.parts().unwrap();
        assert_eq!(
            read[0].env,
            [
                ("RUST_BACKTRACE".to_owned(), "1".to_owned()),
                ("NO_COLOR".to_owned(), String::new())
            ]
        );
        assert_eq!(read[0].words, ["cargo", "test"]);
        assert_eq!(
            read[1].words,
            ["git", "commit", "-m", "fix: it's done\n\nbody"]
        );
        // Deny and ask rules see the program without its assignments, and the `cat` the
        // shell runs for the message beside the part.
        assert_eq!(c.seen[c.by_part[0].clone()], [["cargo", "test"]]);
        assert!(
            c.seen[c.by_part[1].clone()].contains(&vec!["cat".to_owned()]),
            "{:?}",
            c.seen
        );
        // Shown with its assignments, on one line.
        let t = c.text();
        assert!(
            t.starts_with("RUST_BACKTRACE=1 NO_COLOR='' cargo test && git commit -m "),
            "{t}"
        );
        assert!(!t.contains('\n') && t.contains("\\n\\nbody"), "{t}");
        assert_eq!(
            parse("git diff HEAD~1 && git log 'HEAD^..HEAD' \"a=\"~ '~x'").text(),
            "git diff HEAD~1 && git log HEAD'^..HEAD' 'a=~' '~x'"
        );
        assert_eq!(
            parts("git diff HEAD~1 && git log 'HEAD^..HEAD' && git show 'HEAD^2'"),
            vec![
                vec!["git", "diff", "HEAD~1"],
                vec!["git", "log", "HEAD^..HEAD"],
                vec!["git", "show", "HEAD^2"],
            ]
        );
        // A `~` beginning a word is the bridge's home folder.
        match shell::home() {
            Some(home) => assert_eq!(
                parts("ls ~ ~/src"),
                [["ls".to_owned(), home.clone(), format!("{home}/src")]]
            ),
            None => assert!(unparseable("ls ~")),
        }
        for line in [
            "LD_PRELOAD=x.so cargo test",
            "PATH=. cargo test",
            "GIT_DIR=x git status",
            "ls ~root",
            "echo a=~/x",
            "git commit -m \"$(cat <<EOF\n$(id)\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nx\nEOF\nid\n)\"",
        ] {
            assert!(unparseable(line), "{line:?}");
        }
    }

    #[test]
    fn a_line_past_the_bound_is_not_read() {
        let long = format!("cargo test {}", "a ".repeat(MAX_LEN));
        let c = parse(&long);
        assert!(c.not_allowable().unwrap().contains("longer than"));
        assert!(c.seen.is_empty());
    }
}
