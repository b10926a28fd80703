//! The escapes the differential test found ([`KNOWN`]): commands a model reads as
//! `Understood` whose real program does more, each with what it did and the shape of the
//! generated commands like it.

use acp_question_bridge::policy::args;

/// An escape found: a command a model read as `Understood` whose real program did more.
pub struct Known {
    /// The command, word for word (shell quoting; `{OUT}` is the outside folder).
    pub cmd: &'static str,
    /// What the real program did.
    pub found: &'static str,
    /// Generated commands of the same kind, reported but not failing the generated test
    /// while `cmd` is still understood.
    pub shape: fn(&[String]) -> bool,
}

/// The escapes found so far, each first found by the generated test (then written here
/// shorter, in the scratch's files: `list` names `{OUT}/secret`, `inc.cfg` includes it).
pub const KNOWN: &[Known] = &[
    Known {
        cmd: "tar cHf pax out.tar a.txt",
        found: "takes `pax` for `H` (old-style `H` takes a value, as `-H FORMAT` does) and \
                writes the archive `out.tar`, which the model reads as a folder to archive \
                (it lists `pax` as the archive written)",
        shape: |w| is(w, "tar") && tar_old_style(w).is_some_and(|c| c.contains('H')),
    },
    Known {
        cmd: "tar -cf out.tar -T list",
        found: "reads the files `list` names, the secret by its absolute path, into the \
                archive (and a line `--directory=DIR` in it is an option: `opts.list`)",
        shape: |w| is(w, "tar") && (tar_letter(w, 'T') || long(w, "--files-from")),
    },
    Known {
        cmd: "tar cXT Makefile list",
        found: "reads the files `list` names (old-style `T`), the secret among them",
        shape: |w| is(w, "tar") && (tar_letter(w, 'T') || long(w, "--files-from")),
    },
    Known {
        cmd: "wc --files0-from=list0",
        found: "reads the files named in `list0`, the secret among them",
        shape: |w| (is(w, "wc") || is(w, "sort")) && long(w, "--files0-from"),
    },
    Known {
        cmd: "sort --files0-from=list0",
        found: "reads the files named in `list0`, the secret among them",
        shape: |w| (is(w, "wc") || is(w, "sort")) && long(w, "--files0-from"),
    },
    Known {
        cmd: "cp --parents ../outside/secret sub",
        found: "writes `sub/../outside/secret`, that is `<box>/outside/secret` (the model \
                lists `sub` and `sub/secret`); with more `..` than the destination is deep \
                (`cp --parents ../../x/y d`) it writes outside the session's folder",
        shape: |w| is(w, "cp") && long(w, "--parents"),
    },
    Known {
        cmd: "cp -b a.txt b.txt",
        found: "keeps the old `b.txt` as `b.txt~` (`--backup=numbered`: `b.txt.~1~`), a \
                write the model does not list",
        shape: backup,
    },
    Known {
        cmd: "mv -b a.txt b.txt",
        found: "keeps the old `b.txt` as `b.txt~`, a write the model does not list",
        shape: backup,
    },
    Known {
        cmd: "ln -sb a.txt b.txt",
        found: "keeps the old `b.txt` as `b.txt~`, a write the model does not list",
        shape: backup,
    },
    Known {
        cmd: "install -b a.txt b.txt",
        found: "keeps the old `b.txt` as `b.txt~`, a write the model does not list",
        shape: backup,
    },
    Known {
        cmd: "sed -i.bak s/a/b/ a.txt",
        found: "writes the backup `a.txt.bak`, which the model does not list (any suffix: \
                `-i~`, `--in-place=.orig`, `-irc` writes `a.txtrc`)",
        shape: |w| {
            is(w, "sed")
                && w.iter().skip(1).any(|x| {
                    x.strip_prefix("--in-place=").is_some_and(|v| !v.is_empty())
                        || (x.starts_with('-')
                            && !x.starts_with("--")
                            && x.find('i').is_some_and(|i| i + 1 < x.len()))
                })
        },
    },
    Known {
        cmd: "du -L",
        found: "follows the link `link` beneath `.` and lists the folders of `<outside>` \
                (the model reads `.` as a folder whose links are not followed)",
        shape: |w| is(w, "du") && (short(w, 'L') || long(w, "--dereference")),
    },
    Known {
        cmd: "find -L .",
        found: "follows the links beneath `.` (`link`, `sub/up`) and lists `<outside>`",
        shape: |w| is(w, "find") && w.iter().any(|x| x == "-L" || x == "-follow"),
    },
    Known {
        cmd: "find . -follow",
        found: "follows the links beneath `.` and lists `<outside>`",
        shape: |w| is(w, "find") && w.iter().any(|x| x == "-L" || x == "-follow"),
    },
    Known {
        cmd: "ls -RL",
        found: "follows the links beneath `.` and lists `<outside>`",
        shape: |w| {
            is(w, "ls")
                && (short(w, 'L') || long(w, "--dereference"))
                && (short(w, 'R') || long(w, "--recursive"))
        },
    },
    Known {
        cmd: "git --help status",
        found: "runs `man git-status` (git's `help.format` and `man.viewer` configuration \
                choose the program)",
        shape: |w| is(w, "git") && w.iter().any(|x| x == "--help"),
    },
    Known {
        cmd: "git clone host:repo copy",
        found: "runs `ssh host git-upload-pack 'repo'` (with the user's ssh configuration: \
                `ProxyCommand`, ...)",
        shape: |w| is(w, "git") && w.iter().any(|x| x == "clone") && remote_url(w),
    },
    Known {
        cmd: "git clone ssh://h.invalid/x copy",
        found: "runs `ssh h.invalid git-upload-pack '/x'`",
        shape: |w| is(w, "git") && w.iter().any(|x| x == "clone") && remote_url(w),
    },
    Known {
        cmd: "git clone --bare {OUT}/repo",
        found: "clones into `repo.git` (a bare clone's folder ends with `.git`; `--mirror` \
                too), while the model lists `repo` as written",
        shape: |w| {
            is(w, "git")
                && w.iter().any(|x| x == "clone")
                && (long(w, "--bare") || long(w, "--mirror"))
        },
    },
    Known {
        cmd: "git config core.hooksPath --get",
        found: "sets `core.hooksPath` to `--get` in `.git/config`: git config's options end \
                at its first operand, so `--get` is the value to set (any key: \
                `core.fsmonitor`, `alias.x`; with `-f FILE`, any file), a write the model \
                does not list",
        shape: config_operand_then_option,
    },
    Known {
        cmd: "git config -f inc.cfg --includes --list",
        found: "reads the file `inc.cfg` includes (`[include] path = <outside>/secret`)",
        shape: |w| is(w, "git") && long(w, "--includes"),
    },
    Known {
        cmd: "git log --format=%G?",
        found: "runs gpg to check HEAD's signature (any `%G` placeholder: `%G?`, `%GS`, \
                `%GK`, ...)",
        shape: |w| is(w, "git") && w.iter().any(|x| x.contains("%G")),
    },
    Known {
        cmd: "git show --pretty=format:%GS HEAD",
        found: "runs gpg to check HEAD's signature",
        shape: |w| is(w, "git") && w.iter().any(|x| x.contains("%G")),
    },
    Known {
        cmd: "git branch --format=%(signature:grade)",
        found: "runs gpg to check each branch's commit's signature (`%(signature)` and its \
                kin, git 2.47)",
        shape: |w| is(w, "git") && w.iter().any(|x| x.contains("%(signature")),
    },
    Known {
        cmd: "install -d newdir/../x",
        found: "makes the folder `newdir` too (each folder of the path as written, before \
                its `..`), which the model does not list (the policy resolves the path to \
                `x`)",
        shape: install_dotdot,
    },
    Known {
        cmd: "install -D a.txt newdir/../x",
        found: "makes the folder `newdir` too, which the model does not list",
        shape: install_dotdot,
    },
    Known {
        cmd: "git diff --no-index ../outside/dir sub",
        found: "compares the two folders whole: reads `<outside>/dir/f.txt` (the model \
                lists the folders as read, not searched); `git diff sub {OUT}/dir` does the \
                same without `--no-index`, a path outside the repository making it so",
        shape: |w| {
            is(w, "git")
                && w.iter().any(|x| x == "diff")
                && w.iter().any(|x| {
                    x == "--no-index"
                        || x.contains("outside")
                        || x.contains("{OUT}")
                        || x.starts_with("link")
                        || x.starts_with("sub/up")
                })
        },
    },
    Known {
        cmd: "git add .",
        found: "reads `.env` (every file of the work tree, to store it in the repository): \
                the model lists `.` as read, not searched whole",
        shape: |w| is(w, "git") && w.iter().any(|x| x == "add"),
    },
    Known {
        cmd: "git add -A",
        found: "reads `.env`, naming no path at all",
        shape: |w| is(w, "git") && w.iter().any(|x| x == "add"),
    },
    Known {
        cmd: "git commit --allow-empty",
        found: "starts the editor for the message (`vi`; `core.editor`, `$GIT_EDITOR`, \
                `$VISUAL`, `$EDITOR` choose it; also `--amend` without `--no-edit`, and `-t \
                FILE`)",
        shape: |w| is(w, "git") && w.iter().any(|x| x == "commit"),
    },
    Known {
        cmd: "make {OUT}/secret",
        found: "lists the folder `<outside>` (make looks each target up in its folder: a \
                target is a path)",
        shape: |w| {
            is(w, "make")
                && w.iter()
                    .skip(1)
                    .any(|x| !x.starts_with('-') && x.contains('/'))
        },
    },
    Known {
        cmd: "pytest ../outside/test_outside.py",
        found: "runs the test file (the model lists it as read), writes `__pycache__` beside \
                it, and makes `.pytest_cache` in the folder common to it and the session's \
                (the session's parent)",
        shape: |w| is(w, "pytest") || is(w, "python3"),
    },
    Known {
        cmd: "pytest --import-mode=append this.py",
        found: "imports the standard library's `this` (it printed the Zen of Python), not the \
                test file: `append` puts the test's folder after the library's on the path",
        shape: |w| (is(w, "pytest") || is(w, "python3")) && long(w, "--import-mode"),
    },
    Known {
        cmd: "pytest sub/unittest/__main__.py",
        found: "ran the standard library's `unittest.__main__` (its usage message): pytest \
                had loaded `unittest`, and the folder's name made the test a module of it",
        shape: |w| {
            (is(w, "pytest") || is(w, "python3"))
                && w.iter().any(|x| x.split('/').any(|c| c == "unittest"))
        },
    },
    Known {
        cmd: "python3 -I -m unittest antigravity.py",
        found: "imported the standard library's `antigravity` (`-I` leaves the current \
                folder off the module path), which opens a web browser",
        shape: |w| is(w, "python3") && w.iter().any(|x| x.starts_with('-') && x.contains('I')),
    },
    Known {
        cmd: "tee -",
        found: "writes a file named `-` (the policy leaves the word `-` out of the paths it \
                checks, but tee, rm, mv, ln, install, cp and `git clone` take it as a \
                file's name)",
        shape: dash_file,
    },
    Known {
        cmd: "rm -",
        found: "removes a file named `-`",
        shape: dash_file,
    },
    Known {
        cmd: "mv a.txt -",
        found: "renames `a.txt` to a file named `-`",
        shape: dash_file,
    },
    Known {
        cmd: "sort -o - a.txt",
        found: "writes a file named `-` (`-o -` is no standard output for sort)",
        shape: dash_file,
    },
    Known {
        cmd: "git clone . -",
        found: "clones into a folder named `-`",
        shape: dash_file,
    },
];

/// `git config` with an option after its first operand (where git's options end).
fn config_operand_then_option(w: &[String]) -> bool {
    let Some(c) = w.iter().position(|x| x == "config") else {
        return false;
    };
    if !is(w, "git") {
        return false;
    }
    let rest = &w[c + 1..];
    let takes_value = |k: usize| {
        k > 0
            && matches!(
                rest[k - 1].as_str(),
                "-f" | "--file" | "--type" | "--default" | "--blob"
            )
    };
    let first = (0..rest.len()).find(|&k| !rest[k].starts_with('-') && !takes_value(k));
    first.is_some_and(|f| rest[f + 1..].iter().any(|x| x.starts_with('-')))
}

/// Whether `w` is a command of program `name`.
fn is(w: &[String], name: &str) -> bool {
    w.first().is_some_and(|p| args::base(p) == name)
}

/// Whether a word of `w` is the long option `name`, alone or with `=VALUE`.
fn long(w: &[String], name: &str) -> bool {
    w.iter()
        .any(|x| x == name || x.strip_prefix(name).is_some_and(|r| r.starts_with('=')))
}

/// Whether a cluster of short options in `w` holds `c`.
fn short(w: &[String], c: char) -> bool {
    w.iter()
        .skip(1)
        .any(|x| x.starts_with('-') && !x.starts_with("--") && x.contains(c))
}

/// tar's first argument when it is old-style letters.
fn tar_old_style(w: &[String]) -> Option<&str> {
    w.get(1).map(String::as_str).filter(|x| {
        !x.starts_with('-') && !x.is_empty() && x.chars().all(|c| c.is_ascii_alphabetic())
    })
}

/// Whether tar's letter `c` is given, old-style or in a cluster.
fn tar_letter(w: &[String], c: char) -> bool {
    tar_old_style(w).is_some_and(|x| x.contains(c)) || short(w, c)
}

/// A backup option of cp, mv, ln or install.
fn backup(w: &[String]) -> bool {
    (is(w, "cp") || is(w, "mv") || is(w, "ln") || is(w, "install"))
        && (short(w, 'b') || long(w, "--backup"))
}

/// `install -d` or `-D` with a path through `..`.
fn install_dotdot(w: &[String]) -> bool {
    is(w, "install")
        && (short(w, 'd') || short(w, 'D') || long(w, "--directory"))
        && w.iter().skip(1).any(|x| x.contains(".."))
}

/// A URL `git clone` reaches by a program (`host:path`, `ssh://`).
fn remote_url(w: &[String]) -> bool {
    w.iter().skip(1).any(|x| {
        !x.starts_with('-')
            && x.contains(':')
            && !x.starts_with("file:")
            && !x.starts_with('/')
            && !x.starts_with('.')
    })
}

/// A word `-` given to a program that takes it as a file's name.
fn dash_file(w: &[String]) -> bool {
    (["tee", "rm", "mv", "ln", "install", "cp"]
        .iter()
        .any(|p| is(w, p))
        || (is(w, "git") && w.iter().any(|x| x == "clone")))
        && w.iter().skip(1).any(|x| x == "-")
}

/// What a real program does beyond its model by design, reported but never failing: pytest
/// runs the project's tests as the project lays them out, links included (a link in the
/// project to a test elsewhere is the project's own code, as a `conftest.py` is), so it
/// imports and runs what its collection reaches (docs/POLICY.md, "Programs read by their
/// arguments").
pub const BY_DESIGN: &[Known] = &[
    Known {
        cmd: "pytest",
        found: "collects the tests beneath `.` following its links (`link`, `sub/up`): \
                imports `<outside>/test_outside.py`, which runs `id`, and writes \
                `<outside>/__pycache__`; the model lists no path",
        shape: |w| {
            (is(w, "pytest") || is(w, "python3"))
                && !w
                    .iter()
                    .any(|x| x.starts_with('/') || x.split('/').any(|c| c == ".."))
        },
    },
    Known {
        cmd: "python3 -m pytest",
        found: "collects the tests beneath `.` following its links: runs \
                `<outside>/test_outside.py`",
        shape: |w| {
            (is(w, "pytest") || is(w, "python3"))
                && !w
                    .iter()
                    .any(|x| x.starts_with('/') || x.split('/').any(|c| c == ".."))
        },
    },
];
