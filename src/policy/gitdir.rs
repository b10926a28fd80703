//! The repository git uses from a folder, found as git finds it (docs/POLICY.md, "Programs
//! read by their arguments"): an allowed `git status` runs what the repository's config
//! says (`core.fsmonitor`, `diff.external`), so it is allowed only where git would use the
//! session's own repository, never one the agent could have made from allowed writes
//! (`cp .git/HEAD x/HEAD`, then a config, then `mkdir x/objects x/refs`, then `cd x && git
//! status`).
//!
//! Invariant: a superset of what git takes for a repository (a `HEAD` file beside any of
//! `objects`, `refs` or `commondir`; a `.git` folder or `gitdir:` file), so that where git
//! would use another repository than the session's, so does this reading.

use std::path::{Path, PathBuf};

/// The repository git would use from `dir`: the first folder, from `dir` up, with a `.git`
/// folder or `gitdir:` file (its target), or that is one itself. `None`: no repository.
pub fn discover(dir: &Path) -> Option<PathBuf> {
    for d in dir.ancestors() {
        let dot = d.join(".git");
        match std::fs::metadata(&dot) {
            Ok(m) if m.is_dir() => return Some(canonical(&dot)),
            Ok(m) if m.is_file() => {
                let text = std::fs::read_to_string(&dot).unwrap_or_default();
                let target = text
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("gitdir:"))
                    .map(|t| d.join(t.trim()))
                    .unwrap_or(dot);
                return Some(canonical(&target));
            }
            _ => {}
        }
        if is_repository(d) {
            return Some(canonical(d));
        }
    }
    None
}

/// Why git, run in any of `folders`, may not be allowed from a session in `session`: it
/// would use another repository than the one it uses from the session's folder, or that
/// one is a folder inside the session other than its `.git` (a bare repository the agent
/// could have made there: `HEAD`, `config`, `objects` written by allowed commands).
pub fn not_own(session: &Path, folders: &[PathBuf]) -> Option<String> {
    let own = discover(session);
    if let Some(other) = folders.iter().map(|f| discover(f)).find(|g| *g != own) {
        return Some(format!(
            "git would use {}, not the session's own repository (its config may run programs)",
            other.map_or("no repository".into(), |g| g.display().to_string())
        ));
    }
    match own {
        Some(g) if g.starts_with(session) && !g.starts_with(session.join(".git")) => {
            Some(format!(
                "git would use {}, a repository inside the session's folder that is not its .git (allowed writes could have made it)",
                g.display()
            ))
        }
        _ => None,
    }
}

/// Whether git may take folder `d` itself for a repository.
fn is_repository(d: &Path) -> bool {
    d.join("HEAD").is_file()
        && ["objects", "refs", "commondir"]
            .iter()
            .any(|n| d.join(n).exists())
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_uses_the_nearest_repository_a_folder_that_is_one_included() {
        let d = std::env::temp_dir().join(format!("acp-qb-gitdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join(".git/objects")).unwrap();
        std::fs::write(d.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(d.join("src/made/refs")).unwrap();
        let own = discover(&d).unwrap();
        assert_eq!(discover(&d.join("src")).as_ref(), Some(&own));
        // A folder the agent made look like a repository is one.
        std::fs::write(d.join("src/made/HEAD"), "x").unwrap();
        assert_eq!(
            discover(&d.join("src/made")),
            Some(d.join("src/made").canonicalize().unwrap())
        );
        // A `gitdir:` file points elsewhere.
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/.git"), "gitdir: ../src/made\n").unwrap();
        assert_eq!(
            discover(&d.join("sub")),
            Some(d.join("src/made").canonicalize().unwrap())
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
