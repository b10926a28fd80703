//! Where git looks from a folder, for what its words do not name: the top of the worktree
//! (`:/`, `:(top)`, `git add -A`) and what is named from it (`HEAD:PATH`, `:PATH`) and the repository a local clone copies (a `gitdir:`
//! file among the names it tries). [`place`] puts them in a model's [`Effects`], for the
//! decision and for the tests that run the real programs.

use std::path::{Path, PathBuf};

use super::args::{Access, Effects};

/// Where a word leads from the folder it is used in, as the OS would resolve it (each
/// reading: `crate::policy::path::readings`); `None`: it cannot be told.
pub type Resolve<'a> = &'a dyn Fn(&Path) -> Option<Vec<PathBuf>>;

/// [`Effects::repo_top`] and [`Effects::clone_sources`] put in [`Effects::paths`], as
/// found from `cwd` (each word resolved by `resolve`); `Err`: why one cannot be told.
pub fn place(
    e: &mut Effects,
    cwd: &Path,
    env: super::args::Env<'_>,
    resolve: Resolve<'_>,
) -> Result<(), String> {
    for (access, rel) in std::mem::take(&mut e.repo_top) {
        let at = top(cwd, env).map(|t| if rel.is_empty() { t } else { t.join(&rel) });
        match at.as_deref().and_then(Path::to_str) {
            Some(at) => e.paths.push((access, at.to_owned())),
            None => return Err("the top of the repository git uses cannot be told".into()),
        }
    }
    for source in std::mem::take(&mut e.clone_sources) {
        let readings = resolve(Path::new(&source))
            .ok_or_else(|| format!("the path {source:?} cannot be resolved as the OS would"))?;
        for r in readings {
            for read in clone_reads(&r)? {
                let read = read.to_str().ok_or("a name not UTF-8")?;
                e.paths.push((Access::TreeFollowed, read.to_owned()));
            }
        }
    }
    Ok(())
}

/// The top of the worktree git uses from `dir`, where `:/`, `:(top)` and `git add -A`
/// begin: the first folder, from `dir` up, with a `.git` folder that is surely a
/// repository or a `gitdir:` file. `None` where it cannot be told: no repository, a `.git`
/// git may pass over, a repository with no worktree, or a `core.worktree` in any
/// configuration file git reads.
fn top(dir: &Path, env: super::args::Env<'_>) -> Option<PathBuf> {
    for d in dir.ancestors() {
        let dot = d.join(".git");
        let found = match std::fs::metadata(&dot) {
            Ok(m) if m.is_dir() => super::gitdir::surely_repository(&dot),
            Ok(m) if m.is_file() => true,
            _ if super::gitdir::is_repository(d) => return None,
            _ => continue,
        };
        let chain =
            super::gitconfig::config_chain(super::gitdir::discover(d).as_deref(), env).ok()?;
        let moved = chain.iter().any(|(_, text)| {
            super::gitconfig::entries(text)
                .iter()
                .any(|(section, key, _)| section == "core" && key == "worktree")
        });
        return (found && !moved).then(|| d.to_path_buf());
    }
    None
}

/// What a local `git clone P` reads besides `p` (resolved) and `P.git`: where a name git
/// tries (`P/.git`, `P`, `P.git/.git`, `P.git`) is a `gitdir:` file, the repository it names
/// (`git clone repo.txt out` copied the repository `repo.txt` named), and each one's common
/// folder (a linked worktree's). `Err` where a repository borrows another's objects
/// (`objects/info/alternates`), or a `gitdir:` file cannot be read.
fn clone_reads(p: &Path) -> Result<Vec<PathBuf>, String> {
    let mut name = p.as_os_str().to_owned();
    name.push(".git");
    let dotted = PathBuf::from(name);
    let (mut out, mut repos) = (Vec::new(), Vec::new());
    for c in [p.join(".git"), p.to_path_buf(), dotted.join(".git"), dotted] {
        match std::fs::metadata(&c) {
            Ok(m) if m.is_file() => {
                let text = super::file::bounded::read_file(&c)
                    .map_err(|e| format!("{}: {e}", c.display()))?;
                if let Some(t) = super::gitdir::gitfile_target(&text) {
                    let target = c.parent().unwrap_or(Path::new("/")).join(t);
                    out.push(target.clone());
                    repos.push(target);
                }
            }
            Ok(m) if m.is_dir() => repos.push(c),
            _ => {}
        }
    }
    for r in repos {
        let common = super::gitconfig::common_of(&r);
        // Its common folder's objects are its own (a fifty-eighth review: `commondir ->
        // ../fc` with alternates there copied a denied repository's files).
        for o in [&r, &common] {
            if std::fs::symlink_metadata(o.join("objects/info/alternates")).is_ok() {
                return Err(format!(
                    "{} borrows another repository's objects (alternates)",
                    o.display()
                ));
            }
        }
        if common != r {
            out.push(common);
        }
    }
    Ok(out)
}
