//! A tool call's command, as the policy reads it: the parts of a compound shell command
//! (`a && b`, `a || b`, `a; b`, `a | b`), each split into words as a shell would. What a
//! shell could expand into something else (`$(...)`, backticks, redirections, background
//! jobs, here-documents, unbalanced quotes) makes the command unparseable, and an
//! unparseable command is never allowed (docs/POLICY.md).
//!
//! Each agent's raw input is normalised first ([`from_raw_input`]): Claude's `command`
//! string, Codex's argv array (and its `bash -lc SCRIPT` wrapper), gemini-cli's, Qwen's and
//! OpenCode's `command` strings, Goose's `command`/`cmd`.

use serde_json::Value;

/// A command read from a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Every part, each as its words.
    Parts(Vec<Vec<String>>),
    /// It could not be read safely: why, and a best-effort split of it into parts (used
    /// only to find deny rules that cover it).
    Unparseable {
        why: String,
        rough: Vec<Vec<String>>,
    },
}

impl Command {
    /// The parts to look deny rules up by: the parts, or the rough split.
    pub fn any_parts(&self) -> &[Vec<String>] {
        match self {
            Command::Parts(p) => p,
            Command::Unparseable { rough, .. } => rough,
        }
    }

    /// The command as one line, for messages.
    pub fn text(&self) -> String {
        self.any_parts()
            .iter()
            .map(|p| p.join(" "))
            .collect::<Vec<_>>()
            .join(" ; ")
    }
}

/// The shells whose `-c SCRIPT` is read as the script.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "fish"];

/// The command of a tool call's `rawInput`, if it has one.
pub fn from_raw_input(raw: &Value) -> Option<Command> {
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
            let Some(words) = words.filter(|w| !w.is_empty()) else {
                return Some(Command::Unparseable {
                    why: "an argv that is not all strings".into(),
                    rough: Vec::new(),
                });
            };
            Some(from_argv(words))
        }
        _ => Some(Command::Unparseable {
            why: "a command that is neither a string nor an argv".into(),
            rough: Vec::new(),
        }),
    }
}

/// An argv: one part as it is, unless it is a shell running a script (`bash -lc SCRIPT`),
/// whose script is read instead.
pub fn from_argv(words: Vec<String>) -> Command {
    let program = words[0].rsplit('/').next().unwrap_or(&words[0]);
    if SHELLS.contains(&program) && words.len() == 3 {
        let flag = words[1].as_str();
        if flag.starts_with('-')
            && flag.ends_with('c')
            && flag[1..].chars().all(|c| "lic".contains(c))
        {
            return parse(&words[2]);
        }
    }
    if SHELLS.contains(&program) && words.len() > 1 {
        // A shell with anything else (a script file, more options): what it runs is not
        // in the argv.
        return Command::Unparseable {
            why: format!("{program} runs something not given in its arguments"),
            rough: vec![words],
        };
    }
    Command::Parts(vec![words])
}

/// A shell command line.
pub fn parse(line: &str) -> Command {
    let rough = || rough_split(line);
    for (needle, why) in [
        ("$(", "a command substitution $(...)"),
        ("`", "a command substitution in backticks"),
        ("<(", "a process substitution"),
        (">(", "a process substitution"),
        ("<<", "a here-document"),
    ] {
        if contains_unquoted(line, needle) {
            return Command::Unparseable {
                why: why.into(),
                rough: rough(),
            };
        }
    }
    let mut parts = Vec::new();
    for piece in split_operators(line) {
        let piece = match piece {
            Ok(p) => p,
            Err(why) => {
                return Command::Unparseable {
                    why,
                    rough: rough(),
                }
            }
        };
        let Some(words) = shlex::split(&piece) else {
            return Command::Unparseable {
                why: "unbalanced quotes".into(),
                rough: rough(),
            };
        };
        if words.is_empty() {
            continue;
        }
        parts.push(words);
    }
    if parts.is_empty() {
        return Command::Unparseable {
            why: "an empty command".into(),
            rough: Vec::new(),
        };
    }
    Command::Parts(parts)
}

/// The pieces of `line` between `&&`, `||`, `;`, `|` and newlines outside quotes; `Err`
/// for what makes it unsafe to read (redirections, a lone `&`, `$` expansions of
/// variables in command position are left to the words).
fn split_operators(line: &str) -> Vec<Result<String, String>> {
    let mut pieces = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\\' if !single => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '\'' if !double => {
                single = !single;
                cur.push(c);
            }
            '"' if !single => {
                double = !double;
                cur.push(c);
            }
            _ if single || double => cur.push(c),
            ';' | '\n' => pieces.push(Ok(std::mem::take(&mut cur))),
            '|' => {
                if chars.peek() == Some(&'|') {
                    chars.next();
                }
                pieces.push(Ok(std::mem::take(&mut cur)));
            }
            '&' => {
                if chars.peek() == Some(&'&') {
                    chars.next();
                    pieces.push(Ok(std::mem::take(&mut cur)));
                } else {
                    return vec![Err("a background job or a redirection with &".into())];
                }
            }
            '>' | '<' => return vec![Err("a redirection".into())],
            _ => cur.push(c),
        }
    }
    if single || double {
        return vec![Err("unbalanced quotes".into())];
    }
    pieces.push(Ok(cur));
    pieces
}

/// Whether `needle` stands in `line` outside single quotes (inside double quotes a shell
/// still expands `$(` and backticks).
fn contains_unquoted(line: &str, needle: &str) -> bool {
    let (mut single, mut double) = (false, false);
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if !single => i += 1,
            // A single quote inside double quotes is a character, not a quote.
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            _ if !single && bytes[i..].starts_with(needle.as_bytes()) => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// A best-effort split of an unparseable line into parts: on every operator character,
/// quotes ignored, each piece split on white space.
fn rough_split(line: &str) -> Vec<Vec<String>> {
    line.split([';', '&', '|', '\n', '(', ')', '`', '<', '>', '$'])
        .map(|p| {
            p.split_whitespace()
                .map(|w| w.trim_matches(['\'', '"']).to_owned())
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parts(line: &str) -> Vec<Vec<String>> {
        match parse(line) {
            Command::Parts(p) => p,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn unparseable(line: &str) -> bool {
        matches!(parse(line), Command::Unparseable { .. })
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
            "cargo test 2>&1",
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
        assert_eq!(parts("echo ؋ é"), [["echo", "؋", "é"]]);
    }

    #[test]
    fn each_agents_raw_input_is_read() {
        // Claude, gemini-cli, Qwen, OpenCode: a string.
        assert_eq!(
            from_raw_input(&json!({"command": "git status"})),
            Some(Command::Parts(vec![vec!["git".into(), "status".into()]]))
        );
        // Codex: an argv, and its shell wrapper.
        assert_eq!(
            from_raw_input(&json!({"command": ["cargo", "test"], "cwd": "/x"})),
            Some(Command::Parts(vec![vec!["cargo".into(), "test".into()]]))
        );
        assert_eq!(
            from_raw_input(&json!({"command": ["bash", "-lc", "cargo fmt && cargo test"]})),
            Some(Command::Parts(vec![
                vec!["cargo".into(), "fmt".into()],
                vec!["cargo".into(), "test".into()]
            ]))
        );
        assert!(matches!(
            from_raw_input(&json!({"command": ["/bin/sh", "script.sh"]})),
            Some(Command::Unparseable { .. })
        ));
        // Goose.
        assert!(from_raw_input(&json!({"cmd": "ls"})).is_some());
        assert_eq!(from_raw_input(&json!({"path": "x"})), None);
        assert!(matches!(
            from_raw_input(&json!({"command": 3})),
            Some(Command::Unparseable { .. })
        ));
    }

    #[test]
    fn a_rough_split_still_finds_the_commands_in_an_unparseable_line() {
        let Command::Unparseable { rough, .. } = parse("echo $(rm -rf /tmp/x) > out") else {
            panic!()
        };
        assert!(
            rough
                .iter()
                .any(|p| p.starts_with(&["rm".to_owned(), "-rf".to_owned()])),
            "{rough:?}"
        );
    }
}
