//! The repository git uses from a folder, found as git finds it (docs/POLICY.md, "Programs
//! read by their arguments"): an allowed `git status` runs what the repository's config
//! says (`core.fsmonitor`, `diff.external`), so it is allowed only where git would use the
//! session's own repository, never one the agent could have made from allowed writes
//! (`cp .git/HEAD x/HEAD`, then a config, then `mkdir x/objects x/refs`, then `cd x && git
//! status`).
//!
//! None of the configuration files git reads ([`super::gitconfig::config_chain`]) is
//! written by a prefix rule, whatever its name ([`config_written`]); what they make git run
//! is in [`super::gitruns`].
//!
//! Invariant: a superset of what git takes for a repository (a `HEAD` of any kind, a link
//! too, beside any of `objects`, `refs` or `commondir`; a `.git` folder or `gitdir:` file),
//! so that where git would use another repository than the session's, so does this
//! reading.

use std::path::{Path, PathBuf};

/// The repository git would use from `dir`: the first folder, from `dir` up, with a `.git`
/// folder or `gitdir:` file (its target), or that is one itself. `None`: no repository.
pub fn discover(dir: &Path) -> Option<PathBuf> {
    found(dir).map(|(repo, _)| repo)
}

/// The repository git would use from `dir` ([`discover`]), and the folder git found it
/// from: the one holding its `.git` (a linked worktree's or a submodule's own folder, where
/// its `gitdir:` file is), or the repository itself.
pub(super) fn found(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    for d in dir.ancestors() {
        let dot = d.join(".git");
        match std::fs::metadata(&dot) {
            Ok(m) if m.is_dir() => return Some((canonical(&dot), d.to_path_buf())),
            Ok(m) if m.is_file() => {
                // Where git dies on it (not read, not a `gitdir: ` line), the file itself:
                // never a repository.
                let bytes = super::file::bounded::read_file(&dot).unwrap_or_default();
                let target = gitfile_target(&bytes).map_or(dot, |t| d.join(t));
                return Some((canonical(&target), d.to_path_buf()));
            }
            _ => {}
        }
        if is_repository(d) {
            return Some((canonical(d), d.to_path_buf()));
        }
    }
    None
}

/// The path a `.git` file's `bytes` name, read exactly as git reads it
/// (`read_gitfile_gently`): the file begins with `gitdir: `, one space; everything after it
/// is the path, spaces, inner line breaks and all, but the line feeds and carriage returns
/// at its end; it ends at a NUL, as a C string does. `None` where git refuses the file (no
/// such start, no path). A sixty-fifth review: read with its spaces trimmed, `gitdir:
/// ../.git` with two spaces was the session's repository here, while git used the folder
/// ` ../.git` the agent made, with its `core.fsmonitor`.
pub(super) fn gitfile_target(bytes: &[u8]) -> Option<&Path> {
    let rest = bytes.strip_prefix(b"gitdir: ")?;
    let path = super::gitconfig::c_path(rest);
    (!path.as_os_str().is_empty() || rest.first() == Some(&0)).then_some(path)
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

/// Why a prefix rule may not write any of `written` (resolved) from a session in
/// `session`: one is a file git reads as configuration, by a name no rule knows, because a
/// configuration file includes it (`[include] path = ../.gitconfig.local` in `.git/config`,
/// or the user's `~/.gitconfig` including a dotfiles repository's `git/config`): a
/// `core.fsmonitor` there runs at the next `git status`; or a folder above one (`ln -s evil
/// git` where `git/config` is included); or the user's excludes file (a `!.env` there shows
/// `.env` to `rg` in every repository). The chain is read once, and each submodule's
/// in `modules`.
pub fn config_written<'a>(
    session: &Path,
    mut written: impl Iterator<Item = &'a Path>,
    env: super::rc::Env<'_>,
) -> Option<String> {
    let first = written.next()?;
    let repo = discover(session);
    // The submodules' too: git runs in each at the superproject's `git status`, with its
    // own configuration (a sixtieth review: `tee` wrote a file a submodule's config
    // included).
    let repos = match repo.as_deref().map(module_repos).transpose() {
        Ok(modules) => std::iter::once(repo.clone()).chain(modules.into_iter().flatten().map(Some)),
        Err(why) => return Some(format!("git's configuration cannot be told {why}")),
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for r in repos {
        match super::gitconfig::config_chain(r.as_deref(), env) {
            Ok(chain) => {
                files.extend(chain.iter().map(|(f, _)| f.clone()));
                files.extend(excludes_of(&chain, env));
            }
            Err(why) => return Some(format!("git's configuration cannot be told {why}")),
        }
    }
    let lowered = |p: &Path| PathBuf::from(p.to_string_lossy().to_lowercase());
    let settled: Vec<PathBuf> = files.iter().map(|f| lowered(&settle(f))).collect();
    std::iter::once(first).chain(written).find_map(|p| {
        let p = settle(p);
        let name = lowered(&p);
        settled.iter().find(|f| f.starts_with(&name)).map(|f| {
            format!(
                "it writes {}, {} git reads as configuration (a configuration file includes it, or names it as its excludes)",
                p.display(),
                if *f == name { "a file" } else { "a folder above a file" }
            )
        })
    })
}

/// Every configuration file git reads in the repository found from `dir` (or none), each
/// `include.path` and `includeIf.*.path` too ([`config_chain`]). `Err`: why that cannot be
/// told.
pub fn config_files(
    dir: &Path,
    env: super::rc::Env<'_>,
) -> Result<impl Iterator<Item = String>, String> {
    let chain = super::gitconfig::config_chain(discover(dir).as_deref(), env)?;
    Ok(chain
        .into_iter()
        .map(|(f, _)| f.to_string_lossy().into_owned()))
}

/// The files of the user's excludes that ripgrep and git read in every repository, as
/// found from `dir`: each `core.excludesFile` of git's configuration, and
/// `$XDG_CONFIG_HOME/git/ignore` (else `~/.config/git/ignore`). `Err`: why that cannot be
/// told.
pub fn excludes(dir: &Path, env: super::rc::Env<'_>) -> Result<Vec<PathBuf>, String> {
    let chain = super::gitconfig::config_chain(discover(dir).as_deref(), env)?;
    Ok(excludes_of(&chain, env))
}

fn excludes_of(chain: &[(PathBuf, String)], env: super::rc::Env<'_>) -> Vec<PathBuf> {
    let (home, xdg) = super::rc::home_and_config(env);
    let mut files: Vec<PathBuf> = xdg.map(|x| x.join("git/ignore")).into_iter().collect();
    for (file, text) in chain {
        for (section, key, value) in super::gitconfig::entries(text) {
            let value = value.unwrap_or_default();
            if section.starts_with("core") && key == "excludesfile" && !value.is_empty() {
                files.extend(super::gitconfig::place(&value, file, None, home.as_deref()));
            }
        }
    }
    files
}

/// `p` resolved as the OS would as far as it is there, the rest (not there yet) taken by
/// its words (`.git/../tools/git.inc` before `tools` is made is `tools/git.inc`).
fn settle(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = p;
    loop {
        if let Ok(real) = at.canonicalize() {
            let mut out = real;
            for c in rest.iter().rev() {
                match c {
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    std::path::Component::Normal(n) => out.push(n),
                    _ => {}
                }
            }
            return out;
        }
        match (at.parent(), at.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                at = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// The most folders looked at beneath a repository's `modules`; more are asked.
const MAX_MODULE_FOLDERS: usize = 64;

/// The repositories of the submodules git keeps in the `modules` folder of repository
/// `dir`'s common folder, nested ones too. `Err` past [`MAX_MODULE_FOLDERS`] or where one
/// cannot be read.
pub(super) fn module_repos(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut stack = vec![super::gitconfig::common_of(dir).join("modules")];
    let (mut out, mut seen) = (Vec::new(), 0);
    while let Some(d) = stack.pop() {
        let list = match std::fs::read_dir(&d) {
            Ok(list) => list,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("({} cannot be read: {e})", d.display())),
        };
        for entry in list {
            let entry = entry.map_err(|e| format!("({} cannot be read: {e})", d.display()))?;
            seen += 1;
            if seen > MAX_MODULE_FOLDERS {
                return Err("(more submodule folders than are read for one decision)".into());
            }
            let p = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if is_repository(&p) {
                stack.push(p.join("modules"));
                out.push(p);
            } else {
                // A submodule's name may have a `/` in it.
                stack.push(p);
            }
        }
    }
    Ok(out)
}

/// Whether git may take folder `d` itself for a repository: it holds a `HEAD` of any kind
/// (git takes a link whose text begins `refs/`, leading anywhere or nowhere: `HEAD ->
/// refs/heads`, a folder, made one) and `objects`, `refs` or `commondir`, each of any kind.
pub(super) fn is_repository(d: &Path) -> bool {
    let there = |n: &str| std::fs::symlink_metadata(d.join(n)).is_ok();
    there("HEAD") && ["objects", "refs", "commondir"].into_iter().any(there)
}

/// Whether git surely takes folder `d` for a repository (setup.c's `is_git_directory`): a
/// `HEAD` file that names a ref or an object, and `objects` and `refs` folders. A `.git`
/// that is not one is passed over: git looks further up, and outside any repository
/// compares two paths whole (`git diff src .`).
pub(super) fn surely_repository(d: &Path) -> bool {
    let head = super::file::bounded::read_file(&d.join("HEAD")).unwrap_or_default();
    let head = String::from_utf8_lossy(&head);
    let head = head.trim_end();
    let named = head
        .strip_prefix("ref:")
        .is_some_and(|r| r.trim_start().starts_with("refs/"))
        || (matches!(head.len(), 40 | 64) && head.bytes().all(|b| b.is_ascii_hexdigit()));
    named && d.join("objects").is_dir() && d.join("refs").is_dir()
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gitdir_file_keeps_what_git_keeps_of_it() {
        let t = |b: &[u8]| gitfile_target(b).map(|p| p.as_os_str().as_encoded_bytes().to_vec());
        assert_eq!(t(b"gitdir: ../.git\r\n\n"), Some(b"../.git".to_vec()));
        assert_eq!(t(b"gitdir:  x \n"), Some(b" x ".to_vec()));
        assert_eq!(t(b"gitdir: a\nb\n"), Some(b"a\nb".to_vec()));
        assert_eq!(t(b"gitdir: a\0b\n"), Some(b"a".to_vec()));
        // A NUL first is an empty path git takes (the folder holding the file); none is
        // refused, as is any other start.
        assert_eq!(t(b"gitdir: \0"), Some(Vec::new()));
        assert_eq!(t(b"gitdir: \r\n"), None);
        assert_eq!(t(b"gitdir:../.git"), None);
        assert_eq!(t(b" gitdir: ../.git"), None);
    }

    #[test]
    fn an_include_naming_a_fifo_is_not_waited_on() {
        let d = std::env::temp_dir().join(format!("acp-qb-gitfifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("repo/.git")).unwrap();
        nix::unistd::mkfifo(&d.join("repo/inc"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(d.join("repo/.git/config"), "[include]\n\tpath = ../inc\n").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let session = d.join("repo");
        std::thread::spawn(move || {
            let written = [session.join("a.txt")];
            let no_env = |_: &str| None;
            let why = config_written(&session, written.iter().map(|p| p.as_path()), &no_env);
            let _ = tx.send(why);
        });
        // Far above the microseconds it takes: a read of the FIFO would never end.
        let why = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("decided without waiting on the FIFO");
        assert!(why.is_some_and(|w| w.contains("cannot be told")));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn git_uses_the_nearest_repository_a_folder_that_is_one_included() {
        let d = std::env::temp_dir().join(format!("acp-qb-gitdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join(".git/objects")).unwrap();
        std::fs::write(d.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(d.join("src/made/refs")).unwrap();
        let own = discover(&d).unwrap();
        assert_eq!(discover(&d.join("src")).as_ref(), Some(&own));
        // A folder the agent made look like a repository is one, whatever its `HEAD` is: git
        // takes a link to `refs/…`, leading anywhere or nowhere.
        for head in ["link", "file"] {
            let _ = std::fs::remove_file(d.join("src/made/HEAD"));
            match head {
                "link" => std::os::unix::fs::symlink("refs/heads", d.join("src/made/HEAD")),
                _ => std::fs::write(d.join("src/made/HEAD"), "x"),
            }
            .unwrap();
            assert_eq!(
                discover(&d.join("src/made")),
                Some(d.join("src/made").canonicalize().unwrap()),
                "{head}"
            );
        }
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
