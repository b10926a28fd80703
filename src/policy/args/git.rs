//! The model of `git`: its quiet global options, then the subcommands that read the
//! repository (`status`, `diff`, `log`, `show`, `branch` listing, `rev-parse`, `ls-files`,
//! `blame`, `grep`, `describe`, `remote -v`, `config --get`/`--list`) or change only its
//! index and history (`add`, `commit`), and `clone` into the session's folder.
//!
//! Asked under a prefix: `-c`, `-C`, `--git-dir`, `--work-tree`, `--exec-path`,
//! `--namespace`, `--config-env` and every other global option that names a place or a
//! configuration; `--icase-pathspecs` (`.ENV` would match `.env`); `--pathspec-from-file`
//! (its pathspecs are not in the words); `--output`, `--ext-diff`, `--textconv`, `-O`/`--open-files-in-pager`,
//! `--show-signature`; `clone`'s `-u`/`--upload-pack`, `-c`/`--config`, `--template`,
//! `--separate-git-dir`, `--reference` and `--recurse-submodules`, and a URL with a
//! transport helper (`ext::…`); creating, renaming or deleting a branch.

use super::git_options::*;
use super::{has, options, options_to_end, stop, Access, Effects, Met, Stop};

const GLOBAL: &[&str] = &[
    "--no-pager",
    "-P",
    "-p|--paginate",
    "--no-optional-locks",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-advice",
    "--version",
];

/// git's own options that take the next word as their value (`-C DIR`, `-c NAME=VALUE`);
/// their `--name=value` form is one word.
const GLOBAL_VALUED: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--exec-path",
    "--config-env",
    "--super-prefix",
    "--list-cmds",
    "--attr-source",
];

/// Where git's subcommand is in `w` (a `git` command): the first word past git's own
/// options and their values (`git -C dir -c k=v --no-pager push`: 6, `push`); `w.len()`
/// when there is none.
pub(crate) fn subcommand_at(w: &[String]) -> usize {
    let mut at = 1;
    while let Some(word) = w.get(at).filter(|word| word.starts_with('-')) {
        at += if GLOBAL_VALUED.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    at.min(w.len())
}

/// `git`: its quiet global options, then one modelled subcommand.
pub(super) fn git(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, GLOBAL, false, e)?;
    let Some(&sub) = ops.first() else {
        return Ok(());
    };
    let name = w[sub].as_str();
    let from = sub + 1;
    match name {
        "status" => {
            let (met, ops) = options(w, from, STATUS, true, e)?;
            pathspecs(w, &ops, Access::Read, e);
            // `-v` shows the staged diff, `-vv` the working tree's too (of the tracked
            // files beneath its paths, `.` among them).
            if has(&met, &["-v", "--verbose"]) {
                e.paths.push((Access::Tracked, ".".into()));
            }
        }
        "diff" | "log" | "show" | "whatchanged" => {
            let mut table: Vec<&str> = DIFF.to_vec();
            if name != "diff" {
                table.extend_from_slice(LOG);
            }
            let (met, ops, dashes) = options_to_end(w, from, &table, true, e)?;
            no_signature(w, &met)?;
            // `-L START,END:FILE`, `-L :FUNC:FILE`: FILE is read.
            for m in met.iter().filter(|m| m.name == "-L") {
                if let Some((_, file)) = m.value.as_deref().and_then(|v| v.rsplit_once(':')) {
                    e.paths.push((Access::Read, file.to_owned()));
                }
            }
            // Revisions and paths; a log's paths limit what it shows.
            // `--no-index` compares two paths whole, and so does a diff of exactly two
            // operands whenever git does not use the repository with them: one outside
            // it (`git diff /tmp/empty .` printed an untracked `.env`), or a repository
            // git refuses (another user's, an unknown format: `git diff src .` printed
            // it), which the words cannot tell. Any other diff shows the tracked files
            // (git never shows an untracked one, ignored or not).
            let access = if name != "diff" {
                Access::Read
            } else if has(&met, &["--no-index"]) || ops.len() == 2 {
                Access::Tree
            } else {
                Access::TrackedBeneath
            };
            pathspecs(w, &ops, access, e);
            // With no path after `--` (an operand may be a revision: `git diff origin/main`)
            // and not of the index (`--cached`: what git holds), a diff shows the working
            // copy of every tracked file that changed.
            let paths_given = ops.iter().any(|&o| dashes.is_some_and(|d| o > d));
            let stored = has(&met, &["--cached", "--staged", "--no-index"]);
            if name == "diff" && !stored && !paths_given {
                e.paths.push((Access::Tracked, ".".into()));
            }
        }
        "branch" => {
            let (met, ops) = options(w, from, BRANCH, true, e)?;
            no_signature(w, &met)?;
            let listing = has(
                &met,
                &[
                    "-l",
                    "--list",
                    "-a",
                    "--all",
                    "-r",
                    "--remotes",
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                ],
            );
            if !listing {
                if let Some(&o) = ops.first() {
                    return Err(stop(o, "`git branch NAME` creates a branch"));
                }
            }
        }
        "rev-parse" => {
            let (_, ops) = options(w, from, REV_PARSE, true, e)?;
            e.unplaced.extend(ops.iter().map(|&o| w[o].clone()));
        }
        "ls-files" => {
            let (_, ops) = options(w, from, LS_FILES, true, e)?;
            pathspecs(w, &ops, Access::Read, e);
        }
        "blame" | "annotate" => {
            let (_, ops) = options(w, from, BLAME, true, e)?;
            pathspecs(w, &ops, Access::Read, e);
        }
        "grep" => {
            let (met, ops, dashes) = options_to_end(w, from, GREP, true, e)?;
            // `(` and `)` group patterns: options without a dash, before the first operand
            // (git stops reading options there) and before `--` (after it they are paths).
            let first = ops
                .iter()
                .position(|&o| !matches!(w[o].as_str(), "(" | ")") || dashes.is_some_and(|d| o > d))
                .unwrap_or(ops.len());
            let ops = &ops[first..];
            let given = has(&met, &["-e", "-f"]);
            let rest = if given {
                ops
            } else {
                ops.get(1..).unwrap_or_default()
            };
            // It searches the tracked files, unless told to search the folder.
            let access = if has(&met, &["--no-index", "--untracked"]) {
                Access::Tree
            } else {
                Access::TrackedBeneath
            };
            pathspecs(w, rest, access, e);
            if rest.is_empty() {
                e.paths.push((access, ".".into()));
            }
        }
        "describe" => {
            let (_, _ops) = options(w, from, DESCRIBE, true, e)?;
        }
        "remote" => {
            for (k, a) in w.iter().enumerate().skip(from) {
                if a != "-v" && a != "--verbose" {
                    return Err(stop(k, "a `git remote` other than listing"));
                }
            }
            // The remotes' URLs, with any password in them.
            e.git_config = true;
        }
        "config" => {
            // git config's options end at its first operand (`git config k --get` sets k).
            let (met, ops) = options(w, from, CONFIG_READ, false, e)?;
            config(w, &met, &ops)?;
            e.git_config = true;
        }
        "add" => {
            // What it adds is read whole (`git add .` reads `.env` unless it is ignored).
            let (met, ops) = options(w, from, ADD, true, e)?;
            // `-u` adds only what is tracked already.
            let all = has(&met, &["-A", "--all", "--no-ignore-removal"]);
            let update = !all && has(&met, &["-u", "--update"]);
            let access = if update {
                Access::TrackedBeneath
            } else {
                Access::Tree
            };
            pathspecs(w, &ops, access, e);
            if ops.is_empty() && all {
                // From git 2.0, the whole worktree's, wherever it runs.
                e.repo_top.push((Access::Tree, String::new()));
            } else if ops.is_empty() && update {
                e.paths.push((Access::Tracked, ".".into()));
            }
        }
        "commit" => {
            let (met, ops) = options(w, from, COMMIT, true, e)?;
            // Without a message given, git starts the editor.
            if !has(
                &met,
                &[
                    "-m",
                    "--message",
                    "-F",
                    "--file",
                    "-C",
                    "--reuse-message",
                    "--no-edit",
                ],
            ) {
                // Placed at the end: what is missing is a later word, not `commit`.
                return Err(stop(
                    w.len(),
                    "`git commit` without `-m`, `-F` or `--no-edit` starts an editor",
                ));
            }
            // Its paths, and `-a`, take only tracked files (git refuses any other).
            pathspecs(w, &ops, Access::TrackedBeneath, e);
            if has(&met, &["-a", "--all"]) {
                e.paths.push((Access::Tracked, ".".into()));
            }
            // `--dry-run -v` prints the staged diff, `-vv` the working tree's too, as
            // `git status -v` does.
            if has(&met, &["-v", "--verbose"]) {
                e.paths.push((Access::Tracked, ".".into()));
            }
        }
        "clone" => {
            let (_, ops) = options(w, from, CLONE, true, e)?;
            clone(w, &ops, e)?;
        }
        other => return Err(stop(sub, format!("`git {other}` has no model"))),
    }
    Ok(())
}

/// Operands that may be pathspecs or `REV:PATH`: a path used as `access`; one with a glob
/// (`'*'`, `.en?`) or pathspec magic (`:(glob)…`, `:!x`) may match any file, so the whole
/// folder is searched; `REV:PATH` and `:PATH` (the index) read PATH.
fn pathspecs(w: &[String], ops: &[usize], access: Access, e: &mut Effects) {
    for &o in ops {
        let word = w[o].as_str();
        let magic = word.starts_with(":(")
            || word.starts_with(":!")
            || word.starts_with(":^")
            || word.starts_with(":/");
        let path = match word.split_once(':') {
            Some((_, p)) if !magic => p.rsplit(':').next().unwrap_or(p),
            _ => word,
        };
        // What may match any file: the folder whole, or its tracked files.
        let whole = if access == Access::TrackedBeneath {
            Access::Tracked
        } else {
            Access::Tree
        };
        // A backslash is a glob character to git too (`'.e\nv'` matches `.env`).
        if magic && whole == Access::Tree {
            // Magic may begin at the top (`:/`, `:(top)`), and git takes a pathspec of
            // only excludes (`:!x`) as the whole worktree's.
            e.repo_top.push((whole, String::new()));
        } else if magic || (whole == Access::Tracked && path.contains(['*', '?', '[', '\\'])) {
            // The tracked files are all the repository's, wherever it runs.
            e.paths.push((whole, ".".into()));
        } else if path.contains(['*', '?', '[', '\\']) {
            // A glob matches beneath the folder its words name before it, once git has
            // cleaned them of `..` as text (`../.ss[h]/*` is beneath `..`, `*/../../x` too).
            e.paths.push((whole, glob_folder(path)));
        } else if let Some(p) = word.strip_prefix(':') {
            // `:PATH` (no revision before it): the index's, or a pathspec whose magic is
            // empty; to `git add` or `git grep` a folder (`:`, `:.`, `:src/..`) whole.
            // A second `:` ends the (empty) short magic (`::PATH`).
            let p = p.strip_prefix(':').unwrap_or(p);
            let p = if p.is_empty() { "." } else { p };
            e.paths.push((whole, p.to_owned()));
            // `:N:PATH`: PATH at stage N of the index (`git show :0:.env`).
            let staged = p
                .strip_prefix(['0', '1', '2', '3'])
                .and_then(|q| q.strip_prefix(':'));
            if let Some(staged) = staged {
                e.paths.push((Access::Read, staged.to_owned()));
            }
            // As a name of the index's, PATH is from the worktree's top.
            from_top(staged.unwrap_or(p), e);
        } else if path != word {
            // `REV:PATH`, or a path with a `:` in it, which git cleans of `..` as text
            // (`x:/../.env` is `.env`): both.
            e.paths.push((Access::Read, path.to_owned()));
            e.paths.push((access, word.to_owned()));
            from_top(path, e);
        } else {
            e.paths.push((access, word.to_owned()));
        }
    }
}

/// PATH of `REV:PATH`, `:PATH` or `:N:PATH`, read as git reads it: from the worktree's top
/// (a dotfiles repository at `~` with the session in `~/proj`: `git show :.ssh/config`
/// printed the staged `~/.ssh/config`), unless it begins `./` or `../` (from the current
/// folder, as read already).
fn from_top(path: &str, e: &mut Effects) {
    if !path.starts_with("./") && !path.starts_with("../") && path != "." && path != ".." {
        e.repo_top.push((Access::Read, path.to_owned()));
    }
}

/// The folder a pathspec glob matches beneath: its words before the first glob character,
/// cleaned of `.` and `..` as text, as git cleans them.
fn glob_folder(glob: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut up = 0;
    let parts: Vec<&str> = glob.split('/').collect();
    for (i, c) in parts.iter().enumerate() {
        match *c {
            "" | "." => {}
            ".." if kept.pop().is_none() => up += 1,
            ".." => {}
            c => kept.push(if i + 1 == parts.len() { "" } else { c }),
        }
    }
    let literal = kept
        .iter()
        .take_while(|c| !c.is_empty() && !c.contains(['*', '?', '[', '\\']))
        .copied();
    let dir: Vec<&str> = std::iter::repeat_n("..", up).chain(literal).collect();
    let dir = dir.join("/");
    match (glob.starts_with('/'), dir.is_empty()) {
        (true, _) => format!("/{dir}"),
        (false, true) => ".".into(),
        (false, false) => dir,
    }
}

/// A format that shows a signature (`%G?`, `%(signature…)`) runs gpg.
fn no_signature(w: &[String], met: &[Met]) -> Result<(), Stop> {
    for m in met {
        // A format that shows a signature, or a sort by one (`--sort=signature:grade`).
        let sorts_by_signature =
            |v: &str| m.name == "--sort" && v.trim_start_matches('-').starts_with("signature");
        if m.value
            .as_deref()
            .is_some_and(|v| v.contains("%G") || v.contains("%(signature") || sorts_by_signature(v))
        {
            return Err(stop(
                m.value_at(w),
                "a format that checks a signature (it runs gpg)",
            ));
        }
    }
    Ok(())
}

/// `git config`: only reading (`--get`, `--get-all`, `--get-regexp`, `--list`; `get NAME`,
/// `list`).
fn config(w: &[String], met: &[Met], ops: &[usize]) -> Result<(), Stop> {
    let reads = has(met, &["--get", "--get-all", "--get-regexp"]);
    let lists = has(met, &["-l", "--list"]);
    let first = ops.first().map(|&o| w[o].as_str());
    let ok = match first {
        Some("get") => ops.len() == 2,
        Some("list") => ops.len() == 1,
        _ if lists => ops.is_empty(),
        _ if reads => (1..=2).contains(&ops.len()),
        _ => false,
    };
    if !ok {
        let at = ops.first().copied().unwrap_or(w.len() - 1);
        return Err(stop(at, "a `git config` that may write the configuration"));
    }
    Ok(())
}

/// `git clone URL [DIR]`: a URL that runs no transport helper, and the folder written (the
/// URL's last name when none is given).
fn clone(w: &[String], ops: &[usize], e: &mut Effects) -> Result<(), Stop> {
    let (url, dir) = match ops {
        [u] => (*u, None),
        [u, d] => (*u, Some(*d)),
        _ => return Err(stop(w.len() - 1, "`git clone` takes a URL and a folder")),
    };
    let u = w[url].as_str();
    if u.contains("::") || u.starts_with("ext:") || u.starts_with("fd:") {
        return Err(stop(
            url,
            "a URL with a transport helper (`ext::` runs a command)",
        ));
    }
    let remote = u.contains("://") || (u.contains(':') && !u.starts_with(['/', '.']));
    // Over ssh it runs ssh, with the user's configuration (`ProxyCommand`).
    if remote
        && !u.starts_with("https://")
        && !u.starts_with("http://")
        && !u.starts_with("file://")
    {
        return Err(stop(
            url,
            "a URL over ssh or git's own protocol runs ssh or connects as it says",
        ));
    }
    if !remote || u.starts_with("file:") {
        let local = u.strip_prefix("file://").unwrap_or(u);
        // git drops a host (`file://localhost/p`, any host) and decodes `%XX` in a file
        // URL's path: read only the plain form, `file:///p`.
        if u.starts_with("file://") && (!local.starts_with('/') || local.contains('%')) {
            return Err(stop(
                url,
                "a file URL with a host or an escape (git drops the one, decodes the other)",
            ));
        }
        // git clones the first of `P/.git`, `P`, `P.git/.git`, `P.git` there is, or the
        // bundle `P.bundle`: `git clone ~/r/secret` copies `~/r/secret.git`.
        // It reads through the links in the repository (`refs -> ~/secrets/.git/refs`), and
        // a `gitdir:` file there leads it elsewhere.
        let bare = local.trim_end_matches('/');
        e.paths.push((Access::TreeFollowed, local.to_owned()));
        e.paths.push((Access::TreeFollowed, format!("{bare}.git")));
        e.paths.push((Access::Read, format!("{bare}.bundle")));
        e.clone_sources.push(bare.to_owned());
    }
    let target = match dir {
        // git makes every folder on the way (`.git/x/../../y` makes `.git/x`).
        Some(d) if w[d].split('/').any(|c| c == "..") => {
            return Err(stop(d, "a folder to make through `..`"))
        }
        Some(d) => w[d].clone(),
        None => guessed_folder(u).ok_or_else(|| stop(url, "a URL whose folder cannot be told"))?,
    };
    // A bare clone's folder ends with `.git` when none is named; a bundle's name loses
    // its `.bundle`.
    if dir.is_none() {
        e.paths.push((Access::Write, format!("{target}.git")));
        if let Some(b) = target.strip_suffix(".bundle") {
            e.paths.push((Access::Write, b.to_owned()));
        }
    }
    e.paths.push((Access::Write, target));
    Ok(())
}

/// The folder `git clone URL` makes, as git guesses it (`git_url_basename`): past the
/// scheme, past the user (up to the last `@` before the first `/`: `a@.cargo` makes
/// `.cargo`), trailing slashes, spaces and `/.git` gone, a port after a host gone, the last
/// part after `/` or `:`, without `.git`. `None` when that leaves nothing sure: empty, `.`,
/// `..`, or a character git would turn into a space.
pub(crate) fn guessed_folder(u: &str) -> Option<String> {
    let mut start = u.find("://").map_or(0, |i| i + 3);
    let host_end = u[start..].find('/').map_or(u.len(), |i| start + i);
    if let Some(at) = u[start..host_end].rfind('@') {
        start += at + 1;
    }
    let mut s = u[start..].trim_end_matches(|c: char| c == '/' || c.is_ascii_whitespace());
    if s.len() > 5 && s.ends_with("/.git") {
        s = s[..s.len() - 5].trim_end_matches('/');
    }
    if !s.contains('/') {
        if let Some((host, port)) = s.rsplit_once(':') {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                s = host;
            }
        }
    }
    let last = s.rsplit(['/', ':']).next().unwrap_or(s);
    let last = last.strip_suffix(".git").unwrap_or(last);
    let sure = !last.is_empty()
        && last != "."
        && last != ".."
        && !last.chars().any(|c| c.is_control() || c.is_whitespace());
    sure.then(|| last.to_owned())
}
