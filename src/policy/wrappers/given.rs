//! What a program may run of the words it is given when no model knows them all (one in
//! no table with no model, or a runner subcommand a prefix rule names: `npm exec`): a word a
//! shell would split or expand, read as a script, a shell or runner it may start alone, a
//! word built from placeholders, and every word's pieces seen as the program's own words
//! (sixty-eighth to seventieth reviews: `hyperfine 'rm -f x'`, `socat - SYSTEM:'cat .env'`,
//! `pyenv exec sh -c …`, `hyperfine -L c 'true,rm -f x' '{c}'`, `socat - EXEC:sh`).

use super::*;

/// What program `program` (run as `words`, `depth` wrappers deep) may run of its words, when
/// no model reads them, added to `seen`.
pub(super) fn words_run(
    words: &[String],
    program: &str,
    depth: usize,
    script: ReadScript,
    seen: &mut Seen,
) {
    if !may_run_words(words, program) {
        return;
    }
    // Every word's pieces, seen as the program's own words (a deny of a program among them
    // is asked: `--shell=python3`, `-Spython3`, `EXEC:rm`).
    let mut pieces = vec![words[0].clone()];
    let mut was_cut = false;
    for (k, w) in words.iter().enumerate().skip(1) {
        // What `xargs` reads: any word, a script too (`xargs -d '\n' hyperfine`).
        if w.contains(FROM_INPUT) {
            mark(
                seen,
                format!("`{program}` is given what `xargs` reads, which it may run as a script"),
            );
            continue;
        }
        if builds_a_word(w, program) {
            mark(
                seen,
                format!("`{program}` may build what it runs from its words (`{w}`)"),
            );
        }
        let cut = cut_word(w);
        // A word with no blank that names a shell or a runner which, given no more, runs
        // what no word shows (`--input cmds.txt sh`, `EXEC:sh`, `--shell=bash`, `-Sbash`):
        // whole, in pieces at `=`, `:` and `,`, and after the first letter of a cluster
        // (after a later one, a name is more likely a value's end: `-Csrc`).
        // Quotes and backslashes taken away, as the program may (socat's `'EXEC:s\h'`,
        // `"EXEC:'sh'"`), and cut at socat's `!!` too (`EXEC:sh!!-`).
        let bare = unquoted(w).replace("!!", ":");
        if !bare.contains(char::is_whitespace) {
            let first = after_letters(&bare).next().map(str::to_owned);
            let named = bare
                .contains(['=', ':', ','])
                .then(|| bare.split(['=', ':', ',']));
            let named = named.into_iter().flatten().map(str::to_owned);
            for p in std::iter::once(bare.clone()).chain(first).chain(named) {
                let mut alone = Seen::default();
                see(std::slice::from_ref(&p), depth + 1, script, &mut alone);
                // An interpreter given an operand after it runs that, not its input
                // (`uv run python -m pytest`).
                let given = p == *w && reads_its_input(&words[k..], &p).is_none();
                let reads = reads_its_input(std::slice::from_ref(&p), &p);
                if given && alone.unclear.is_some() && alone.unclear == reads {
                    continue;
                }
                if let Some(why) = alone.unclear {
                    mark(seen, format!("`{program}` may start `{p}` ({why})"));
                }
            }
        }
        was_cut |= cut.len() != 1 || cut[0] != *w;
        pieces.extend(cut);
        if may_be_script(w) {
            // Whole, after each `:` or `=`, and after each letter of a short option's
            // cluster (`-p…`, `-ip…`).
            let cuts = w.match_indices([':', '=']).map(|(i, _)| i + 1);
            let scripts: Vec<&str> = std::iter::once(w.as_str())
                .chain(after_letters(w))
                .chain(cuts.map(|i| &w[i..]))
                .collect();
            if scripts.len() > MAX_PIECES {
                mark(
                    seen,
                    format!("`{program}` is given a word of more than {MAX_PIECES} parts a shell may run"),
                );
                continue;
            }
            for piece in scripts.into_iter().filter(|p| may_be_script(p)) {
                given_script(piece, depth, script, seen);
            }
        }
    }
    // Only where a word was cut: otherwise they are the command's own words.
    if was_cut {
        seen.commands.push(pieces);
    }
}

/// Whether `program` (run as `words`) may run words it is given: it has words, no model
/// knows them all as harmless (a program with none, or a runner subcommand of one with a
/// model that a prefix rule names: `Bash(npm exec:*)`, `Bash(uv run:*)`, a seventieth
/// review), and it is not one of the builtins that print or test them.
pub(super) fn may_run_words(words: &[String], program: &str) -> bool {
    words.len() > 1 && !runs_no_word(program) && !super::super::args::read(words).is_understood()
}

/// What follows each letter of word `w` when it is a cluster of short options (`-iprm`:
/// `prm`, `rm`, `m`): the letters as far as the first that is neither a letter nor a digit
/// (the first one whatever it is), at most [`MAX_PIECES`].
fn after_letters(w: &str) -> impl Iterator<Item = &str> {
    let rest = w.strip_prefix('-').filter(|r| !r.starts_with('-'));
    rest.into_iter().flat_map(|r| {
        r.char_indices()
            .take(MAX_PIECES)
            .take_while(|(i, c)| *i == 0 || c.is_alphanumeric())
            .map(move |(i, c)| &r[i + c.len_utf8()..])
            .filter(|after| !after.is_empty())
    })
}

/// Whether word `w` holds a placeholder a program fills in with its other words (`{a}`,
/// `{}`, a name of any letters: hyperfine's `-L a r -L b 'm -f v' '{a}{b}'` ran `rm -f v`),
/// and more than that: a word that is only one is the word it is filled with, seen where
/// that is given. Any `{…}` with no blank in it but a Go template's `{{…}}` (taken away
/// first), a shell's `${…}` (read where a shell runs it), and curl's `%{…}` (its `-w`).
fn builds_a_word(w: &str, program: &str) -> bool {
    let mut rest = w.to_owned();
    while let Some(i) = rest.find("{{") {
        let Some(len) = rest[i + 2..].find("}}") else {
            break;
        };
        rest.replace_range(i..i + len + 4, " ");
    }
    let b = rest.as_bytes();
    for (i, _) in rest.match_indices('{') {
        let Some(len) = rest[i + 1..].find('}') else {
            continue;
        };
        let name = &rest[i + 1..i + 1 + len];
        let before = i.checked_sub(1).map(|j| b[j]);
        let shells = before == Some(b'$') || (before == Some(b'%') && program == "curl");
        if !name.contains(char::is_whitespace)
            && !name.contains('{')
            && !shells
            && (i > 0 || len + 2 < w.len())
        {
            return true;
        }
    }
    false
}

/// The most pieces of one word (cut at each `:` and `=`) read as scripts.
const MAX_PIECES: usize = 16;

/// Whether word `w`, run by a shell as a script, may run more than one program with no
/// word: a blank or an operator splits it (`;`, `|`, `&`, `(`, `<`, `>`: `cat<.env` printed
/// `.env`), an expansion (`$`, a backquote) or a brace expansion (`{rm,-f,v}` is three
/// words to bash) makes words, or a quote or backslash hides the name it runs (`s\h`).
fn may_be_script(w: &str) -> bool {
    const SPLITS: [char; 15] = [
        ' ', '\t', '\n', ';', '|', '&', '`', '$', '(', ')', '<', '>', '\\', '\'', '"',
    ];
    w.contains(SPLITS) || brace_expansion(w)
}

/// Programs that open no file and make nothing, whatever their words.
pub(in crate::policy) const OPENS_NOTHING: &[&str] = &[
    "echo", "printf", "true", "false", "pwd", "sleep", "whoami", ":", "basename", "dirname",
];

/// Programs that run none of their words: those of [`OPENS_NOTHING`], the builtins that
/// test them, and the tools that name, hash or change the mode of the files they name.
fn runs_no_word(program: &str) -> bool {
    OPENS_NOTHING.contains(&program)
        || [
            "test",
            "[",
            "which",
            "whereis",
            "type",
            "realpath",
            "readlink",
            "file",
            "stat",
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
            "cksum",
            "chmod",
            "mkdir",
        ]
        .contains(&program)
}

/// What a program with no model may run of word `s` it is given, as a script: what it
/// runs when it reads as one, and whatever makes that unclear (`… | base64 -d | sh`, `sh
/// cmds.txt`, `cd sub && …`: a seventieth review). Text no shell reads whole (`--body "it's
/// done"`), with no expansion, pattern, escape, redirection or brace expansion in it, runs
/// at most the commands of its lines before the fault, which [`cut_word`] shows: that its
/// grammar is not plain is no doubt there.
fn given_script(s: &str, depth: usize, script: ReadScript, seen: &mut Seen) {
    let inner = script(s, depth + 1);
    seen.commands.extend(inner.commands);
    if let Some(why) = inner.unclear {
        let text = inner.unplain_only
            && !s.contains(['$', '`', '\\', '*', '?', '[', '<', '>', '~'])
            && !brace_expansion(s);
        if !text {
            mark(seen, why);
        }
    }
}

/// Whether `s` may hold a brace expansion (`{rm,-f,v}`, `{a..z}`), not a group or a
/// template (`{{.ID}} {{.Names}}`).
fn brace_expansion(s: &str) -> bool {
    s.contains('{') && (s.contains(',') || s.contains(".."))
}

/// Word `w` with its quotes and backslashes taken away, as a program that splits it may.
fn unquoted(w: &str) -> String {
    w.chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect()
}

/// Word `w` of a program with no model cut where a shell or the program may split it (a
/// blank, an operator, `,`, `:`, `=`; a cluster of short options after each letter too:
/// `-iprm` as `prm`, `rm`, since hyperfine's `-p` took `rm` whole), quotes taken away: seen
/// as words of the program, so a deny of a program among them is asked (hyperfine's `-L c
/// 'true,rm -f v' '{c}'` ran `rm -f v`), and a path among them is a path it names. Not at
/// an expansion or a brace, which is unclear where a shell runs it ([`given_script`]):
/// `{{.ID}}` names no `.ID`.
fn cut_word(w: &str) -> Vec<String> {
    let bare = unquoted(w);
    let mut words = Vec::new();
    for t in bare
        .split(|c: char| c.is_whitespace() || ";|&()<>=,:".contains(c))
        .filter(|t| !t.is_empty())
    {
        words.push(t.to_owned());
        // A letter alone names no program a rule is likely to name (`-rf`: `f`).
        let names = after_letters(t).filter(|a| a.chars().nth(1).is_some());
        words.extend(names.map(str::to_owned));
    }
    words
}

/// Why program `program`, run as `words` by another (`depth` above none), runs what it
/// reads from its input, as a shell with no script does (`… | npm exec -- node`, socat's
/// `EXEC:node`, hyperfine's `-S ex`, a seventy-first review): an interpreter given no
/// operand or `-`, or an editor or client that reads its commands there whatever its
/// operands (`ed`, `ex`, `vim`, `dc`, `psql`: each runs a shell command it reads).
pub(super) fn reads_its_input(words: &[String], program: &str) -> Option<String> {
    let name = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let no_operand = words[1..].iter().all(|w| w.starts_with('-') && w != "-")
        || words[1..].iter().any(|w| w == "-");
    let is = |list: &[&str]| list.contains(&name) || list.contains(&program);
    let reads = (is(INTERPRETERS) && no_operand) || is(READ_COMMANDS);
    reads.then(|| format!("`{program}` runs what it reads from its input"))
}

/// Interpreters that run the program they read from their input when given none.
const INTERPRETERS: &[&str] = &[
    "node", "nodejs", "python", "pypy", "perl", "ruby", "php", "lua", "luajit", "tclsh", "wish",
    "irb", "guile", "julia", "R", "Rscript", "deno", "m4", "awk", "gawk", "mawk", "nawk", "jshell",
    "ghci", "ocaml", "sbcl", "clisp", "racket", "erl", "iex", "swipl", "gjs", "qjs",
];

/// Programs that read commands from their input whatever their operands, a shell command
/// among them (`!cmd`, `:!cmd`, `\!`, `.shell`).
const READ_COMMANDS: &[&str] = &[
    "ed",
    "red",
    "ex",
    "vi",
    "vim",
    "nvim",
    "view",
    "vim.basic",
    "vim.tiny",
    "dc",
    "psql",
    "mysql",
    "mariadb",
    "sftp",
    "ftp",
    "lldb",
    "sqlite3",
    "duckdb",
];
