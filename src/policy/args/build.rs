//! Models of the build and test tools: `cargo`, `npm` and its kin, `npx`, `pytest`, `python
//! -m`, `make`, `go` and `uv`. Each runs the project's own code where that is its
//! subcommand's job (`cargo test` builds and runs the tests, `npm test` the script the
//! project names): approving the subcommand approves that. What the models refuse is what
//! would run something else, read or write somewhere else, or take another configuration:
//! `cargo --config`/`-Z`/`--target-dir`/`--manifest-path`, `npm --prefix`/`--script-shell`/
//! `--node-options`, `pytest -p`/`--basetemp`/`-o`/`--rootdir`/`-c`, `make --eval`/`-f`/`-C`
//! and `NAME=VALUE`, `go -exec`/`-toolexec`/`-ldflags`/`-args`, `uv --index-url`/
//! `--extra-index-url`/`--python`, and every option a model does not list.

use super::{options, stop, Access, Effects, Stop};

/// The options every building subcommand of cargo takes.
const CARGO_BUILD: &[&str] = &[
    "-p|--package=",
    "--workspace|--all",
    "--exclude=",
    "--lib",
    "--bins",
    "--bin=",
    "--examples",
    "--example=",
    "--tests",
    "--test=",
    "--benches",
    "--bench=",
    "--all-targets",
    "-F|--features=",
    "--all-features",
    "--no-default-features",
    "-r|--release",
    "--profile=",
    "-j|--jobs=",
    "--target=",
    "-v|--verbose",
    "-q|--quiet",
    "--color=",
    "--frozen",
    "--locked",
    "--offline",
    "--message-format=",
    "--keep-going",
    "--timings?",
    "--ignore-rust-version",
    "--future-incompat-report",
    "-h|--help",
    // test and bench
    "--no-run",
    "--no-fail-fast",
    "--doc",
    // clippy
    "--fix",
    "--allow-dirty",
    "--allow-staged",
    "--allow-no-vcs",
    "--no-deps",
    "--broken-code",
    // doc
    "--document-private-items",
    // fmt
    "--check",
];

const CARGO_TREE: &[&str] = &[
    "-p|--package=",
    "--workspace",
    "--exclude=",
    "-i|--invert=",
    "-e|--edges=",
    "--depth=",
    "--prefix=",
    "--no-dedupe",
    "-d|--duplicates",
    "--charset=",
    "-f|--format=",
    "--target=",
    "-F|--features=",
    "--all-features",
    "--no-default-features",
    "--all-targets",
    "--frozen",
    "--locked",
    "--offline",
    "-q|--quiet",
    "-v|--verbose",
    "--color=",
    "--format-version=",
    "--no-deps",
    "--filter-platform=",
];

/// After `cargo test --` and `cargo bench --`: the harness's own flags, and test names.
const CARGO_HARNESS: &[&str] = &[
    "--nocapture|--no-capture",
    "--test-threads=",
    "--exact",
    "--ignored",
    "--include-ignored",
    "--skip=",
    "-q|--quiet",
    "--show-output",
    "--color=",
    "--format=",
    "--list",
    "--bench",
    "--test",
];

/// After `cargo clippy --`: lint levels.
const CARGO_LINTS: &[&str] = &[
    "-D|--deny=",
    "-W|--warn=",
    "-A|--allow=",
    "-F|--forbid=",
    "--cap-lints=",
    "--no-deps",
];

/// After `cargo fmt --`: rustfmt's flags that write nowhere else.
const CARGO_RUSTFMT: &[&str] = &[
    "--check",
    "--emit=",
    "--edition=",
    "--color=",
    "-v|--verbose",
    "-q|--quiet",
    "-l|--files-with-diff",
];

/// `cargo`: `+toolchain`, its quiet global flags, then one subcommand of build, check, test,
/// bench, clippy, fmt, doc, run, tree and metadata with the options each takes.
pub(super) fn cargo(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let mut i = 1;
    if let Some(t) = w.get(i).and_then(|a| a.strip_prefix('+')) {
        // A toolchain by its name; a path is a toolchain of anyone's making.
        if !plain_name(t) {
            return Err(stop(i, "a toolchain that is not a plain name"));
        }
        i += 1;
    }
    while let Some(a) = w.get(i) {
        match a.as_str() {
            "-v" | "-vv" | "--verbose" | "-q" | "--quiet" | "--frozen" | "--locked"
            | "--offline" => i += 1,
            _ => break,
        }
    }
    let Some(sub) = w.get(i) else {
        return Ok(());
    };
    let sub_at = i;
    let (main, after): (&[String], Option<usize>) = match w.iter().skip(i).position(|a| a == "--") {
        Some(p) => (&w[..i + p], Some(i + p + 1)),
        None => (w, None),
    };
    let (table, operands_ok, after_table): (&[&str], bool, Option<&[&str]>) = match sub.as_str() {
        "build" | "b" | "check" | "c" | "doc" | "d" => (CARGO_BUILD, false, None),
        "test" | "t" | "bench" => (CARGO_BUILD, true, Some(CARGO_HARNESS)),
        "clippy" => (CARGO_BUILD, false, Some(CARGO_LINTS)),
        "fmt" => (CARGO_BUILD, false, Some(CARGO_RUSTFMT)),
        "run" | "r" => (CARGO_BUILD, false, None),
        "tree" | "metadata" => (CARGO_TREE, false, None),
        "update" | "add" => return cargo_lock(w, sub_at, e),
        other => return Err(stop(sub_at, format!("`cargo {other}` has no model"))),
    };
    let (met, ops) = options(main, sub_at + 1, table, true, e)?;
    // A target is a triple; a path names a target file, whose `linker` runs.
    if let Some(m) = met.iter().find(|m| {
        m.name == "--target"
            && !m
                .value
                .as_deref()
                .is_some_and(|t| plain_name(t) && !t.ends_with(".json"))
    }) {
        return Err(stop(
            m.value_at(main),
            "a target that is a file, not a triple",
        ));
    }
    if !operands_ok {
        if let Some(&o) = ops.first() {
            return Err(stop(
                o,
                format!("`cargo {sub}` takes no operand `{}`", w[o]),
            ));
        }
    }
    if let Some(from) = after {
        // rustc's driver (clippy's) and rustdoc (doctests) put a file's lines in place of
        // an `@FILE` word (`cargo clippy -- -W @.env` printed `.env`; `-D @lints.txt` with
        // `--emit=dep-info=~/.bashrc` in it wrote there, a fifty-ninth review).
        if let Some(at) = (from..w.len()).find(|&a| w[a].starts_with('@')) {
            if !matches!(sub.as_str(), "run" | "r") {
                return Err(stop(
                    at,
                    "a response file: its lines are read as more arguments",
                ));
            }
        }
        if matches!(sub.as_str(), "run" | "r") {
            // The project's program's own arguments: it is the subcommand's job to run it.
            e.unplaced.extend(w[from..].iter().cloned());
            return Ok(());
        }
        let Some(t) = after_table else {
            return Err(stop(
                from - 1,
                format!("`cargo {sub}` passes nothing after `--`"),
            ));
        };
        // Test names are not paths; clippy and rustfmt take no operand there (a file to
        // lint or to format may be anywhere).
        let (_, names) = options(w, from, t, true, e)?;
        if let (Some(&o), false) = (
            names.first(),
            matches!(sub.as_str(), "test" | "t" | "bench"),
        ) {
            return Err(stop(o, format!("`cargo {sub} -- {}`: a file", w[o])));
        }
    }
    Ok(())
}

/// `cargo update`'s options: packages by their names, a version, the workspace.
const CARGO_UPDATE: &[&str] = &[
    "-p|--package=",
    "-w|--workspace",
    "--recursive",
    "--aggressive",
    "--precise=",
    "--breaking",
    "-n|--dry-run",
    "-v|--verbose",
    "-q|--quiet",
    "--color=",
    "--frozen",
    "--locked",
    "--offline",
];

/// `cargo add`'s options that name no path, git repository, registry or manifest.
const CARGO_ADD: &[&str] = &[
    "-p|--package=",
    "--dev",
    "--build",
    "--target=",
    "-F|--features=",
    "--optional",
    "--no-optional",
    "--default-features",
    "--no-default-features",
    "--rename=",
    "--public",
    "--no-public",
    "-n|--dry-run",
    "-v|--verbose",
    "-q|--quiet",
    "--color=",
    "--frozen",
    "--locked",
    "--offline",
];

/// `cargo update` and `cargo add` from `w[sub]`: they change the manifest and its lock
/// file from the registry, and run no build script. Their operands are packages by name
/// (`serde`, `serde@1.0`), never a path, a URL or a git repository (`--path`, `--git`,
/// `--manifest-path`, `--lockfile-path`, `--registry`: no model).
fn cargo_lock(w: &[String], sub: usize, e: &mut Effects) -> Result<(), Stop> {
    let table = if w[sub] == "add" {
        CARGO_ADD
    } else {
        CARGO_UPDATE
    };
    let (met, ops) = options(w, sub + 1, table, true, e)?;
    let named = met
        .iter()
        .filter(|m| {
            matches!(
                m.name.as_str(),
                "-p" | "--package" | "--precise" | "--rename"
            )
        })
        .filter_map(|m| Some((m.value_at(w), m.value.as_deref()?)));
    let operands = ops.iter().map(|&o| (o, w[o].as_str()));
    if let Some((at, _)) = named.chain(operands).find(|(_, v)| !plain_name(v)) {
        return Err(stop(
            at,
            "a package that is not named by its name and version",
        ));
    }
    Ok(())
}

/// npm's (and pnpm's, yarn's) settings that name no program, file or place. `--color`
/// takes a value only joined (npm's `--color always` is the one word it takes apart, and
/// a word it does not take must not be taken for its value).
const NPM_FLAGS: &[&str] = &[
    "-s|--silent",
    "-q|--quiet",
    "-d|--verbose",
    "--loglevel=",
    "--color?",
    "--no-color",
    "--if-present",
    "--ignore-scripts",
    "--workspaces|--ws",
    "--include-workspace-root",
    "--json",
    "--parseable",
    "-l|--long",
    "-a|--all",
    "--depth=",
    "--omit=",
    "--include=",
    "--production|--prod",
    "--legacy-peer-deps",
    "--strict-peer-deps",
    "--prefer-offline",
    "--prefer-online",
    "--offline",
    "--no-audit",
    "--no-fund",
    "--no-save",
    "-D|--save-dev",
    "-E|--save-exact",
    "-P|--save-prod",
    "-O|--save-optional",
    "--dry-run",
    "--foreground-scripts",
    "--frozen-lockfile",
    "--immutable",
    "--watch",
    "--coverage",
];

/// `npm`, `pnpm`, `yarn`: `test`, `run NAME` (its own arguments after `--`), `ci`,
/// `install` of named packages from the registry, `ls`, `outdated`.
pub(super) fn npm(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let end = w.iter().position(|a| a == "--").unwrap_or(w.len());
    // Each reads its options its own way (a fifty-sixth review, with the real programs):
    // pnpm's `--include` takes no value (`pnpm --include setup test` ran `pnpm setup`, which
    // wrote `~/.bashrc`); yarn 1 takes its command from the first word after an option it
    // does not know, and lets that option take the next word (`yarn --depth exec run
    // canary` ran `canary`). So yarn gets no option before its command, and none that
    // takes a value.
    let program = super::base(&w[0]);
    let table: Vec<&str> = NPM_FLAGS
        .iter()
        .copied()
        .filter(|f| match program {
            // pnpm picks its command in a first pass that knows few options, where one it
            // does not know takes no value, and runs an unknown command as `pnpm exec`: a
            // fifty-eighth review's `pnpm --depth canary test` ran `canary`.
            "pnpm" => !f.ends_with(['=', '?']),
            "yarn" => !f.ends_with(['=', '?']),
            _ => true,
        })
        // pnpm's first pass knows these: `pnpm --filter canary test` filtered by
        // `canary`, and ran no program of that name.
        .chain(
            match program {
                "pnpm" => ["-r|--recursive", "-F|--filter="].as_slice(),
                _ => &[],
            }
            .iter()
            .copied(),
        )
        .collect();
    let (met, ops) = options(&w[..end], 1, &table, true, e)?;
    // A filter by a package's name or a glob of names (`web`, `@acme/*`, `web...` with its
    // dependencies): a folder (`./x`, `{x}`), a git revision (`[origin/main]`, which runs
    // git) or a package's dependents (`...web`) is asked.
    if let Some(m) = met.iter().find(|m| {
        matches!(m.name.as_str(), "-F" | "--filter")
            && !m.value.as_deref().is_some_and(|v| {
                let name = v.strip_prefix('@').unwrap_or(v);
                plain_name(&name.replace(['/', '*'], "x"))
                    && !v.split('/').any(|c| matches!(c, "." | ".."))
            })
    }) {
        return Err(stop(m.value_at(w), "a filter that is not a package's name"));
    }
    e.manager = ["npm", "pnpm", "yarn"].into_iter().find(|m| *m == program);
    if program == "yarn" {
        let first = ops.first().copied().unwrap_or(end);
        if let Some(o) = (1..first).find(|&o| w[o].starts_with('-')) {
            return Err(stop(
                o,
                "yarn reads an option before its command its own way (one it does not know takes the next word)",
            ));
        }
    }
    let Some((&sub, rest)) = ops.split_first() else {
        // `npm -- explore pkg sh`: its option reader ends at `--`, and the words after it
        // are the command.
        if end < w.len() {
            return Err(stop(
                end,
                "`--` before the subcommand: the words after it are one",
            ));
        }
        return Ok(());
    };
    // pnpm and yarn run a command they do not know as a script, else as a program
    // (`pnpm rum x` runs `rum`): only their own names for these.
    let known = match program {
        "yarn" => matches!(
            w[sub].as_str(),
            "test" | "run" | "add" | "install" | "list" | "outdated"
        ),
        "pnpm" => !matches!(w[sub].as_str(), "rum" | "urn" | "clean-install"),
        _ => true,
    };
    if !known {
        return Err(stop(
            sub,
            format!("`{program} {}` is not a command of its own", w[sub]),
        ));
    }
    let operands_ok = match w[sub].as_str() {
        "test" | "t" | "tst" => {
            if let Some(&o) = rest.first() {
                return Err(stop(o, "`test` takes no operand"));
            }
            true
        }
        "run" | "run-script" | "rum" | "urn" => {
            match rest {
                [name] if plain_name(&w[*name]) => {}
                [] => {}
                [_, extra, ..] | [extra] => {
                    return Err(stop(*extra, "a script's arguments go after `--`"))
                }
            }
            true
        }
        "ci" | "clean-install" | "ls" | "list" | "outdated" => rest.is_empty(),
        "install" | "i" | "add" => {
            for &p in rest {
                if !registry_package(&w[p]) {
                    return Err(stop(p, "a package that is not a name from the registry"));
                }
                // yarn 1 takes a range that is no semver range for a folder where
                // `RANGE/package.json` is there, and copies it whole.
                let version = w[p].strip_prefix('@').unwrap_or(&w[p]).split_once('@');
                if program == "yarn" {
                    // With no range, `latest` (a fifty-ninth review: `yarn add leftpad`
                    // installed the folder `latest`).
                    let range = version.map_or("latest", |(_, r)| r);
                    e.paths.push((Access::TreeFollowed, range.to_owned()));
                }
            }
            true
        }
        other => {
            return Err(stop(
                sub,
                format!("`{} {other}` has no model", super::base(&w[0])),
            ))
        }
    };
    if !operands_ok {
        return Err(stop(rest[0], "an operand this subcommand does not take"));
    }
    // An install writes the `node_modules` (`ci` empties them first) of every project of
    // the workspace and runs their scripts; pnpm 12 installs before a script too.
    let installs = match w[sub].as_str() {
        "ci" | "clean-install" | "install" | "i" | "add" => true,
        "test" | "t" | "tst" | "run" | "run-script" => program == "pnpm",
        _ => false,
    };
    let across = "-r --recursive -F --filter --workspaces --ws";
    let recursive = met.iter().any(|m| across.split(' ').any(|a| a == m.name));
    if installs || recursive {
        e.workspace = Some(super::WorkspaceRun {
            pnpm: program == "pnpm",
            yarn: program == "yarn",
            installs,
            recursive,
        });
    }
    if end < w.len() {
        if !matches!(
            w[sub].as_str(),
            "test" | "t" | "tst" | "run" | "run-script" | "rum" | "urn"
        ) {
            return Err(stop(
                end,
                "arguments after `--` for a subcommand that runs no script",
            ));
        }
        // The script's own arguments: the project's script decides what they mean.
        e.unplaced.extend(w[end + 1..].iter().cloned());
    }
    Ok(())
}

/// A script's or package's name: letters, digits and `-_:.@`, not starting with `-` or `.`.
pub(super) fn plain_name(w: &str) -> bool {
    !w.is_empty()
        && !w.starts_with(['-', '.'])
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:.@".contains(c))
}

/// A package from the registry: `name`, `name@range`, `@scope/name@range`; never a path, a
/// URL, a git or file spec, or an alias (`x@npm:y`).
fn registry_package(w: &str) -> bool {
    // npm takes a name ending so for a tarball on disk (npm-package-arg's `isFilename`).
    let lower = w.to_ascii_lowercase();
    if [".tgz", ".tar", ".tar.gz"]
        .iter()
        .any(|x| lower.ends_with(x))
    {
        return false;
    }
    let body = w.strip_prefix('@').unwrap_or(w);
    let (name, version) = match body.split_once('@') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    let scoped_ok = if w.starts_with('@') {
        name.split_once('/')
            .is_some_and(|(s, n)| plain_name(s) && plain_name(n))
    } else {
        plain_name(name) && !name.contains(':')
    };
    scoped_ok
        && version.is_none_or(|v| {
            // npm takes a spec starting with `.` for a folder (`foo@..` installed the
            // parent folder and ran its scripts, a fifty-eighth review).
            !v.starts_with('.')
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.^~<>=*| ".contains(c))
        })
}

/// `npx PKG ARGS`: a package the project has installed (its `node_modules/.bin/PKG`), then
/// its own arguments, read by its model if it has one (unplaced otherwise). `-c`, `--call`
/// and any other option are asked.
pub(super) fn npx(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let mut i = 1;
    while let Some(a) = w.get(i) {
        match a.as_str() {
            "-y" | "--yes" | "--no" | "-q" | "--quiet" => i += 1,
            o if o.starts_with('-') => {
                return Err(stop(
                    i,
                    format!("`{o}` is not an option of npx known as harmless"),
                ))
            }
            _ => break,
        }
    }
    let Some(pkg) = w.get(i) else {
        return Err(stop(w.len() - 1, "npx without a package"));
    };
    if !registry_package(pkg) {
        return Err(stop(i, "a package that is not a name from the registry"));
    }
    // npm runs a plain name from the nearest `node_modules/.bin` from the current folder up
    // (a package's subfolder runs its project's), else from its global bin folder (`/usr/bin`
    // where its prefix is `/usr`), else the registry's package of that name: only the
    // project's own is the program its words name (a sixty-first review: `npx rm -rf
    // victim` ran `/usr/bin/rm`). A scope or a version names a package, which npm fetches
    // from the registry unless the project's tree has it to the letter, and `-p PKG` puts
    // the registry's PKG first on `PATH` (a sixty-second review: `npx -y @evil/jest`,
    // `npx jest@99` and `npx -y -p evilpkg jest` each ran a registry package's `jest`).
    if pkg.contains(['@', '/']) {
        return Err(stop(
            i,
            "a package with a scope or a version: npm may fetch it from the registry",
        ));
    }
    e.npm_bins.push(pkg.to_owned());
    delegate(w, i, e)
}

/// The words from `at` on are a program's of its own (`npx jest …`, `python -m pytest …`):
/// read by its model, or passed on unplaced.
pub(super) fn delegate(w: &[String], at: usize, e: &mut Effects) -> Result<(), Stop> {
    let mut inner = w[at..].to_vec();
    // `@scope/name@1` runs `name`.
    let name = inner[0].rsplit('/').next().unwrap_or(&inner[0]);
    inner[0] = name.split('@').next().unwrap_or(name).to_owned();
    match super::read(&inner) {
        super::Reading::NoModel => {
            e.unplaced.extend(w[at + 1..].iter().cloned());
            Ok(())
        }
        super::Reading::Understood(inner) => {
            e.paths.extend(inner.paths);
            e.unplaced.extend(inner.unplaced);
            Ok(())
        }
        super::Reading::Unknown { at: k, why } => Err(stop(at + k, why)),
    }
}
