//! What one part of a command line leaves for the parts after it (a file written, a link
//! made, a repository completed) and which later parts depend on it (a search of a folder
//! whole, a move or copy of whole trees, any path named): `super::decide` asks a later part
//! whose words the policy resolved before the earlier part ran.

use super::args;

/// What a part may leave behind for the parts after it: whether it writes or makes
/// anything, and whether what it makes may be a link. A program no model reads may do
/// both, but for the few that write nothing (`echo`) or make no link (`mkdir`).
pub(super) fn leaves(words: &[String]) -> (bool, bool) {
    let base = args::base(&words[0]);
    match args::read(words) {
        args::Reading::Understood(e) => {
            let writes = e
                .paths
                .iter()
                .any(|(a, _)| matches!(a, args::Access::Write | args::Access::Remove));
            // `cp` makes a link only with an option (`-P`, `-d`, `-a`, `-r`, `-s`). The text
            // filters, `mkdir`, `touch`, `install` and `rm` never make one; every other
            // writer may: `mv` moves one as it is, `ln` and `tar -x` make them, `git clone`
            // checks out the links its repository holds, a build or an install makes its own.
            let links = writes
                && match base {
                    "cp" => words.iter().skip(1).any(|w| w.starts_with('-') && w != "-"),
                    "tee" | "sort" | "uniq" | "xxd" | "sed" | "awk" | "gawk" | "mawk" | "jq"
                    | "mkdir" | "touch" | "install" | "rm" => false,
                    _ => true,
                };
            (writes, links)
        }
        _ => match base {
            "echo" | "printf" | "true" | "false" | "pwd" | "sleep" | "date" | "which"
            | "whoami" | "cd" | "test" | "[" | ":" => (false, false),
            "mkdir" | "touch" => (true, false),
            _ => (true, true),
        },
    }
}

/// Whether a part searches a folder whole (`rg x`, `grep -r x .`): what it reads there
/// depends on what an earlier part wrote (an ignore file that brings `.env` back in).
pub(super) fn searches_whole(words: &[String]) -> bool {
    match args::read(words) {
        args::Reading::Understood(e) => e.paths.iter().any(|(a, _)| {
            matches!(
                a,
                args::Access::Tree | args::Access::TreeShown | args::Access::TreeFollowed
            )
        }),
        _ => false,
    }
}

/// Whether a part moves or copies whole trees (`mv gh .github`, `cp -r x d`): what lands is
/// what the source holds when it runs, which an earlier part may have made (`mkdir -p
/// gh/workflows && tee gh/workflows/ci.yml && mv gh .github`).
pub(super) fn lands_trees(words: &[String]) -> bool {
    match args::read(words) {
        args::Reading::Understood(e) => !e.places.is_empty(),
        _ => false,
    }
}

/// Whether a part names any path: one its model places or cannot place, or any word of a
/// program no model reads.
pub(super) fn names_paths(words: &[String]) -> bool {
    match args::read(words) {
        args::Reading::Understood(e) => !e.paths.is_empty() || !e.unplaced.is_empty(),
        _ => words.len() > 1,
    }
}
