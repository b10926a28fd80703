//! What a prefix rule's allow of one part is refused for, past its pattern (docs/POLICY.md,
//! "Programs read by their arguments"): a program the agent may have put on `PATH`, the
//! paths and writes a model reads, and what a program no model reads runs that has a model
//! of its own.

use std::path::{Path, PathBuf};

use super::{args, named, path};

/// Why `part`, run from any of `folders`, may run or plant a program the agent wrote on
/// `PATH` inside the session.
pub(super) fn on_path_refused(
    part: &super::command::Part,
    folders: &[PathBuf],
    session: &Path,
) -> Option<String> {
    let prog = part.words.first()?;
    if let Some(why) = super::on_path::program_refused(prog, folders, session) {
        return Some(why);
    }
    let own = super::named::Named::in_folders(&part.words, folders);
    own.paths
        .iter()
        .filter(|(a, _)| matches!(a, super::args::Access::Write | super::args::Access::Remove))
        .find_map(|(_, p)| super::on_path::write_refused(p, folders, session))
}

/// Why a prefix rule may not allow `words` (run in any of `folders`, the session's folder
/// `cwd`), which a model reads as harmless: a path it cannot resolve, or a write where no
/// prefix may ([`named`]).
pub(super) fn model_refused(words: &[String], folders: &[PathBuf], cwd: &Path) -> Option<String> {
    let own = named::Named::in_folders(words, folders);
    // A whole tree copied (`cp -r`) writes beneath its destination too,
    // through any link already there.
    let copies_trees = own
        .paths
        .iter()
        .any(|(a, _)| matches!(a, args::Access::Tree | args::Access::TreeFollowed));
    own.unresolved.clone().or_else(|| {
        own.paths
            .iter()
            .filter(|(a, _)| matches!(a, args::Access::Write | args::Access::Remove))
            .find_map(|(a, p)| {
                named::prefix_write_refused(p, cwd).or_else(|| {
                    (copies_trees && *a == args::Access::Write)
                        .then(|| named::link_beneath(p))
                        .flatten()
                })
            })
            .or_else(|| named::tree_landing_refused(&own, cwd))
            .or_else(|| {
                super::landings::source_beneath_a_landing(
                    words,
                    folders,
                    path::home().as_deref(),
                    &|p, c| path::resolve(p, c).map(|r| r.path),
                    &path::take_step,
                )
            })
            .or_else(|| {
                // A file git includes as configuration, by any name.
                let written = own.paths.iter().filter(|(a, _)| *a == args::Access::Write);
                let landed = own
                    .trees
                    .iter()
                    .filter(|(a, _, _)| *a == args::Access::Write);
                let all = written
                    .map(|(_, p)| p.as_path())
                    .chain(landed.flat_map(|(_, _, u)| u.iter().flatten().map(PathBuf::as_path)));
                super::gitdir::config_written(cwd, all, &|k| std::env::var_os(k))
            })
    })
}

/// Why a program with a model that part `part` (allowed by a prefix rule of `pattern`
/// words that no model reads) runs as `words` may not run: its model does not know a word
/// as harmless, or its paths or configuration are refused as a rule naming it would refuse
/// them (`hyperfine 'git config core.fsmonitor ./x'`, `uv run git init --template=t`: a
/// seventy-first review). The part's own program is read past the rule's words.
pub(super) fn ran_refused<'a>(
    ran: impl IntoIterator<Item = &'a [String]>,
    part: &[String],
    pattern: usize,
    folders: &[PathBuf],
    cwd: &Path,
) -> Option<String> {
    ran.into_iter()
        .find_map(|c| one_ran_refused(c, part, pattern, folders, cwd))
}

/// [`ran_refused`] for one command, run as `words`.
fn one_ran_refused(
    words: &[String],
    part: &[String],
    pattern: usize,
    folders: &[PathBuf],
    cwd: &Path,
) -> Option<String> {
    if words == part || !args::has_model(&words[0]) {
        return None;
    }
    let own = args::base(&words[0]) == args::base(&part[0]);
    let reading = match own {
        true => args::under_prefix(words, pattern),
        false => args::read(words),
    };
    if let args::Reading::Unknown { at, why } = reading {
        return Some(format!(
            "`{}` runs `{}`, and its model of `{}` does not know `{}` as harmless: {why}",
            args::base(&part[0]),
            super::escape_words(words),
            args::base(&words[0]),
            words.get(at).map_or("", String::as_str),
        ));
    }
    model_refused(words, folders, cwd)
        .or_else(|| super::rc::refused(words, folders))
        .or_else(|| super::gitruns::refused(cwd, folders, words))
}
