//! Models of the test and build tools besides cargo and npm: `pytest` and `python -m`,
//! `make`, `go` and `uv` (docs/POLICY.md, "Programs read by their arguments").

use super::build::{delegate, plain_name};
use super::{options, stop, Access, Effects, Stop};

pub(super) const PYTEST: &[&str] = &[
    "-x|--exitfirst",
    "-q|--quiet",
    "-v|--verbose",
    "-s",
    "--capture=",
    "-k=",
    "-m=",
    "--lf|--last-failed",
    "--ff|--failed-first",
    "--nf|--new-first",
    "--sw|--stepwise",
    "--sw-skip|--stepwise-skip",
    "-l|--showlocals",
    "--no-showlocals",
    "--tb=",
    "-r=",
    "--maxfail=",
    "--durations=",
    "--durations-min=",
    "-n|--numprocesses=",
    "--dist=",
    "--co|--collect-only",
    "--no-header",
    "--no-summary",
    "--disable-warnings|--disable-pytest-warnings",
    "--strict-markers",
    "--strict-config",
    "--strict",
    "--import-mode=",
    "--color=",
    "--code-highlight=",
    "--runxfail",
    "--full-trace",
    "--setup-show",
    "--setup-only",
    "--setup-plan",
    "--fixtures|--funcargs",
    "--fixtures-per-test",
    "--markers",
    "-V|--version",
    "-h|--help",
    "--cache-clear",
    "--deselect=",
    "--ignore=R",
    "--ignore-glob=",
    "--junitxml|--junit-xml=W",
    "--doctest-modules",
    // Not `--doctest-glob`: the files it matches are read as tests (`.env` among them).
    "--timeout=",
    "--no-cov",
    "--cov?",
    "--cov-report=",
    "--cov-branch",
    "--cov-fail-under=",
    "-p=",
    "--last-failed-no-failures|--lfnf=",
    "--log-level=",
    "--log-cli-level=",
    "-W|--pythonwarnings=",
];

/// `pytest`: its plain options, `--junitxml` written, test paths (`tests/x.py::test_y`)
/// read. `-W` takes only the built-in warning classes (a dotted one imports a module).
pub(super) fn pytest(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    // pytest 8.2 and later read more arguments from `@FILE`: any word, an option's value
    // (`-k @k.txt`) as much as a test's.
    if let Some(at) = w.iter().skip(1).position(|a| a.starts_with('@')) {
        return Err(stop(at + 1, "arguments read from a file (`@FILE`)"));
    }
    // pytest loads a plugin of any word `-pNAME`, or `-p` and the next, before it reads
    // its options, after `--` too (`pytest -- -pantigravity`, a sixtieth review).
    for (i, a) in w.iter().enumerate().skip(1) {
        let (plugin, at) = match a.strip_prefix("-p") {
            Some("") => (
                w.get(i + 1).map_or("", String::as_str),
                (i + 1).min(w.len() - 1),
            ),
            Some(rest) => (rest, i),
            None => continue,
        };
        if !plugin.strip_prefix("no:").is_some_and(plain_name) {
            return Err(stop(at, "`-p` that loads a plugin"));
        }
    }
    let (mut met, mut ops) = options(w, 1, PYTEST, true, e)?;
    // pytest-cov's `--cov` takes the next word as its value too, unless it is an option.
    for m in met
        .iter_mut()
        .filter(|m| m.name == "--cov" && m.value.is_none())
    {
        if let Some(at) = ops.iter().position(|&o| o == m.at + 1) {
            m.value = Some(w[ops[at]].clone());
            ops.remove(at);
        }
    }
    for m in &met {
        let v = m.value.as_deref().unwrap_or("");
        match m.name.as_str() {
            // `-p no:NAME` turns a plugin off; any other `-p` loads one.
            "-p" if !v.strip_prefix("no:").is_some_and(plain_name) => {
                return Err(stop(m.value_at(w), "`-p` that loads a plugin"))
            }
            // `--cov-report=html:DIR` writes DIR; `annotate` alone writes beside each
            // source measured, wherever it is.
            "--cov-report" => match v.split_once(':') {
                Some((_, dest)) => e.paths.push((Access::Write, dest.to_owned())),
                None if v.starts_with("annotate") => {
                    return Err(stop(m.value_at(w), "a report written beside the sources"))
                }
                None => {}
            },
            // `--cov=DIR` measures DIR, whose sources a report copies; a dotted name is
            // a module whose package coverage imports (`--cov=antigravity.x`, a
            // fifty-ninth review).
            // A value that is not a folder is a package name, whose parents are imported
            // (`--cov=antigravity.x/`, a sixtieth review): no name with a dot in it.
            // `append` puts a test's folder after the standard library's on the module
            // path: `antigravity.py` imports the library's (a sixty-first review).
            "--import-mode" if !matches!(v, "prepend" | "importlib") => {
                return Err(stop(
                    m.value_at(w),
                    "an import mode other than `prepend` or `importlib`",
                ))
            }
            "--cov" if !v.is_empty() => {
                if outside(v) || v.split('/').any(|c| c.contains('.') && c != ".") {
                    return Err(stop(
                        m.value_at(w),
                        "`--cov` of a module to import or of a folder outside the project",
                    ));
                }
                e.paths.push((Access::Tree, v.to_owned()));
            }
            _ => {}
        }
        // pytest puts the environment's variables in these (`--junitxml='$PWD/../x'`, a
        // fifty-ninth review), which the words do not show.
        if v.contains('$') {
            return Err(stop(m.value_at(w), "a value with a variable in it"));
        }
    }
    for m in met
        .iter()
        .filter(|m| m.name == "-W" || m.name == "--pythonwarnings")
    {
        let v = m.value.as_deref().unwrap_or("");
        if v.split(':').any(|part| part.contains('.')) {
            return Err(stop(
                m.value_at(w),
                "a warning filter that names a module to import",
            ));
        }
    }
    for &o in &ops {
        let path = w[o].split("::").next().unwrap_or(&w[o]);
        // A test outside the project runs code that is not the project's.
        if outside(path) {
            return Err(stop(o, "a test outside the project"));
        }
        // A test file's folders and name make the name of the module pytest imports
        // (`antigravity.x.py` imports `antigravity`, a sixtieth review).
        let stem = path.strip_suffix(".py").unwrap_or(path);
        if stem.split('/').any(|c| c.contains('.') && c != ".") {
            return Err(stop(
                o,
                "a test whose module name would import another module",
            ));
        }
        if let Some(f) = loaded_folder(path) {
            return Err(stop(
                o,
                format!("a test in a folder `{f}`, named as a module pytest may have loaded"),
            ));
        }
        e.paths.push((Access::Read, path.to_owned()));
    }
    Ok(())
}

/// The modules pytest or unittest may have loaded before it imports a test (Python 3.11's
/// `sys.stdlib_module_names` but `test` and those beginning with `_`, and pytest's own): a
/// test in a folder of such a name is imported as a module of the loaded package, from
/// wherever it is (a sixty-first review: `pytest sub/unittest/__main__.py` ran the
/// standard library's `unittest.__main__`).
#[rustfmt::skip]
const LOADED: &[&str] = &[
    "abc", "aifc", "antigravity", "argparse", "array", "ast", "asynchat", "asyncio",
    "asyncore", "atexit", "audioop", "base64", "bdb", "binascii", "bisect", "builtins", "bz2",
    "cProfile", "calendar", "cgi", "cgitb", "chunk", "cmath", "cmd", "code", "codecs",
    "codeop", "collections", "colorama", "colorsys", "compileall", "concurrent",
    "configparser", "contextlib", "contextvars", "copy", "copyreg", "crypt", "csv", "ctypes",
    "curses", "dataclasses", "datetime", "dbm", "decimal", "difflib", "dis", "distutils",
    "doctest", "email", "encodings", "ensurepip", "enum", "errno", "exceptiongroup",
    "faulthandler", "fcntl", "filecmp", "fileinput", "fnmatch", "fractions", "ftplib",
    "functools", "gc", "genericpath", "getopt", "getpass", "gettext", "glob", "graphlib",
    "grp", "gzip", "hashlib", "heapq", "hmac", "html", "http", "idlelib", "imaplib", "imghdr",
    "imp", "importlib", "iniconfig", "inspect", "io", "ipaddress", "itertools", "json",
    "keyword", "lib2to3", "linecache", "locale", "logging", "lzma", "mailbox", "mailcap",
    "marshal", "math", "mimetypes", "mmap", "modulefinder", "msilib", "msvcrt",
    "multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath", "nturl2path", "numbers",
    "opcode", "operator", "optparse", "os", "ossaudiodev", "packaging", "pathlib", "pdb",
    "pickle", "pickletools", "pipes", "pkgutil", "platform", "plistlib", "pluggy", "poplib",
    "posix", "posixpath", "pprint", "profile", "pstats", "pty", "pwd", "py", "py_compile",
    "pyclbr", "pydoc", "pydoc_data", "pyexpat", "pygments", "pytest", "queue", "quopri",
    "random", "re", "readline", "reprlib", "resource", "rlcompleter", "runpy", "sched",
    "secrets", "select", "selectors", "shelve", "shlex", "shutil", "signal", "site", "smtpd",
    "smtplib", "sndhdr", "socket", "socketserver", "spwd", "sqlite3", "sre_compile",
    "sre_constants", "sre_parse", "ssl", "stat", "statistics", "string", "stringprep",
    "struct", "subprocess", "sunau", "symtable", "sys", "sysconfig", "syslog", "tabnanny",
    "tarfile", "telnetlib", "tempfile", "termios", "textwrap", "this", "threading", "time",
    "timeit", "tkinter", "token", "tokenize", "tomli", "tomllib", "trace", "traceback",
    "tracemalloc", "tty", "turtle", "turtledemo", "types", "typing", "unicodedata", "unittest",
    "urllib", "uu", "uuid", "venv", "warnings", "wave", "weakref", "webbrowser", "winreg",
    "winsound", "wsgiref", "xdrlib", "xml", "xmlrpc", "zipapp", "zipfile", "zipimport", "zlib",
    "zoneinfo",
];

/// Why a test path's folders may make pytest or unittest import a module from elsewhere: a
/// folder named as a module already loaded, or one beginning with `_`. A path whose last
/// part is no `.py` file is a folder too (`pytest sub/unittest` imports its tests as
/// `unittest.…`).
fn loaded_folder(path: &str) -> Option<&str> {
    let mut folders: Vec<&str> = path.split('/').collect();
    let file = |last: &&str| last.split("::").next().is_some_and(|f| f.ends_with(".py"));
    if folders.last().is_some_and(file) {
        folders.pop();
    }
    folders
        .into_iter()
        .find(|c| c.starts_with('_') || LOADED.contains(c))
}

/// Whether a path leaves the project: absolute, from the home folder, or through `..`.
fn outside(path: &str) -> bool {
    path.starts_with(['/', '~']) || path.split('/').any(|c| c == "..")
}

/// `python -m pytest …` (read as pytest) and `python -m unittest …`, with `-B`, `-u`, `-q`,
/// `-E`, `-s`, `-b` before `-m` (not `-I` or `-P`: without the current folder on the module
/// path, `unittest antigravity.py` imports the standard library's, a sixty-first review).
/// Any other use of the interpreter (a script, `-c`) is asked.
pub(super) fn python(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let mut i = 1;
    while let Some(a) = w.get(i) {
        if a == "-m" {
            break;
        }
        if a.starts_with('-')
            && a.len() > 1
            && !a.starts_with("--")
            && a[1..].chars().all(|c| "BuqEsb".contains(c))
        {
            i += 1;
            continue;
        }
        return Err(stop(
            i,
            "a python script, or an option known to run or load more",
        ));
    }
    let module = w
        .get(i + 1)
        .ok_or_else(|| stop(i.min(w.len() - 1), "python without `-m MODULE`"))?;
    match module.as_str() {
        "pytest" => delegate(w, i + 1, e),
        "unittest" => {
            const UNITTEST: &[&str] = &[
                "-v|--verbose",
                "-q|--quiet",
                "-f|--failfast",
                "-c|--catch",
                "-b|--buffer",
                "-k=",
                "--locals",
                "--durations=",
                "-s|--start-directory=T",
                "-p|--pattern=",
                "-t|--top-level-directory=T",
            ];
            let (met, ops) = options(w, i + 2, UNITTEST, true, e)?;
            // A start or top folder that is not a folder is imported as a module
            // (`discover -s antigravity`, a sixtieth review).
            let mut folders: Vec<usize> = met
                .iter()
                .filter(|m| {
                    matches!(
                        m.name.as_str(),
                        "-s" | "--start-directory" | "-t" | "--top-level-directory"
                    )
                })
                .map(|m| m.value_at(w))
                .collect();
            let discover = ops.first().is_some_and(|&o| w[o] == "discover");
            if discover {
                // `discover [START [PATTERN [TOP]]]`.
                for (n, &o) in ops.iter().enumerate().skip(1) {
                    match n {
                        1 | 3 => folders.push(o),
                        2 => {}
                        _ => return Err(stop(o, "more words than `discover` takes")),
                    }
                }
            }
            for &o in &folders {
                if outside(&w[o]) {
                    return Err(stop(o, "tests outside the project"));
                }
                e.folders_there.push(w[o].clone());
                e.paths.push((Access::Tree, w[o].clone()));
            }
            for &o in ops.iter().filter(|_| !discover) {
                let name = w[o].as_str();
                // A module name: unittest imports it from anywhere on the path and calls
                // what it names if that is callable (`webbrowser.main`); a test file's path
                // is the project's, and its folders and name become a module's name, so
                // none may hold a dot (`antigravity.x.py` imports `antigravity`).
                let stem = name.strip_suffix(".py").unwrap_or("");
                if stem
                    .split('/')
                    .any(|c| c.is_empty() || (c.contains('.') && c != "."))
                {
                    return Err(stop(
                        o,
                        "a test named as a module (unittest calls whatever a name names): give its file",
                    ));
                }
                if outside(name) {
                    return Err(stop(o, "a test outside the project"));
                }
                if let Some(f) = loaded_folder(name) {
                    return Err(stop(
                        o,
                        format!(
                            "a test in a folder `{f}`, named as a module python may have loaded"
                        ),
                    ));
                }
                // A `.py` name that is not a file is read as a module name (a fifty-ninth
                // review: `antigravity.py` imported `antigravity`).
                e.files_there.push(name.to_owned());
                e.paths.push((Access::Read, name.to_owned()));
            }
            Ok(())
        }
        // `-m pip` imports `pip` from the current folder first (a project's `pip.py`
        // runs), so it is not modelled: asked.
        other => Err(stop(i + 1, format!("`python -m {other}` has no model"))),
    }
}

pub(super) const MAKE: &[&str] = &[
    "-j|--jobs??",
    "-k|--keep-going",
    "-S|--no-keep-going|--stop",
    "-s|--silent|--quiet",
    "--no-silent",
    "-B|--always-make",
    "-n|--just-print|--dry-run|--recon",
    "-q|--question",
    "-w|--print-directory",
    "--no-print-directory",
    "-O|--output-sync??",
    "-l|--load-average??",
    "-r|--no-builtin-rules",
    "-R|--no-builtin-variables",
    "-t|--touch",
    "--trace",
    "-i|--ignore-errors",
    "-e|--environment-overrides",
    "-p|--print-data-base",
    "-v|--version",
    "-h|--help",
    "-L|--check-symlink-times",
];

/// `make`: targets (never `NAME=VALUE`, which sets a variable: `SHELL=sh`), with options
/// that name no other makefile, folder or code (`-f`, `-C`, `-I`, `--eval` are asked).
pub(super) fn make(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, MAKE, true, e)?;
    for &o in &ops {
        let t = &w[o];
        // A target is looked up as a path, through any link on the way: names only.
        if t.contains('/') {
            return Err(stop(o, format!("`{t}`: a target that is a path")));
        }
        if t.contains('=')
            || !t
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:+@%".contains(c))
        {
            return Err(stop(o, format!("`{t}` is not a plain target (a variable set on the command line changes what make runs)")));
        }
        // A target is a file make may write, by the Makefile's rule or a built-in one, with
        // no Makefile (`%: %.sh` made `.envrc` of `.envrc.sh`).
        e.paths.push((Access::Write, t.clone()));
    }
    Ok(())
}

/// Go's flags: single or double dash, a value after `=` or in the next word (bool flags
/// take `=true`/`=false` only).
pub(super) const GO_BOOL: &[&str] = &[
    "v",
    "x",
    "n",
    "a",
    "race",
    "msan",
    "asan",
    "cover",
    "trimpath",
    "linkshared",
    "work",
    "json",
    "modcacherw",
    "benchmem",
    "failfast",
    "fullpath",
    "short",
    "c",
    "i",
    "m",
    "u",
    "t",
    "e",
    "l",
    "d",
    "fix",
    "buildvcs",
];

pub(super) const GO_VALUE: &[&str] = &[
    "covermode",
    "coverpkg",
    "p",
    "tags",
    "mod",
    "buildmode",
    "compiler",
    "run",
    "bench",
    "benchtime",
    "count",
    "cpu",
    "list",
    "parallel",
    "shuffle",
    "skip",
    "timeout",
    "vet",
    "buildvcs",
    "f",
];

pub(super) const GO_WRITE: &[&str] = &[
    "o",
    "coverprofile",
    "cpuprofile",
    "memprofile",
    "blockprofile",
    "mutexprofile",
    "trace",
];

/// `go build|test|vet|list|version|env|mod tidy|mod download|mod verify|mod why|mod graph`:
/// packages, and flags that run no other program and load no other file (`-o` and the
/// profiles written). `-args` (what follows goes to the test binary) is asked.
pub(super) fn go(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let Some(sub) = w.get(1) else {
        return Ok(());
    };
    let mut from = 2;
    match sub.as_str() {
        "build" | "test" | "vet" | "list" | "version" => {}
        "env" => {
            // Placed on the option itself: `go env -json` is harmless, `-w` is not.
            if let Some(at) = (2..w.len()).find(|&i| w[i].starts_with('-') && w[i] != "-json") {
                return Err(stop(
                    at,
                    "`go env` with options but -json (`-w` writes the configuration)",
                ));
            }
            return Ok(());
        }
        "mod" => match w.get(2).map(String::as_str) {
            Some("tidy" | "download" | "verify" | "why" | "graph") => from = 3,
            _ => {
                return Err(stop(
                    2,
                    "a `go mod` subcommand other than tidy, download, verify, why, graph",
                ))
            }
        },
        other => return Err(stop(1, format!("`go {other}` has no model"))),
    }
    let mut i = from;
    while i < w.len() {
        let a = w[i].as_str();
        if a == "--" {
            return Err(stop(i, "`--` in a go command"));
        }
        if !a.starts_with('-') || a == "-" {
            e.paths.push((Access::Read, a.to_owned()));
            i += 1;
            continue;
        }
        let body = a.trim_start_matches('-');
        let body = body.strip_prefix("test.").unwrap_or(body);
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        if GO_BOOL.contains(&name) && value.is_none_or(|v| v == "true" || v == "false") {
            i += 1;
        } else if GO_VALUE.contains(&name) || GO_WRITE.contains(&name) {
            let v = match value {
                Some(v) => v.to_owned(),
                None => {
                    i += 1;
                    w.get(i)
                        .ok_or_else(|| stop(i - 1, format!("`-{name}` without its value")))?
                        .clone()
                }
            };
            if GO_WRITE.contains(&name) {
                e.paths.push((Access::Write, v));
            }
            i += 1;
        } else {
            return Err(stop(i, format!("`{a}` is not a go flag known as harmless")));
        }
    }
    Ok(())
}

pub(super) const UV: &[&str] = &[
    "--frozen",
    "--locked",
    "--all-extras",
    "--extra=",
    "--no-extra=",
    "--group=",
    "--no-group=",
    "--only-group=",
    "--all-groups",
    "--no-default-groups",
    "--no-dev",
    "--dev",
    "--only-dev",
    "--no-install-project",
    "--no-install-workspace",
    "--no-install-package=",
    "--inexact",
    "--exact",
    "--all-packages",
    "--package=",
    "-q|--quiet",
    "-v|--verbose",
    "--offline",
    "--no-cache|-n",
    "--color=",
    "--no-progress",
    "--refresh",
    "--refresh-package=",
    "-U|--upgrade",
    "-P|--upgrade-package=",
    "--reinstall",
    "--reinstall-package=",
    "--compile-bytecode",
    "--no-sources",
    "--check",
    "--dry-run",
    "--depth|-d=",
    "--invert",
    "--no-dedupe",
    "--universal",
    "--outdated",
    "--prune=",
];

/// `uv sync|lock|tree`: options that name no other index, interpreter, project or file.
pub(super) fn uv(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    match w.get(1).map(String::as_str) {
        Some("sync" | "lock" | "tree") => {}
        Some(other) => return Err(stop(1, format!("`uv {other}` has no model"))),
        None => return Ok(()),
    }
    let (_, ops) = options(w, 2, UV, true, e)?;
    if let Some(&o) = ops.first() {
        return Err(stop(o, "an operand of uv"));
    }
    Ok(())
}
