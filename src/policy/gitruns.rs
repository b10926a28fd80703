//! What git may run besides itself from a session's repository (docs/POLICY.md, "Programs
//! read by their arguments"): a hook its subcommand runs ([`hooks_in`]), a filter, diff or
//! merge driver that may run the worktree's code ([`drivers`]), a `trailer.*.command` given
//! a value, a new clone's hooks and configuration from the templates, a URL an `insteadOf`
//! rewrites, and the same in each submodule git goes into. A git subcommand is asked while
//! any of them may run code the agent writes.
//!
//! Invariant: every place git takes a hook or a driver from is read, or the command is
//! asked: each configuration file git reads ([`super::gitconfig::config_chain`]), the
//! repository's hooks and its common folder's, each submodule's kept in `modules/`, the
//! templates a clone copies, and the worktree's top, from where git runs them and places a
//! relative `core.hooksPath` (a linked worktree's own folder, a `core.worktree`).

use std::path::{Path, PathBuf};

use super::gitconfig::{config_chain, entries, place};
use super::rc::Env;

/// Every configuration file git reads in a repository, each with its text.
type Chain = Vec<(PathBuf, String)>;

/// A repository as git runs in it.
struct Repo {
    /// Its folder (`None`: no repository, as outside one).
    dir: Option<PathBuf>,
    /// The top of its worktree, where git runs hooks and drivers and from where it places a
    /// relative `core.hooksPath`; `None` where it cannot be told.
    top: Option<PathBuf>,
    chain: Chain,
}

impl Repo {
    /// The repository git uses from `dir`; `Err`: why its configuration cannot be told.
    fn from(dir: &Path, env: Env<'_>) -> Result<Repo, String> {
        let found = super::gitdir::found(dir);
        let repo = found.as_ref().map(|(r, _)| r.clone());
        let chain = config_chain(repo.as_deref(), env)?;
        let holder = found.map(|(_, h)| h);
        let top = worktree(repo.as_deref(), holder, &chain, env);
        Ok(Repo {
            dir: repo,
            top,
            chain,
        })
    }

    /// The submodules git keeps in the `modules` folder of this repository's common folder,
    /// nested ones too ([`super::gitdir::module_repos`]): `git status` and `git diff` run
    /// git in each (a fifty-eighth review: a submodule's `nbstripout` filter ran at the
    /// superproject's `git status`).
    fn modules(&self, env: Env<'_>) -> Result<Vec<Repo>, String> {
        let Some(dir) = &self.dir else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for p in super::gitdir::module_repos(dir)? {
            let chain = config_chain(Some(&p), env)?;
            // git runs in it from its worktree, which its `core.worktree` names.
            let top = worktree(Some(&p), None, &chain, env);
            out.push(Repo {
                dir: Some(p),
                top,
                chain,
            });
        }
        Ok(out)
    }
}

/// The top of repository `repo`'s worktree: where its `core.worktree` leads (from the
/// repository's folder), else `holder`, the folder git found it from. `None` where it
/// cannot be told: `GIT_DIR` or `GIT_WORK_TREE` set, more than one `core.worktree`, one
/// that cannot be placed, or neither.
fn worktree(
    repo: Option<&Path>,
    holder: Option<PathBuf>,
    chain: &Chain,
    env: Env<'_>,
) -> Option<PathBuf> {
    if env("GIT_DIR").is_some() || env("GIT_WORK_TREE").is_some() {
        return None;
    }
    let (home, _) = super::rc::home_and_config(env);
    let mut set = chain.iter().flat_map(|(file, text)| {
        entries(text)
            .into_iter()
            .filter(|(section, key, _)| section == "core" && key == "worktree")
            .map(|(_, _, value)| place(&value.unwrap_or_default(), file, repo, home.as_deref()))
            .collect::<Vec<_>>()
    });
    match (set.next(), set.next()) {
        (None, _) => holder,
        (Some(one), None) => one,
        (Some(_), Some(_)) => None,
    }
}

/// The hooks each of the model's subcommands may run (githooks(5)); another subcommand
/// (allowed by an exact rule: `git push`, `git pull`) may run any. The readers (`log`,
/// `show`, `blame`, `grep`, `ls-files`, `rev-parse`, `remote`, `config`, `branch`) run
/// none.
fn hooks_of(sub: &str) -> Option<&'static [&'static str]> {
    Some(match sub {
        "log" | "show" | "whatchanged" | "blame" | "grep" | "ls-files" | "ls-tree"
        | "rev-parse" | "remote" | "config" | "branch" | "cat-file" | "shortlog" | "rev-list"
        | "version" | "help" => &[],
        // They may write the index (`describe --dirty` refreshes it).
        "status" | "diff" | "add" | "describe" => &["post-index-change"],
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

/// Why `words`, a `git` command run from any of `folders` in a session in `session`, may
/// not be allowed: another repository than the session's
/// ([`super::gitdir::not_own`]), a driver that may run the worktree's code ([`drivers`]), a
/// `trailer.*.command` given a value, or a hook its subcommand may run ([`hooks_in`]), in the
/// repository or in a submodule: hooks often run files of the worktree, which allowed
/// commands write (husky's `core.hooksPath = .husky/_`, the pre-commit framework's
/// `.pre-commit-config.yaml`). Each configuration is read once.
pub fn refused(session: &Path, folders: &[PathBuf], words: &[String]) -> Option<String> {
    refused_in(session, folders, words, &|k: &str| std::env::var_os(k))
}

/// [`refused`] in environment `env`.
fn refused_in(
    session: &Path,
    folders: &[PathBuf],
    words: &[String],
    env: Env<'_>,
) -> Option<String> {
    if super::args::base(words.first()?) != "git" {
        return None;
    }
    if let Some(why) = super::gitdir::not_own(session, folders) {
        return Some(why);
    }
    let sub = words.get(super::args::git::subcommand_at(words))?;
    // These run no driver and no hook but `core.fsmonitor`. The readers that show a diff or
    // a file's text run the drivers (`git show`, `git log -p`, `git blame`, `git cat-file
    // --textconv` ran a `textconv`).
    let lister = matches!(
        sub.as_str(),
        "rev-parse"
            | "remote"
            | "config"
            | "branch"
            | "ls-files"
            | "ls-tree"
            | "rev-list"
            | "version"
            | "help"
    );
    if matches!(sub.as_str(), "version" | "help") {
        return None;
    }
    let why = |why: String| Some(format!("`git {sub}` may run {why}"));
    let repo = match Repo::from(session, env) {
        Ok(repo) => repo,
        Err(e) => return why(format!("what git's configuration sets {e}")),
    };
    let modules = match repo.modules(env) {
        Ok(modules) => modules,
        Err(e) => return why(format!("what a submodule's configuration sets {e}")),
    };
    let clone = sub == "clone";
    for r in std::iter::once(&repo).chain(&modules) {
        if let Some(found) = drivers(r, session, clone, lister, env) {
            return why(found);
        }
    }
    if lister {
        return None;
    }
    // A diff of a submodule's changes as a diff or a log runs git in the submodule's folder
    // wherever history had one, with the repository found there, not only where the index
    // has one (a sixty-first review: `git show --submodule=diff HEAD~1` ran a textconv of
    // an agent's `sub/.git/config`).
    let by_word = words.iter().find(|w| {
        w.strip_prefix("--submodule")
            .is_some_and(|v| v.is_empty() || (v.starts_with('=') && v != "=short"))
    });
    let by_config = repo.chain.iter().find(|(_, text)| {
        may_show_diff(sub, words)
            && entries(text).iter().any(|(section, key, value)| {
                section == "diff"
                    && key == "submodule"
                    && value
                        .as_deref()
                        .is_some_and(|v| !v.eq_ignore_ascii_case("short"))
            })
    });
    if let Some(how) = by_word
        .cloned()
        .or_else(|| by_config.map(|(f, _)| format!("diff.submodule in {}", f.display())))
    {
        return why(format!(
            "git in a submodule's folder from history ({how}), with whatever repository is there"
        ));
    }
    let names = hooks_of(sub);
    if names.is_some_and(|n| n.is_empty()) {
        return None;
    }
    // `git commit --trailer 'see=HEAD;touch x'`: a `trailer.*.command` runs with the value
    // put in as text, by the shell (a fifty-eighth review).
    if words.iter().any(|w| w.starts_with("--trailer"))
        && repo.chain.iter().any(|(_, text)| {
            entries(text).iter().any(|(section, key, _)| {
                section.starts_with("trailer") && matches!(key.as_str(), "command" | "cmd")
            })
        })
    {
        return why("a `trailer.*.command` with `--trailer`'s value in the shell's words".into());
    }
    if clone {
        if let Some(found) =
            templates(&repo.chain, names, env).or_else(|| rewritten(&repo.chain, words))
        {
            return why(found);
        }
    }
    std::iter::once(&repo)
        .chain(&modules)
        .find_map(|r| hooks_in(r, names, clone, env))
        .and_then(|found| {
            why(format!(
                "the repository's hook {found}, and what it runs may be files the agent writes"
            ))
        })
}

/// Whether `git SUB` may show a diff (where `diff.submodule` applies): every subcommand
/// but those that show none, and of those, the ones that show one with `-p`, `-i`, `-e`
/// or `-v` (`git add -p`, `git status -v`, `git commit -v`) only without such a flag.
fn may_show_diff(sub: &str, words: &[String]) -> bool {
    let never = matches!(
        sub,
        "fetch"
            | "push"
            | "clone"
            | "init"
            | "describe"
            | "grep"
            | "rm"
            | "mv"
            | "switch"
            | "tag"
            | "blame"
            | "annotate"
            | "cat-file"
            | "ls-remote"
            | "merge-base"
            | "show-ref"
            | "symbolic-ref"
            | "check-ignore"
            | "check-attr"
            | "shortlog"
    );
    let without_flag = matches!(
        sub,
        "status" | "add" | "commit" | "restore" | "checkout" | "reset"
    );
    let flag = |w: &String| {
        let long = ["--patch", "--interactive", "--edit", "--verbose"];
        long.iter().any(|l| w.starts_with(l))
            || (w.starts_with('-') && !w.starts_with("--") && w.contains(['p', 'i', 'e', 'v']))
    };
    !(never || (without_flag && !words.iter().any(flag)))
}

/// The drivers known to run no code of the folder they run in (difftastic's `difft` reads
/// only its `DFT_*` variables, no file of its own): a driver program by any
/// other name may load it (`prettier` its `prettier.config.js`, `awk -f` and `sed -f` a
/// script, `python3 -m nbstripout` a `nbstripout.py`: a sixtieth review), so git is asked
/// while one is set.
#[rustfmt::skip]
const PLAIN_DRIVERS: &[&str] = &[
    "git-lfs", "git-crypt", "cat", "strings", "hexdump", "xxd", "od", "iconv", "pdftotext",
    "difft",
];

/// A filter, diff or merge driver set in any configuration file git reads in repository
/// `r` (`filter.*.clean`, `smudge`, `process`; `diff.*.textconv`, `command`;
/// `diff.external`; `merge.*.driver`; `core.fsmonitor`, alone when `only_monitor`) that
/// may run code of the worktree: a command that is not one plain program of
/// [`PLAIN_DRIVERS`] named by its name or by a path outside the worktree and the session's
/// folder, or a name that `PATH` finds inside the session from the worktree's top. git
/// runs such a driver from there for any file a `.gitattributes` (which the agent writes)
/// names, so the nbstripout install's `python3 -m nbstripout` ran a `nbstripout.py`
/// written there. Where the top cannot be told, or for a `clone` (whose new worktree is
/// the cloned files) while `PATH` has a relative folder, any driver is.
fn drivers(
    r: &Repo,
    session: &Path,
    clone: bool,
    only_monitor: bool,
    env: Env<'_>,
) -> Option<String> {
    for (file, text) in &r.chain {
        for (section, key, value) in entries(text) {
            // A merge driver runs at `git show --remerge-diff`, a stash, a checkout `-m`
            // (a fifty-eighth review).
            // `core.fsmonitor`, not a boolean, is a hook git runs at every read of the
            // index, `ls-files` too (a sixtieth review).
            let monitor = section == "core"
                && key == "fsmonitor"
                && !value.as_deref().is_none_or(|v| {
                    matches!(
                        v.to_ascii_lowercase().as_str(),
                        "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
                    )
                });
            if only_monitor && !monitor {
                continue;
            }
            let driver = monitor
                || (section.starts_with("filter")
                    && matches!(key.as_str(), "clean" | "smudge" | "process"))
                || (section.starts_with("diff") && matches!(key.as_str(), "textconv" | "command"))
                || (section == "diff" && key == "external")
                || (section.starts_with("merge") && key == "driver");
            if !driver {
                continue;
            }
            let value = value.unwrap_or_default();
            let found = || {
                Some(format!(
                    "the driver `{value}` ({section}.{key} in {}), which may run code the worktree holds",
                    file.display()
                ))
            };
            // With no repository (a clone's), git runs it from the folder it is in.
            let top = match (&r.dir, &r.top) {
                (_, Some(top)) => top.as_path(),
                (None, None) => session,
                (Some(_), None) => return found(),
            };
            let mut words = value.split_ascii_whitespace();
            let program = words.next().unwrap_or_default();
            let name = program.rsplit('/').next().unwrap_or_default();
            let plain = value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " \t-_.,/:=%+@".contains(c));
            let runs_code = !PLAIN_DRIVERS.contains(&name)
                || (program.contains('/')
                    && (!program.starts_with('/')
                        || [session, top]
                            .iter()
                            .any(|t| Path::new(program).starts_with(t))));
            // git runs it from the worktree's top, where a `PATH` of `.` or
            // `node_modules/.bin` finds the agent's program first; a clone's top is the
            // cloned files (`git-lfs` among them).
            let planted = !program.contains('/')
                && (super::on_path::program_refused(program, &[top.to_path_buf()], session)
                    .is_some()
                    || (clone && relative_on_path(env)));
            if !plain || runs_code || planted {
                return found();
            }
        }
    }
    None
}

/// Whether `PATH` has a folder that is not absolute (`.`, an empty one, `bin`).
fn relative_on_path(env: Env<'_>) -> bool {
    env("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| !d.is_absolute()))
}

/// A hook of `names` (`None`: any) that git may run in repository `r`: a file in its
/// `hooks` folder (or its common folder's, for a worktree) other than git's samples, or in
/// a `core.hooksPath` folder set in any configuration file git reads; or a `[hook]`
/// setting, or a `core.hooksPath` that cannot be placed, for any. For a `clone`, a relative
/// `core.hooksPath` is one: it is placed in the new worktree, the cloned files.
fn hooks_in(r: &Repo, names: Option<&[&str]>, clone: bool, env: Env<'_>) -> Option<String> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = &r.dir {
        dirs.push(dir.join("hooks"));
        dirs.push(super::gitconfig::common_of(dir).join("hooks"));
    }
    let (home, _) = super::rc::home_and_config(env);
    for (file, text) in &r.chain {
        for (section, key, value) in entries(text) {
            if section.starts_with("hook") {
                return Some(format!("(set in {})", file.display()));
            }
            if section != "core" || key != "hookspath" {
                continue;
            }
            // (Every value was read whole in the chain.)
            let value = value.unwrap_or_default();
            let relative = !value.starts_with('/') && !value.starts_with("~/");
            let top = r.top.as_deref().filter(|_| !(clone && relative));
            match place(&value, file, top, home.as_deref()) {
                Some(dir) if !value.is_empty() && (top.is_some() || !relative) => dirs.push(dir),
                _ => return Some(format!("(core.hooksPath in {})", file.display())),
            }
        }
    }
    dirs.iter().find_map(|dir| hook_file(dir, names))
}

/// A hook of `names` (`None`: any) in folder `dir` other than git's samples.
fn hook_file(dir: &Path, names: Option<&[&str]>) -> Option<String> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".sample"))
        .find(|n| names.is_none_or(|names| names.contains(&n.as_str())))
        .map(|n| dir.join(n).display().to_string())
}

/// What git's template folders hold besides these (`info/exclude`, the hooks of
/// [`templates`]) is asked for a clone: git copies all of it into the new repository, a
/// `config` too (a sixtieth review: a template's `core.hooksPath = .githooks` ran the
/// cloned files' hook).
const TEMPLATE_PARTS: &[&str] = &["branches", "description", "hooks", "info"];

/// A hook of `names` a new clone takes from the templates git copies into its repository,
/// or anything else there but [`TEMPLATE_PARTS`]: from `GIT_TEMPLATE_DIR`, each
/// `init.templateDir` set, and git's own, wherever it was built to look (beside the `git`
/// that `PATH` finds, `/usr/local` or `/usr`: a fifty-eighth review, a user's template
/// `post-checkout` that runs the repository's own `.githooks`); a template folder that
/// cannot be placed is one.
fn templates(chain: &Chain, names: Option<&[&str]>, env: Env<'_>) -> Option<String> {
    let (home, _) = super::rc::home_and_config(env);
    let mut dirs: Vec<PathBuf> = env("GIT_TEMPLATE_DIR")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    // git's own: `$(prefix)/share/git-core/templates`, its `prefix` the one above its `bin`.
    let path = env("PATH").unwrap_or_default();
    let git = std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
        .and_then(|g| g.canonicalize().ok());
    let own = git
        .as_deref()
        .and_then(|g| Some(g.parent()?.parent()?.to_path_buf()));
    for prefix in own
        .iter()
        .map(PathBuf::as_path)
        .chain([Path::new("/usr/local"), Path::new("/usr")])
    {
        dirs.push(prefix.join("share/git-core/templates"));
    }
    for (file, text) in chain {
        for (section, key, value) in entries(text) {
            if section == "init" && key == "templatedir" {
                let value = value.unwrap_or_default();
                match place(&value, file, None, home.as_deref()) {
                    Some(dir) if Path::new(&value).is_absolute() || value.starts_with("~/") => {
                        dirs.push(dir)
                    }
                    _ => {
                        return Some(format!(
                            "the templates of init.templateDir in {}",
                            file.display()
                        ))
                    }
                }
            }
        }
    }
    dirs.iter().find_map(|d| {
        let other = std::fs::read_dir(d)
            .ok()?
            .flatten()
            .find(|e| !TEMPLATE_PARTS.contains(&e.file_name().to_string_lossy().as_ref()));
        match other {
            Some(e) => Some(format!(
                "{}, a template git copies into the new repository",
                e.path().display()
            )),
            None => hook_file(&d.join("hooks"), names),
        }
    })
}

/// A `url.<base>.insteadOf` of `chain` that rewrites a word of `words`, a clone's: git
/// clones from what it leads to, ssh or a helper's (a sixtieth review: an `https://`
/// clone went over ssh).
fn rewritten(chain: &Chain, words: &[String]) -> Option<String> {
    chain.iter().find_map(|(file, text)| {
        entries(text).into_iter().find_map(|(section, key, value)| {
            let value = value.unwrap_or_default();
            (section.starts_with("url")
                && key == "insteadof"
                && words.iter().any(|w| w.starts_with(&value)))
            .then(|| {
                format!(
                    "another URL than its words say (url.*.insteadOf `{value}` in {})",
                    file.display()
                )
            })
        })
    })
}

/// A hook of `names` git may run in the repository it uses from `dir` ([`hooks_in`]), for
/// the tests.
#[cfg(test)]
pub(super) fn hooks(dir: &Path, names: Option<&[&str]>, env: Env<'_>) -> Option<String> {
    hooks_in(&Repo::from(dir, env).ok()?, names, false, env)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder with a home of its own: real git runs there with that home only.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let d =
                std::env::temp_dir().join(format!("acp-qb-gitruns-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(d.join("home")).unwrap();
            let s = Scratch(d.canonicalize().unwrap());
            s.git(&s.0, &["config", "--global", "user.email", "a@b"]);
            s.git(&s.0, &["config", "--global", "user.name", "a"]);
            s.git(
                &s.0,
                &["config", "--global", "protocol.file.allow", "always"],
            );
            s
        }

        /// Runs the real git in `dir` with this home, which must succeed.
        fn git(&self, dir: &Path, args: &[&str]) {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("HOME", self.0.join("home"))
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env_remove("XDG_CONFIG_HOME")
                .output()
                .expect("git runs");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }

        /// A repository at `name` with one commit of `files`.
        fn repo(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
            let r = self.0.join(name);
            std::fs::create_dir_all(&r).unwrap();
            self.git(&r, &["init", "-q"]);
            for (f, text) in files {
                std::fs::create_dir_all(r.join(f).parent().unwrap()).unwrap();
                std::fs::write(r.join(f), text).unwrap();
            }
            self.git(&r, &["add", "-A"]);
            self.git(&r, &["commit", "-qm", "first"]);
            r
        }

        /// A program that touches `canary` (and passes its input on).
        fn toucher(&self, f: &Path, canary: &str) {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            let canary = self.0.join(canary);
            std::fs::write(f, format!("#!/bin/sh\ntouch '{}'\ncat\n", canary.display())).unwrap();
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }

        fn ran(&self, canary: &str) -> bool {
            self.0.join(canary).exists()
        }

        /// The environment git runs in here: this home and no system files.
        fn env(&self) -> impl Fn(&str) -> Option<std::ffi::OsString> {
            let home = self.0.join("home").into_os_string();
            move |k: &str| match k {
                "HOME" => Some(home.clone()),
                "GIT_CONFIG_SYSTEM" => Some("/dev/null".into()),
                "PATH" => Some("/usr/bin:/bin".into()),
                _ => None,
            }
        }

        /// [`refused_in`] of `cmd` run in `session`, in [`Scratch::env`].
        fn refused(&self, session: &Path, cmd: &str) -> Option<String> {
            let words: Vec<String> = cmd.split(' ').map(str::to_owned).collect();
            refused_in(session, &[session.to_path_buf()], &words, &self.env())
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A linked worktree's hooks and drivers run from its own folder, where a relative
    /// `core.hooksPath` is placed too, not from its repository's folder in the main one's
    /// `.git/worktrees` (a fifty-eighth review, with real git).
    #[test]
    fn a_linked_worktrees_hooks_are_found_in_its_own_folder() {
        let s = Scratch::new("worktree");
        let main = s.repo("main", &[("a.txt", "a\n")]);
        s.git(&main, &["worktree", "add", "-q", "../wt"]);
        let wt = s.0.join("wt");
        assert_eq!(s.refused(&wt, "git commit -m n"), None);
        s.git(&main, &["config", "core.hooksPath", ".githooks"]);
        // What the agent writes in its worktree.
        s.toucher(&wt.join(".githooks/pre-commit"), "hook-ran");
        let why = s.refused(&wt, "git commit -m n").expect("asked");
        assert!(why.contains("wt/.githooks/pre-commit"), "{why}");
        std::fs::write(wt.join("n.txt"), "n\n").unwrap();
        s.git(&wt, &["add", "n.txt"]);
        s.git(&wt, &["commit", "-qm", "n"]);
        assert!(s.ran("hook-ran"), "git ran the worktree's hook");
    }

    /// `git status` in a superproject runs git in each changed submodule, with the
    /// submodule's own configuration: its filter ran (a fifty-eighth review, with real
    /// git).
    #[test]
    fn a_submodules_own_drivers_make_the_superprojects_git_asked() {
        let s = Scratch::new("submodule");
        s.repo("lib", &[("a.txt", "a\n")]);
        let sup = s.repo("super", &[("r.txt", "r\n")]);
        s.git(&sup, &["submodule", "add", "-q", "../lib", "sub"]);
        s.git(&sup, &["commit", "-qm", "sub"]);
        assert_eq!(s.refused(&sup, "git status"), None);
        let sub = sup.join("sub");
        s.git(&sub, &["config", "filter.t.clean", "./clean.sh"]);
        // What the agent writes in the submodule's worktree.
        s.toucher(&sub.join("clean.sh"), "filter-ran");
        std::fs::write(sub.join(".gitattributes"), "*.txt filter=t\n").unwrap();
        let why = s.refused(&sup, "git status").expect("asked");
        assert!(
            why.contains("./clean.sh") && why.contains("modules"),
            "{why}"
        );
        assert!(s.refused(&sup, "git log -p").is_some());
        // The same size, another time: git hashes it again, through the filter.
        std::fs::write(sub.join("a.txt"), "c\n").unwrap();
        let then = std::time::UNIX_EPOCH + std::time::Duration::from_secs(946_684_800);
        std::fs::File::options()
            .write(true)
            .open(sub.join("a.txt"))
            .and_then(|f| f.set_modified(then))
            .unwrap();
        s.git(&sup, &["status", "--short"]);
        assert!(
            s.ran("filter-ran"),
            "the superproject's git status ran the submodule's filter"
        );
    }

    /// A clone's repository takes its hooks from the templates, and a relative
    /// `core.hooksPath` from the cloned files: `git clone` ran both (a fifty-eighth review,
    /// with real git).
    #[test]
    fn a_clone_is_asked_where_its_hooks_come_from_templates_or_the_cloned_files() {
        let s = Scratch::new("clone");
        let src = s.repo("src", &[("a.txt", "a\n")]);
        s.toucher(&src.join(".githooks/post-checkout"), "cloned-hook-ran");
        s.git(&src, &["add", "-A"]);
        s.git(&src, &["commit", "-qm", "hooks"]);
        assert_eq!(s.refused(&s.0, "git clone src c0"), None);
        // A relative `core.hooksPath` of the user's.
        s.git(&s.0, &["config", "--global", "core.hooksPath", ".githooks"]);
        let why = s.refused(&s.0, "git clone src c1").expect("asked");
        assert!(why.contains("core.hooksPath"), "{why}");
        s.git(&s.0, &["clone", "-q", "src", "c1"]);
        assert!(
            s.ran("cloned-hook-ran"),
            "git clone ran the cloned repository's hook"
        );
        s.git(&s.0, &["config", "--global", "--unset", "core.hooksPath"]);
        // A template's `post-checkout`.
        let tpl = s.0.join("home/tpl");
        s.toucher(&tpl.join("hooks/post-checkout"), "template-hook-ran");
        s.git(&s.0, &["config", "--global", "init.templateDir", "~/tpl"]);
        let why = s.refused(&s.0, "git clone src c2").expect("asked");
        assert!(why.contains("tpl/hooks/post-checkout"), "{why}");
        s.git(&s.0, &["clone", "-q", "src", "c2"]);
        assert!(
            s.ran("template-hook-ran"),
            "git clone ran the template's hook"
        );
    }

    /// A template's `config` is copied into the clone (its `core.hooksPath` ran the cloned
    /// files' hook), and a `url.*.insteadOf` clones from another URL than the words say (a
    /// sixtieth review, with real git).
    #[test]
    fn a_clone_is_asked_where_a_template_config_or_an_instead_of_leads_it() {
        let s = Scratch::new("clone-config");
        let src = s.repo("src", &[("a.txt", "a\n")]);
        s.toucher(&src.join(".githooks/post-checkout"), "cloned-hook-ran");
        s.git(&src, &["add", "-A"]);
        s.git(&src, &["commit", "-qm", "hooks"]);
        let tpl = s.0.join("home/tpl");
        std::fs::create_dir_all(tpl.join("info")).unwrap();
        s.git(&s.0, &["config", "--global", "init.templateDir", "~/tpl"]);
        assert_eq!(s.refused(&s.0, "git clone src c0"), None);
        std::fs::write(tpl.join("config"), "[core]\n\thooksPath = .githooks\n").unwrap();
        let why = s.refused(&s.0, "git clone src c1").expect("asked");
        assert!(why.contains("tpl/config"), "{why}");
        s.git(&s.0, &["clone", "-q", "src", "c1"]);
        assert!(
            s.ran("cloned-hook-ran"),
            "the template's config ran the hook"
        );
        std::fs::remove_file(tpl.join("config")).unwrap();
        // An `https://` URL git rewrites to the local `src`.
        let from = format!("url.{}/.insteadOf", src.display());
        s.git(
            &s.0,
            &["config", "--global", &from, "https://example.invalid/"],
        );
        let why = s
            .refused(&s.0, "git clone https://example.invalid/ c2")
            .expect("asked");
        assert!(why.contains("insteadOf"), "{why}");
        s.git(&s.0, &["clone", "-q", "https://example.invalid/", "c2"]);
        assert!(
            s.0.join("c2/a.txt").exists(),
            "git cloned the rewritten URL"
        );
        assert_eq!(s.refused(&s.0, "git clone https://example.org/r c3"), None);
    }

    /// A submodule of a submodule, never initialized, whose `.git` the agent makes: git
    /// goes into it at the superproject's `git status` and runs its `core.fsmonitor`; and
    /// a file a submodule's configuration includes is configuration too (a sixtieth
    /// review, with real git).
    #[test]
    fn a_nested_submodules_repository_and_a_submodules_includes_are_guarded() {
        let s = Scratch::new("nested");
        s.repo("inner", &[("i.txt", "i\n")]);
        let lib = s.repo("lib", &[("a.txt", "a\n")]);
        s.git(&lib, &["submodule", "add", "-q", "../inner", "nested"]);
        s.git(&lib, &["commit", "-qm", "nested"]);
        let sup = s.repo("super", &[("r.txt", "r\n")]);
        s.git(&sup, &["submodule", "add", "-q", "../lib", "sub"]);
        s.git(&sup, &["commit", "-qm", "sub"]);
        let git_words = |c: &str| c.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let foreign =
            |c: &str| super::super::gitindex::foreign_submodule(&sup, &git_words(c), &mut || true);
        assert_eq!(foreign("git status"), None);
        // What the agent writes: a repository in the empty `sub/nested`.
        let nested = sup.join("sub/nested");
        s.git(&nested, &["init", "-q"]);
        s.toucher(&nested.join("monitor.sh"), "monitor-ran");
        s.git(&nested, &["config", "core.fsmonitor", "./monitor.sh"]);
        let why = foreign("git status").expect("asked");
        assert!(why.contains("sub/nested"), "{why}");
        s.git(&sup, &["status", "--short"]);
        assert!(s.ran("monitor-ran"), "git status ran the nested fsmonitor");
        std::fs::remove_dir_all(&nested).unwrap();
        std::fs::create_dir(&nested).unwrap();
        assert_eq!(foreign("git status"), None);
        // A submodule's configuration includes a file of the worktree.
        let inc = sup.join("inc.cfg");
        let env = s.env();
        let written =
            |p: &Path| super::super::gitdir::config_written(&sup, std::iter::once(p), &env);
        assert_eq!(written(&inc), None);
        s.git(
            &sup.join("sub"),
            &["config", "include.path", &inc.display().to_string()],
        );
        let why = written(&inc).expect("refused");
        assert!(why.contains("inc.cfg"), "{why}");
    }
    /// A diff of submodules as a diff or a log goes into each submodule's folder from
    /// history, not only where the index has a gitlink, with the repository found there (a
    /// sixty-first review, with real git: a textconv of an agent's `sub/.git/config` ran).
    #[test]
    fn a_submodule_diff_from_history_is_asked() {
        let s = Scratch::new("from-history");
        let sup = s.repo("super", &[("r.txt", "r\n")]);
        s.git(&sup, &["clone", "-q", ".git", "sub"]);
        let sub = sup.join("sub");
        s.git(&sup, &["add", "sub"]);
        // From history: a commit had the gitlink, the index no longer has it; real git
        // goes into `sub` for a diff of it and runs the textconv `sub/.git/config` names.
        s.git(&sup, &["commit", "-qm", "sub"]);
        s.git(&sup, &["rm", "-q", "--cached", "sub"]);
        s.git(&sup, &["commit", "-qm", "no sub"]);
        std::fs::write(sup.join("sub/r.txt"), "changed\n").unwrap();
        s.git(&sup.join("sub"), &["commit", "-qam", "changed"]);
        s.toucher(&sup.join("conv.sh"), "textconv-ran");
        let conv = sup.join("conv.sh").display().to_string();
        s.git(&sub, &["config", "diff.x.textconv", &conv]);
        std::fs::write(sub.join(".git/info/attributes"), "* diff=x\n").unwrap();
        s.git(&sup, &["show", "--submodule=diff", "HEAD~1"]);
        assert!(
            s.ran("textconv-ran"),
            "git show ran the submodule's textconv"
        );
        for cmd in [
            "git show --submodule=diff HEAD~1",
            "git log -p --submodule HEAD",
            "git diff --submodule=log HEAD~2",
        ] {
            let why = s
                .refused(&sup, cmd)
                .unwrap_or_else(|| panic!("{cmd}: allowed"));
            assert!(why.contains("from history"), "{cmd}: {why}");
        }
        assert_eq!(s.refused(&sup, "git show --submodule=short HEAD~1"), None);
        s.git(&sup, &["config", "diff.submodule", "diff"]);
        for cmd in [
            "git show HEAD~1",
            "git -c a.b=c log HEAD",
            "git stash show -p",
            "git status -v",
            "git add -p",
            "git commit -v -m x",
        ] {
            let why = s
                .refused(&sup, cmd)
                .unwrap_or_else(|| panic!("{cmd}: allowed"));
            assert!(why.contains("diff.submodule"), "{cmd}: {why}");
        }
        // Those that show no diff are not asked for it.
        for cmd in ["git status", "git add r.txt", "git grep -e r", "git fetch"] {
            assert_eq!(s.refused(&sup, cmd), None, "{cmd}");
        }
    }
}
