//! The paths a command names, as its program's model reads them ([`super::args`]), resolved
//! as the OS opens them: what lets a path rule (`Read(.env)`, `Edit(.git/**)`) speak of a
//! command (`cat .env`), and what a prefix rule's writes are checked against.
//!
//! Invariants:
//! - A word the model reads as a path read, a folder searched or a path written is decided
//!   as such: a deny of its kind covers the command. A word the model cannot place (a
//!   program with no model, a word it passes on to another program) is compared with the
//!   path rules anyway: one that may name a denied path is asked.
//! - A folder searched whole (`grep -r`, `rg`) above a path that a deny or ask rule could
//!   match is decided by what is beneath it, as the program walks it (hidden names, links):
//!   a covered path there is read; past [`MAX_WALK`] entries, or a link a program would
//!   follow, it is asked.
//! - Under a prefix rule, a write goes only inside the session's folder, never to the folder
//!   itself, never into a `.git` folder, never to a shell's start file
//!   ([`Policy::prefix_write_refused`]).
//! - Bounded: at most [`MAX_NAMED`] words of one command are resolved; more is asked.

use std::path::{Path, PathBuf};

pub use super::writes::prefix_write_refused;

use super::args::{self, Access, Reading};
use super::forms;
use super::ignores::{self, gone_or_file, lets_back_in};
use super::{path, Call, Decision, Rule};

/// The most path words of one command resolved; a command that names more is asked.
pub const MAX_NAMED: usize = 64;

/// The most entries looked at beneath the folders one command searches whole; past it,
/// what is beneath them cannot be told, and a rule that could match there asks.
pub const MAX_WALK: usize = 4096;

/// The paths one command names, resolved.
#[derive(Debug, Clone, Default)]
pub struct Named {
    /// Every reading of each path, with how it is used.
    pub paths: Vec<(Access, PathBuf)>,
    /// For each folder searched whole: what is beneath it as the program walks it (its
    /// hidden names left out, its links followed, as its model says), or `None` when that
    /// cannot be told within [`MAX_WALK`] entries (or a link would be followed).
    pub beneath: Vec<(PathBuf, Option<Vec<PathBuf>>)>,
    /// Words the model could not place, resolved as paths.
    pub unplaced: Vec<PathBuf>,
    /// For each of them that is a folder, when no model read the command (`diff -r x .`):
    /// what is beneath it, as for [`Access::Tree`], or `None` when that cannot be told.
    pub unplaced_beneath: Vec<(PathBuf, Option<Vec<PathBuf>>)>,
    /// Folders a command removes or moves away whole ([`Access::Remove`]: `mv D x`,
    /// `rm -r D`), and where a move or a copy lands whole trees ([`Access::Write`]: `mv x D`,
    /// `cp -rT x D`): every path beneath that it takes away or writes (links as names, not
    /// followed), or `None` when that cannot be told within [`MAX_WALK`] entries.
    pub trees: Vec<(Access, PathBuf, Option<Vec<PathBuf>>)>,
    /// The ignore files a program with no model may read there (`fd`, `ag`), read only.
    pub maybe_read: Vec<PathBuf>,
    /// Why some path could not be resolved, or some were left unresolved.
    pub unresolved: Option<String>,
}

impl Named {
    /// What `words` name, read by their program's model, resolved from `cwd`.
    pub fn of(words: &[String], cwd: &Path) -> Named {
        let mut named = Named::default();
        let mut left = MAX_NAMED;
        let reading = args::read(words);
        let modelled = matches!(reading, Reading::Understood(_));
        if !modelled {
            if let Some(w) = words.iter().skip(1).find(|w| {
                candidates(w).any(|c| {
                    c.contains(['{', '[']) && forms::curl_globs(c, forms::MAX_GLOBS).is_none()
                })
            }) {
                let shown: String = w.chars().take(80).collect();
                named.unresolved = Some(format!(
                    "the word {shown:?} names more than {} paths by curl's globs",
                    forms::MAX_GLOBS
                ));
            }
        }
        let mut only = None;
        let (placed, unplaced, places, ignore_files) = match reading {
            Reading::Understood(mut e) => {
                only = e.only_names();
                // What git prints of its configuration: every file of it, includes too.
                if e.git_config {
                    match super::gitdir::config_files(cwd, &|k| std::env::var_os(k)) {
                        Ok(files) => e.paths.extend(files.map(|f| (Access::Read, f))),
                        Err(why) => named.unresolved = Some(format!("git's configuration {why}")),
                    }
                }
                // What git finds beyond its words (the worktree's top, a clone's source).
                let env = |k: &str| std::env::var_os(k);
                let resolve = |w: &Path| {
                    path::readings(w, cwd).map(|rs| rs.into_iter().map(|r| r.path).collect())
                };
                if let Err(why) = super::gitplaces::place(&mut e, cwd, &env, &resolve) {
                    named.unresolved = Some(why);
                }
                if let Some(f) = e.files_there.iter().find(|f| !cwd.join(f).is_file()) {
                    named.unresolved = Some(format!("{f:?} is not a file here"));
                }
                if let Some(why) = e
                    .npm_bins
                    .iter()
                    .find_map(|n| super::npmbins::refused(cwd, n))
                {
                    named.unresolved = Some(why);
                }
                if let Some(f) = e.folders_there.iter().find(|f| !cwd.join(f).is_dir()) {
                    named.unresolved = Some(format!("{f:?} is not a folder here"));
                }
                if let Some(why) = e
                    .manager
                    .and_then(|m| super::npmdeclared::pin_refused(cwd, m))
                {
                    named.unresolved = Some(why);
                }
                if let Some(r) = e.workspace {
                    match super::npmwork::read_by(cwd, r.pnpm, r.yarn, r.recursive, r.installs) {
                        Ok(read) => e.paths.extend(read.into_iter().map(|(whole, p)| {
                            let access = if whole {
                                Access::TreeFollowed
                            } else {
                                Access::Read
                            };
                            (access, p)
                        })),
                        Err(why) => named.unresolved = Some(why),
                    }
                }
                (e.paths, e.unplaced, e.places, e.ignore_files)
            }
            // No model, or one that stopped: any word may be a path, and a program that
            // searches the current folder when no folder is named may search it (`ag -u
            // KEY`, `fd -H`).
            _ => (
                Vec::new(),
                words
                    .iter()
                    .skip(1)
                    .flat_map(|w| pieces(w).into_iter().flat_map(forms::file_forms))
                    .chain(ignores::searches_here(words).then(|| ".".to_owned()))
                    .collect(),
                Vec::new(),
                true,
            ),
        };
        // Words xargs reads from its input may name anything.
        if super::wrapped::adds_words(words) {
            named.unplaced_beneath.push((cwd.to_path_buf(), None));
        }
        let mut walked = 0;
        // Each word resolved once, and each folder moved whole walked once: a move's or a
        // copy's landing reads them again.
        let mut resolved = std::collections::HashMap::new();
        let mut removed = std::collections::HashMap::new();
        let (mut read, mut maybe) = (Vec::new(), Vec::new());
        for (access, word) in placed {
            if let Some(rs) = named.resolve(&word, cwd, &mut left) {
                resolved.insert(word, rs.clone());
                for p in rs {
                    if matches!(access, Access::Tracked | Access::TrackedBeneath) {
                        let beneath = access == Access::TrackedBeneath;
                        let under = super::gitindex::tracked(&p, beneath, &mut path::take_step);
                        named.beneath.push((p.clone(), under));
                    } else if matches!(
                        access,
                        Access::Tree | Access::TreeShown | Access::TreeFollowed
                    ) {
                        let mut under =
                            walk(&p, access, &mut walked, ignore_files.then_some(&mut read));
                        if let (Some(only), Some(under), false) =
                            (&only, under.as_mut(), access == Access::TreeFollowed)
                        {
                            under.retain(|q| {
                                is_folder(q) || q.file_name().is_some_and(|n| only.is_match(n))
                            });
                        }
                        named.beneath.push((p.clone(), under));
                    } else if access == Access::Remove && is_folder(&p) {
                        let under = walk(&p, Access::Remove, &mut walked, None);
                        removed.insert(p.clone(), under.clone());
                        named.trees.push((Access::Remove, p.clone(), under));
                    }
                    named.paths.push((access, p));
                }
            }
        }
        for (sources, lands) in places {
            let paths = |words: &[String]| -> Vec<PathBuf> {
                words
                    .iter()
                    .flat_map(|w| resolved.get(w).into_iter().flatten().cloned())
                    .collect()
            };
            let trees: Vec<(PathBuf, Option<Vec<PathBuf>>)> = paths(&sources)
                .into_iter()
                .filter(|s| is_folder(s))
                .map(|s| {
                    let under = match removed.get(&s) {
                        Some(under) => under.clone(),
                        None => walk(&s, Access::Remove, &mut walked, None),
                    };
                    (s, under)
                })
                .collect();
            named.landing(&trees, &paths(&lands));
        }
        for word in unplaced {
            if let Some(rs) = named.resolve(&word, cwd, &mut left) {
                for p in &rs {
                    // Followed through its links: a program with no model may (`diff -r`
                    // compares what a link in the folder points to), and read the ignore
                    // files there and above (`fd`, `ag`).
                    if !modelled && p.is_dir() {
                        let under = walk(p, Access::TreeFollowed, &mut walked, Some(&mut maybe));
                        named.unplaced_beneath.push((p.clone(), under));
                    }
                }
                named.unplaced.extend(rs);
            }
        }
        // The ignore files read are read only (`.git/info/exclude` under `Edit(.git/**)`).
        named
            .paths
            .extend(read.into_iter().map(|r| (Access::Read, r)));
        named.maybe_read = maybe;
        named
    }

    /// What `words` name, from each of `folders` (the command may run in any of them).
    pub fn in_folders(words: &[String], folders: &[PathBuf]) -> Named {
        let mut all = Named::default();
        for f in folders {
            let n = Named::of(words, f);
            all.paths.extend(n.paths);
            all.beneath.extend(n.beneath);
            all.unplaced.extend(n.unplaced);
            all.unplaced_beneath.extend(n.unplaced_beneath);
            all.maybe_read.extend(n.maybe_read);
            all.trees.extend(n.trees);
            all.unresolved = all.unresolved.or(n.unresolved);
        }
        all
    }

    /// What lands beneath each of `lands` (resolved) when `trees` (folders moved or copied
    /// whole, with what is beneath each) go there: each entry beneath a source at the same
    /// place beneath each landing (both readings of a destination, as for its write).
    fn landing(&mut self, trees: &[(PathBuf, Option<Vec<PathBuf>>)], lands: &[PathBuf]) {
        if trees.is_empty() {
            return;
        }
        for d in lands {
            let mut all = Some(Vec::new());
            for (s, under) in trees {
                all = all.zip(under.as_ref()).map(|(mut all, under)| {
                    all.extend(
                        under
                            .iter()
                            .filter_map(|e| e.strip_prefix(s).ok())
                            .map(|rel| d.join(rel)),
                    );
                    all
                });
            }
            self.trees.push((Access::Write, d.clone(), all));
        }
    }

    fn resolve(&mut self, word: &str, cwd: &Path, left: &mut usize) -> Option<Vec<PathBuf>> {
        if word.is_empty() {
            return None;
        }
        if *left == 0 {
            self.unresolved.get_or_insert_with(|| {
                format!("the command names more than {MAX_NAMED} words that may be paths")
            });
            return None;
        }
        *left -= 1;
        match path::readings(Path::new(word), cwd) {
            Some(rs) => Some(rs.into_iter().map(|r| r.path).collect()),
            None => {
                let shown: String = word.chars().take(80).collect();
                self.unresolved.get_or_insert_with(|| {
                    format!("the path {shown:?} cannot be resolved as the OS would")
                });
                None
            }
        }
    }
}

/// Whether `p` is a folder itself (not a link to one: a move takes the link).
fn is_folder(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// What is beneath folder `dir` as a program that walks it whole walks it: hidden names
/// left out for [`Access::TreeShown`] (and `None` where an ignore file, `.git/info/exclude`
/// or the user's excludes lets a name back in: `!.env`); links left out, but followed for
/// [`Access::TreeFollowed`] (each target where it is, each folder once) and listed as
/// names for [`Access::Remove`] (a move or copy takes them as they are). With `ignores`,
/// the program reads the ignore files of `dir`, of the folders above it and of those it
/// walks: where each leads is added there ([`ignores`]). `None` past [`MAX_WALK`] entries
/// in all (`walked` counts them across one command's folders), and where a folder or a
/// link cannot be opened for any reason but nothing, or a file, being there.
fn walk(
    dir: &Path,
    access: Access,
    walked: &mut usize,
    mut ignores: Option<&mut Vec<PathBuf>>,
) -> Option<Vec<PathBuf>> {
    if access == Access::TreeShown && ignores::back_in_above(dir) {
        return None;
    }
    if let Some(reads) = ignores.as_deref_mut() {
        ignores::read_above(dir, reads)?;
    }
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    // The folders links led to, each walked once (a link to a folder above it loops).
    let mut seen = std::collections::HashSet::new();
    if let Ok(real) = std::fs::canonicalize(dir) {
        seen.insert(real);
    }
    while let Some(d) = stack.pop() {
        let exclude = ignores::exclude_of(&d);
        if access == Access::TreeShown && exclude.as_ref().is_some_and(|x| lets_back_in(x)) {
            return None;
        }
        if let (Some(reads), Some(x)) = (ignores.as_deref_mut(), &exclude) {
            ignores::read(x, reads)?;
        }
        let entries = match std::fs::read_dir(&d) {
            Ok(entries) => entries,
            // A file, or nothing there: nothing beneath.
            Err(e) if gone_or_file(&e) => continue,
            // A folder that cannot be listed here, which a program may still go through
            // (`mkdir -m 0300 t`, then `mv t .github`), or a path too long for this
            // absolute spelling that a program opens relative to where it is: what is
            // beneath cannot be told.
            Err(_) => return None,
        };
        for entry in entries {
            let entry = entry.ok()?;
            *walked += 1;
            #[cfg(test)]
            LISTED.with(|l| l.set(l.get() + 1));
            // Bounded per command, and across the whole decision with every path it walks.
            if *walked > MAX_WALK || !path::take_step() {
                return None;
            }
            let name = entry.file_name();
            let ignore_file = ignores::is_ignore_file(&name);
            if let (true, Some(reads)) = (ignore_file, ignores.as_deref_mut()) {
                ignores::read(&entry.path(), reads)?;
            }
            if access == Access::TreeShown && name.as_encoded_bytes().starts_with(b".") {
                // An ignore file that lets a name back in (`!.env`) may bring hidden ones
                // in: what ripgrep searches then cannot be told.
                if ignore_file && lets_back_in(&entry.path()) {
                    return None;
                }
                continue;
            }
            let kind = entry.file_type().ok()?;
            if kind.is_symlink() {
                if access == Access::Remove {
                    // Moved or copied as a name.
                    out.push(entry.path());
                } else if access == Access::TreeFollowed {
                    // Followed, as the program does: what it reaches is read where it is
                    // (`x/c -> ../config`: `config/master.key`). A link that leads nowhere
                    // now may lead somewhere when the program reaches it: a copy makes
                    // names as it goes (`cp -rL a out/`, with `a/l -> ../out/a/x/../..`,
                    // reads through `out/a/x` once it has copied `a/x`). Not known.
                    let Ok(real) = std::fs::canonicalize(entry.path()) else {
                        return None;
                    };
                    if real.is_dir() && seen.insert(real.clone()) {
                        stack.push(real.clone());
                    }
                    out.push(entry.path());
                    out.push(real);
                }
                continue;
            }
            let p = entry.path();
            if kind.is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    Some(out)
}

#[cfg(test)]
thread_local! {
    /// The entries listed beneath searches on this thread (tests count a decision's work).
    pub static LISTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A word with more flag letters than this ([`flag_letters`]) is asked, not read: each is
/// a place a path may start, each resolved ([`candidates`]).
pub const MAX_FLAG_LETTERS: usize = 64;

/// How many letters or digits follow the `-` of a word of one `-` and two characters or
/// more (`-xvC..`: 3); 0 for any other word.
pub fn flag_letters(word: &str) -> usize {
    match word.as_bytes() {
        [b'-', f, _, ..] if *f != b'-' => word.as_bytes()[1..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric())
            .count(),
        _ => 0,
    }
}

/// What a word of a command may name: the word; the rest after each `=`; and for a
/// word of one `-` and two characters or more (`-oFILE`, `-C..`, `-xvC..`), the rest after
/// each of its leading flag letters (`FILE`, `ILE`, `LE`, `E`; `..`; `vC..`, `C..`, `..`),
/// where a short flag's value joined to it would begin.
pub fn candidates(word: &str) -> impl Iterator<Item = &str> {
    // After each `=`: a value may hold another (`--dump-section=.p=.git/config`).
    let value = word.match_indices('=').map(|(i, _)| &word[i + 1..]);
    let letters = flag_letters(word).min(MAX_FLAG_LETTERS);
    // Past `-` and each flag letter but the last (a letter is ASCII): where a value may
    // start.
    let joined = (letters > 0)
        .then(|| (2..=(1 + letters).min(word.len() - 1)).map(|i| &word[i..]))
        .into_iter()
        .flatten();
    std::iter::once(word).chain(value).chain(joined)
}

/// What a word of a program no model reads may name: its [`candidates`], and those of each
/// piece of it split at `,` and `:` (`-Wl,-o,FILE`, ImageMagick's `text:FILE`).
pub fn pieces(word: &str) -> Vec<&str> {
    let mut all: Vec<&str> = candidates(word).collect();
    if word.contains([',', ':']) {
        all.extend(word.split([',', ':']).flat_map(candidates));
    }
    all
}

/// Why a whole tree a move or a copy lands (`mv x sub`, `cp -r tmpl/. sub`) is not written
/// under a prefix rule: a path beneath its destination that a prefix rule never writes
/// (`sub/.git/config`, `sub/.cargo/config.toml`), or more beneath it than can be told.
pub fn tree_landing_refused(named: &Named, cwd: &Path) -> Option<String> {
    named
        .trees
        .iter()
        .filter(|(a, _, _)| *a == Access::Write)
        .find_map(|(_, d, under)| match under {
            None => Some(format!(
                "it lands a whole tree at {}, beneath which more than can be looked at is written",
                d.display()
            )),
            Some(es) => es.iter().find_map(|e| prefix_write_refused(e, cwd)),
        })
}

/// Why a copy of a whole tree into `p` may write elsewhere: `p` is a folder with a link
/// beneath it (GNU `cp -r` writes through a link it finds where a file goes: `d/x/y ->
/// ../../.git/config`), or more beneath it than [`MAX_WALK`] entries to tell.
pub fn link_beneath(p: &Path) -> Option<String> {
    if !std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    let mut walked = 0;
    // Every name beneath, links among them as names.
    let under = walk(p, Access::Remove, &mut walked, None);
    let linked = |es: &Vec<PathBuf>| {
        es.iter()
            .any(|e| std::fs::symlink_metadata(e).is_ok_and(|m| m.is_symlink()))
    };
    match under {
        Some(es) if !linked(&es) => None,
        _ => Some(format!(
            "it copies a tree into {}, beneath which a link (or more than can be looked at) may take a write elsewhere",
            p.display()
        )),
    }
}

impl Rule {
    /// Whether this deny or ask rule on paths (no command) covers what `named` names, and
    /// with which decision: a read, search or write of the rule's kind inside its paths, its
    /// decision; a folder searched above them, or an unplaced word inside them, asked.
    /// `covers`: whether the rule's paths cover a path ([`super::tier::Cover`]).
    pub(super) fn covers_named<'p>(
        &self,
        call: &Call,
        named: &'p Named,
        covers: impl Fn(&'p Path) -> bool,
    ) -> Option<Decision> {
        let globs = self.paths.as_ref()?;
        if self.command.is_some() || self.decision == Decision::Allow {
            return None;
        }
        let names_none = named.paths.is_empty()
            && named.unplaced.is_empty()
            && named.maybe_read.is_empty()
            && named.trees.is_empty()
            && named.unplaced_beneath.is_empty();
        if names_none || !self.fits_but_kind(call) {
            return None;
        }
        let fits = |kind: &str| self.of_kind(Some(kind));
        let reads = fits("read");
        let searches = fits("search") || reads;
        let edits = fits("edit");
        let removes = edits || fits("delete") || fits("move");
        let mut found = None;
        for (access, p) in &named.paths {
            let tree = matches!(
                access,
                Access::Tree
                    | Access::TreeShown
                    | Access::TreeFollowed
                    | Access::Tracked
                    | Access::TrackedBeneath
            );
            let hit = match access {
                Access::Read => reads && covers(p),
                _ if tree => searches && covers(p),
                Access::Write => edits && covers(p),
                // A file moved away can be read under its new name (`mv .env x && cat x`):
                // a read rule covers moving or removing it too.
                _ => (removes || reads) && covers(p),
            };
            if hit {
                return Some(self.decision);
            }
            // Beneath a folder walked through its links, a path may be anywhere.
            let anywhere = matches!(
                access,
                Access::Tracked | Access::TrackedBeneath | Access::TreeFollowed
            );
            if tree && searches && (anywhere || globs.reaches_beneath(p, &call.cwd)) {
                // What is beneath, as the program walks it: a path the rule covers is read.
                let under = named
                    .beneath
                    .iter()
                    .find(|(d, _)| d == p)
                    .and_then(|(_, u)| u.as_ref());
                match under {
                    None => found = Some(Decision::Ask),
                    Some(entries) if entries.iter().any(|e| covers(e)) => {
                        return Some(self.decision)
                    }
                    Some(_) => {}
                }
            }
        }
        if (reads || removes) && named.unplaced.iter().any(|p| covers(p))
            || reads && named.maybe_read.iter().any(|p| covers(p))
        {
            found = Some(Decision::Ask);
        }
        // A folder moved or removed whole takes what is beneath it along (a file moved
        // away can be read under its new name: `mv config cfg && cat cfg/master.key`); a
        // tree landing whole writes beneath its destination (`mv gh .github`).
        for (access, d, under) in &named.trees {
            let kind = match access {
                Access::Remove => reads || removes,
                _ => edits,
            };
            if kind && globs.reaches_beneath(d, &call.cwd) {
                match under {
                    Some(es) if !es.iter().any(|e| covers(e)) => {}
                    Some(_) => return Some(self.decision),
                    None => found = Some(Decision::Ask),
                }
            }
        }
        // A folder word of a program no model reads may be read whole (`diff -r x .`).
        for (_, under) in &named.unplaced_beneath {
            // Walked through its links: what is beneath may be anywhere.
            if reads || removes {
                match under {
                    Some(es) if !es.iter().any(|e| covers(e)) => {}
                    _ => found = Some(Decision::Ask),
                }
            }
        }
        found
    }
}

/// Whether any rule of the policy speaks of paths without a command (deny or ask): only
/// then are a command's paths resolved for them.
pub fn any_path_rule<'a>(mut rules: impl Iterator<Item = &'a Rule>) -> bool {
    rules.any(|r| r.paths.is_some() && r.command.is_none() && r.decision != Decision::Allow)
}
