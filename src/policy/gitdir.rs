//! The repository git uses from a folder, found as git finds it (docs/POLICY.md, "Programs
//! read by their arguments"): an allowed `git status` runs what the repository's config
//! says (`core.fsmonitor`, `diff.external`), so it is allowed only where git would use the
//! session's own repository, never one the agent could have made from allowed writes
//! (`cp .git/HEAD x/HEAD`, then a config, then `mkdir x/objects x/refs`, then `cd x && git
//! status`).
//!
//! It also finds the hooks a repository has ([`hooks`]): a git subcommand is asked while
//! there is one it may run, since hooks often run files of the worktree.
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

/// The hooks each of the model's subcommands may run (githooks(5)); another subcommand
/// (allowed by an exact rule: `git push`, `git pull`) may run any. The readers (`log`,
/// `show`, `blame`, `grep`, `ls-files`, `rev-parse`, `describe`, `remote`, `config`,
/// `branch`) run none.
fn hooks_of(sub: &str) -> Option<&'static [&'static str]> {
    Some(match sub {
        "log" | "show" | "whatchanged" | "blame" | "grep" | "ls-files" | "ls-tree"
        | "rev-parse" | "describe" | "remote" | "config" | "branch" | "cat-file" | "shortlog"
        | "rev-list" | "version" | "help" => &[],
        // They may write the index.
        "status" | "diff" | "add" => &["post-index-change"],
        "commit" => &[
            "pre-commit",
            "prepare-commit-msg",
            "commit-msg",
            "post-commit",
            "post-rewrite",
            "post-index-change",
            "reference-transaction",
            "pre-auto-gc",
        ],
        "clone" => &[
            "post-checkout",
            "post-index-change",
            "reference-transaction",
        ],
        _ => return None,
    })
}

/// The most configuration files read for one decision, includes and all.
const MAX_CONFIG_FILES: usize = 16;

/// Why `words`, a `git` command run from any of `folders` in a session in `session`, may
/// not be allowed: another repository than the session's ([`not_own`]), or a hook the
/// repository has that its subcommand may run: hooks often run files of the worktree,
/// which allowed commands write (husky's `core.hooksPath = .husky/_`, the pre-commit
/// framework's `.pre-commit-config.yaml`).
pub fn refused(session: &Path, folders: &[PathBuf], words: &[String]) -> Option<String> {
    if super::args::base(words.first()?) != "git" {
        return None;
    }
    if let Some(why) = not_own(session, folders) {
        return Some(why);
    }
    let sub = words[1..].iter().find(|w| !w.starts_with('-'))?;
    let names = hooks_of(sub);
    if names.is_some_and(|n| n.is_empty()) {
        return None;
    }
    let found = hooks(discover(session).as_deref(), names, &|k| {
        std::env::var_os(k)
    })?;
    Some(format!(
        "`git {sub}` may run the repository's hook {found}, and what it runs may be files the agent writes"
    ))
}

/// A hook of `names` (`None`: any) that git may run in repository `repo` (`None`: no
/// repository, as for `clone`): a file in its `hooks` folder (or its common folder's, for
/// a worktree) other than git's samples, or in a `core.hooksPath` folder set in any
/// configuration file git reads (the repository's, the user's, the system's, and what they
/// include); or a `[hook]` setting, or a `core.hooksPath` that cannot be placed, for any.
pub fn hooks(
    repo: Option<&Path>,
    names: Option<&[&str]>,
    env: super::rc::Env<'_>,
) -> Option<String> {
    let common = repo.map(|r| {
        std::fs::read_to_string(r.join("commondir"))
            .map(|c| r.join(c.trim()))
            .unwrap_or_else(|_| r.to_path_buf())
    });
    let mut dirs: Vec<PathBuf> = repo.iter().map(|r| r.join("hooks")).collect();
    dirs.extend(common.as_ref().map(|c| c.join("hooks")));
    let (home, xdg) = super::rc::home_and_config(env);
    let env = |k: &str| env(k).map(PathBuf::from);
    let mut files: Vec<PathBuf> = Vec::new();
    files.extend(repo.map(|r| r.join("config")));
    files.extend(common.map(|c| c.join("config")));
    match env("GIT_CONFIG_GLOBAL") {
        Some(g) => files.push(g),
        None => {
            files.extend(home.as_ref().map(|h| h.join(".gitconfig")));
            files.extend(xdg.map(|x| x.join("git/config")));
        }
    }
    files.push(env("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    // A relative `core.hooksPath` is taken from the worktree's top.
    let top = repo.and_then(|r| match r.file_name() {
        Some(n) if n == ".git" => r.parent().map(Path::to_path_buf),
        _ => Some(r.to_path_buf()),
    });
    let place = |value: &str, file: &Path, relative_to: Option<&Path>| -> Option<PathBuf> {
        match value.strip_prefix("~/") {
            Some(rest) => home.as_ref().map(|h| h.join(rest)),
            None if Path::new(value).is_absolute() => Some(PathBuf::from(value)),
            None => relative_to.or(file.parent()).map(|d| d.join(value)),
        }
    };
    let mut read = 0;
    while let Some(file) = files.pop() {
        read += 1;
        if read > MAX_CONFIG_FILES {
            return Some("(more configuration files than are read for one decision)".into());
        }
        let text = match std::fs::read(&file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Some(format!("({} cannot be read: {e})", file.display())),
        };
        let mut section = String::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix('[') {
                section = rest.to_ascii_lowercase();
            }
            // A key may follow its section's header on the same line (`[core] hooksPath = x`).
            let body = line.rsplit_once(']').map_or(line, |(_, b)| b).trim();
            let key = body
                .split(['=', ' ', '\t'])
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            let value = body
                .split_once('=')
                .map_or("", |(_, v)| v.trim().trim_matches('"'));
            if section.starts_with("hook") {
                return Some(format!("(set in {})", file.display()));
            }
            if key == "hookspath" {
                match place(value, &file, top.as_deref()).filter(|_| !value.is_empty()) {
                    Some(dir) => dirs.push(dir),
                    None => return Some(format!("(core.hooksPath in {})", file.display())),
                }
            }
            if key == "path" && section.starts_with("include") && !value.is_empty() {
                files.extend(place(value, &file, None));
            }
        }
    }
    dirs.iter().find_map(|dir| {
        let entries = std::fs::read_dir(dir).ok()?;
        entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".sample"))
            .find(|n| names.is_none_or(|names| names.contains(&n.as_str())))
            .map(|n| dir.join(n).display().to_string())
    })
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
