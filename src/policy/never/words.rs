//! Words of a program no model reads that name more in their program's own syntax: a
//! linker's options inside a compiler's `-Wl,…`, ImageMagick's escapes, wget's names from
//! a URL, tar's `host:file`, git's `foreach` and `bisect run`, curl's `#N` and
//! `%output{}` (`super::names_more`).
//!
//! Invariant: each only ever says "more": an allow turned into an ask.

/// Whether `word` is a compiler's `-Wl,…` of linker options that name nothing and load
/// nothing (`-Wl,--as-needed`, `-Wl,-O1`, `-Wl,-z,relro`, `-Wl,-rpath,DIR`: a folder the
/// built program looks in when it runs).
pub(super) fn harmless_linker_word(word: &str) -> bool {
    let Some(list) = word.strip_prefix("-Wl,") else {
        return false;
    };
    let mut pieces = list.split(',');
    while let Some(p) = pieces.next() {
        match p {
            "--as-needed"
            | "--no-as-needed"
            | "-O1"
            | "-O2"
            | "--gc-sections"
            | "--no-gc-sections"
            | "--start-group"
            | "--end-group"
            | "-Bstatic"
            | "-Bdynamic"
            | "--export-dynamic"
            | "-E"
            | "--build-id"
            | "-s"
            | "--strip-all"
            | "-S"
            | "--strip-debug"
            | "--no-undefined"
            | "--hash-style=gnu"
            | "--hash-style=both"
            | "--enable-new-dtags"
            | "--disable-new-dtags"
            | "--fatal-warnings"
            | "--warn-common"
            | "--icf=all"
            | "--whole-archive"
            | "--no-whole-archive"
            | "-Bsymbolic"
            | "--sort-common"
            | "-x" => {}
            // A name written into the output (`-soname,libx.so.1`), a version script (read
            // as versions only: it names no output): a value that is no option.
            "-soname" | "--soname" | "-h" | "--version-script" => {
                if !pieces
                    .next()
                    .is_some_and(|v| !v.is_empty() && !v.starts_with('-') && !v.starts_with('@'))
                {
                    return false;
                }
            }
            p if ["-soname=", "--soname=", "--version-script="]
                .iter()
                .any(|o| {
                    p.strip_prefix(o)
                        .is_some_and(|v| !v.is_empty() && !v.starts_with('@'))
                }) => {}
            "-z" => {
                if !matches!(
                    pieces.next(),
                    Some("relro" | "now" | "noexecstack" | "defs" | "origin" | "lazy" | "norelro")
                ) {
                    return false;
                }
            }
            "-rpath" | "-rpath-link" => {
                if !pieces
                    .next()
                    .is_some_and(|d| !d.is_empty() && !d.starts_with('-'))
                {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// ImageMagick's programs: a name they write may hold escapes filled at run time
/// (`info:.envr%x` with `-scene 12`, `-set filename:f '.gi%c/config'` then
/// `info:%[filename:f]`).
pub(super) const IMAGEMAGICK: &[&str] = &[
    "convert",
    "magick",
    "mogrify",
    "montage",
    "composite",
    "compare",
    "conjure",
    "stream",
    "import",
    "animate",
    "display",
];

/// Whether `word` holds a `%` escape (`%d`, `%[name]`), not a percentage (`50%`), or
/// what ImageMagick reads itself: a frame or size after a name (`.envrc[0]` writes
/// `.envrc`) and its own patterns (`text:.en?`).
pub(super) fn has_escape(word: &str) -> bool {
    word.contains(['[', '?', '*'])
        || word
            .as_bytes()
            .windows(2)
            .any(|p| p[0] == b'%' && p[1].is_ascii_alphabetic())
}

/// wget's file named by a URL's last part, decoded (`http://h/%2eenvrc` writes `.envrc`):
/// a hidden name, or one that makes programs run, is the server's choice of a file.
pub(super) fn wget_names_a_file(args: &[String]) -> bool {
    args.iter().filter(|w| w.contains("://")).any(|url| {
        let path = url.split(['?', '#']).next().unwrap_or(url);
        let last = path.rsplit('/').next().unwrap_or("");
        let Some(name) = super::super::forms::percent_decoded(last) else {
            return true;
        };
        name.starts_with('.')
            || super::super::writes::runs_by_name(&name)
            || super::super::writes::begins_runs_name(&name)
    })
}

/// tar's archive on another host (`host:file`, `user@host:file`): GNU tar runs a remote
/// shell for it, unless `--force-local`. Any word with a `:` counts (where the archive's
/// name stands depends on clusters and the old form).
pub(super) fn tar_names_a_host(words: &[String], args: &[String]) -> bool {
    !words.iter().any(|w| w == "--force-local") && args.iter().any(|w| w.contains(':'))
}

/// git's subcommands that run a command their words give: `submodule foreach CMD`,
/// `bisect run CMD` (a rule whose prefix already holds the word is the user's choice).
pub(super) fn git_runs_given(words: &[String], args: &[String]) -> bool {
    let sub = words[1..].iter().find(|w| !w.starts_with('-'));
    let runs = match sub.map(String::as_str) {
        Some("submodule") => "foreach",
        Some("bisect") => "run",
        _ => return false,
    };
    args.iter().any(|w| w == runs)
}

/// curl's ways of naming a file no word holds: any `--expand-*` option (curl 8.3: the
/// option's value made from variables), `%output{FILE}` in a `-w` format, and `#N` in an
/// output name (filled from a URL's glob: `'{/home/u/.confi}'` and `'#1g/…'`). Looked for
/// in every word, whatever option or cluster it follows (`-so '#1x'`).
pub(super) fn curl_names_more(args: &[String]) -> bool {
    args.iter().any(|w| {
        w.starts_with("--expand-")
            || w.contains("%output{")
            || w.as_bytes()
                .windows(2)
                .any(|p| p[0] == b'#' && p[1].is_ascii_digit())
    })
}
