//! A shell command read with a real grammar (tree-sitter-bash), two ways:
//! - [`plain`]: the parts of a *plain* command, the only kind an allow can be given to:
//!   commands of literal words and quotes without expansion, joined by `&&`, `||`, `;`, `|`
//!   and newlines, with no redirection but to `/dev/null` or between file descriptors;
//!   three forms that expand are read as the shells expand them, to the same literal
//!   text: `~` and `~/...` at the start of a word (the home folder, [`home`]), Claude
//!   Code's commit message `"$(cat <<'EOF' ... EOF\n)"` (its text, `cat_heredoc`), and
//!   assignments of harmless variables before a program ([`HARMLESS_ENV`]);
//! - [`commands`]: every command that stands anywhere in it (inside substitutions, subshells,
//!   groups, functions, conditionals), as closely as can be told, for deny and ask rules to
//!   look at. It reads broken input too: tree-sitter recovers from errors.
//!
//! Invariants:
//! - Parse to allow, not to deny. The grammar gives the structure; every byte of the line
//!   must then be accounted for by this module's own reading: each word is decoded here by
//!   rules that bash and dash agree on (unquoted words of a small ASCII set, `'...'`, and
//!   `"..."` without `$`, backquote or backslash), and the bytes between tokens may only be
//!   spaces and tabs (and newlines where a command ends). Wherever tree-sitter and a shell
//!   could disagree (a line continuation, a carriage return, a Unicode space, a comment),
//!   the command is not plain.
//! - A word's value is what bash and dash pass to the program, byte for byte: a `~` is read
//!   as the home folder only where both expand it the same way, as a literal character only
//!   where neither expands it, and anything in between is not plain. The differential test
//!   (tests/it/policy_shell) runs every allowed generated command under both and compares
//!   the programs' argv and environment with this reading.
//! - No recursion on the input's shape: trees are walked with explicit stacks, so a deeply
//!   nested line cannot overflow the stack; the caller bounds the line's length.

use tree_sitter::{Node, Parser, Tree};

mod words;
use words::*;
pub use words::{glob_word, harmless_assignment, HARMLESS_ENV};

/// One command of a plain command line, and the operator written after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The variables assigned before the program (`RUST_LOG=debug cargo run`), in order,
    /// each a name of [`HARMLESS_ENV`] and its value as the program gets it. Not in
    /// `words`: rules match the program and its arguments.
    pub env: Vec<(String, String)>,
    /// The program and its arguments, as the program gets them: quotes taken off, a `~` at
    /// the start of a word replaced by the home folder, a commit message's here-document by
    /// its text.
    pub words: Vec<String>,
    /// What the shell runs to make the words, besides the program: `["cat"]` for each
    /// `"$(cat <<'EOF' ... EOF\n)"` (its stdin the here-document).
    pub runs: Vec<Vec<String>>,
    /// Which of `words` are patterns the shell expands to the names they match
    /// ([`words::glob_word`], `src/*.rs`): kept as written here; a policy decides a part
    /// with one only once they are put in place of it (`super::glob`).
    pub globs: Vec<usize>,
    /// `&&`, `||`, `;`, `|`, or a newline (`"\n"`); `None` after the last part.
    pub op: Option<&'static str>,
}

/// Programs before which no variable may be assigned: the builtins of bash and dash that
/// [`NEVER_ALLOWED`] leaves. The shell reads such an assignment itself (`LC_ALL=x echo`
/// sets bash's own locale, and it warns when there is none), and dash keeps one before a
/// special builtin for the rest of the line (`LANG=C :; cargo test` runs `cargo test` with
/// `LANG=C` where `LANG` was exported).
const BUILTINS: &[&str] = &[
    ":", "cd", "chdir", "dirs", "echo", "false", "help", "popd", "pushd", "pwd", "times", "true",
    "type",
];

/// Programs and shell words that are never allowed, whatever a rule says: reserved words,
/// and builtins that evaluate or define what runs (`eval`, `source`, `exec`, `command`,
/// `trap`, `alias`), assign variables, or evaluate arithmetic on their arguments (bash's
/// `test`/`[` with `-eq` or `-v`, `declare -i`, `printf -v`, `let`, `read`), any of which can
/// run a command from a quoted literal (`test -v 'a[$(rm -rf x)]'`).
pub const NEVER_ALLOWED: &[&str] = &[
    // Reserved words.
    "!",
    "[[",
    "]]",
    "{",
    "}",
    "case",
    "coproc",
    "do",
    "done",
    "elif",
    "else",
    "esac",
    "fi",
    "for",
    "function",
    "if",
    "in",
    "select",
    "then",
    "time",
    "until",
    "while",
    // Builtins that run, define or evaluate.
    ".",
    "source",
    "eval",
    "exec",
    "command",
    "builtin",
    "trap",
    "alias",
    "unalias",
    "enable",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "let",
    "read",
    "mapfile",
    "readarray",
    "printf",
    "set",
    "shopt",
    "unset",
    "hash",
    "bind",
    "complete",
    "compgen",
    "compopt",
    "fc",
    "history",
    "test",
    "[",
    "ulimit",
    "umask",
    "getopts",
    "shift",
    "return",
    "exit",
    "break",
    "continue",
    "logout",
    "caller",
    "wait",
    "jobs",
    "fg",
    "bg",
    "disown",
    "suspend",
    "kill",
];

/// zsh's and ksh's builtins that run, define or evaluate what bash's grammar does not show
/// (`emulate zsh -c 'cat .env'`, a fifty-ninth review), or change how later words are read
/// (`setopt`): never allowed, as [`NEVER_ALLOWED`].
#[rustfmt::skip]
const ZSH_NEVER: &[&str] = &[
    "emulate", "setopt", "unsetopt", "sched", "zmodload", "zpty", "ztcp", "zsocket", "zle",
    "autoload", "functions", "zcompile", "zstyle", "noglob", "nocorrect", "vared", "integer",
    "float", "private", "zparseopts", "repeat", "disable", "bindkey", "r", "zargs", "zf_rm",
    // A name with a subscript evaluated (`print -v 'a[$(rm x)]'`), `-guard` eval'd; ksh93's
    // `fc` (a sixtieth review).
    "print", "zformat", "getln", "zregexparse", "pushln", "hist", "compound", "nameref",
    "enum", "redirect", "stop",
    // zsh's `bye` evaluates its argument as `exit` does; its alias `run-help` is `man`, whose
    // options no model reads under that name (a sixty-first review).
    "bye", "run-help",
];

/// A parser for bash.
fn parser() -> Option<Parser> {
    let mut p = Parser::new();
    p.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    Some(p)
}

thread_local! {
    /// One parser a thread: making one loads the grammar.
    static PARSER: std::cell::RefCell<Option<Parser>> = std::cell::RefCell::new(parser());
}

/// The tree of `line`, if the grammar could be loaded.
pub fn parse(line: &str) -> Option<Tree> {
    PARSER.with(|p| p.borrow_mut().as_mut()?.parse(line, None))
}

/// The characters an unquoted word may be made of: bash, dash and zsh read each as itself
/// wherever it stands (no glob, brace, `#`, `!`, `$`, quote or backslash; no `^`, which zsh
/// with `extendedglob`, prezto's default, reads as "every name but": `.e^x` is `.env`).
/// A `~` is read by [`Reader::unquoted`], by where it stands.
fn plain_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-+=.,/:@%".contains(c)
}

/// The home folder a `~` stands for: `$HOME` of the bridge's environment, if it is UTF-8
/// and absolute (bash and dash put it in place of the `~` as it is, a trailing `/` kept).
/// The agent's shell is the bridge's child and has the same `$HOME`, as the path checks
/// also assume (`super::path`).
pub fn home() -> Option<String> {
    std::env::var("HOME").ok().filter(|h| h.starts_with('/'))
}

/// What a token of the plain reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// A word, or a redirection, inside statement `n`.
    In(usize),
    /// An operator between statements.
    Op,
}

/// The parts of `line` if it is a plain command, else why not; a `~` is the [`home`]
/// folder.
pub fn plain(line: &str, tree: &Tree) -> Result<Vec<Part>, String> {
    plain_in(line, tree, home().as_deref())
}

/// [`plain`] with `home` for the home folder (`None`: a `~` is not plain).
pub fn plain_in(line: &str, tree: &Tree, home: Option<&str>) -> Result<Vec<Part>, String> {
    let src = line.as_bytes();
    let mut reader = Reader {
        src,
        home,
        runs: Vec::new(),
    };
    let root = tree.root_node();
    if root.has_error() {
        return Err("the shell grammar does not accept it".into());
    }
    let mut parts: Vec<Part> = Vec::new();
    // Every token the reading accounts for, in order: (start, end, what).
    let mut toks: Vec<(usize, usize, Tok)> = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "program" | "list" | "pipeline" => {
                let mut c = node.walk();
                let children: Vec<Node> = node.children(&mut c).collect();
                stack.extend(children.into_iter().rev());
            }
            "command" | "redirected_statement" => {
                let n = parts.len();
                let (env, words, globs) = statement(node, &mut reader, n, &mut toks)?;
                parts.push(Part {
                    env,
                    words,
                    runs: std::mem::take(&mut reader.runs),
                    globs,
                    op: None,
                });
            }
            "comment" => return Err("a comment".into()),
            kind if !node.is_named() => {
                let op = match kind {
                    "&&" => "&&",
                    "||" => "||",
                    ";" => ";",
                    "|" => "|",
                    "&" => return Err("a background job (&)".into()),
                    other => return Err(format!("the operator {other:?}")),
                };
                match parts.last_mut() {
                    Some(p) if p.op.is_none() => p.op = Some(op),
                    _ => return Err(format!("{op} with no command before it")),
                }
                toks.push((node.start_byte(), node.end_byte(), Tok::Op));
            }
            kind => return Err(describe(kind)),
        }
    }
    if parts.is_empty() {
        return Err("an empty command".into());
    }
    // A statement's redirections are met before its words; the tokens never overlap.
    toks.sort_by_key(|t| t.0);
    gaps(src, &toks, &mut parts)?;
    Ok(parts)
}

/// What a node of a kind that is never plain is, for messages.
fn describe(kind: &str) -> String {
    match kind {
        "command_substitution" => "a command substitution".into(),
        "process_substitution" => "a process substitution".into(),
        "expansion" | "simple_expansion" => "a parameter expansion ($...)".into(),
        "arithmetic_expansion" => "an arithmetic expansion".into(),
        "subshell" => "a subshell ( ... )".into(),
        "compound_statement" => "a group { ... }".into(),
        "function_definition" => "a function definition".into(),
        "variable_assignment" | "variable_assignments" => "a variable assignment".into(),
        "heredoc_redirect" => "a here-document".into(),
        "herestring_redirect" => "a here-string".into(),
        "file_redirect" => "a redirection other than to /dev/null".into(),
        "negated_command" => "a negated command (!)".into(),
        "declaration_command" => "a declaration (declare, export, local, ...)".into(),
        "ansi_c_string" => "a $'...' string".into(),
        "translated_string" => "a $\"...\" string".into(),
        "brace_expression" => "a brace expansion".into(),
        other => format!("a {}", other.replace('_', " ")),
    }
}

/// Assignments before a program: each name and value.
type Env = Vec<(String, String)>;

/// The assignments, words and patterns (which of the words are: [`Part::globs`]) of a
/// `command` (or a `redirected_statement` around one), each token of it recorded as inside
/// statement `n`.
fn statement(
    node: Node,
    r: &mut Reader,
    n: usize,
    toks: &mut Vec<(usize, usize, Tok)>,
) -> Result<(Env, Vec<String>, Vec<usize>), String> {
    let src = r.src;
    let command = if node.kind() == "redirected_statement" {
        let mut c = node.walk();
        let mut command = None;
        for (i, child) in node.children(&mut c).enumerate() {
            match child.kind() {
                "command" if i == 0 => command = Some(child),
                "file_redirect" => redirect(child, src, n, toks)?,
                other => return Err(describe(other)),
            }
        }
        command
            .ok_or_else(|| "a redirection of something that is not a plain command".to_string())?
    } else {
        node
    };
    let mut env: Env = Vec::new();
    let mut words = Vec::new();
    let mut globs = Vec::new();
    let mut c = command.walk();
    for child in command.children(&mut c) {
        match child.kind() {
            "variable_assignment" if words.is_empty() => {
                let (name, value) = r.assignment(child)?;
                if env.iter().any(|(n, _)| *n == name) {
                    return Err(format!("the variable {name} assigned twice"));
                }
                env.push((name, value));
                toks.push((child.start_byte(), child.end_byte(), Tok::In(n)));
            }
            "command_name" => {
                let mut cc = child.walk();
                let inner: Vec<Node> = child.children(&mut cc).collect();
                let [name] = inner.as_slice() else {
                    return Err("a command name that is not one word".into());
                };
                let name_text = r.word(*name, true)?;
                check_program(&name_text)?;
                if !env.is_empty() && BUILTINS.contains(&name_text.as_str()) {
                    return Err(format!(
                        "a variable assignment before `{name_text}`, a builtin: the shell reads it itself"
                    ));
                }
                toks.push((name.start_byte(), name.end_byte(), Tok::In(n)));
                words.push(name_text);
            }
            "file_redirect" => redirect(child, src, n, toks)?,
            _ if words.is_empty() => return Err(describe(child.kind())),
            "word" if glob_word(text(child, src)) => {
                globs.push(words.len());
                words.push(text(child, src).to_owned());
                toks.push((child.start_byte(), child.end_byte(), Tok::In(n)));
            }
            _ => {
                words.push(r.word(child, true)?);
                toks.push((child.start_byte(), child.end_byte(), Tok::In(n)));
            }
        }
    }
    if words.is_empty() {
        return Err("a redirection or assignment with no command".into());
    }
    Ok((env, words, globs))
}

/// Whether a program may be allowed at all.
pub(super) fn check_program(name: &str) -> Result<(), String> {
    let base = name.rsplit('/').next().unwrap_or(name);
    if name.is_empty() || base.is_empty() {
        return Err("an empty program name".into());
    }
    if name.contains('=') {
        return Err("a program name with `=` (an assignment)".into());
    }
    if [NEVER_ALLOWED, ZSH_NEVER]
        .iter()
        .any(|l| l.contains(&name) || l.contains(&base))
    {
        return Err(format!(
            "`{base}`, a shell word that runs or evaluates what follows"
        ));
    }
    Ok(())
}

/// A redirection, plain only to `/dev/null` (`>`, `>>`, `<`, with a file descriptor or
/// not) or between file descriptors (`2>&1`).
fn redirect(
    node: Node,
    src: &[u8],
    n: usize,
    toks: &mut Vec<(usize, usize, Tok)>,
) -> Result<(), String> {
    let mut c = node.walk();
    let children: Vec<Node> = node.children(&mut c).collect();
    let (fd, rest) = match children.split_first() {
        Some((first, rest)) if first.kind() == "file_descriptor" => (Some(*first), rest),
        _ => (None, children.as_slice()),
    };
    let [op, dest] = rest else {
        return Err(describe("file_redirect"));
    };
    // Right after a digit, the grammar may leave the digit a word (`0</dev/null` is read as
    // the word `0` and `</dev/null`) where the shells take it for the file descriptor.
    if node.start_byte() > 0 && src[node.start_byte() - 1].is_ascii_digit() {
        return Err(describe("file_redirect"));
    }
    // One digit: dash reads `22>` as the word `22` and a redirection of stdout.
    let digit = |n: &Node| {
        let t = text(*n, src);
        t.len() == 1 && t.bytes().all(|b| b.is_ascii_digit())
    };
    if fd.is_some_and(|f| !digit(&f)) {
        return Err(describe("file_redirect"));
    }
    // Between its parts, nothing (`2>/dev/null`) or spaces and tabs: the grammar skips a
    // form feed, a carriage return or a newline there, which the shells take as a file name.
    let mut at = node.start_byte();
    for part in &children {
        if !src[at..part.start_byte()]
            .iter()
            .all(|b| *b == b' ' || *b == b'\t')
        {
            return Err(describe("file_redirect"));
        }
        at = part.end_byte();
    }
    if at != node.end_byte() {
        return Err(describe("file_redirect"));
    }
    let ok = match op.kind() {
        ">" | ">>" | "<" => dest.kind() == "word" && text(*dest, src) == "/dev/null",
        ">&" | "<&" => dest.kind() == "number" && digit(dest),
        _ => false,
    };
    if !ok {
        return Err(describe("file_redirect"));
    }
    toks.push((node.start_byte(), node.end_byte(), Tok::In(n)));
    Ok(())
}

fn text<'a>(node: Node, src: &'a [u8]) -> &'a str {
    std::str::from_utf8(&src[node.start_byte()..node.end_byte()]).unwrap_or("")
}

/// Checks what lies between the tokens: spaces and tabs within a command and before an
/// operator; newlines too after an operator, and between commands, where a newline is what
/// ends the first (and is recorded as its operator).
fn gaps(src: &[u8], toks: &[(usize, usize, Tok)], parts: &mut [Part]) -> Result<(), String> {
    let blank = |s: &[u8]| s.iter().all(|b| *b == b' ' || *b == b'\t');
    let blank_nl = |s: &[u8]| s.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n'));
    let mut at = 0;
    let mut prev: Option<Tok> = None;
    for &(start, end, tok) in toks {
        if start < at || end < start {
            return Err("tokens out of order".into());
        }
        let gap = &src[at..start];
        let ok = match (prev, tok) {
            (None, _) => blank_nl(gap),
            (Some(Tok::In(a)), Tok::In(b)) if a == b => blank(gap),
            (Some(Tok::In(a)), Tok::In(b)) => {
                // Two commands with no operator between them: a newline must end the
                // first.
                let ok = blank_nl(gap) && gap.contains(&b'\n') && b == a + 1;
                if ok && parts[a].op.is_none() {
                    parts[a].op = Some("\n");
                }
                ok
            }
            (Some(Tok::In(_)), Tok::Op) => blank(gap),
            (Some(Tok::Op), _) => blank_nl(gap),
        };
        if !ok {
            return Err(gap_why(gap));
        }
        at = end;
        prev = Some(tok);
    }
    let tail = &src[at..];
    if !blank_nl(tail) {
        return Err(gap_why(tail));
    }
    Ok(())
}

fn gap_why(gap: &[u8]) -> String {
    let g = String::from_utf8_lossy(gap);
    if g.contains('\\') {
        "a line continuation or an escape outside quotes".into()
    } else if g.contains('#') {
        "a comment".into()
    } else {
        format!("what separates its words ({})", escape(&g))
    }
}

/// Every command in `tree` (a `command` or declaration anywhere, at any depth), each as its
/// words read as closely as can be told: quotes taken off, anything else as written. At most
/// `max` commands; `None` past that.
pub fn commands(line: &str, tree: &Tree, max: usize) -> Option<Vec<Vec<String>>> {
    let src = line.as_bytes();
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "command" => {
                let mut words = Vec::new();
                let mut c = node.walk();
                for child in node.children(&mut c) {
                    match child.kind() {
                        "command_name" => words.push(loose(child, src)),
                        "variable_assignment"
                        | "file_redirect"
                        | "herestring_redirect"
                        | "heredoc_redirect"
                        | "comment" => {}
                        _ if child.is_named() => words.push(loose(child, src)),
                        _ => {}
                    }
                }
                if !words.is_empty() {
                    out.push(words);
                }
            }
            "declaration_command" | "unset_command" => {
                let words: Vec<String> = text(node, src)
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                if !words.is_empty() {
                    out.push(words);
                }
            }
            _ => {}
        }
        if out.len() > max {
            return None;
        }
        let mut c = node.walk();
        let children: Vec<Node> = node.children(&mut c).collect();
        stack.extend(children.into_iter().rev());
    }
    Some(out)
}

/// A word read loosely, for deny rules: quotes taken off, backslashes dropped, anything
/// else as written.
fn loose(node: Node, src: &[u8]) -> String {
    let t = text(node, src);
    let mut out = String::with_capacity(t.len());
    let mut chars = t.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {}
            '\\' => {
                if let Some(n) = chars.next() {
                    if n != '\n' {
                        out.push(n);
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` with control characters, newlines, and the characters that reorder or hide text
/// (bidirectional controls, zero-width ones) escaped, so it cannot forge a line where it is
/// shown.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}') =>
            {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Result<Vec<Vec<String>>, String> {
        let tree = parse(line).unwrap();
        plain(line, &tree).map(|p| p.into_iter().map(|p| p.words).collect())
    }

    #[test]
    fn plain_commands_are_read_word_by_word() {
        assert_eq!(
            words("cargo test --release -- --nocapture").unwrap(),
            [["cargo", "test", "--release", "--", "--nocapture"]]
        );
        assert_eq!(
            words("git commit -m 'a; b' -m \"c && d\" x'y'\"z\"").unwrap(),
            [["git", "commit", "-m", "a; b", "-m", "c && d", "xyz"]]
        );
        assert_eq!(
            words("cargo fmt && cargo test || echo no; ls | wc -l\nls").unwrap(),
            vec![
                vec!["cargo", "fmt"],
                vec!["cargo", "test"],
                vec!["echo", "no"],
                vec!["ls"],
                vec!["wc", "-l"],
                vec!["ls"],
            ]
        );
        assert_eq!(
            words("cargo test 2>/dev/null >/dev/null 2>&1").unwrap(),
            [["cargo", "test"]]
        );
        assert_eq!(words("  cargo test  \n").unwrap(), [["cargo", "test"]]);
        assert_eq!(words("cargo test &&\n git status").unwrap().len(), 2);
    }

    #[test]
    fn the_operators_are_kept_as_written() {
        let tree = parse("a && b || c; d | e\nf").unwrap();
        let ops: Vec<_> = plain("a && b || c; d | e\nf", &tree)
            .unwrap()
            .into_iter()
            .map(|p| p.op)
            .collect();
        assert_eq!(
            ops,
            [
                Some("&&"),
                Some("||"),
                Some(";"),
                Some("|"),
                Some("\n"),
                None
            ]
        );
    }

    #[test]
    fn nothing_a_shell_reads_otherwise_is_plain() {
        for line in [
            "cargo test # '\nrm -rf x\n#'",
            "cargo test #\\\nrm -rf x",
            "cargo test ${PATH:'a[$(rm -rf x)]'}",
            "cargo test $HOME",
            "cargo test \"$HOME\"",
            "cargo test $((1+1))",
            "cargo test $(id)",
            "cargo test `id`",
            "cargo test <(id)",
            "cargo test > out",
            "cargo test >> out",
            "cargo test < in",
            "cargo test &> /dev/null",
            "cargo test 0</dev/null",
            "cargo test 0>/dev/null",
            "cargo test x2>/dev/null",
            "cargo test 22>/dev/null",
            "cargo test >& out",
            "cargo test <<EOF\nx\nEOF",
            "cargo test <<< x",
            "cargo test &",
            "cargo test |& cat",
            "cargo test\\\n rm",
            "cargo test\rrm",
            "cargo test\u{a0}rm",
            "cargo test ~root",
            "cargo test ~+",
            "cargo test a=~/x",
            "RUSTFLAGS=x cargo test",
            "cargo test \"$(cat <<EOF\nx\nEOF\n)\"",
            "cargo test *",
            "cargo test {a,b}",
            "cargo test a[b]",
            "cargo test \"a\\\"b\"",
            "cargo test \\;",
            "cargo test $'x'",
            "X=1 cargo test",
            "LD_PRELOAD=x cargo test",
            "(cargo test)",
            "{ cargo test; }",
            "f() { rm -rf x; }; f",
            "! cargo test",
            "if true; then rm x; fi",
            "eval cargo test",
            "exec rm x",
            "command rm x",
            "test -v 'a[$(rm -rf x)]'",
            "[ 'a[$(id)]' -eq 0 ]",
            "declare -i x='a[$(id)]'",
            "printf -v x %s y",
            "time rm x",
            "cargo test;;",
            "; cargo test",
            "",
            "echo 'unbalanced",
        ] {
            assert!(words(line).is_err(), "{line:?} read as {:?}", words(line));
        }
    }

    /// `words` of `line` read with the home folder `/home/u`.
    fn at_home(line: &str) -> Result<Vec<Part>, String> {
        plain_in(line, &parse(line).unwrap(), Some("/home/u"))
    }

    fn words_at_home(line: &str) -> Vec<Vec<String>> {
        at_home(line)
            .unwrap_or_else(|e| panic!("{line:?}: {e}"))
            .into_iter()
            .map(|p| p.words)
            .collect()
    }

    #[test]
    fn a_tilde_inside_a_word_and_a_quoted_caret_are_themselves() {
        // An unquoted `^` is a pattern to zsh with `extendedglob`: not plain.
        for line in [
            "git log HEAD^..HEAD",
            "git show HEAD^2",
            "cat .e^x",
            "ls ^x",
        ] {
            assert!(at_home(line).is_err(), "{line:?}");
        }
        for (line, want) in [
            ("git diff HEAD~1", vec!["git", "diff", "HEAD~1"]),
            ("git log 'HEAD^..HEAD'", vec!["git", "log", "HEAD^..HEAD"]),
            (
                "git show 'HEAD^2' HEAD~ x~~y '^x'",
                vec!["git", "show", "HEAD^2", "HEAD~", "x~~y", "^x"],
            ),
            // After a quote, a `~` does not begin the word: `"a="~` is `a=~` to both shells.
            (
                "echo 'a'~b \"a=\"~ 'x:'~",
                vec!["echo", "a~b", "a=~", "x:~"],
            ),
            ("ls ~/a~b", vec!["ls", "/home/u/a~b"]),
        ] {
            assert_eq!(words_at_home(line), [want], "{line:?}");
        }
        // After `=` or `:`, bash expands a `~` in a word that looks like an assignment
        // (`echo a=~/x`, `echo a=b:~/x`) and dash does not.
        for line in [
            "echo a=~/x",
            "echo a=~",
            "echo --x=~/x",
            "echo a:~/x",
            "echo a=b:~/x",
            "echo ~/a=~",
            "echo ~/a:~/b",
            "echo x'y'=~",
        ] {
            assert!(at_home(line).is_err(), "{line:?}: {:?}", at_home(line));
        }
    }

    #[test]
    fn a_tilde_beginning_a_word_is_the_home_folder() {
        assert_eq!(
            words_at_home("ls ~ ~/src && cat ~/.gitconfig ~/'a b' ~/\"c\""),
            vec![
                vec!["ls", "/home/u", "/home/u/src"],
                vec!["cat", "/home/u/.gitconfig", "/home/u/a b", "/home/u/c"],
            ]
        );
        assert_eq!(words_at_home("~/bin/tool x"), [["/home/u/bin/tool", "x"]]);
        // Another user's home, `$PWD`, `$OLDPWD`, and a tilde-prefix with a quote in it.
        for line in [
            "ls ~root",
            "ls ~root/x",
            "ls ~+",
            "ls ~-",
            "ls ~''",
            "ls ~'x'",
            "ls ~\"/x\"",
            "ls ~~",
            "ls ~:",
            "ls ~=",
            "ls ~.",
        ] {
            assert!(at_home(line).is_err(), "{line:?}: {:?}", at_home(line));
        }
        // With no home folder, no `~` is plain.
        let tree = parse("ls ~/src").unwrap();
        assert!(plain_in("ls ~/src", &tree, None).is_err());
        // `plain` reads the bridge's own `$HOME`.
        match home() {
            Some(h) => assert_eq!(words("ls ~").unwrap(), [["ls", h.as_str()]]),
            None => assert!(words("ls ~").is_err()),
        }
    }

    #[test]
    fn a_commit_message_from_a_quoted_here_document_is_its_text() {
        let line = "git commit -m \"$(cat <<'EOF'\nmessage line 1\n\nmore: (x) 'it)s' $(id) ok\n\nEOF\n)\"";
        let parts = at_home(line).unwrap();
        assert_eq!(
            parts[0].words,
            [
                "git",
                "commit",
                "-m",
                "message line 1\n\nmore: (x) 'it)s' $(id) ok"
            ]
        );
        assert_eq!(parts[0].runs, [["cat"]]);
        // An apostrophe bash 3.2 reads to the end for, with no quote after: no command of
        // the line runs there.
        let parts =
            at_home("git commit -m \"$(cat <<'EOF'\nfix: it's done\nEOF\n)\" && git log").unwrap();
        assert_eq!(parts[0].words[3], "fix: it's done");
        // A `#` whose line holds no bracket or quote reads the same either way.
        let line = "git commit -m \"$(cat <<'EOF'\nmore: it's (x) 'q' $(id)\n\nFixes #1\nEOF\n)\"";
        assert!(at_home(line).is_ok(), "{line:?}");
        let line = "git commit -m \"$(cat <<'EOF'\nFix (x)\n\n# Notes\nFixes #12\nEOF\n)\"";
        let parts = at_home(line).unwrap();
        assert_eq!(parts[0].words[3], "Fix (x)\n\n# Notes\nFixes #12");
        for (word, want) in [
            ("\"$(cat <<\"EOF\"\nx\nEOF\n)\"", "x"),
            ("\"$(cat <<-'EOF'\n\t\tx\n\ty\n\tEOF\n)\"", "x\ny"),
            ("\"$( cat<< 'END_1' \nx\n\n\nEND_1\n )\"", "x"),
            ("\"$(cat <<'EOF'\nEOF\n)\"", ""),
            ("\"$(cat <<'EOF'\n\n\nEOF\n)\"", ""),
            ("\"$(cat <<'EOF'\n  x\r\n\nEOF\n)\"", "  x\r"),
            ("\"$(cat <<'EOF'\nxEOF\nEOF\n)\"", "xEOF"),
        ] {
            assert_eq!(cat_heredoc(word, b"").as_deref(), Some(want), "{word:?}");
        }
        // Quoted around it, and two of them: each runs a `cat`.
        let parts =
            at_home("git commit -m\"$(cat <<'A'\nx\nA\n)\" -m \"$(cat <<'B'\ny\nB\n)\"").unwrap();
        assert_eq!(parts[0].words, ["git", "commit", "-mx", "-m", "y"]);
        assert_eq!(parts[0].runs, [["cat"], ["cat"]]);
        for line in [
            // The delimiter unquoted or partly quoted: the lines are expanded.
            "git commit -m \"$(cat <<EOF\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<E'OF'\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<\\EOF\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF\"\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<'E-F'\nx\nE-F\n)\"",
            // Another program, an option, another command, another redirection.
            "git commit -m \"$(head <<'EOF'\nx\nEOF\n)\"",
            "git commit -m \"$(cat -n <<'EOF'\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF' ; rm -rf x\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF' >x\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nx\nEOF\nrm -rf x\n)\"",
            "git commit -m \"$(rm -rf x; cat <<'EOF'\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF' <<'E2'\nx\nEOF\ny\nE2\n)\"",
            // A line the shells may read as the end, or not.
            "git commit -m \"$(cat <<'EOF'\nx\nEOF)\"",
            "git commit -m \"$(cat <<'EOF'\nEOF)\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\n EOF\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nEOF \nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\n\tEOF\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nEOF\r\nEOF\n)\"",
            // Text around it inside the quotes, not quoted, not closed.
            "git commit -m \"a$(cat <<'EOF'\nx\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nx\nEOF\n)a\"",
            "git commit -m $(cat <<'EOF'\nx\nEOF\n)",
            "git commit -m \"$(cat <<'EOF'\nx\nEOF\n)",
            "git commit -m \"$(cat <<'EOF'\nx\n)\"",
            // Text bash 3.2 reads as the end of the `$(`, or as a quote: it finds the end
            // by brackets and quotes before it reads the here-document.
            "rg -n \"$(cat <<'EOF'\nx)\"; rm -f v; echo \"\nEOF\n)\" a.txt",
            "git commit -m \"$(cat <<'EOF'\nit's\nEOF\n)\" -m '; rm -f v; )'",
            "git commit -m \"$(cat <<'EOF'\nit's\nEOF\n)\"\necho ')'",
            "git commit -m \"$(cat <<'EOF'\na) (b\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nsay \"x\"\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nrun `x`\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\na \\\nEOF\n)\"",
            // A comment bash 3.2 reads when it expands the word hides a bracket or quote.
            "git commit -m \"$(cat <<'EOF'\n# (\n) $(rm -f v)\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nx # '\n) $(rm -f v) '\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\n\t#)\nEOF\n)\"",
            "git commit -m \"$(cat <<'EOF'\nFixes #12 (in y)\nEOF\n)\"",
        ] {
            assert!(at_home(line).is_err(), "{line:?}: {:?}", at_home(line));
        }
    }

    #[test]
    fn harmless_variables_may_be_assigned_before_a_program() {
        let parts = at_home("RUST_BACKTRACE=1 cargo test && CI=true NO_COLOR= npm test").unwrap();
        assert_eq!(
            parts[0].env,
            [("RUST_BACKTRACE".to_owned(), "1".to_owned())]
        );
        assert_eq!(parts[0].words, ["cargo", "test"]);
        assert_eq!(
            parts[1].env,
            [
                ("CI".to_owned(), "true".to_owned()),
                ("NO_COLOR".to_owned(), String::new())
            ]
        );
        assert_eq!(parts[1].words, ["npm", "test"]);
        for (line, value) in [
            (
                "RUST_LOG=my_crate::db=trace cargo run",
                "my_crate::db=trace",
            ),
            ("DEBUG='app:*' npm test", "app:*"),
            ("TZ=Europe/Paris date", "Europe/Paris"),
            ("LC_ALL=C.UTF-8 2>/dev/null sort", "C.UTF-8"),
            ("FORCE_COLOR=\"1\" x", "1"),
        ] {
            assert_eq!(at_home(line).unwrap()[0].env[0].1, value, "{line:?}");
        }
        for line in [
            "LD_PRELOAD=./x.so cargo test",
            "PATH=. cargo test",
            "GIT_DIR=x git status",
            "BASH_ENV=x cargo test",
            "ENV=x cargo test",
            "IFS=t cargo test",
            "HOME=/tmp cargo test",
            "RUSTFLAGS=-Cx cargo test",
            "RUSTC_WRAPPER=./x cargo test",
            "CARGO_HOME=x cargo test",
            "NODE_OPTIONS=--require=x npm test",
            "PYTHONPATH=. pytest",
            "PYTEST_ADDOPTS=-x pytest",
            "rust_backtrace=1 cargo test",
            "X=1 cargo test",
            "CI=$(id) cargo test",
            "CI=\"$X\" cargo test",
            "CI=`id` cargo test",
            "CI=~ cargo test",
            "CI=~/x cargo test",
            "CI=a:~ cargo test",
            "CI='a b' cargo test",
            "CI=a/b cargo test",
            "LANG=../../tmp/x cargo test",
            "TZ=/tmp/zone date",
            "TZ=../../tmp/zone date",
            "CI=\"$(cat <<'EOF'\n1\nEOF\n)\" cargo test",
            "CI=1 CI=2 cargo test",
            "CI=1",
            "CI=1 NO_COLOR=1",
            "CI=1 :",
            "CI=1 times",
            "LC_ALL=x echo",
            "CI=1 true",
            "CI=1 cd x",
            "CI=1 pwd",
            "CI=1 eval x",
            "CI+=1 cargo test",
            "CI[0]=1 cargo test",
            "CI=(a) cargo test",
            "CI=1\\\n cargo test",
        ] {
            assert!(at_home(line).is_err(), "{line:?}: {:?}", at_home(line));
        }
    }

    #[test]
    fn every_command_is_found_wherever_it_stands() {
        for (line, want) in [
            ("echo $(rm -rf x)", "rm"),
            ("(cd x && rm -rf y)", "rm"),
            ("{ rm y; }", "rm"),
            ("f() { rm y; }", "rm"),
            ("if true; then rm y; fi", "rm"),
            ("x=$(rm y)", "rm"),
            ("echo \"$(rm y)\"", "rm"),
            ("cat <(rm y)", "rm"),
            ("echo `rm y`", "rm"),
        ] {
            let tree = parse(line).unwrap();
            let found = commands(line, &tree, 100).unwrap();
            assert!(
                found
                    .iter()
                    .any(|c| c.first().map(String::as_str) == Some(want)),
                "{line:?}: {found:?}"
            );
        }
    }

    #[test]
    fn escape_leaves_no_control_character() {
        assert_eq!(
            escape("a\nb\x1b[2Kc\u{202e}d"),
            "a\\nb\\u{1b}[2Kc\\u{202e}d"
        );
    }
}
