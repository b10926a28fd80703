//! The model of `git`: its quiet global options, then the subcommands that read the
//! repository (`status`, `diff`, `log`, `show`, `branch` listing, `rev-parse`, `ls-files`,
//! `blame`, `grep`, `describe`, `remote -v`, `config --get`/`--list`) or change only its
//! index and history (`add`, `commit`), and `clone` into the session's folder.
//!
//! Asked under a prefix: `-c`, `-C`, `--git-dir`, `--work-tree`, `--exec-path`,
//! `--namespace`, `--config-env` and every other global option that names a place or a
//! configuration; `--output`, `--ext-diff`, `--textconv`, `-O`/`--open-files-in-pager`,
//! `--show-signature`; `clone`'s `-u`/`--upload-pack`, `-c`/`--config`, `--template`,
//! `--separate-git-dir`, `--reference` and `--recurse-submodules`, and a URL with a
//! transport helper (`ext::…`); creating, renaming or deleting a branch.

use super::{has, options, stop, Access, Effects, Met, Stop};

const GLOBAL: &[&str] = &[
    "--no-pager",
    "-P",
    "-p|--paginate",
    "--no-optional-locks",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-advice",
    "--version",
];

const STATUS: &[&str] = &[
    "-s|--short",
    "-b|--branch",
    "--show-stash",
    "--porcelain?",
    "--long",
    "-v|--verbose",
    "-u|--untracked-files??",
    "--ignore-submodules?",
    "--ignored?",
    "-z",
    "--column?",
    "--no-column",
    "--ahead-behind",
    "--no-ahead-behind",
    "--renames",
    "--no-renames",
    "--find-renames?",
];

/// What `diff`, `log` and `show` all take: how a diff is shown.
const DIFF: &[&str] = &[
    "-p|-u|--patch",
    "-s|--no-patch",
    "-U|--unified=",
    "--raw",
    "--patch-with-raw",
    "--patch-with-stat",
    "--indent-heuristic",
    "--no-indent-heuristic",
    "--minimal",
    "--patience",
    "--histogram",
    "--anchored=",
    "--diff-algorithm=",
    "--stat?",
    "--stat-width=",
    "--stat-name-width=",
    "--stat-count=",
    "--compact-summary",
    "--numstat",
    "--shortstat",
    "--dirstat?",
    "-X??",
    "--cumulative",
    "--dirstat-by-file?",
    "--summary",
    "-z",
    "--name-only",
    "--name-status",
    "--submodule?",
    "--color?",
    "--no-color",
    "--color-moved?",
    "--no-color-moved",
    "--color-moved-ws=",
    "--no-color-moved-ws",
    "--word-diff?",
    "--word-diff-regex=",
    "--color-words?",
    "--no-renames",
    "--rename-empty",
    "--no-rename-empty",
    "--check",
    "--ws-error-highlight=",
    "--full-index",
    "--binary",
    "--abbrev?",
    "-B|--break-rewrites??",
    "-M|--find-renames??",
    "-C|--find-copies??",
    "--find-copies-harder",
    "-D|--irreversible-delete",
    "-l=",
    "--diff-filter=",
    "-S=",
    "-G=",
    "--find-object=",
    "--pickaxe-all",
    "--pickaxe-regex",
    "-R",
    "--relative?",
    "--no-relative",
    "-a|--text",
    "--ignore-cr-at-eol",
    "--ignore-space-at-eol",
    "-b|--ignore-space-change",
    "-w|--ignore-all-space",
    "--ignore-blank-lines",
    "-I|--ignore-matching-lines=",
    "--inter-hunk-context=",
    "-W|--function-context",
    "--exit-code",
    "--quiet",
    "--no-ext-diff",
    "--no-textconv",
    "--ignore-submodules?",
    "--src-prefix=",
    "--dst-prefix=",
    "--no-prefix",
    "--default-prefix",
    "--line-prefix=",
    "--ita-invisible-in-index",
    "--ita-visible-in-index",
    "--cached|--staged",
    "--merge-base",
    "--no-index",
    "-1|--base",
    "-2|--ours",
    "-3|--theirs",
    "-0",
    "-4|-5|-6|-7|-8|-9",
];

/// What `log` and `show` take besides.
const LOG: &[&str] = &[
    "--oneline",
    "-n|--max-count=",
    "--skip=",
    "--since|--after=",
    "--until|--before=",
    "--author=",
    "--committer=",
    "--grep=",
    "--all-match",
    "--invert-grep",
    "-i|--regexp-ignore-case",
    "--basic-regexp",
    "-E|--extended-regexp",
    "-F|--fixed-strings",
    "--perl-regexp",
    "--merges",
    "--no-merges",
    "--min-parents=",
    "--max-parents=",
    "--no-min-parents",
    "--no-max-parents",
    "--first-parent",
    "--not",
    "--all",
    "--branches?",
    "--tags?",
    "--remotes?",
    "--exclude=",
    "--reflog",
    "-g|--walk-reflogs",
    "--merge",
    "--boundary",
    "--simplify-by-decoration",
    "--full-history",
    "--dense",
    "--sparse",
    "--simplify-merges",
    "--ancestry-path?",
    "--date-order",
    "--author-date-order",
    "--topo-order",
    "--reverse",
    "--no-walk?",
    "--do-walk",
    "--pretty?",
    "--format=",
    "--abbrev-commit",
    "--no-abbrev-commit",
    "--encoding=",
    "--expand-tabs?",
    "--no-expand-tabs",
    "--notes?",
    "--no-notes",
    "--relative-date",
    "--date=",
    "--parents",
    "--children",
    "--left-right",
    "--graph",
    "--decorate?",
    "--no-decorate",
    "--decorate-refs=",
    "--decorate-refs-exclude=",
    "--source",
    "--use-mailmap|--mailmap",
    "--no-mailmap|--no-use-mailmap",
    "--full-diff",
    "--log-size",
    "--follow",
    "-L=",
    "--cc",
    "--combined-all-paths",
    "-m",
    "-c",
    "--diff-merges=",
    "--no-diff-merges",
    "--remerge-diff",
    "-t",
];

const BRANCH: &[&str] = &[
    "-a|--all",
    "-r|--remotes",
    "-v|-vv|--verbose",
    "-l|--list",
    "--show-current",
    "--contains?",
    "--no-contains?",
    "--merged?",
    "--no-merged?",
    "--sort=",
    "--format=",
    "--color?",
    "--no-color",
    "--column?",
    "--no-column",
    "--points-at=",
    "-i|--ignore-case",
    "--abbrev=",
    "--no-abbrev",
];

const REV_PARSE: &[&str] = &[
    "--show-toplevel",
    "--abbrev-ref?",
    "--short?",
    "--verify",
    "-q|--quiet",
    "--git-dir",
    "--git-common-dir",
    "--absolute-git-dir",
    "--is-inside-work-tree",
    "--is-inside-git-dir",
    "--is-bare-repository",
    "--is-shallow-repository",
    "--show-prefix",
    "--show-cdup",
    "--show-superproject-working-tree",
    "--symbolic",
    "--symbolic-full-name",
    "--all",
    "--branches?",
    "--tags?",
    "--remotes?",
    "--sq",
    "--revs-only",
    "--no-revs",
    "--flags",
    "--no-flags",
    "--default=",
];

const LS_FILES: &[&str] = &[
    "-c|--cached",
    "-d|--deleted",
    "-m|--modified",
    "-o|--others",
    "-i|--ignored",
    "-s|--stage",
    "-u|--unmerged",
    "-k|--killed",
    "-z",
    "-t",
    "-v",
    "-f",
    "--full-name",
    "--directory",
    "--no-empty-directory",
    "-x|--exclude=",
    "--exclude-standard",
    "-X|--exclude-from=R",
    "--exclude-per-directory=",
    "--error-unmatch",
    "--abbrev?",
    "--debug",
    "--eol",
    "--deduplicate",
    "--recurse-submodules",
    "--format=",
    "--sparse",
];

const BLAME: &[&str] = &[
    "-L=",
    "-l",
    "-t",
    "-s",
    "-e|--show-email",
    "-w",
    "-M??",
    "-C??",
    "--root",
    "--show-stats",
    "--porcelain",
    "--line-porcelain",
    "--incremental",
    "-f|--show-name",
    "-n|--show-number",
    "-p",
    "--date=",
    "--color-lines",
    "--color-by-age",
    "--abbrev=",
    "--since=",
    "--first-parent",
    "--ignore-rev=",
    "--ignore-revs-file=R",
    "-c",
    "--progress",
    "--no-progress",
];

const GREP: &[&str] = &[
    "-i|--ignore-case",
    "-I",
    "-v|--invert-match",
    "-w|--word-regexp",
    "-a|--text",
    "--no-textconv",
    "-n|--line-number",
    "--column",
    "-h",
    "-H",
    "--full-name",
    "-E|--extended-regexp",
    "-G|--basic-regexp",
    "-F|--fixed-strings",
    "-P|--perl-regexp",
    "-l|--files-with-matches|--name-only",
    "-L|--files-without-match",
    "-c|--count",
    "--color?",
    "--no-color",
    "-z|--null",
    "-o|--only-matching",
    "-q|--quiet",
    "-A|--after-context=",
    "-B|--before-context=",
    "-C|--context=",
    "-p|--show-function",
    "-W|--function-context",
    "--max-depth=",
    "-r|--recursive",
    "--no-recursive",
    "--cached",
    "--untracked",
    "--no-index",
    "--exclude-standard",
    "--no-exclude-standard",
    "--recurse-submodules",
    "-e=",
    "-f=R",
    "--and",
    "--or",
    "--not",
    "--all-match",
    "--break",
    "--heading",
    "--threads=",
    "-m|--max-count=",
    "-0|-1|-2|-3|-4|-5|-6|-7|-8|-9",
];

const DESCRIBE: &[&str] = &[
    "--tags",
    "--all",
    "--long",
    "--abbrev=",
    "--always",
    "--dirty?",
    "--broken?",
    "--match=",
    "--exclude=",
    "--contains",
    "--exact-match",
    "--first-parent",
    "--candidates=",
    "--debug",
];

const ADD: &[&str] = &[
    "-n|--dry-run",
    "-v|--verbose",
    "-f|--force",
    "-u|--update",
    "-A|--all|--no-ignore-removal",
    "--no-all|--ignore-removal",
    "-N|--intent-to-add",
    "--refresh",
    "--ignore-errors",
    "--ignore-missing",
    "--renormalize",
    "--chmod=",
    "--pathspec-from-file=R",
    "--pathspec-file-nul",
    "--sparse",
];

const COMMIT: &[&str] = &[
    "-a|--all",
    "-m|--message=",
    "-F|--file=R",
    "--amend",
    "--no-edit",
    "-s|--signoff",
    "--no-signoff",
    "--no-gpg-sign",
    "-q|--quiet",
    "-v|--verbose",
    "--dry-run",
    "--short",
    "--branch",
    "--porcelain",
    "--long",
    "-z|--null",
    "--author=",
    "--date=",
    "--allow-empty",
    "--allow-empty-message",
    "--cleanup=",
    "-n|--no-verify",
    "--verify",
    "-o|--only",
    "-i|--include",
    "--status",
    "--no-status",
    "-C|--reuse-message=",
    "--reset-author",
    "--trailer=",
    "--pathspec-from-file=R",
    "--pathspec-file-nul",
];

const CLONE: &[&str] = &[
    "-q|--quiet",
    "-v|--verbose",
    "--progress",
    "--no-progress",
    "-n|--no-checkout",
    "--bare",
    "--mirror",
    "-l|--local",
    "--no-local",
    "--no-hardlinks",
    "-s|--shared",
    "--depth=",
    "--shallow-since=",
    "--shallow-exclude=",
    "--single-branch",
    "--no-single-branch",
    "--no-tags",
    "--tags",
    "-b|--branch=",
    "-o|--origin=",
    "--shallow-submodules",
    "--no-shallow-submodules",
    "-j|--jobs=",
    "--filter=",
    "--sparse",
    "--reject-shallow",
    "--no-reject-shallow",
];

const CONFIG_READ: &[&str] = &[
    "--get",
    "--get-all",
    "--get-regexp",
    "-l|--list",
    "--show-origin",
    "--show-scope",
    "--local",
    "--global",
    "--system",
    "--worktree",
    "--name-only",
    "-z|--null",
    "--type=",
    "--bool",
    "--int",
    "--path",
    "--default=",
    "-f|--file=R",
];

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
            let (_, ops) = options(w, from, STATUS, true, e)?;
            pathspecs(w, &ops, Access::Read, e);
        }
        "diff" | "log" | "show" | "whatchanged" => {
            let mut table: Vec<&str> = DIFF.to_vec();
            if name != "diff" {
                table.extend_from_slice(LOG);
            }
            let (met, ops) = options(w, from, &table, true, e)?;
            no_signature(&met)?;
            // Revisions and paths: a diff compares folders whole (outside the repository
            // with --no-index); a log's paths limit what it shows.
            let access = if name == "diff" {
                Access::Tree
            } else {
                Access::Read
            };
            pathspecs(w, &ops, access, e);
        }
        "branch" => {
            let (met, ops) = options(w, from, BRANCH, true, e)?;
            no_signature(&met)?;
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
            let (met, ops) = options(w, from, GREP, true, e)?;
            let given = has(&met, &["-e", "-f"]);
            let rest = if given {
                &ops[..]
            } else {
                ops.get(1..).unwrap_or_default()
            };
            pathspecs(w, rest, Access::Tree, e);
            if rest.is_empty() {
                e.paths.push((Access::Tree, ".".into()));
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
        }
        "config" => {
            // git config's options end at its first operand (`git config k --get` sets k).
            let (met, ops) = options(w, from, CONFIG_READ, false, e)?;
            config(w, &met, &ops)?;
        }
        "add" => {
            // What it adds is read whole (`git add .` reads `.env` unless it is ignored).
            let (met, ops) = options(w, from, ADD, true, e)?;
            pathspecs(w, &ops, Access::Tree, e);
            if ops.is_empty()
                && has(
                    &met,
                    &["-A", "--all", "--no-ignore-removal", "-u", "--update"],
                )
            {
                e.paths.push((Access::Tree, ".".into()));
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
                return Err(stop(
                    sub,
                    "`git commit` without `-m`, `-F` or `--no-edit` starts an editor",
                ));
            }
            pathspecs(w, &ops, Access::Tree, e);
            if has(&met, &["-a", "--all"]) {
                e.paths.push((Access::Tree, ".".into()));
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
        if magic || path.contains(['*', '?', '[']) {
            e.paths.push((Access::Tree, ".".into()));
        } else if path != word {
            e.paths.push((Access::Read, path.to_owned()));
        } else {
            e.paths.push((access, word.to_owned()));
        }
    }
}

/// A format that shows a signature (`%G?`, `%(signature…)`) runs gpg.
fn no_signature(met: &[Met]) -> Result<(), Stop> {
    for m in met {
        if m.value
            .as_deref()
            .is_some_and(|v| v.contains("%G") || v.contains("%(signature"))
        {
            return Err(stop(m.at, "a format that checks a signature (it runs gpg)"));
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
        e.paths.push((Access::Tree, local.to_owned()));
    }
    let target = match dir {
        Some(d) => w[d].clone(),
        None => {
            let last = u
                .trim_end_matches('/')
                .rsplit(['/', ':'])
                .next()
                .unwrap_or(u);
            let last = last.strip_suffix(".git").unwrap_or(last);
            if last.is_empty() || last == "." || last == ".." {
                return Err(stop(url, "a URL whose folder cannot be told"));
            }
            last.to_owned()
        }
    };
    // A bare clone's folder ends with `.git` when none is named.
    if dir.is_none() {
        e.paths.push((Access::Write, format!("{target}.git")));
    }
    e.paths.push((Access::Write, target));
    Ok(())
}
