//! The ignore files a program that searches a folder reads (ripgrep, fd, ag): which there
//! are for a folder, whether one lets a hidden name back in (`!.env`), and where each leads.
//!
//! Invariant: every ignore file such a program may read is a read of where it leads. ripgrep
//! prints each line of one that is not a glob (`.ignore -> .env`, or `.git/info/exclude ->
//! ../../.env`, showed `.env`'s lines), so a deny of that path covers the search. What
//! cannot be told (a link that cannot be followed for any reason but nothing being there)
//! is `None`: the search is then asked where a rule could match.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The files searching programs read their ignore rules from, in each folder: ripgrep's
/// (`.ignore`, `.rgignore`, `.gitignore`), fd's, ag's and Mercurial's.
const IGNORE_FILES: &[&str] = &[
    ".ignore",
    ".rgignore",
    ".gitignore",
    ".fdignore",
    ".agignore",
    ".hgignore",
];

/// Programs with no model that search the current folder whole when their words name no
/// folder (and may when they do: which word is a folder is not read).
const SEARCH_HERE: &[&str] = &[
    "ag", "ack", "ack-grep", "fd", "fdfind", "ugrep", "ug", "pt", "sift", "rga",
];

/// Whether `words` (a command of a program with no model) may search the current folder
/// whole: its program is one of [`SEARCH_HERE`].
pub(super) fn searches_here(words: &[String]) -> bool {
    words
        .first()
        .is_some_and(|w| SEARCH_HERE.contains(&super::args::base(w)))
}

/// Whether an entry named `name` is an ignore file, in any case (a file system that ignores
/// case reads `.IGNORE` for `.ignore`).
pub(super) fn is_ignore_file(name: &OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| IGNORE_FILES.iter().any(|f| n.eq_ignore_ascii_case(f)))
}

/// The excludes file of the repository folder `d` holds (`d/.git/info/exclude`, or, where
/// `.git` is a `gitdir:` file, its common folder's, as ripgrep finds it); `None` when `d`
/// holds no `.git`.
pub(super) fn exclude_of(d: &Path) -> Option<PathBuf> {
    std::fs::symlink_metadata(d.join(".git")).ok()?;
    let repo = super::gitdir::discover(d)?;
    Some(super::gitconfig::common_of(&repo).join("info/exclude"))
}

/// Whether an ignore file of a folder above `dir`, or the user's excludes
/// (`core.excludesFile`), lets a name back in: ripgrep reads them too (`rg x sub` with
/// `!.env` in `./.ignore`). True when the user's excludes cannot be told.
pub(super) fn back_in_above(dir: &Path) -> bool {
    dir.ancestors().skip(1).any(|a| {
        IGNORE_FILES.iter().any(|f| lets_back_in(&a.join(f)))
            || exclude_of(a).is_some_and(|x| lets_back_in(&x))
    }) || super::gitdir::excludes(dir, &|k| std::env::var_os(k))
        .map_or(true, |fs| fs.iter().any(|f| lets_back_in(f)))
}

/// Adds to `reads` where each ignore file of the folders above `dir` leads (see
/// [`read`]); `None` when that cannot be told. The folders walked add their own.
pub(super) fn read_above(dir: &Path, reads: &mut Vec<PathBuf>) -> Option<()> {
    for a in dir.ancestors().skip(1) {
        for f in IGNORE_FILES {
            read(&a.join(f), reads)?;
        }
        if let Some(x) = exclude_of(a) {
            read(&x, reads)?;
        }
    }
    Some(())
}

/// Adds to `reads` where ignore file `f` leads, when it is there (a link followed, as the
/// program opens it); `None` when that cannot be told.
pub(super) fn read(f: &Path, reads: &mut Vec<PathBuf>) -> Option<()> {
    if std::fs::symlink_metadata(f).is_err() {
        return Some(());
    }
    match std::fs::canonicalize(f) {
        Ok(real) => reads.push(real),
        // A link that leads nowhere: the program reads nothing there.
        Err(e) if gone_or_file(&e) => {}
        Err(_) => return None,
    }
    Some(())
}

/// Whether a walk's error says only that nothing, or a file, is there (`ENOENT`, `ENOTDIR`).
pub(super) fn gone_or_file(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

/// Whether ignore file `f` has a line that lets a name back in (`!…`); one that cannot be
/// read whole (over 64 KiB) counts as having one.
pub(super) fn lets_back_in(f: &Path) -> bool {
    match std::fs::metadata(f) {
        // A FIFO or a device would be waited on: what it holds cannot be told.
        Ok(m) if !m.is_file() || m.len() > 64 * 1024 => true,
        // Any `!` at all: ripgrep 15 drops a byte-order mark before a line's `!`, and what
        // another version or encoding skips cannot be told (an escaped `\!` only asks).
        Ok(_) => std::fs::read(f).map(|t| t.contains(&b'!')).unwrap_or(true),
        Err(_) => false,
    }
}
