//! Models of the programs that read, list, copy and write files (GNU coreutils and tar).
//!
//! Left out on purpose (asked under a prefix): `cp -s`/`-S`, `sort -T` and
//! `--compress-program`, `install -s` (runs `strip`), `tar -x` (writes where the archive
//! says), `tar -I`/`--to-command`/`--checkpoint-action` and every other tar option that runs
//! a program, `tar -C`, a tar archive on another host (`host:file`).

use std::path::Path;

use super::{has, options, paths, stop, Access, Effects, Stop};

const CAT: &[&str] = &[
    "-A|--show-all",
    "-b|--number-nonblank",
    "-e",
    "-E|--show-ends",
    "-n|--number",
    "-s|--squeeze-blank",
    "-t",
    "-T|--show-tabs",
    "-u",
    "-v|--show-nonprinting",
];

pub(super) fn cat(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, CAT, true, e)?;
    paths(w, &ops, Access::Read, e);
    Ok(())
}

const HEAD_TAIL: &[&str] = &[
    "-c|--bytes=",
    "-n|--lines=",
    "-q|--quiet|--silent",
    "-v|--verbose",
    "-z|--zero-terminated",
    // Following by descriptor only: `-F`, `--follow=name` and `--retry` open the name
    // again and again, so a link made later points a running `tail` at a denied file.
    "-f|--follow",
    "-s|--sleep-interval=",
    "--pid=",
    "--max-unchanged-stats=",
    "-0|-1|-2|-3|-4|-5|-6|-7|-8|-9",
];

/// `head` and `tail` (`-5`, the old form of `-n 5`, too). A first word of digits and
/// letters (`-5c`, `-10l`) is the old form of a count and a unit, which GNU reads as one
/// option taking no value, where getopt would give `-c` the next word: not known.
pub(super) fn head_tail(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    if let Some(first) = w.get(1).and_then(|f| f.strip_prefix('-')) {
        let letters = first.trim_start_matches(|c: char| c.is_ascii_digit());
        if letters.len() < first.len() && !letters.is_empty() && !letters.starts_with('-') {
            return Err(Stop {
                at: 1,
                why: "the old form of a count with a unit (`-5c`), which GNU reads as one word"
                    .into(),
            });
        }
    }
    let (_, ops) = options(w, 1, HEAD_TAIL, true, e)?;
    paths(w, &ops, Access::Read, e);
    Ok(())
}

const WC: &[&str] = &[
    "-c|--bytes",
    "-m|--chars",
    "-l|--lines",
    "-w|--words",
    "-L|--max-line-length",
    "--total=",
];

pub(super) fn wc(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, WC, true, e)?;
    paths(w, &ops, Access::Read, e);
    Ok(())
}

const LS: &[&str] = &[
    "-a|--all",
    "-A|--almost-all",
    "--author",
    "-b|--escape",
    "--block-size=",
    "-B|--ignore-backups",
    "-c",
    "-C",
    "--color?",
    "--colour?",
    "-d|--directory",
    "-D|--dired",
    "-f",
    "-F|--classify?",
    "--file-type",
    "--format=",
    "--full-time",
    "-g",
    "--group-directories-first",
    "-G|--no-group",
    "-h|--human-readable",
    "--si",
    "-H|--dereference-command-line",
    "--dereference-command-line-symlink-to-dir",
    "--hide=",
    "--hyperlink?",
    "--indicator-style=",
    "-i|--inode",
    "-I|--ignore=",
    "-k|--kibibytes",
    "-l",
    "-m",
    "-n|--numeric-uid-gid",
    "-N|--literal",
    "-o",
    "-p",
    "-q|--hide-control-chars",
    "--show-control-chars",
    "-Q|--quote-name",
    "--quoting-style=",
    "-r|--reverse",
    "-R|--recursive",
    "-s|--size",
    "-S",
    "--sort=",
    "--time=",
    "--time-style=",
    "-t",
    "-T|--tabsize=",
    "-u",
    "-U",
    "-v",
    "-w|--width=",
    "-x",
    "-X",
    "-Z|--context",
    "--zero",
    "-1",
];

/// `ls`: the names in a folder (and, with `-R`, beneath it), never a file's content.
pub(super) fn ls(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, LS, true, e)?;
    paths(w, &ops, Access::Read, e);
    Ok(())
}

const DU: &[&str] = &[
    "-0|--null",
    "-a|--all",
    "--apparent-size",
    "-B|--block-size=",
    "-b|--bytes",
    "-c|--total",
    "-D|--dereference-args",
    "-d|--max-depth=",
    "-H",
    "-h|--human-readable",
    "--inodes",
    "-k",
    "-l|--count-links",
    "-m",
    "-P|--no-dereference",
    "-S|--separate-dirs",
    "--si",
    "-s|--summarize",
    "-t|--threshold=",
    "--time?",
    "--time-style=",
    "-X|--exclude-from=R",
    "--exclude=",
    "-x|--one-file-system",
];

/// `du`: the sizes of what is beneath its folders (names and sizes, no content).
pub(super) fn du(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, DU, true, e)?;
    paths(w, &ops, Access::Read, e);
    Ok(())
}

const CP: &[&str] = &[
    "-a|--archive",
    "--attributes-only",
    "--copy-contents",
    "-d",
    "--debug",
    "-f|--force",
    "-i|--interactive",
    "-H",
    "-l|--link",
    "-L|--dereference",
    "-n|--no-clobber",
    "-P|--no-dereference",
    "-p",
    "--preserve?",
    "--no-preserve=",
    "-R|-r|--recursive",
    "--reflink?",
    "--remove-destination",
    "--sparse=",
    "--strip-trailing-slashes",
    "-t|--target-directory=W",
    "-T|--no-target-directory",
    "-u|--update?",
    "-v|--verbose",
    "-x|--one-file-system",
    "--keep-directory-symlink",
];

/// Sources read (whole trees with `-r`/`-R`/`-a`), the destination written.
pub(super) fn cp(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (met, ops) = options(w, 1, CP, true, e)?;
    let recursive = has(&met, &["-a", "--archive", "-R", "-r", "--recursive"]);
    // `cp -l` makes hard links: the sources get second names, checked as written.
    if has(&met, &["-l", "--link"]) {
        let sources = match ops.split_last() {
            Some((_, s)) if !has(&met, &["-t", "--target-directory"]) => s,
            _ => &ops[..],
        };
        paths(w, sources, Access::Write, e);
    }
    let source = match (recursive, has(&met, &["-L", "--dereference"])) {
        (true, true) => Access::TreeFollowed,
        (true, false) => Access::Tree,
        _ => Access::Read,
    };
    sources_and_destination(w, &met, &ops, source, e)
}

/// Operands of `cp`, `mv`, `install` and `ln`: with `-t DIR` all are sources, else the last
/// is the destination. A destination that is a folder gets each source's last name in it
/// (`cp -r x/.git .` writes `./.git`, `cp -r x/. .` the folder itself): both readings are
/// written.
fn sources_and_destination(
    w: &[String],
    met: &[super::Met],
    ops: &[usize],
    source: Access,
    e: &mut Effects,
) -> Result<(), Stop> {
    let target = met
        .iter()
        .find(|m| m.name == "-t" || m.name == "--target-directory")
        .and_then(|m| m.value.clone());
    let mut lands = Vec::new();
    let (dest, sources): (String, &[usize]) = match (target, ops.split_last()) {
        (Some(dir), _) => (dir, ops),
        (None, Some((dest, sources))) if !sources.is_empty() => {
            e.paths.push((Access::Write, w[*dest].clone()));
            lands.push(w[*dest].clone());
            (w[*dest].clone(), sources)
        }
        _ => {
            return Err(stop(
                w.len() - 1,
                "a copy or move needs a source and a destination",
            ))
        }
    };
    if sources.is_empty() {
        return Err(stop(w.len() - 1, "a copy or move needs a source"));
    }
    paths(w, sources, source, e);
    for &s in sources {
        let name = w[s].trim_end_matches('/').rsplit('/').next().unwrap_or("");
        let name = if name.is_empty() { "." } else { name };
        let at = format!("{}/{name}", dest.trim_end_matches('/'));
        lands.push(at.clone());
        e.lands.push((w[s].clone(), at.clone()));
        e.paths.push((Access::Write, at));
    }
    // A move, or a copy of whole trees: a folder among the sources lands whole (`mv gh
    // .github`, `cp -rT x .github`), beneath the destination.
    if matches!(source, Access::Remove | Access::Tree | Access::TreeFollowed) {
        let from = sources.iter().map(|&s| w[s].clone()).collect();
        e.places.push((from, lands));
    }
    Ok(())
}

/// `--exchange` is not among them: it swaps the two files (`renameat2`'s
/// `RENAME_EXCHANGE`), so the destination is read as well (`mv --exchange a.txt .env`, then
/// `cat a.txt`: a twenty-seventh review).
const MV: &[&str] = &[
    "--debug",
    "-f|--force",
    "-i|--interactive",
    "-n|--no-clobber",
    "--no-copy",
    "--strip-trailing-slashes",
    "-t|--target-directory=W",
    "-T|--no-target-directory",
    "-u|--update?",
    "-v|--verbose",
];

/// A move removes its sources (they are gone after it).
pub(super) fn mv(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (met, ops) = options(w, 1, MV, true, e)?;
    sources_and_destination(w, &met, &ops, Access::Remove, e)
}

const RM: &[&str] = &[
    "-f|--force",
    "-i",
    "-I",
    "--interactive?",
    "-r|-R|--recursive",
    "-d|--dir",
    "-v|--verbose",
    "--one-file-system",
    "--preserve-root?",
];

/// `rm`: its operands removed (never `--no-preserve-root`).
pub(super) fn rm(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, RM, true, e)?;
    paths(w, &ops, Access::Remove, e);
    Ok(())
}

const LN: &[&str] = &[
    "-f|--force",
    "-i|--interactive",
    "-L|--logical",
    "-n|--no-dereference",
    "-P|--physical",
    "-r|--relative",
    "-s|--symbolic",
    "-t|--target-directory=W",
    "-T|--no-target-directory",
    "-v|--verbose",
];

/// What a link points to is read (a hard link) or named (a symbolic one); the link is
/// written: the last operand, or with one operand a name in the current folder.
pub(super) fn ln(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (met, ops) = options(w, 1, LN, true, e)?;
    // A hard link is a second name for its target: writing it writes the target, so the
    // target is checked as written.
    if !has(&met, &["-s", "--symbolic"]) {
        let targets = match ops.split_last() {
            Some((_, t)) if !t.is_empty() && !has(&met, &["-t", "--target-directory"]) => t,
            _ => &ops[..],
        };
        paths(w, targets, Access::Write, e);
    }
    // A symbolic link's relative target is found from the link's folder, not from here
    // (`ln -s ../.env sub/e` points at `./.env`): read from every folder the link may be
    // in too (`-r` makes it relative to that folder from a path taken from here).
    if has(&met, &["-s", "--symbolic"]) && !has(&met, &["-r", "--relative"]) {
        let into = met
            .iter()
            .find(|m| m.name == "-t" || m.name == "--target-directory")
            .and_then(|m| m.value.clone());
        let (targets, folders): (&[usize], Vec<String>) = match (into, ops.split_last()) {
            (Some(d), _) => (&ops[..], vec![d]),
            (None, Some((last, t))) if !t.is_empty() => {
                let d = w[*last].trim_end_matches('/');
                let parent = Path::new(d)
                    .parent()
                    .map(|p| p.display().to_string())
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| ".".into());
                (t, vec![d.to_owned(), parent])
            }
            // `ln -s TARGET`: the link is made here, under the target's last name.
            _ => (&ops[..], vec![".".to_owned()]),
        };
        for &t in targets {
            if !w[t].starts_with('/') {
                for f in &folders {
                    e.paths.push((Access::Read, format!("{f}/{}", w[t])));
                    // A second name for the target: a command already running that goes
                    // through the name (one decided before the link was there) reaches the
                    // target and what is beneath it, to read or to write. Checked as if
                    // it were moved away: a deny beneath it, or a prefix rule's refusal.
                    e.paths.push((Access::Remove, format!("{f}/{}", w[t])));
                }
            } else {
                e.paths.push((Access::Remove, w[t].clone()));
            }
        }
    }
    if has(&met, &["-s", "--symbolic"]) && has(&met, &["-r", "--relative"]) {
        let targets = match ops.split_last() {
            Some((_, t)) if !t.is_empty() && !has(&met, &["-t", "--target-directory"]) => t,
            _ => &ops[..],
        };
        paths(w, targets, Access::Remove, e);
    }
    if has(&met, &["-t", "--target-directory"]) {
        return sources_and_destination(w, &met, &ops, Access::Read, e);
    }
    match ops.as_slice() {
        [] => Err(stop(w.len() - 1, "a link needs a target")),
        [target] => {
            paths(w, &[*target], Access::Read, e);
            let name = super::base(w[*target].trim_end_matches('/'));
            e.paths.push((Access::Write, name.to_owned()));
            Ok(())
        }
        _ => sources_and_destination(w, &met, &ops, Access::Read, e),
    }
}

const INSTALL: &[&str] = &[
    "-c",
    "-C|--compare",
    "-d|--directory",
    "-D",
    "-g|--group=",
    "-m|--mode=",
    "-o|--owner=",
    "-p|--preserve-timestamps",
    "-t|--target-directory=W",
    "-T|--no-target-directory",
    "-v|--verbose",
];

pub(super) fn install(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (met, ops) = options(w, 1, INSTALL, true, e)?;
    // `-d` and `-D` make every folder on the way (`newdir/../x` makes `newdir` too).
    if has(&met, &["-d", "--directory", "-D"]) {
        let dots = |v: &str| v.split('/').any(|c| c == "..");
        if let Some(&o) = ops.iter().find(|&&o| dots(&w[o])) {
            return Err(stop(o, "a folder to make through `..`"));
        }
        // `-D -t DIR` makes DIR's folders too.
        if let Some(m) = met.iter().find(|m| {
            matches!(m.name.as_str(), "-t" | "--target-directory")
                && m.value.as_deref().is_some_and(dots)
        }) {
            return Err(stop(m.value_at(w), "a folder to make through `..`"));
        }
    }
    if has(&met, &["-d", "--directory"]) {
        paths(w, &ops, Access::Write, e);
        return Ok(());
    }
    sources_and_destination(w, &met, &ops, Access::Read, e)
}

const TEE: &[&str] = &[
    "-a|--append",
    "-i|--ignore-interrupts",
    "-p",
    "--output-error?",
];

pub(super) fn tee(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, TEE, true, e)?;
    paths(w, &ops, Access::Write, e);
    Ok(())
}

const TAR: &[&str] = &[
    "-t|--list",
    "-c|--create",
    "-x|--extract|--get",
    "-r|--append",
    "-u|--update",
    "-d|--diff|--compare",
    "-f|--file=",
    "-v|--verbose",
    "-z|--gzip|--gunzip|--ungzip",
    "-j|--bzip2",
    "-J|--xz",
    "--zstd",
    "--lzma",
    "--lzip",
    "--lzop",
    "-a|--auto-compress",
    "-O|--to-stdout",
    "-p|--preserve-permissions|--same-permissions",
    "-k|--keep-old-files",
    "--exclude=",
    "--exclude-vcs",
    "--exclude-vcs-ignores",
    "--exclude-caches",
    "--wildcards",
    "--no-wildcards",
    "--anchored",
    "--no-anchored",
    "--strip-components=",
    "--no-same-owner",
    "--no-same-permissions",
    "--numeric-owner",
    "--owner=",
    "--group=",
    "--mode=",
    "--mtime=",
    "--sort=",
    "--format=",
    "-H|--format=",
    "-h|--dereference",
    "--null",
    "-X|--exclude-from=R",
    "--show-transformed-names",
    "-b|--blocking-factor=",
    "-m|--touch",
    "-W|--verify",
    "-S|--sparse",
    "--one-file-system",
    "--force-local",
    "--totals",
    "--full-time",
    "--utc",
];

/// `tar`: lists (`-t`) and creates (`-c`, its archive written, its operands read whole);
/// anything else, extraction included, is asked.
pub(super) fn tar(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    // The old form: `tar czf out.tgz dir` is `tar -c -z -f out.tgz dir`.
    let words: Vec<String>;
    let w = match w.get(1) {
        Some(first)
            if !first.starts_with('-') && first.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            let mut out = vec![w[0].clone()];
            let mut values = w[2..].iter();
            // Each letter as the table says: one that takes a value takes the next word.
            for c in first.chars() {
                let flag = format!("-{c}");
                let takes = super::lookup(TAR, &flag).ok_or_else(|| {
                    stop(1, format!("`{c}` is not a letter of tar known as harmless"))
                })?;
                out.push(flag);
                if !matches!(takes, super::Takes::Nothing | super::Takes::Optional) {
                    match values.next() {
                        Some(v) => out.push(v.clone()),
                        None => return Err(stop(1, format!("`{c}` without its value"))),
                    }
                }
            }
            out.extend(values.cloned());
            words = out;
            &words
        }
        _ => w,
    };
    let (met, ops) = options(w, 1, TAR, true, e)?;
    let create = has(&met, &["-c", "--create"]);
    let list = has(&met, &["-t", "--list"]);
    let other = met.iter().find(|m| {
        [
            "-x",
            "--extract",
            "--get",
            "-r",
            "--append",
            "-u",
            "--update",
            "-d",
            "--diff",
            "--compare",
        ]
        .contains(&m.name.as_str())
    });
    if let Some(m) = other {
        return Err(stop(
            m.at,
            format!("`tar {}` writes or compares where the archive says", m.name),
        ));
    }
    if create == list {
        return Err(stop(1, "tar with neither or both of -c and -t"));
    }
    for m in met.iter().filter(|m| m.name == "-f" || m.name == "--file") {
        let v = m.value.clone().unwrap_or_default();
        if v.contains(':') && !has(&met, &["--force-local"]) {
            return Err(stop(
                m.value_at(w),
                "an archive on another host (`host:file` runs a remote shell)",
            ));
        }
        if v != "-" {
            e.paths
                .push((if create { Access::Write } else { Access::Read }, v));
        }
    }
    if create {
        let follows = has(&met, &["-h", "--dereference"]);
        paths(
            w,
            &ops,
            if follows {
                Access::TreeFollowed
            } else {
                Access::Tree
            },
            e,
        );
    }
    Ok(())
}
