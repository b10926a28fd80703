//! What one part of a command line leaves for the parts after it and beside it in a
//! pipeline (a file written, a link made, a repository completed) and which of those depend
//! on it (a search of a folder whole, a move or copy of whole trees, any path named):
//! `super::decide` asks a part whose words the policy resolved before the other part ran
//! ([`left_behind`]).

use super::args;

use super::wrappers::OPENS_NOTHING;

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
                    "tee" | "sort" | "uniq" | "xxd" | "sqlite3" | "sed" | "awk" | "gawk"
                    | "mawk" | "jq" | "mkdir" | "touch" | "install" | "rm" => false,
                    _ => true,
                };
            (writes, links)
        }
        _ => match base {
            _ if OPENS_NOTHING.contains(&base) => (false, false),
            // `date -f FILE` reads a file, but writes none.
            "which" | "cd" | "test" | "[" | "date" => (false, false),
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
    if OPENS_NOTHING.contains(&args::base(&words[0])) {
        return false;
    }
    match args::read(words) {
        args::Reading::Understood(e) => !e.paths.is_empty() || !e.unplaced.is_empty(),
        _ => words.len() > 1,
    }
}

/// One part of a plain command line, as [`left_behind`] reads it.
pub(super) struct Ran<'a> {
    /// What it runs: its own words first, then each wrapper's command.
    pub runs: Vec<&'a [String]>,
    /// Those of `runs` that are not wrappers: what leaves anything behind.
    pub own: Vec<&'a [String]>,
    /// A rule covers it (a part no rule covers is asked anyway).
    pub covered: bool,
    /// A `|` joins it to the next part: they run at once.
    pub piped: bool,
    /// The folders it may run in.
    pub folders: &'a [std::path::PathBuf],
}

impl<'a> Ran<'a> {
    /// `part` as what it runs: its own words, then each wrapper's command its `seen`
    /// holds; a rule covers it or not, and it runs in `folders`.
    pub fn of(
        part: &'a super::shell::Part,
        seen: &'a [Vec<String>],
        covered: bool,
        folders: &'a [std::path::PathBuf],
    ) -> Ran<'a> {
        let mut runs: Vec<&[String]> = (seen.iter())
            .filter(|w| !w.is_empty())
            .map(Vec::as_slice)
            .collect();
        if runs.is_empty() {
            runs.push(part.words.as_slice());
        }
        let mut own: Vec<&[String]> = (runs.iter().copied())
            .filter(|w| !super::wrappers::is_wrapper(w))
            .collect();
        if own.is_empty() {
            // A wrapper whose command is not seen leaves what it may.
            own.push(part.words.as_slice());
        }
        Ran {
            runs,
            own,
            covered,
            piped: part.op == Some("|"),
            folders,
        }
    }
}

/// Why a part of `parts` is asked for what another part leaves behind: a repository it
/// completed, a link it made (`cp -P LINK x && sort -o x/f`): what the part names is then
/// not what the policy resolved. The other part is an earlier one, or one beside it in a
/// pipeline on either side of the `|` (they run at once: a reader still busy with its
/// first file opens its second after `| mv a/b b` moved a link under it). `shown` writes a
/// part's words for the message.
/// A git part after or beside a `git add` is asked when the add makes a submodule of a
/// repository of its own ([`super::gitlinks`]); `step` takes the decision's work.
pub(super) fn left_behind(
    parts: &[Ran],
    shown: fn(&[String]) -> String,
    step: &mut dyn FnMut() -> bool,
) -> Option<String> {
    let left: Vec<(bool, bool)> = parts
        .iter()
        .map(|p| {
            p.own
                .iter()
                .map(|w| leaves(w))
                .fold((false, false), |(a, b), (w, l)| (a || w, b || l))
        })
        .collect();
    let mut pipeline = Vec::with_capacity(parts.len());
    let mut n = 0;
    for p in parts {
        pipeline.push(n);
        n += usize::from(!p.piped);
    }
    let (mut wrote, mut linked) = (false, false);
    for (i, part) in parts.iter().enumerate() {
        let beside = (i + 1..parts.len()).filter(|&j| pipeline[j] == pipeline[i]);
        let (w_beside, l_beside) =
            beside.fold((false, false), |(w, l), j| (w || left[j].0, l || left[j].1));
        let (w, l) = (wrote || w_beside, linked || l_beside);
        let any = |f: fn(&[String]) -> bool| part.runs.iter().any(|w| f(w));
        let words = || shown(part.runs[0]);
        let why = match () {
            _ if !part.covered => None,
            _ if w && part.runs.iter().any(|w| args::base(&w[0]) == "git") => Some(format!(
                "`{}` runs after or beside (in a pipeline) a part that writes, which may have made the repository git uses",
                words()
            )),
            _ if w && any(searches_whole) => Some(format!(
                "`{}` searches a folder whole after or beside (in a pipeline) a part that writes, which may have changed what it reads (an ignore file's `!.env`)",
                words()
            )),
            _ if w && any(lands_trees) => Some(format!(
                "`{}` moves or copies a folder whole after or beside (in a pipeline) a part that writes, which may have made what lands",
                words()
            )),
            _ if l && any(names_paths) => Some(format!(
                "`{}` names paths after or beside (in a pipeline) a part that may make a link they go through",
                words()
            )),
            _ if part.runs.iter().any(|w| args::base(&w[0]) == "git") => {
                // Earlier parts, those beside it, and itself when a script it runs runs git
                // more than once (`timeout 9 sh -c 'git add sub && git status'`).
                let gits = part.own.iter().filter(|w| args::base(&w[0]) == "git").count();
                let mut others = (0..parts.len()).filter(|&j| {
                    j < i || (j != i && pipeline[j] == pipeline[i]) || (j == i && gits > 1)
                });
                others.find_map(|j| {
                    let o = &parts[j];
                    (o.own.iter())
                        .find_map(|add| super::gitlinks::added_repository(add, o.folders, step))
                        .map(|why| format!("`{}`: {why}", words()))
                })
            }
            _ => None,
        };
        if why.is_some() {
            return why;
        }
        wrote |= left[i].0;
        linked |= left[i].1;
    }
    None
}
