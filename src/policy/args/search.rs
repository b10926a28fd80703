//! Models of the programs that search: `grep`, `rg` and `find`.
//!
//! Left out on purpose (asked under a prefix): `rg --pre`, `--pre-glob` and `-z`/
//! `--search-zip` (they run programs), `find -exec`, `-execdir`, `-ok`, `-okdir`, `-delete`,
//! `-fprint*` and `-fls`.

use super::{config, has, options, paths, stop, Access, Effects, Stop};

const GREP: &[&str] = &[
    "-A|--after-context=",
    "-B|--before-context=",
    "-C|--context=",
    "-a|--text",
    "-b|--byte-offset",
    "-c|--count",
    "--color?",
    "--colour?",
    "-D|--devices=",
    "-d|--directories=",
    "-E|--extended-regexp",
    "-e|--regexp=",
    "-F|--fixed-strings",
    "-f|--file=R",
    "-G|--basic-regexp",
    "-H|--with-filename",
    "-h|--no-filename",
    "-i|-y|--ignore-case",
    "--no-ignore-case",
    "-I",
    "--binary-files=",
    "-L|--files-without-match",
    "-l|--files-with-matches",
    "-m|--max-count=",
    "-n|--line-number",
    "-o|--only-matching",
    "-P|--perl-regexp",
    "-q|--quiet|--silent",
    "-r|--recursive",
    "-R|--dereference-recursive",
    "-s|--no-messages",
    "-T|--initial-tab",
    "-U|--binary",
    "-v|--invert-match",
    "-w|--word-regexp",
    "-x|--line-regexp",
    "-Z|--null",
    "-z|--null-data",
    "--include=",
    "--exclude=",
    "--exclude-from=R",
    "--exclude-dir=",
    "--line-buffered",
    "--label=",
    "-0|-1|-2|-3|-4|-5|-6|-7|-8|-9",
];

/// `grep`: a pattern (unless `-e`/`-f` gave it), then files read, or whole folders with
/// `-r`/`-R` (the current one when none is named).
pub(super) fn grep(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (met, ops) = options(w, 1, GREP, true, e)?;
    let follows = has(&met, &["-R", "--dereference-recursive"]);
    let recursive = follows
        || has(&met, &["-r", "--recursive"])
        || met.iter().any(|m| {
            // GNU grep takes any unambiguous start of the value (`-d rec`), and says an
            // ambiguous one (`-d r`) is an error: either is taken as recursive.
            (m.name == "-d" || m.name == "--directories")
                && m.value
                    .as_deref()
                    .is_some_and(|v| !v.is_empty() && "recurse".starts_with(v))
        });
    let files = if has(&met, &["-e", "--regexp", "-f", "--file"]) {
        &ops[..]
    } else {
        ops.get(1..).unwrap_or_default()
    };
    let access = match (recursive, follows) {
        (_, true) => Access::TreeFollowed,
        (true, false) => Access::Tree,
        _ => Access::Read,
    };
    // A file GNU grep finds beneath a folder is read only if its name matches an
    // `--include` glob, when the first of `--include`, `--exclude` and `--exclude-from`
    // is an `--include` (otherwise a file no glob matches is read: `--exclude=x
    // --include='*.rs'` read `.env`). Its globs are fnmatch's: `{a,b}` is literal.
    let first = met.iter().find(|m| {
        matches!(
            m.name.as_str(),
            "--include" | "--exclude" | "--exclude-from"
        )
    });
    if first.is_some_and(|m| m.name == "--include") {
        let globs: Vec<String> = met
            .iter()
            .filter(|m| m.name == "--include")
            .filter_map(|m| m.value.clone())
            .collect();
        if globs
            .iter()
            .all(|g| plain_name_glob(g) && !g.contains(['{', '}']))
        {
            e.only_names = Some(globs);
        }
    }
    paths(w, files, access, e);
    if recursive && files.is_empty() {
        e.paths.push((access, ".".into()));
    }
    Ok(())
}

const RG: &[&str] = &[
    "-A|--after-context=",
    "-B|--before-context=",
    "-C|--context=",
    "-a|--text",
    "--no-text",
    "--auto-hybrid-regex",
    "--no-auto-hybrid-regex",
    "-b|--byte-offset",
    "--no-byte-offset",
    "--binary",
    "--no-binary",
    "--block-buffered",
    "--no-block-buffered",
    "-c|--count",
    "--count-matches",
    "--color=",
    "--colors=",
    "--column",
    "--no-column",
    "--context-separator=",
    "--no-context-separator",
    "--crlf",
    "--no-crlf",
    // `--debug` and `--trace` are not: they print the lines of the user's excludes file
    // that are not globs (`core.excludesFile`, a link to anything).
    "--dfa-size-limit=",
    "-E|--encoding=",
    "--no-encoding",
    // Its value the next word too (`--engine auto`): ripgrep 13 takes `--engine -L` as
    // `--follow`, so a separate value must be an engine's name (`rg`).
    "--engine=",
    "-e|--regexp=",
    "-F|--fixed-strings",
    "--no-fixed-strings",
    "-f|--file=R",
    "--field-context-separator=",
    "--field-match-separator=",
    "--files",
    "-l|--files-with-matches",
    "--files-without-match",
    "-L|--follow",
    "--no-follow",
    "-g|--glob=",
    "--glob-case-insensitive",
    "--no-glob-case-insensitive",
    "--heading",
    "--no-heading",
    "-H|--with-filename",
    "-I|--no-filename",
    "--hidden",
    "--no-hidden",
    "-.",
    "--iglob=",
    "-i|--ignore-case",
    "--ignore-file=R",
    "--ignore-file-case-insensitive",
    "--no-ignore-file-case-insensitive",
    "--include-zero",
    "--no-include-zero",
    "-v|--invert-match",
    "--no-invert-match",
    "--json",
    "--no-json",
    "--line-buffered",
    "--no-line-buffered",
    "-n|--line-number",
    "-N|--no-line-number",
    "-x|--line-regexp",
    "-M|--max-columns=",
    "--max-columns-preview",
    "--no-max-columns-preview",
    "-m|--max-count=",
    "-d|--max-depth|--maxdepth=",
    "--max-filesize=",
    "--mmap",
    "--no-mmap",
    "-U|--multiline",
    "--no-multiline",
    "--multiline-dotall",
    "--no-multiline-dotall",
    "--no-config",
    "--no-ignore",
    "--ignore",
    "--no-ignore-dot",
    "--no-ignore-exclude",
    "--no-ignore-files",
    "--no-ignore-global",
    "--no-ignore-messages",
    "--no-ignore-parent",
    "--no-ignore-vcs",
    "--no-messages",
    "--no-pcre2-unicode",
    "--no-unicode",
    "--no-require-git",
    "-0|--null",
    "--null-data",
    "--one-file-system",
    "--no-one-file-system",
    "-o|--only-matching",
    "--passthru|--passthrough",
    "--path-separator=",
    "-P|--pcre2",
    "--no-pcre2",
    "-p|--pretty",
    "-q|--quiet",
    "--regex-size-limit=",
    "-r|--replace=",
    "-s|--case-sensitive",
    "-S|--smart-case",
    "--sort=",
    "--sortr=",
    "--sort-files",
    "--stats",
    "--no-stats",
    "--stop-on-nonmatch",
    "-j|--threads=",
    "--trim",
    "--no-trim",
    "-t|--type=",
    "-T|--type-not=",
    "--type-add=",
    "--type-clear=",
    "--type-list",
    "-u|--unrestricted",
    "--vimgrep",
    "-w|--word-regexp",
    "-h|--help",
    "-V|--version",
];

/// `rg`: a pattern (unless `-e`/`-f` gave it, or `--files`/`--type-list` take none), then
/// folders searched whole (the current one when none is named); unless `--no-config`,
/// after the arguments of its configuration file (`RIPGREP_CONFIG_PATH`), read first.
pub(super) fn rg(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    rg_in(w, e, &|k| std::env::var_os(k))
}

/// [`rg`] in the environment `env`. What the configuration brings that the model refuses
/// is refused at the command's end, past any rule's prefix: the user's rule did not say it.
pub(super) fn rg_in(w: &[String], e: &mut Effects, env: config::Env<'_>) -> Result<(), Stop> {
    let (met, _) = options(w, 1, RG, true, &mut Effects::default())?;
    let extra = if has(&met, &["--no-config"]) {
        Vec::new()
    } else {
        config::ripgrep(env).map_err(|why| stop(w.len(), why))?
    };
    if extra.is_empty() {
        return rg_words(w, e);
    }
    let n = extra.len();
    let all: Vec<String> = w[..1]
        .iter()
        .chain(&extra)
        .chain(&w[1..])
        .cloned()
        .collect();
    rg_words(&all, e).map_err(|s| match s.at {
        0 => s,
        at if at <= n => stop(
            w.len(),
            format!(
                "{} (from ripgrep's configuration file, RIPGREP_CONFIG_PATH)",
                s.why
            ),
        ),
        at => stop(at - n, s.why),
    })
}

fn rg_words(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let end = w.iter().position(|a| a == "--").unwrap_or(w.len());
    if let Some(k) = w[..end].iter().position(|a| a == "--engine") {
        if !w
            .get(k + 1)
            .is_some_and(|v| matches!(v.as_str(), "default" | "pcre2" | "auto"))
        {
            return Err(stop(k, "`--engine` without an engine's name after it"));
        }
    }
    let (met, ops) = options(w, 1, RG, true, e)?;
    if has(&met, &["--type-list", "-h", "--help", "-V", "--version"]) {
        return Ok(());
    }
    let files = if has(&met, &["-e", "--regexp", "-f", "--file", "--files"]) {
        &ops[..]
    } else {
        ops.get(1..).unwrap_or_default()
    };
    // ripgrep leaves hidden files out unless told (`--hidden`, `-.`, `-uu`), and follows
    // links only with `-L`.
    let u = met
        .iter()
        .filter(|m| m.name == "-u" || m.name == "--unrestricted")
        .count();
    // A positive glob of `-g`/`--iglob`, a type (`-t sh` is `.bashrc`; `--type-add
    // e:.env`), or an ignore file named on the command line (`!.env`) brings the names it
    // matches in, hidden ones too. A glob of `!` only leaves names out.
    let globs: Vec<Option<&String>> = met
        .iter()
        .filter(|m| matches!(m.name.as_str(), "-g" | "--glob" | "--iglob"))
        .map(|m| m.value.as_ref())
        .collect();
    let positive: Vec<String> = globs
        .iter()
        .filter(|g| !g.is_some_and(|g| g.starts_with('!')))
        .map(|g| g.cloned().unwrap_or_default())
        .collect();
    let types: Vec<&str> = met
        .iter()
        .filter(|m| matches!(m.name.as_str(), "-t" | "--type"))
        .map(|m| m.value.as_deref().unwrap_or_default())
        .collect();
    let hidden = u >= 2
        || !positive.is_empty()
        || !types.is_empty()
        || has(
            &met,
            &[
                "--hidden",
                "-.",
                "--type-add",
                "--type-clear",
                "--ignore-file",
            ],
        );
    // `--files` prints the names of the files it would search, none of their content: the
    // folders are listed, as `find` lists them.
    let access = if has(&met, &["--files"]) {
        Access::Read
    } else if has(&met, &["-L", "--follow"]) {
        Access::TreeFollowed
    } else if hidden {
        Access::Tree
    } else {
        Access::TreeShown
    };
    // Its ignore files are read, and their lines that are not globs printed, with any
    // access but `--no-ignore` (`-u`) without `--ignore` after it.
    let no_ignore = met
        .iter()
        .rposition(|m| matches!(m.name.as_str(), "-u" | "--unrestricted" | "--no-ignore"));
    let ignore = met.iter().rposition(|m| m.name == "--ignore");
    e.ignore_files = match (no_ignore, ignore) {
        (Some(n), Some(i)) => i > n,
        (Some(_), None) => false,
        _ => true,
    };
    // A positive glob leaves out every file no positive glob matches, hidden or ignored
    // (ripgrep's overrides come first): globs of a name alone (no `/`) are matched so.
    // Without one, the types selected leave out every file none of their globs matches,
    // ignored or hidden, when each is a type of ripgrep's own table as `rgtypes` holds it.
    if !positive.is_empty() {
        if positive.iter().all(|g| plain_name_glob(g)) {
            e.only_names = Some(positive);
        }
    } else if !types.is_empty() && !has(&met, &["--type-add", "--type-clear"]) {
        e.only_names = super::rgtypes::globs(types);
    }
    paths(w, files, access, e);
    if files.is_empty() {
        e.paths.push((access, ".".into()));
    }
    Ok(())
}

/// Whether ripgrep matches glob `g` on a file's name alone, as written: letters, digits,
/// `.`, `_`, `-`, `+`, `*` and `?` (neither crosses a `/`), and `{a,b}`. Not a class
/// (`[!x]` and `[.-0]` match a `/` of the path), an escape, `**`, a space (ripgrep
/// trims a glob as a line of a gitignore file: `'.env '` is `.env`), a `#` (a comment:
/// no glob at all), nor an empty glob.
fn plain_name_glob(g: &str) -> bool {
    !g.is_empty()
        && !g.contains("**")
        && g.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_+*?{},".contains(&b))
}

/// `find`'s tests and actions that take no value.
const FIND_BARE: &[&str] = &[
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-true",
    "-false",
    "-depth",
    "-d",
    "-xdev",
    "-mount",
    "-noleaf",
    "-daystart",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-not",
    "!",
    "-a",
    "-and",
    "-o",
    "-or",
    ",",
    "(",
    ")",
    "-empty",
    "-readable",
    "-writable",
    "-executable",
    "-nouser",
    "-nogroup",
    "-help",
    "--help",
    "-version",
    "--version",
];

/// `find`'s tests that take one value that names no file.
const FIND_VALUE: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-maxdepth",
    "-mindepth",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-used",
    "-size",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-lname",
    "-ilname",
    "-fstype",
    "-printf",
    "-context",
    "-newermt",
    "-newerat",
    "-newerct",
    "-newerBt",
];

/// `find`'s tests whose value is a file it reads the times or identity of (`-newerXY` with
/// `Y` other than `t`, a time, compares with FILE's).
const FIND_FILE: &[&str] = &[
    "-newer",
    "-anewer",
    "-cnewer",
    "-samefile",
    "-neweraa",
    "-neweraB",
    "-newerac",
    "-neweram",
    "-newerBa",
    "-newerBB",
    "-newerBc",
    "-newerBm",
    "-newerca",
    "-newercB",
    "-newercc",
    "-newercm",
    "-newerma",
    "-newermB",
    "-newermc",
    "-newermm",
];

/// `find`: its starting points listed (names, sizes and times beneath them, never a file's
/// content), and an expression of tests and the actions that only print.
pub(super) fn find(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let mut i = 1;
    // Leading options: -H, -L, -P, -D debugopts, -Olevel.
    while let Some(a) = w.get(i) {
        match a.as_str() {
            "-H" | "-P" => i += 1,
            "-D" => i += 2,
            o if o.starts_with("-O") && o.len() > 2 => i += 1,
            _ => break,
        }
    }
    let start = i;
    while w
        .get(i)
        .is_some_and(|a| !a.starts_with('-') && !matches!(a.as_str(), "(" | "!" | ")" | ","))
    {
        i += 1;
    }
    let starts: Vec<usize> = (start..i).collect();
    paths(w, &starts, Access::Read, e);
    if starts.is_empty() {
        e.paths.push((Access::Read, ".".into()));
    }
    while i < w.len() {
        let a = w[i].as_str();
        if FIND_BARE.contains(&a) {
            i += 1;
        } else if FIND_VALUE.contains(&a) {
            if i + 1 >= w.len() {
                return Err(stop(i, format!("`{a}` without its value")));
            }
            i += 2;
        } else if FIND_FILE.contains(&a) {
            let v = w
                .get(i + 1)
                .ok_or_else(|| stop(i, format!("`{a}` without its file")))?;
            e.paths.push((Access::Read, v.clone()));
            i += 2;
        } else {
            return Err(stop(
                i,
                format!("`{a}` is not a test or action of find known as harmless"),
            ));
        }
    }
    Ok(())
}
