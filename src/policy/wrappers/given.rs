//! What a program in no table and with no model may run of the words it is given: a word a
//! shell would split or expand, read as a script, and its pieces seen as the program's own
//! words (sixty-eighth and sixty-ninth reviews: `hyperfine 'rm -f x'`, `socat -
//! SYSTEM:'cat .env'`, `pyenv exec sh -c …`, `hyperfine -L c 'true,rm -f x' '{c}'`).

use super::*;

/// What program `program` (run as `words`, `no_model` when none reads its words) may run
/// of its words, added to `seen`.
pub(super) fn words_run(
    words: &[String],
    program: &str,
    no_model: bool,
    depth: usize,
    script: ReadScript,
    seen: &mut Seen,
) {
    if no_model && !RUNS_NO_WORD.contains(&program) {
        // The word that stands for what `xargs` reads is its own ([`FROM_INPUT`]).
        for w in words[1..].iter().filter(|w| *w != FROM_INPUT) {
            if !may_be_script(w) {
                continue;
            }
            cut_words(&words[0], w, seen);
            // Whole, after each `:` or `=`, and after a short option's letter (`-p…`).
            let cuts = w.match_indices([':', '=']).map(|(i, _)| i + 1);
            let short = w
                .strip_prefix('-')
                .filter(|r| !r.starts_with('-'))
                .and_then(|r| r.chars().next())
                .map(|c| 1 + c.len_utf8());
            let pieces: Vec<&str> = std::iter::once(0)
                .chain(short)
                .chain(cuts)
                .map(|i| &w[i..])
                .collect();
            if pieces.len() > MAX_PIECES {
                mark(
                    seen,
                    format!("`{program}` is given a word of more than {MAX_PIECES} parts a shell may run"),
                );
                continue;
            }
            for piece in pieces.into_iter().filter(|p| may_be_script(p)) {
                given_script(piece, depth, script, seen);
            }
        }
    }
}

/// The most pieces of one word (cut at each `:` and `=`) read as scripts.
const MAX_PIECES: usize = 16;

/// Whether word `w`, run by a shell as a script, may run more than one program with no
/// word: a blank or an operator splits it (`;`, `|`, `&`, `(`, `<`, `>`: `cat<.env` printed
/// `.env`), an expansion (`$`, a backquote) or a brace expansion (`{rm,-f,v}` is three
/// words to bash) makes words.
pub(super) fn may_be_script(w: &str) -> bool {
    w.contains([' ', '\t', '\n', ';', '|', '&', '`', '$', '(', ')', '<', '>'])
        || (w.contains('{') && (w.contains(',') || w.contains("..")))
}

/// Programs that run none of their words (shell builtins that print or test them).
const RUNS_NO_WORD: &[&str] = &[
    "echo", "printf", "true", "false", "pwd", "sleep", "whoami", ":", "test", "[",
];

/// What a program with no model may run of word `s` it is given, as a script: what it
/// runs when it reads as one. Text no shell reads whole (`--body "it's done"`), with no
/// expansion, pattern, escape or redirection in it, runs at most the commands of its lines
/// before the fault, which [`cut_words`] shows; otherwise what it runs is unclear.
fn given_script(s: &str, depth: usize, script: ReadScript, seen: &mut Seen) {
    let inner = script(s, depth + 1);
    seen.commands.extend(inner.commands);
    if let Some(why) = inner.unclear {
        if s.contains(['$', '`', '\\', '*', '?', '[', '{', '<', '>', '~']) {
            mark(seen, why);
        }
    }
}

/// Word `w` of a program with no model cut where a shell or the program may split it (a
/// blank, an operator, `,`, `:`, `=`; `-prm` also as `rm`: hyperfine's `-p` took it whole),
/// quotes taken away: seen as words of the program (`words[0]`), so a deny of a program
/// among them is asked (hyperfine's `-L c 'true,rm -f v' '{c}'` ran `rm -f v`), and a
/// path among them is a path it names.
fn cut_words(program: &str, w: &str, seen: &mut Seen) {
    let bare: String = w
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let mut words = vec![program.to_owned()];
    for t in bare
        .split(|c: char| c.is_whitespace() || ";|&()<>{}`$=,:".contains(c))
        .filter(|t| !t.is_empty())
    {
        words.push(t.to_owned());
        // After a short option's letter, whatever its width (`-érm`).
        let mut letters = t
            .strip_prefix('-')
            .filter(|r| !r.starts_with('-'))
            .map(str::chars);
        if let Some(after) = letters.as_mut().and_then(|l| l.next().map(|_| l.as_str())) {
            if !after.is_empty() {
                words.push(after.to_owned());
            }
        }
    }
    seen.commands.push(words);
}
