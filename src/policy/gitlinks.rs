//! A repository that an earlier `git add` of the same line makes a submodule of: `git add
//! sub && git status`, where `sub` holds a repository of its own, ran its `core.fsmonitor`.
//! The line is decided before `git add` runs, so the index ([`super::gitindex`]) does not
//! have the gitlink yet: the folders the add takes are looked through for a `.git` instead.
//!
//! Invariant: `Some` (asked) whenever that cannot be told within [`MAX_FOLDERS`] folders or
//! the decision's budget: a folder that cannot be listed, a word the model cannot read.

use std::path::{Path, PathBuf};

/// The most folders looked through for one `git add`; a bigger tree is asked.
pub const MAX_FOLDERS: usize = 4096;

/// Why a git command after `add` (the words of an earlier part of the same line, run in
/// any of `folders`) may run git in a repository that `add` makes a submodule of: a folder
/// it adds, one beneath, or one above inside the worktree holds a `.git` of a repository
/// git did not make in its superproject's `modules`. A folder git surely leaves out of the
/// add is not looked into ([`TopIgnores`]). `step` takes one step of the decision's work
/// per folder listed (`false`: spent, asked). `None` when `add` is no `git add`, or adds
/// only what is tracked (`-u`).
pub fn added_repository(
    add: &[String],
    folders: &[PathBuf],
    step: &mut dyn FnMut() -> bool,
) -> Option<String> {
    let at = super::args::git::subcommand_at(add);
    if super::args::base(add.first()?) != "git" || add.get(at)? != "add" {
        return None;
    }
    let e = match super::args::read(add) {
        super::args::Reading::Understood(e) => e,
        _ => return Some("a `git add` whose paths cannot be told".into()),
    };
    // `-f` adds what the ignore rules leave out.
    let force = add[at..]
        .iter()
        .take_while(|w| *w != "--")
        .any(|w| w == "--force" || (w.starts_with('-') && !w.starts_with("--") && w.contains('f')));
    let mut listed = 0;
    for dir in folders {
        let Some(top) = dir.ancestors().find(|d| d.join(".git").exists()) else {
            continue;
        };
        let modules = super::gitindex::modules_of(top);
        let ignores = if force { None } else { TopIgnores::of(top) };
        let roots = (e.paths.iter().map(|(a, p)| (a, dir.join(p))))
            .chain(e.repo_top.iter().map(|(a, p)| (a, top.join(p))));
        for (access, root) in roots {
            if *access != super::args::Access::Tree {
                continue;
            }
            let walk = Walk {
                top,
                modules: modules.as_deref(),
                ignores: ignores.as_ref(),
            };
            if let Some(why) = walk.beneath(&super::npmlocks::lexical(&root), &mut listed, step) {
                return Some(why);
            }
        }
    }
    None
}

/// The folder names a worktree's top `.gitignore` leaves out plainly: a line with no glob
/// and no `/` inside (`node_modules`, `target/`), anywhere; one that begins with `/`
/// (`/dist`), at the top only. `None` when the file has a `!` line, which may let one
/// back in.
struct TopIgnores {
    anywhere: Vec<String>,
    at_top: Vec<String>,
}

impl TopIgnores {
    fn of(top: &Path) -> Option<TopIgnores> {
        let text = ignore_text(top)?;
        if negates(&text) {
            return None;
        }
        let mut out = TopIgnores {
            anywhere: Vec::new(),
            at_top: Vec::new(),
        };
        // git takes off a line's `\r` and its trailing spaces, nothing else (a tab or a
        // no-break space stays part of the name: `node_modules\t` leaves nothing out).
        for l in text.lines().map(|l| l.trim_end_matches(' ')) {
            // One `/` at the end (a folder only); `x//` is `x/` anchored, which no folder is.
            let name = l.strip_suffix('/').unwrap_or(l);
            let (name, list) = match name.strip_prefix('/') {
                Some(n) => (n, &mut out.at_top),
                None => (name, &mut out.anywhere),
            };
            let plain = !name.is_empty()
                && !name.starts_with('#')
                && !name.contains(['/', '*', '?', '[', '\\'])
                && !name.chars().any(|c| c.is_whitespace() || c.is_control())
                && name != "."
                && name != "..";
            if plain {
                list.push(name.to_owned());
            }
        }
        Some(out)
    }
}

/// The text of folder `d`'s `.gitignore`, read bounded and without blocking
/// ([`super::file::bounded::read_file`]: a FIFO or `/dev/zero` there would hold the
/// bridge's loop); empty when there is none. `None` for any other that cannot be read so,
/// and for a link (git refuses a linked `.gitignore`): nothing is left out then.
fn ignore_text(d: &Path) -> Option<String> {
    let f = d.join(".gitignore");
    match std::fs::symlink_metadata(&f) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(String::new()),
        Ok(m) if m.is_file() => {}
        _ => return None,
    }
    let bytes = super::file::bounded::read_file(&f).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    // git skips a byte-order mark at the start (`skip_utf8_bom`): `\u{feff}!x` negates.
    Some(text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned())
}

/// Whether an ignore file's text may have a `!` line, which may let a name back in (any
/// line with a `!` after blanks of any kind, more than git reads as one).
fn negates(text: &str) -> bool {
    text.lines().any(|l| {
        l.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
            .starts_with('!')
    })
}

/// Whether folder `d`'s own `.gitignore` may let a name back in.
fn negates_in(d: &Path) -> bool {
    ignore_text(d).is_none_or(|t| negates(&t))
}

/// One walk of what a `git add` takes, in the worktree whose top is `top`.
struct Walk<'a> {
    top: &'a Path,
    modules: Option<&'a Path>,
    ignores: Option<&'a TopIgnores>,
}

impl Walk<'_> {
    /// Why folder `d` would be added as a gitlink of a repository git did not make in its
    /// superproject's `modules`; `None` for a submodule git made, or no repository there.
    fn foreign(&self, d: &Path) -> Option<String> {
        let found = super::gitdir::discover(d);
        let made = (found.as_ref().zip(self.modules))
            .is_some_and(|(g, m)| super::gitindex::in_modules(g, m));
        (!made).then(|| {
            format!(
                "`git add` makes {} a submodule, whose repository ({}) is not one git keeps in its superproject: a later git command of the line runs git there, with that repository's configuration",
                d.display(),
                found.map_or_else(|| "not one git reads".into(), |g| g.display().to_string())
            )
        })
    }

    /// The first repository of its own at or beneath `root`, or in a folder above it
    /// inside the worktree, that git would add as a gitlink.
    fn beneath(
        &self,
        root: &Path,
        listed: &mut usize,
        step: &mut dyn FnMut() -> bool,
    ) -> Option<String> {
        let inside = |d: &&Path| d.starts_with(self.top) && *d != self.top;
        let above: Vec<&Path> = root.ancestors().skip(1).take_while(inside).collect();
        if let Some(d) = above
            .iter()
            .find(|d| d.join(".git").symlink_metadata().is_ok())
        {
            return self.foreign(d);
        }
        // Left out by the top's ignore rules while no ignore file on the way down may let a
        // name back in.
        let prune = self.ignores.is_some() && !above.iter().any(|d| negates_in(d));
        let mut stack = vec![(root.to_path_buf(), prune)];
        while let Some((d, prune)) = stack.pop() {
            if d != self.top && d.join(".git").symlink_metadata().is_ok() {
                match self.foreign(&d) {
                    Some(why) => return Some(why),
                    None => continue,
                }
            }
            *listed += 1;
            if *listed > MAX_FOLDERS || !step() {
                return Some(format!(
                    "what `git add` takes beneath {} is more than is looked through for one decision, so whether it makes a submodule cannot be told",
                    root.display()
                ));
            }
            let entries = match std::fs::read_dir(&d) {
                Ok(entries) => entries,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                    ) =>
                {
                    continue
                }
                Err(_) => return Some(format!("{} cannot be listed", d.display())),
            };
            let prune = prune && !negates_in(&d);
            for entry in entries {
                let Ok(entry) = entry else {
                    return Some(format!("{} cannot be listed", d.display()));
                };
                let name = entry.file_name();
                // git goes through no link, and never into its own folder.
                if name == ".git" || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let left_out = prune
                    && self.ignores.is_some_and(|i| {
                        // A name that is not UTF-8 matches no pattern read as text.
                        let Some(name) = name.to_str() else {
                            return false;
                        };
                        i.anywhere.iter().any(|n| n == name)
                            || (d == self.top && i.at_top.iter().any(|n| n == name))
                    });
                if !left_out {
                    stack.push((entry.path(), prune));
                }
            }
        }
        None
    }
}
