//! The words of a plain command as bash and dash read them ([`super::plain`]): each word
//! decoded by this module's own rules (a `~` beginning one is the home folder; a quoted
//! commit here-document is its text), and the harmless variables an assignment may set.

use super::*;

/// The variables a plain command may assign before its program (`RUST_BACKTRACE=1 cargo
/// test`): a list of harmless ones, never of dangerous ones. None of them makes a program
/// load, run or read code or options from elsewhere (`LD_PRELOAD`, `PATH`, `BASH_ENV`,
/// `GIT_*`, `*_OPTIONS`, `*FLAGS`, `PYTHONPATH`, `RUSTC_WRAPPER`, `EDITOR`, `HOME`, `IFS`
/// are not), and none is read by bash or dash in a way that changes what they parse or
/// run. Their values are checked too (`harmless_value`).
pub const HARMLESS_ENV: &[&str] = &[
    "CARGO_INCREMENTAL",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_QUIET",
    "CARGO_TERM_VERBOSE",
    "CGO_ENABLED",
    "CI",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "DEBUG",
    "FORCE_COLOR",
    "GOARCH",
    "GOOS",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "LINES",
    "NODE_ENV",
    "NO_COLOR",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_LOG",
    "RUST_LOG_STYLE",
    "RUST_TEST_THREADS",
    "TZ",
    "VERBOSE",
];

/// Whether `value` may be given to the harmless variable `name`: letters, digits and
/// `_.,:=@+-*` (`RUST_LOG=my_crate::db=trace`, `DEBUG='app:*'`, `LANG=C.UTF-8`), and no `/`
/// but in `TZ`, where it names a zone under the zone folder (`TZ=Europe/Paris`, or
/// `TZ=:Europe/Paris`): never from `/`, never with `..`. So a locale or zone cannot be loaded from a file the agent
/// wrote, and no value is a `~` to expand.
pub(super) fn harmless_value(name: &str, value: &str) -> bool {
    let tz = name == "TZ";
    // glibc reads `TZ=:FILE` as FILE, as `TZ=FILE`.
    let zone = value.trim_start_matches(':');
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_.,:=@+-*".contains(c) || (tz && c == '/'))
        && !(tz && (zone.starts_with('/') || zone.contains("..")))
}

/// Whether `word` is `NAME=VALUE` of a harmless variable and value, as a plain command may
/// assign before its program (and as `env NAME=VALUE` sets it).
pub fn harmless_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, value)| HARMLESS_ENV.contains(&name) && harmless_value(name, value))
}

/// Whether the unquoted word `t` is a pattern this reading accepts, to be put in place by
/// the names it matches (`super::super::glob`): plain characters, and `*` or `?` in its
/// last component only, after a folder written out (`src/*.rs`, `./?.txt`, `/etc/*.conf`).
/// Every name it expands to begins with that folder, so none is an option; it never
/// begins with `-` or holds a `~`; no `**` (with bash's `globstar` it walks a tree), no
/// `[`, no `\` (each shell reads classes and escapes its own way).
pub fn glob_word(t: &str) -> bool {
    let Some((folder, last)) = t.rsplit_once('/') else {
        return false;
    };
    last.contains(['*', '?'])
        && !folder.contains(['*', '?'])
        && !t.contains("**")
        && !t.starts_with('-')
        && t.chars().all(|c| plain_char(c) || c == '*' || c == '?')
}

/// The reading of one line's words: its bytes, the home folder a `~` stands for, and what
/// the shell runs to make the words of the statement being read.
pub(super) struct Reader<'a> {
    pub(super) src: &'a [u8],
    pub(super) home: Option<&'a str>,
    pub(super) runs: Vec<Vec<String>>,
}

impl Reader<'_> {
    /// One plain word, decoded by this module's own rules; `start`: it begins a shell word
    /// (where a `~` may be the home folder).
    pub(super) fn word(&mut self, node: Node, start: bool) -> Result<String, String> {
        let t = text(node, self.src);
        match node.kind() {
            "word" | "number" => self.unquoted(node, start, true),
            "raw_string" => {
                let inner = t
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .filter(|s| !s.contains(['\'', '\0']))
                    .ok_or_else(|| format!("the quoted word {}", escape(t)))?;
                Ok(inner.to_owned())
            }
            "string" => {
                let inner = t
                    .strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .filter(|s| !s.contains(['"', '$', '`', '\\', '\0']));
                if let Some(inner) = inner {
                    return Ok(inner.to_owned());
                }
                if let Some(text) = cat_heredoc(t, &self.src[node.end_byte()..]) {
                    self.runs.push(vec!["cat".to_owned()]);
                    return Ok(text);
                }
                Err(format!(
                    "the double-quoted word {} ($, backquotes and backslashes are read by the shell inside double quotes)",
                    escape(t)
                ))
            }
            "concatenation" => {
                let mut c = node.walk();
                let children: Vec<Node> = node.children(&mut c).collect();
                let mut out = String::new();
                let mut at = node.start_byte();
                for (i, child) in children.iter().enumerate() {
                    if child.start_byte() != at || child.kind() == "concatenation" {
                        return Err(format!("the word {}", escape(t)));
                    }
                    at = child.end_byte();
                    let first = start && i == 0;
                    let last = i + 1 == children.len();
                    out.push_str(&match child.kind() {
                        "word" | "number" => self.unquoted(*child, first, last)?,
                        _ => self.word(*child, first)?,
                    });
                }
                if at != node.end_byte() {
                    return Err(format!("the word {}", escape(t)));
                }
                Ok(out)
            }
            other => Err(describe(other)),
        }
    }

    /// Unquoted text of a word: `start` if it begins the shell word, `end` if it ends it.
    /// A `~` beginning the word, alone (`~`) or before a `/` (`~/src`), is the home folder,
    /// as bash and dash expand it; `~user`, `~+`, `~-`, `~''` are not plain. Anywhere else a
    /// `~` is itself (`HEAD~1`) unless it follows a `=` or a `:` (`a=~/x`, `a=b:~/x`), after
    /// which bash expands it in any word that looks like an assignment and dash does not.
    /// A `=NAME` after a `=` or a `:` is not plain either (zsh's `magicequalsubst`).
    pub(super) fn unquoted(&self, node: Node, start: bool, end: bool) -> Result<String, String> {
        let t = text(node, self.src);
        if t.is_empty() || !t.chars().all(|c| plain_char(c) || c == '~') {
            return Err(format!(
                "the word {} (only letters, digits and _-+=.,/:@% are read as themselves unquoted; zsh reads a `^` as a pattern)",
                escape(t)
            ));
        }
        let b = t.as_bytes();
        // zsh (Claude Code's shell on macOS) puts the path of command `x` for `=x`.
        if start && b[0] == b'=' && b.len() > 1 {
            return Err(format!(
                "the word {} (zsh reads a word beginning with `=` as the path of that command)",
                escape(t)
            ));
        }
        let mut out = String::with_capacity(t.len());
        let mut from = 0;
        if start && b[0] == b'~' {
            if !((t == "~" && end) || t.starts_with("~/")) {
                return Err(format!(
                    "the word {} (a `~` is read only alone or before a `/`, as the home folder)",
                    escape(t)
                ));
            }
            let home = self
                .home
                .ok_or("a `~` with no home folder ($HOME) to read it as")?;
            out.push_str(home);
            from = 1;
        }
        for i in from..b.len() {
            // zsh with `magicequalsubst` (Kali's default `.zshrc`, many dotfiles) reads
            // `--output==ls` as `--output=/usr/bin/ls`, and `a=x:=ls` the same after `:`:
            // a `=` after `=` or `:` before a name is not plain (`foo==1.2` is).
            if b[i] == b'='
                && i > 0
                && matches!(b[i - 1], b'=' | b':')
                && b.get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || b"_.".contains(c))
            {
                return Err(format!(
                    "the word {} (zsh with `magicequalsubst` reads `=NAME` after `=` or `:` as the path of command NAME)",
                    escape(t)
                ));
            }
            if b[i] != b'~' {
                continue;
            }
            let before = if i == 0 {
                // Not the word's start: a quote ends right before it.
                node.start_byte()
                    .checked_sub(1)
                    .map_or(b' ', |j| self.src[j])
            } else {
                b[i - 1]
            };
            if matches!(before, b'=' | b':') {
                return Err(format!(
                    "the word {} (bash expands a `~` after `=` or `:` in a word that looks like an assignment)",
                    escape(t)
                ));
            }
        }
        out.push_str(&t[from..]);
        Ok(out)
    }

    /// A variable assignment before the program: `NAME=VALUE` of a [`HARMLESS_ENV`] name,
    /// its value a plain word of [`harmless_value`] (no `~`, no here-document), or nothing.
    pub(super) fn assignment(&mut self, node: Node) -> Result<(String, String), String> {
        let t = text(node, self.src);
        let mut c = node.walk();
        let children: Vec<Node> = node.children(&mut c).collect();
        let (name, eq, value) = match children.as_slice() {
            [name, eq] => (*name, *eq, None),
            [name, eq, value] => (*name, *eq, Some(*value)),
            _ => return Err(format!("the assignment {}", escape(t))),
        };
        let end = value.map_or(eq.end_byte(), |v| v.end_byte());
        if name.kind() != "variable_name"
            || eq.kind() != "="
            || name.start_byte() != node.start_byte()
            || eq.start_byte() != name.end_byte()
            || value.is_some_and(|v| v.start_byte() != eq.end_byte())
            || end != node.end_byte()
        {
            return Err(format!("the assignment {}", escape(t)));
        }
        let name = text(name, self.src);
        if !HARMLESS_ENV.contains(&name) {
            return Err(format!(
                "an assignment of {}, which is not a variable known to be harmless",
                escape(name)
            ));
        }
        let runs = self.runs.len();
        let value = match value {
            Some(v) => self.word(v, false)?,
            None => String::new(),
        };
        if self.runs.len() != runs || !harmless_value(name, &value) {
            return Err(format!(
                "the assignment {} (a value of letters, digits and _.,:=@+-* only)",
                escape(t)
            ));
        }
        Ok((name.to_owned(), value))
    }
}

/// The text of a double-quoted word that is exactly Claude Code's commit message form,
/// `"$(cat <<'EOF'` (or `<<"EOF"`, `<<-'EOF'`), a newline, the lines of the here-document,
/// the line `EOF`, and `)"`: the here-document's lines (with `<<-`, their leading tabs taken
/// off), its last newlines taken off as a command substitution takes them off. The
/// delimiter is quoted, so bash and dash expand nothing in the lines; `cat` is given no
/// option; nothing else runs. No line but the last may begin with the delimiter, after
/// any blanks: bash (not dash) ends a here-document inside `$(` at `EOF)`, and older shells
/// read the end more loosely still. Anything else is not this form. `after`: the script's
/// text after the word ([`bash3_ends_where_bash5_does`]).
pub(super) fn cat_heredoc(t: &str, after: &[u8]) -> Option<String> {
    pub(super) fn skip(s: &str) -> &str {
        s.trim_start_matches([' ', '\t'])
    }
    let inner = t.strip_prefix("\"$(")?.strip_suffix(")\"")?;
    let rest = skip(inner).strip_prefix("cat")?;
    let rest = skip(rest).strip_prefix("<<")?;
    let (tabs, rest) = match rest.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let rest = skip(rest);
    let quote = rest.chars().next().filter(|q| matches!(q, '\'' | '"'))?;
    let rest = &rest[1..];
    let close = rest.find(quote)?;
    let delim = &rest[..close];
    if delim.is_empty()
        || !delim
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return None;
    }
    let mut rest = skip(&rest[close + 1..]).strip_prefix('\n')?;
    let mut body = String::new();
    loop {
        let nl = rest.find('\n')?;
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        let line = if tabs {
            line.trim_start_matches('\t')
        } else {
            line
        };
        if line == delim {
            break;
        }
        if line.contains('\0') || line.trim_start().starts_with(delim) {
            return None;
        }
        body.push_str(line);
        body.push('\n');
    }
    if !skip(rest).is_empty() || !bash3_ends_where_bash5_does(&body, after) {
        return None;
    }
    Some(body.trim_end_matches('\n').to_owned())
}

/// Whether bash 3.2 (macOS's `/bin/bash`, which Codex's `bash -lc` runs there) ends this
/// `$(` where newer shells do, with here-document text `body` in it, or reads no command of
/// it at all. bash 3.2 finds the end of `$(` before it reads the here-document, by counting
/// brackets outside quotes, and takes a quote in the text for the start of one (a
/// sixty-sixth review: a text line `x)"` ended the substitution there, and what followed
/// ran, `rm` under a deny). So: brackets that close only what they opened, and no `"`,
/// backquote or backslash, each of which bash 3.2 reads its own way; each `'` closed by the
/// next, or the last left open while the script's text `after` the word holds no `'` (an
/// apostrophe in a commit message: bash 3.2 then reads to the end for the quote's close,
/// and runs nothing of the line); a comment, as bash 3.2 reads one, holding none of those.
fn bash3_ends_where_bash5_does(body: &str, after: &[u8]) -> bool {
    // When it expands the word, bash 3.2 reads the `$(` again, and there a `#` at a line's
    // start or after a blank begins a comment to the line's end (a sixty-seventh review:
    // `# (` hid the bracket, and `) $(rm -f v)` on the next line ran). Such a line must
    // then hold nothing either reading counts.
    let comment = |line: &str| {
        line.char_indices().any(|(i, c)| {
            c == '#'
                && line[..i]
                    .chars()
                    .last()
                    .is_none_or(|p| p == ' ' || p == '\t')
                && line[i..].contains(['(', ')', '\''])
        })
    };
    if body.lines().any(comment) {
        return false;
    }
    let (mut depth, mut quoted) = (0usize, false);
    for c in body.chars() {
        match (quoted, c) {
            (_, '"' | '`' | '\\') => return false,
            (true, '\'') => quoted = false,
            (true, _) => {}
            (false, '\'') => quoted = true,
            (false, '(') => depth += 1,
            (false, ')') => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            (false, _) => {}
        }
    }
    if quoted {
        return !after.contains(&b'\'');
    }
    depth == 0
}
