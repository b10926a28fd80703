//! What a program does with its arguments, for the programs the policy knows
//! (docs/POLICY.md, "Programs read by their arguments"): a *model* of each, listing the
//! options it knows as harmless, which take a value, and which value is a path read, a
//! folder searched or a path written.
//!
//! A prefix rule (`Bash(sed -n:*)`, `command = ["git", "diff"]`) does not admit "any further
//! words" of a modelled program: every word after the prefix must be one its model knows
//! ([`read`] gives [`Reading::Understood`]), else the command is asked. A list of the
//! dangerous (`--pre`, `-u`, sed's `w`) is never complete; a list of the harmless can be.
//!
//! Invariants:
//! - Parse to allow: an option not in the model, a long option abbreviated, a value the
//!   model cannot read (sed's script, awk's program, jq's filter, tar's old-style letters)
//!   stops the reading at that word ([`Reading::Unknown`]). Nothing is guessed.
//! - Every path a model knows as read or written is returned ([`Effects`]), so deny rules on
//!   paths apply to commands and writes are checked against the session's folder.
//! - No model: [`Reading::NoModel`], and a prefix keeps its old meaning (the user's choice).
//! - Bounded: linear in the words; no I/O.

mod build;
mod config;
pub(crate) use config::Env;
mod files;
pub(crate) mod git;
mod git_options;
mod jq;
mod script;
pub use script::sed_quiet;
mod rgtypes;
mod search;
mod text;
mod tools;

/// How a path named in a command is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Its content is read (`cat F`), or its name listed (`ls D`).
    Read,
    /// A folder whose whole tree is read, links beneath it not followed (`grep -r x D`, `cp -r
    /// D x`, `tar -c D`).
    Tree,
    /// The same, its hidden files and folders left out (`rg x D`, as ripgrep does unless
    /// `--hidden`).
    TreeShown,
    /// The same, following the links beneath it (`grep -R`, `rg -L`).
    TreeFollowed,
    /// A folder whose tracked files' working copies are read, as git's index lists them
    /// (`git diff` with no path, `git status -v`).
    Tracked,
    /// The tracked files beneath a path, of the repository it is in (`git diff -- src`,
    /// `git grep x -- src`: a pathspec limits them).
    TrackedBeneath,
    /// Written, created or replaced (`sort -o F`, `cp x F`, `tee F`, `sed -i … F`).
    Write,
    /// Removed or moved away (`rm F`, `mv F x`).
    Remove,
}

/// What a command does, as its model reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Each path word, with how it is used.
    pub paths: Vec<(Access, String)>,
    /// Words the model passes on to a program it does not know (`npx prettier --write x`:
    /// prettier's words): any of them may name a path.
    pub unplaced: Vec<String>,
    /// Whole trees moved or copied (`mv D x`, `cp -r D x`): the source words, and the words
    /// of where they land (each written too, in `paths`): what is beneath a source that is
    /// a folder lands beneath each of them.
    pub places: Vec<(Vec<String>, Vec<String>)>,
    /// Each source of a copy, move or link with a destination, and where it lands in it
    /// (`cp a/x b/y d` lands `a/x` at `d/x`): the program takes its sources in order.
    pub lands: Vec<(String, String)>,
    /// The program reads the ignore files of the folders it searches and of those above
    /// them (ripgrep: `.ignore`, `.rgignore`, `.gitignore`, a repository's `info/exclude`),
    /// and prints their lines that are not globs: each is a read of where it leads.
    pub ignore_files: bool,
    /// The names of the files the program reads beneath a folder it walks, when it reads
    /// only those (ripgrep's `-g '*.rs'`: a file no positive glob matches is left out, an
    /// override nothing brings back): globs matched on the name alone, in any case.
    /// Folders are walked whole; links followed are not filtered.
    pub only_names: Option<Vec<String>>,
    /// Paths git places from the top of the worktree of the repository it uses, wherever
    /// in it the command runs, each with how it is used: the whole worktree (`""`: `git add
    /// -A` with no path, a pathspec with magic: `:/`, `:(top)`, `:!x`), or one path of it
    /// (`HEAD:PATH`, `:PATH`, `:0:PATH`).
    pub repo_top: Vec<(Access, String)>,
    /// The sources of a local `git clone`: a `gitdir:` file among the names git tries
    /// leads it to another repository ([`crate::policy::gitplaces::place`]).
    pub clone_sources: Vec<String>,
    /// The program prints git's configuration (`git config --list`, `git remote -v`): each
    /// configuration file git reads from the folder it runs in is read.
    pub git_config: bool,
    /// Words that must each name a file where the command runs, or the program does more
    /// (`python -m unittest x.py` imports a module `x` when there is no file `x.py`).
    pub files_there: Vec<String>,
    /// Words that must each name a folder where the command runs, or the program does more
    /// (`unittest discover -s x` imports a module `x` when there is no folder `x`).
    pub folders_there: Vec<String>,
    /// Names npm runs from a project's `node_modules/.bin`: the nearest one from where the
    /// command runs up must be a file, or npm runs a program of that name from elsewhere
    /// (its global bin folder: `npx rm` ran `/usr/bin/rm`).
    pub npm_bins: Vec<String>,
    /// The package manager works on the projects of the workspace it runs in
    /// (`npmwork`): an install writes, and `ci` empties, their `node_modules` and runs their
    /// lifecycle scripts; `-r`, `--filter`, `--workspaces` run their scripts (a
    /// sixty-fifth review: `pnpm ci` emptied the folder a `node_modules` link led to, and
    /// `pnpm -r test` ran a script under a `Read` deny).
    pub workspace: Option<WorkspaceRun>,
    /// The package manager that runs (`npm`, `pnpm`, `yarn`): the version a `package.json`
    /// pins may run instead, through corepack or pnpm's own switch (`npmdeclared`).
    pub manager: Option<&'static str>,
}

/// How a package manager works on its workspace ([`Effects::workspace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceRun {
    /// pnpm, which finds its workspace by `pnpm-workspace.yaml`; else npm or yarn, by
    /// `package.json`'s `workspaces`.
    pub pnpm: bool,
    /// yarn (1), which takes a `node_modules` folder a pattern names for a project.
    pub yarn: bool,
    /// It installs (pnpm 12 does before `test` and `run` too).
    pub installs: bool,
    /// Its words name the workspace's projects (`-r`, `--filter`, `--workspaces`).
    pub recursive: bool,
}

impl Effects {
    /// [`Effects::only_names`] as globs of a file's name alone (they hold no class nor
    /// escape), in any case, `{a,b}` read as ripgrep reads it; `None` if one is not a glob.
    pub fn only_names(&self) -> Option<globset::GlobSet> {
        let mut set = globset::GlobSetBuilder::new();
        for g in self.only_names.as_ref()? {
            let glob = globset::GlobBuilder::new(g)
                .literal_separator(true)
                .backslash_escape(true)
                .case_insensitive(true)
                .build()
                .ok()?;
            set.add(glob);
        }
        set.build().ok()
    }
}

/// A command read by its program's model. Made once per part and read at once, never kept
/// in bulk: its variants' sizes differ, and a box would only add an allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Reading {
    /// No model of the program: a prefix rule admits any further words.
    NoModel,
    /// Every word is one the model knows as harmless.
    Understood(Effects),
    /// Word `at` is not one the model knows as harmless (`why`).
    Unknown { at: usize, why: String },
}

impl Reading {
    /// Whether every word is one the model knows as harmless.
    pub fn is_understood(&self) -> bool {
        matches!(self, Reading::Understood(_))
    }
}

/// Why a model stopped, and at which word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub at: usize,
    pub why: String,
}

pub(crate) type Model = fn(&[String], &mut Effects) -> Result<(), Stop>;

/// The programs that have a model, and the function reading each (`words[0]` is the
/// program).
const MODELS: &[(&str, Model)] = &[
    ("cat", files::cat),
    ("head", files::head_tail),
    ("tail", files::head_tail),
    ("wc", files::wc),
    ("ls", files::ls),
    ("du", files::du),
    ("cp", files::cp),
    ("mv", files::mv),
    ("ln", files::ln),
    ("install", files::install),
    ("tee", files::tee),
    ("rm", files::rm),
    ("sort", text::sort),
    ("uniq", text::uniq),
    ("xxd", text::xxd),
    ("sqlite3", text::sqlite3),
    ("mkdir", text::mkdir),
    ("touch", text::touch),
    ("tar", files::tar),
    ("grep", search::grep),
    ("egrep", search::grep),
    ("fgrep", search::grep),
    ("rg", search::rg),
    ("find", search::find),
    ("jq", jq::jq),
    ("sed", script::sed),
    ("awk", script::awk),
    ("gawk", script::awk),
    ("mawk", script::awk),
    ("git", git::git),
    ("cargo", build::cargo),
    ("npm", build::npm),
    ("pnpm", build::npm),
    ("yarn", build::npm),
    ("npx", build::npx),
    ("pytest", tools::pytest),
    ("python", tools::python),
    ("python3", tools::python),
    ("make", tools::make),
    ("go", tools::go),
    ("uv", tools::uv),
];

/// The names of the programs that have a model, for docs and `policy explain`.
pub fn modelled() -> impl Iterator<Item = &'static str> {
    MODELS.iter().map(|(n, _)| *n)
}

/// The program's name without its folder.
pub fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether `program` (a name, or a path to one) has a model.
pub fn has_model(program: &str) -> bool {
    let name = base(program);
    MODELS.iter().any(|(n, _)| *n == name)
}

/// `words` (a command: `words[0]` the program) as its program's model reads it.
pub fn read(words: &[String]) -> Reading {
    let Some(first) = words.first() else {
        return Reading::NoModel;
    };
    let name = base(first);
    let Some((_, model)) = MODELS.iter().find(|(n, _)| *n == name) else {
        return Reading::NoModel;
    };
    let mut effects = Effects::default();
    match model(words, &mut effects) {
        Ok(()) => Reading::Understood(effects),
        Err(Stop { at, why }) => Reading::Unknown { at, why },
    }
}

/// Whether a prefix rule whose pattern has `prefix` words may allow `words`: the model
/// reads every word after the prefix as harmless. A word the model does not know inside
/// the prefix itself is the user's own choice: the prefix then keeps its old meaning
/// ([`Reading::NoModel`]). Only when the prefix alone is refused there, for the same
/// reason: a refusal the later words cause stands, wherever the model places it (`sed -e`
/// then a script with `w FILE`; a hostile review found three models placing the refusal
/// of a value on its option, inside the prefix).
pub fn under_prefix(words: &[String], prefix: usize) -> Reading {
    match read(words) {
        Reading::Unknown { at, why } if at < prefix => {
            match read(words.get(..prefix).unwrap_or(words)) {
                Reading::Unknown { at: a, why: w } if a == at && w == why => Reading::NoModel,
                _ => Reading::Unknown { at, why },
            }
        }
        other => other,
    }
}

// ---------------------------------------------------------------------------------------
// The option reader shared by the models: getopt_long's rules, without abbreviations.

/// What an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takes {
    /// Nothing (`-n`, `--quiet`); `--quiet=x` is not known.
    Nothing,
    /// A value that names no file (`-n 5`, `--color=auto`).
    Value,
    /// A value joined to it only, or none (`--color`, `--color=auto`, `-uno`).
    Optional,
    /// A path, used as said (`-o FILE`: [`Access::Write`]).
    Path(Access),
}

/// One option of a model's table, written `-n|--lines=` : short and long names split by
/// `|`, then what it takes: nothing, `=` a value, `?` an optional joined value for its long
/// names (`--color[=WHEN]`; its short names take nothing), `??` for its short names too
/// (`-uno`), `=R` a path read, `=T` a folder searched, `=W` a path written.
fn entry(spec: &str) -> (Vec<&str>, Takes, bool) {
    let mut short_optional = false;
    let (names, takes) = if let Some(n) = spec.strip_suffix("=R") {
        (n, Takes::Path(Access::Read))
    } else if let Some(n) = spec.strip_suffix("=T") {
        (n, Takes::Path(Access::Tree))
    } else if let Some(n) = spec.strip_suffix("=W") {
        (n, Takes::Path(Access::Write))
    } else if let Some(n) = spec.strip_suffix('=') {
        (n, Takes::Value)
    } else if let Some(n) = spec.strip_suffix("??") {
        short_optional = true;
        (n, Takes::Optional)
    } else if let Some(n) = spec.strip_suffix('?') {
        (n, Takes::Optional)
    } else {
        (spec, Takes::Nothing)
    };
    (names.split('|').collect(), takes, short_optional)
}

/// What option `name` (`-n`, `--lines`) takes in `table`, if it is there.
pub(crate) fn lookup(table: &[&str], name: &str) -> Option<Takes> {
    table.iter().find_map(|spec| {
        let (names, takes, short_optional) = entry(spec);
        if !names.contains(&name) {
            return None;
        }
        let short = !name.starts_with("--");
        Some(if takes == Takes::Optional && short && !short_optional {
            Takes::Nothing
        } else {
            takes
        })
    })
}

/// An option met, with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Met {
    /// Its name as in the table (`-n` or `--lines`, as written).
    pub name: String,
    pub value: Option<String>,
    /// The word it stands in.
    pub at: usize,
}

impl Met {
    /// The word its value stands in: its own when joined (`-e1d`, `--file=x`), else the
    /// next. A refusal of the value is placed there, not on the option.
    pub fn value_at(&self, words: &[String]) -> usize {
        let joined = self
            .value
            .as_deref()
            .zip(words.get(self.at))
            .is_some_and(|(v, w)| w.len() > v.len() && w.ends_with(v));
        if joined {
            self.at
        } else {
            self.at + 1
        }
    }
}

/// The options and operands of `words[from..]`, read by `table` as GNU getopt_long reads
/// them: options anywhere (`permute`) or up to the first operand, `--` ending them, `-`
/// an operand, short options clustered (`-rn`), a short option's value joined (not after
/// `=`, which parsers read two ways: stopped) or in the next word, a long one's after `=`
/// or in the next word. A long option must be written whole (getopt_long takes any
/// unambiguous prefix, and a prefix we do not know of could be another option: `--pre`
/// is not `--pretty`). Path values go into `effects`.
pub(crate) fn options(
    words: &[String],
    from: usize,
    table: &[&str],
    permute: bool,
    effects: &mut Effects,
) -> Result<(Vec<Met>, Vec<usize>), Stop> {
    options_to_end(words, from, table, permute, effects).map(|(met, ops, _)| (met, ops))
}

/// The options met, the operands' places, and where the `--` that ends the options is.
pub(crate) type Parsed = (Vec<Met>, Vec<usize>, Option<usize>);

/// [`options`], and where the `--` that ends them is, if one does (not a `--` that is an
/// option's value: `git grep -e --`).
pub(crate) fn options_to_end(
    words: &[String],
    from: usize,
    table: &[&str],
    permute: bool,
    effects: &mut Effects,
) -> Result<Parsed, Stop> {
    let mut end = None;
    let mut met = Vec::new();
    let mut operands = Vec::new();
    let mut i = from;
    let mut only_operands = false;
    while i < words.len() {
        let w = words[i].as_str();
        if only_operands || w == "-" || !w.starts_with('-') {
            operands.push(i);
            if !permute {
                only_operands = true;
            }
            i += 1;
            continue;
        }
        if w == "--" {
            only_operands = true;
            end = Some(i);
            i += 1;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, joined) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let flag = format!("--{name}");
            let Some(takes) = lookup(table, &flag) else {
                return Err(stop(
                    i,
                    format!("`{flag}` is not an option known as harmless"),
                ));
            };
            let value = match (takes, joined) {
                (Takes::Nothing, Some(_)) => {
                    return Err(stop(i, format!("`{flag}` takes no value")))
                }
                (Takes::Nothing | Takes::Optional, v) => v,
                (_, Some(v)) => Some(v),
                (_, None) => {
                    i += 1;
                    Some(
                        words
                            .get(i)
                            .ok_or_else(|| stop(i - 1, format!("`{flag}` without its value")))?
                            .clone(),
                    )
                }
            };
            if let (Takes::Path(a), Some(v)) = (takes, &value) {
                effects.paths.push((a, v.clone()));
            }
            met.push(Met {
                name: flag,
                value,
                at: i,
            });
            i += 1;
            continue;
        }
        // A cluster of short options.
        let at = i;
        let chars: Vec<(usize, char)> = w.char_indices().skip(1).collect();
        for (k, &(pos, c)) in chars.iter().enumerate() {
            let flag = format!("-{c}");
            let Some(takes) = lookup(table, &flag) else {
                return Err(stop(
                    at,
                    format!("`{flag}` is not an option known as harmless"),
                ));
            };
            let rest = &w[pos + c.len_utf8()..];
            // `-f=x`: getopt reads the value `=x`, clap, lexopt and argparse read `x`
            // (`rg -f=.env` read `.env`): which file it names depends on the parser.
            if takes != Takes::Nothing && rest.starts_with('=') {
                return Err(stop(
                    at,
                    format!("`{flag}` with a value joined by `=`, which programs read two ways"),
                ));
            }
            let value = match takes {
                Takes::Nothing => None,
                Takes::Optional => Some(rest.to_owned()).filter(|r| !r.is_empty()),
                _ if !rest.is_empty() => Some(rest.to_owned()),
                _ => {
                    i += 1;
                    Some(
                        words
                            .get(i)
                            .ok_or_else(|| stop(at, format!("`{flag}` without its value")))?
                            .clone(),
                    )
                }
            };
            if let (Takes::Path(a), Some(v)) = (takes, &value) {
                effects.paths.push((a, v.clone()));
            }
            let takes_rest = value.is_some() || takes != Takes::Nothing;
            met.push(Met {
                name: flag,
                value,
                at,
            });
            if takes_rest || k + 1 == chars.len() {
                break;
            }
        }
        i += 1;
    }
    Ok((met, operands, end))
}

pub(crate) fn stop(at: usize, why: impl Into<String>) -> Stop {
    Stop {
        at,
        why: why.into(),
    }
}

/// Whether `met` has option `name` (any of its names in `table` spelling).
pub(crate) fn has(met: &[Met], names: &[&str]) -> bool {
    met.iter().any(|m| names.contains(&m.name.as_str()))
}

/// Adds `words[i]` for each `i` of `at` as paths used as `access`.
pub(crate) fn paths(words: &[String], at: &[usize], access: Access, effects: &mut Effects) {
    for &i in at {
        effects.paths.push((access, words[i].clone()));
    }
}

#[cfg(test)]
mod tests;
