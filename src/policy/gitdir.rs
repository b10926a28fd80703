//! The repository git uses from a folder, found as git finds it (docs/POLICY.md, "Programs
//! read by their arguments"): an allowed `git status` runs what the repository's config
//! says (`core.fsmonitor`, `diff.external`), so it is allowed only where git would use the
//! session's own repository, never one the agent could have made from allowed writes
//! (`cp .git/HEAD x/HEAD`, then a config, then `mkdir x/objects x/refs`, then `cd x && git
//! status`).
//!
//! It also finds the hooks a repository has ([`hooks`]): a git subcommand is asked while
//! there is one it may run, since hooks often run files of the worktree. And it reads every
//! configuration file git reads, includes too ([`config_chain`]): none is written by a
//! prefix rule, whatever its name ([`config_written`]).
//!
//! Invariant: a superset of what git takes for a repository (a `HEAD` of any kind, a link
//! too, beside any of `objects`, `refs` or `commondir`; a `.git` folder or `gitdir:` file),
//! so that where git would use another repository than the session's, so does this
//! reading.

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

/// The most configuration files read for one decision, includes and all.
const MAX_CONFIG_FILES: usize = 16;

/// Why `words`, a `git` command run from any of `folders` in a session in `session`, may
/// not be allowed: another repository than the session's ([`not_own`]), a filter or diff
/// driver that may run the worktree's code ([`drivers`]), or a hook the repository has that
/// its subcommand may run: hooks often run files of the worktree, which allowed commands
/// write (husky's `core.hooksPath = .husky/_`, the pre-commit framework's
/// `.pre-commit-config.yaml`).
pub fn refused(session: &Path, folders: &[PathBuf], words: &[String]) -> Option<String> {
    if super::args::base(words.first()?) != "git" {
        return None;
    }
    if let Some(why) = not_own(session, folders) {
        return Some(why);
    }
    let sub = words[1..].iter().find(|w| !w.starts_with('-'))?;
    let env = |k: &str| std::env::var_os(k);
    let repo = discover(session);
    // The readers that show a diff or a file's text run the drivers too (`git show`, `git
    // log -p`, `git blame`, `git cat-file --textconv` ran a `textconv`).
    if !matches!(
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
    ) {
        if let Some(why) = drivers(repo.as_deref(), session, &env) {
            return Some(format!("`git {sub}` may run {why}"));
        }
    }
    let names = hooks_of(sub);
    if names.is_some_and(|n| n.is_empty()) {
        return None;
    }
    // `git commit --trailer 'see=HEAD;touch x'`: a `trailer.*.command` runs with the value
    // put in as text, by the shell (a fifty-eighth review).
    if words.iter().any(|w| w.starts_with("--trailer")) {
        let chain = match config_chain(repo.as_deref(), &env) {
            Ok(chain) => chain,
            Err(why) => return Some(format!("what git's configuration sets {why}")),
        };
        if chain.iter().any(|(_, text)| {
            entries(text).iter().any(|(section, key, _)| {
                section.starts_with("trailer") && matches!(key.as_str(), "command" | "cmd")
            })
        }) {
            return Some(format!(
                "`git {sub} --trailer` runs a `trailer.*.command` with its value in the shell's words"
            ));
        }
    }
    let found = hooks(repo.as_deref(), names, &env)?;
    Some(format!(
        "`git {sub}` may run the repository's hook {found}, and what it runs may be files the agent writes"
    ))
}

/// Programs that run code the folder they run in may hold (`python3 -m nbstripout`
/// imports `./nbstripout.py` first), or a script they are given.
const RUNS_CODE: &[&str] = &[
    "python", "python2", "python3", "node", "nodejs", "npx", "npm", "pnpm", "yarn", "deno", "bun",
    "bunx", "ruby", "perl", "php", "lua", "sh", "bash", "dash", "zsh", "ksh", "fish", "env", "uv",
    "uvx", "poetry", "pipx", "make", "cargo", "go", "java", "Rscript", "julia",
];

/// A filter or diff driver set in any configuration file git reads (`filter.*.clean`,
/// `smudge`, `process`; `diff.*.textconv`, `command`; `diff.external`) that may run code
/// of the worktree: a command that is not one plain program named by its name or by a
/// path outside the worktree and the session's folder, one of [`RUNS_CODE`], or a name that
/// `PATH` finds inside the session. git runs such a driver from the worktree's top for any
/// file a `.gitattributes` (which the agent writes) names, so the nbstripout install's
/// `python3 -m nbstripout` ran a `nbstripout.py` written there.
fn drivers(repo: Option<&Path>, session: &Path, env: super::rc::Env<'_>) -> Option<String> {
    let chain = match config_chain(repo, env) {
        Ok(chain) => chain,
        Err(why) => return Some(format!("what git's configuration sets {why}")),
    };
    let top = repo.and_then(Path::parent);
    for (file, text) in &chain {
        for (section, key, value) in entries(text) {
            // A merge driver runs at `git show --remerge-diff`, a stash, a checkout `-m`
            // (a fifty-eighth review).
            let driver = (section.starts_with("filter")
                && matches!(key.as_str(), "clean" | "smudge" | "process"))
                || (section.starts_with("diff") && matches!(key.as_str(), "textconv" | "command"))
                || (section == "diff" && key == "external")
                || (section.starts_with("merge") && key == "driver");
            if !driver {
                continue;
            }
            let value = value.unwrap_or_default();
            let mut words = value.split_ascii_whitespace();
            let program = words.next().unwrap_or_default();
            let name = program.rsplit('/').next().unwrap_or_default();
            let plain = value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " \t-_.,/:=%+@".contains(c));
            let runs_code = RUNS_CODE.contains(&name)
                || name.starts_with("python")
                || (program.contains('/')
                    && (!program.starts_with('/')
                        || [Some(session), top]
                            .into_iter()
                            .flatten()
                            .any(|t| Path::new(program).starts_with(t))));
            // git runs it from the worktree's top, where a `PATH` of `.` or
            // `node_modules/.bin` finds the agent's program first.
            let from = top.unwrap_or(session).to_path_buf();
            let planted = !program.contains('/')
                && super::on_path::program_refused(program, &[from], session).is_some();
            if !plain || runs_code || planted {
                return Some(format!(
                    "the driver `{value}` ({section}.{key} in {}), which may run code the worktree holds",
                    file.display()
                ));
            }
        }
    }
    None
}

/// A hook of `names` (`None`: any) that git may run in repository `repo` (`None`: no
/// repository, as for `clone`): a file in its `hooks` folder (or its common folder's, for
/// a worktree) other than git's samples, or in a `core.hooksPath` folder set in any
/// configuration file git reads ([`config_chain`]); or a `[hook]` setting, or a
/// `core.hooksPath` that cannot be placed, for any.
pub fn hooks(
    repo: Option<&Path>,
    names: Option<&[&str]>,
    env: super::rc::Env<'_>,
) -> Option<String> {
    let chain = match config_chain(repo, env) {
        Ok(chain) => chain,
        Err(why) => return Some(why),
    };
    let common = repo.map(common_of);
    let mut dirs: Vec<PathBuf> = repo.iter().map(|r| r.join("hooks")).collect();
    dirs.extend(common.as_ref().map(|c| c.join("hooks")));
    // A relative `core.hooksPath` is taken from the worktree's top.
    let top = repo.and_then(|r| match r.file_name() {
        Some(n) if n == ".git" => r.parent().map(Path::to_path_buf),
        _ => Some(r.to_path_buf()),
    });
    let (home, _) = super::rc::home_and_config(env);
    for (file, text) in &chain {
        for (section, key, value) in entries(text) {
            if section.starts_with("hook") {
                return Some(format!("(set in {})", file.display()));
            }
            // (Every value was read whole in the chain.)
            let value = value.unwrap_or_default();
            let value = value.as_str();
            if key == "hookspath" {
                let dir = place(value, file, top.as_deref(), home.as_deref());
                match dir.filter(|_| !value.is_empty()) {
                    Some(dir) => dirs.push(dir),
                    None => return Some(format!("(core.hooksPath in {})", file.display())),
                }
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

/// Why a prefix rule may not write any of `written` (resolved) from a session in
/// `session`: one is a file git reads as configuration, by a name no rule knows, because a
/// configuration file includes it (`[include] path = ../.gitconfig.local` in `.git/config`,
/// or the user's `~/.gitconfig` including a dotfiles repository's `git/config`): a
/// `core.fsmonitor` there runs at the next `git status`; or a folder above one (`ln -s evil
/// git` where `git/config` is included); or the user's excludes file (a `!.env` there shows
/// `.env` to `rg` in every repository). The chain is read once.
pub fn config_written<'a>(
    session: &Path,
    mut written: impl Iterator<Item = &'a Path>,
    env: super::rc::Env<'_>,
) -> Option<String> {
    let first = written.next()?;
    let repo = discover(session);
    let files = match config_chain(repo.as_deref(), env) {
        Ok(chain) => {
            let mut files: Vec<PathBuf> = chain.iter().map(|(f, _)| f.clone()).collect();
            files.extend(excludes_of(&chain, env));
            files
        }
        Err(why) => return Some(format!("git's configuration cannot be told {why}")),
    };
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
    let chain = config_chain(discover(dir).as_deref(), env)?;
    Ok(chain
        .into_iter()
        .map(|(f, _)| f.to_string_lossy().into_owned()))
}

/// The files of the user's excludes that ripgrep and git read in every repository, as
/// found from `dir`: each `core.excludesFile` of git's configuration, and
/// `$XDG_CONFIG_HOME/git/ignore` (else `~/.config/git/ignore`). `Err`: why that cannot be
/// told.
pub fn excludes(dir: &Path, env: super::rc::Env<'_>) -> Result<Vec<PathBuf>, String> {
    let chain = config_chain(discover(dir).as_deref(), env)?;
    Ok(excludes_of(&chain, env))
}

fn excludes_of(chain: &[(PathBuf, String)], env: super::rc::Env<'_>) -> Vec<PathBuf> {
    let (home, xdg) = super::rc::home_and_config(env);
    let mut files: Vec<PathBuf> = xdg.map(|x| x.join("git/ignore")).into_iter().collect();
    for (file, text) in chain {
        for (section, key, value) in entries(text) {
            let value = value.unwrap_or_default();
            if section.starts_with("core") && key == "excludesfile" && !value.is_empty() {
                files.extend(place(&value, file, None, home.as_deref()));
            }
        }
    }
    files
}

/// Every configuration file git reads in repository `repo`: its own, its common folder's
/// (a worktree's), the user's (`GIT_CONFIG_GLOBAL`, else `~/.gitconfig` and
/// `$XDG_CONFIG_HOME/git/config`), the system's, and every file one of them includes
/// (`include.path`, and `includeIf.*.path` whatever its condition), each with its text
/// (empty where it is not there). `Err`: why that cannot be told (too many files, one that
/// cannot be read).
pub(super) fn config_chain(
    repo: Option<&Path>,
    env: super::rc::Env<'_>,
) -> Result<Vec<(PathBuf, String)>, String> {
    let (home, xdg) = super::rc::home_and_config(env);
    let var = |k: &str| env(k).map(PathBuf::from);
    let mut files: Vec<PathBuf> = Vec::new();
    files.extend(repo.map(|r| r.join("config")));
    files.extend(repo.map(|r| common_of(r).join("config")));
    match var("GIT_CONFIG_GLOBAL") {
        Some(g) => files.push(g),
        None => {
            files.extend(home.as_ref().map(|h| h.join(".gitconfig")));
            files.extend(xdg.map(|x| x.join("git/config")));
        }
    }
    files.push(var("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    let mut chain = Vec::new();
    while let Some(file) = files.pop() {
        if chain.len() >= MAX_CONFIG_FILES {
            return Err("(more configuration files than are read for one decision)".into());
        }
        let text = match super::file::bounded::read_file(&file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("({} cannot be read: {e})", file.display())),
        };
        for (section, key, value) in entries(&text) {
            let Some(value) = value else {
                return Err(format!(
                    "(a line of {} is not read as git reads it)",
                    file.display()
                ));
            };
            if key == "path" && section.starts_with("include") && !value.is_empty() {
                match place(&value, &file, None, home.as_deref()) {
                    Some(f) => files.push(f),
                    None => return Err(format!("(an include in {})", file.display())),
                }
            }
        }
        chain.push((file, text));
    }
    Ok(chain)
}

/// The (section, key, value) of each setting of a configuration file's `text`, read as
/// git's own parser reads it (`config.c`): section and key lowered; a `#` or `;` outside
/// quotes starts a comment to the line's end (`path = x  # note` is `x`); a value's `\` at
/// a line's end goes on to the next line (a multi-line alias); `"…"` joined and `\"`, `\\`,
/// `\n`, `\t`, `\b` unescaped. A value is `None` where git would refuse the file (an
/// unknown escape, an unclosed quote).
pub(super) fn entries(text: &str) -> Vec<(String, String, Option<String>)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            '#' | ';' => while chars.next_if(|c| *c != '\n').is_some() {},
            '[' => {
                chars.next();
                let mut header = String::new();
                let mut quoted = false;
                while let Some(c) = chars.next() {
                    match c {
                        '\\' if quoted => header.extend(chars.next()),
                        '"' => quoted = !quoted,
                        ']' if !quoted => break,
                        '\n' => break,
                        c => header.push(c),
                    }
                }
                section = header.trim().to_ascii_lowercase();
            }
            c if c.is_alphanumeric() => {
                let mut key = String::new();
                while let Some(c) = chars.next_if(|c| c.is_alphanumeric() || *c == '-') {
                    key.push(c.to_ascii_lowercase());
                }
                while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
                let value = match chars.next_if_eq(&'=') {
                    Some(_) => value_of(&mut chars),
                    None => Some(String::new()),
                };
                out.push((section.clone(), key, value));
            }
            _ => {
                chars.next();
            }
        }
    }
    out
}

/// A value, read from after its `=` to the end of its (logical) line.
fn value_of(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let mut out = String::new();
    let mut quoted = false;
    let mut pending = String::new();
    let mut started = false;
    while let Some(c) = chars.next() {
        match c {
            '\n' => break,
            '\\' => match chars.next() {
                // The value goes on to the next line.
                Some('\n') => continue,
                Some('\r') if chars.next_if_eq(&'\n').is_some() => continue,
                Some(e) => {
                    out.push_str(&std::mem::take(&mut pending));
                    started = true;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'b' => out.push('\u{8}'),
                        '"' | '\\' => out.push(e),
                        _ => return None,
                    }
                }
                None => return None,
            },
            '"' => {
                out.push_str(&std::mem::take(&mut pending));
                started = true;
                quoted = !quoted;
            }
            '#' | ';' if !quoted => {
                while chars.next_if(|c| *c != '\n').is_some() {}
                break;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    pending.push(c);
                }
            }
            c => {
                out.push_str(&std::mem::take(&mut pending));
                started = true;
                out.push(c);
            }
        }
    }
    (!quoted).then_some(out)
}

/// Where a path `value` set in configuration `file` points: `~/` from the home folder, a
/// relative one from `relative_to` (else the file's folder).
fn place(
    value: &str,
    file: &Path,
    relative_to: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    match value.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        // Another user's home, git's own prefix: not placed here.
        None if value.starts_with('~') || value.starts_with("%(") => None,
        None if Path::new(value).is_absolute() => Some(PathBuf::from(value)),
        None => relative_to.or(file.parent()).map(|d| d.join(value)),
    }
}

/// The common folder of repository `repo` (a linked worktree's main repository).
pub(super) fn common_of(repo: &Path) -> PathBuf {
    std::fs::read_to_string(repo.join("commondir"))
        .map(|c| repo.join(c.trim()))
        .unwrap_or_else(|_| repo.to_path_buf())
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
    fn settings_are_read_as_git_reads_them() {
        let d = std::env::temp_dir().join(format!("acp-qb-gitcfg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("config");
        let text = "# a comment \\\n[include]\n\tpath = ../a  # note\n[include \"x\"] path = \"../b c\" ; note\n[core]\n\thooksPath = .githooks;x\n\texcludesFile = \"q\\\"r\"\n[alias]\n\tlg = log \\\n\t  --oneline\n\tt = \"a\\tb\"\n[includeIf \"gitdir:/w/\"]\n\tpath = ~/c\n\tbare\n";
        std::fs::write(&file, text).unwrap();
        let ours: Vec<String> = entries(text)
            .into_iter()
            .map(|(s, k, v)| format!("{}.{k}={}", s.replace(' ', "."), v.expect("a value")))
            .map(|l| l.trim_end_matches('=').to_owned())
            .collect();
        let out = std::process::Command::new("git")
            .args(["config", "--no-includes", "-f"])
            .arg(&file)
            .arg("--list")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let git: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(ours, git);
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
