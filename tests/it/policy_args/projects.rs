//! Generators of the programs that act on a project: git (global options, subcommands,
//! revisions, pathspecs, URLs, the placeholders and options that start programs), make
//! (targets, `NAME=VALUE`, `-f`, `-C`, `--eval`) and pytest (alone and as `python3 -m`).

use super::gen::{mix, path_read, path_write, render, value_for, Rng};
use super::programs::{command, some_opts, Program, PATTERNS};

/// git's subcommands read: the modelled ones, and others the model must ask.
pub(super) const GIT_SUBS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "whatchanged",
    "branch",
    "rev-parse",
    "ls-files",
    "blame",
    "annotate",
    "grep",
    "describe",
    "remote",
    "config",
    "add",
    "commit",
    "clone",
    "push",
    "fetch",
    "checkout",
    "stash",
    "tag",
    "reset",
    "archive",
    "apply",
    "help",
    "notes",
    "worktree",
    "shortlog",
    "format-patch",
    "cat-file",
];

pub(super) const GIT_GLOBAL_EXTRA: &[(&str, Option<&str>)] = &[
    ("-C", Some("<path>")),
    ("-c", Some("<name>=<value>")),
    ("--git-dir", Some("<path>")),
    ("--work-tree", Some("<path>")),
    ("--exec-path", Some("<path>")),
    ("--config-env", Some("<name>=<envvar>")),
    ("--namespace", Some("<name>")),
    ("--no-pager", None),
    ("-P", None),
    ("-p", None),
    ("--paginate", None),
    ("--no-optional-locks", None),
    ("--literal-pathspecs", None),
    ("--glob-pathspecs", None),
    ("--noglob-pathspecs", None),
    ("--icase-pathspecs", None),
    ("--no-replace-objects", None),
    ("--no-lazy-fetch", None),
    ("--no-advice", None),
    ("--version", None),
    ("--help", None),
    ("--bare", None),
    ("--list-cmds", Some("<list>")),
    ("--attr-source", Some("<tree>")),
];

const GIT_PATHS: &[&str] = &[
    "a.txt",
    "b.txt",
    ".",
    "sub",
    ":(top)a.txt",
    ":!a.txt",
    "link",
    "link/secret",
    "sec",
    "abs",
    "../outside/secret",
    "{OUT}/secret",
    "*.txt",
    "--",
    "sub/up/secret",
    ":(attr:x)a.txt",
    ":/a.txt",
];

const GIT_REVS: &[&str] = &[
    "HEAD",
    "HEAD~1",
    "HEAD^",
    "HEAD~1..HEAD",
    "main",
    "v1",
    "HEAD:a.txt",
    "@",
    "HEAD@{0}",
    "HEAD~2",
    "--all",
];

/// Values that git's options may take to do more.
const GIT_HOSTILE: &[&[&str]] = &[
    &["--format=%G?"],
    &["--pretty=format:%GS %GK"],
    &["--format=%(describe)"],
    &["--format=%(signature:grade) %(refname)"],
    &["--show-signature"],
    &["--output=pwned"],
    &["--output", "{OUT}/pwned"],
    &["--ext-diff"],
    &["--textconv"],
    &["-O", "id"],
    &["--open-files-in-pager=id"],
    &["--help"],
    &["-h"],
    &["--no-index"],
    &["-p"],
    &["--stat"],
    &["-L", "1,2:a.txt"],
    &["--follow"],
    &["-S", "x"],
    &["--exec=id"],
    &["--upload-pack=id"],
    &["-u", "id"],
    &["--template={OUT}"],
    &["--separate-git-dir={OUT}/g"],
    &["--config", "core.pager=id"],
    &["--pathspec-from-file=list"],
];

pub(super) fn git(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut w = vec!["git".to_owned()];
    if rng.chance(35) {
        for _ in 0..1 + rng.below(2) {
            let o = rng.pick(&p.opts).clone();
            w.extend(render(rng, &o, &p.opts, &mut |r, h| {
                if h.contains("name>=") {
                    r.word(&[
                        "core.pager=id",
                        "alias.x=!id",
                        "user.name=x",
                        "core.fsmonitor=id",
                    ])
                } else {
                    value_for(r, h)
                }
            }));
        }
    }
    let modelled = [
        "status",
        "diff",
        "log",
        "show",
        "whatchanged",
        "branch",
        "rev-parse",
        "ls-files",
        "blame",
        "annotate",
        "grep",
        "describe",
        "remote",
        "config",
        "add",
        "commit",
        "clone",
    ];
    let sub = if rng.chance(90) {
        rng.word(&modelled)
    } else {
        rng.word(GIT_SUBS)
    };
    w.push(sub.clone());
    let sub_opts = p.subs.get(&sub).cloned().unwrap_or_default();
    let mut opts = some_opts(rng, &sub_opts, 3);
    if rng.chance(20) {
        opts.push(
            rng.pick(GIT_HOSTILE)
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        );
    }
    let mut ops: Vec<String> = Vec::new();
    match sub.as_str() {
        "clone" => {
            let url = rng.word(&[
                ".",
                "{OUT}/repo",
                "../outside/repo",
                "file://{OUT}/repo",
                "file://{BOX}",
                "link/repo",
                "host:repo",
                "ssh://h.invalid/x",
                "git@h.invalid:x",
                "https://127.0.0.1:9/x",
                "ext::sh -c id",
                "fd::3",
                "--upload-pack=id",
                "./-u",
                "[::1]:x",
                "-",
                "sub/up/repo",
                "git://127.0.0.1:9/x",
            ]);
            ops.push(url);
            if rng.chance(80) {
                ops.push(if rng.chance(60) {
                    rng.word(&["copy", "sub/copy", "newdir/c"])
                } else {
                    path_write(rng)
                });
            }
        }
        "config" => {
            let forms: &[&[&str]] = &[
                &["--get", "user.name"],
                &["--list"],
                &["-l"],
                &["get", "user.name"],
                &["list"],
                &["--get-regexp", "."],
                &["-f", "inc.cfg", "--includes", "--list"],
                &["--file=inc.cfg", "--list"],
                &["--file", "inc.cfg", "--get", "x.y"],
                &["-f", "{OUT}/secret", "-l"],
                &["user.name"],
                &["user.name", "x"],
                &["--global", "--list"],
                &["core.pager", "id"],
                &["--includes", "-l"],
                &["--show-origin", "-l"],
                &["-f", "sec", "--list"],
                &["--blob", "HEAD:a.txt", "-l"],
            ];
            ops.extend(rng.pick(forms).iter().map(|s| (*s).to_owned()));
        }
        "remote" => ops.extend(
            rng.pick(&[
                &["-v"][..],
                &["--verbose"],
                &["add", "x", "y"],
                &[],
                &["show", "origin"],
            ])
            .iter()
            .map(|s| (*s).to_owned()),
        ),
        "branch" => ops.extend(
            rng.pick(&[
                &["-a"][..],
                &["--list"],
                &["-v"],
                &["newbranch"],
                &["-d", "x"],
                &["-m", "x"],
                &[],
                &["--list", "ma*"],
            ])
            .iter()
            .map(|s| (*s).to_owned()),
        ),
        "commit" => {
            if rng.chance(70) {
                opts.push(vec!["-m".into(), "msg".into()]);
            }
            if rng.chance(40) {
                ops.push(rng.word(&["a.txt", "b.txt", "-a", "--amend", "--no-edit"]));
            }
        }
        "diff" if rng.chance(30) => {
            ops.push("--no-index".into());
            ops.push(path_read(rng));
            ops.push(path_read(rng));
        }
        "log" | "show" | "whatchanged" | "diff" | "blame" | "annotate" | "describe" => {
            for _ in 0..rng.below(3) {
                ops.push(if rng.chance(50) {
                    rng.word(GIT_REVS)
                } else {
                    rng.word(GIT_PATHS)
                });
            }
        }
        "grep" => {
            ops.push(rng.word(PATTERNS));
            for _ in 0..rng.below(2) {
                ops.push(rng.word(GIT_PATHS));
            }
        }
        "rev-parse" => {
            for _ in 0..1 + rng.below(2) {
                ops.push(rng.word(&[
                    "HEAD",
                    "--show-toplevel",
                    "--git-dir",
                    "--git-path",
                    "hooks",
                    "--parseopt",
                    "--",
                    "a.txt",
                    "{OUT}/secret",
                    "--local-env-vars",
                    "--resolve-git-dir",
                    "{OUT}/repo/.git",
                ]));
            }
        }
        _ => {
            for _ in 0..rng.below(3) {
                ops.push(rng.word(GIT_PATHS));
            }
        }
    }
    w.extend(mix(rng, opts, ops));
    w
}

pub(super) fn make(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut opts = some_opts(rng, &p.opts, 2);
    if rng.chance(15) {
        opts.push(
            rng.pick(&[
                &["-f", "Makefile"][..],
                &["-C", "sub"],
                &["--eval=x:;id"],
                &["-I", "{OUT}"],
                &["-o", "a.txt"],
                &["-W", "a.txt"],
                &["-t"],
                &["-n"],
                &["-p"],
                &["-q"],
                &["-B"],
                &["-e"],
                &["-j2"],
                &["--debug=v"],
                &["-d"],
                &["-s"],
                &["-k"],
            ])
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
        );
    }
    let ops = (0..rng.below(3))
        .map(|_| {
            rng.word(&[
                "test",
                "all",
                "build",
                "check",
                "test",
                "nosuch",
                "X=1",
                "SHELL=/bin/sh",
                "CC=id",
                "a.txt",
                "Makefile",
                "{OUT}/secret",
                "../outside/secret",
                ".DEFAULT",
                "-",
                "test:",
                "made-test",
                ".bashrc",
                "MAKEFLAGS=-e",
                "sub/up/pwned",
                ".PHONY",
            ])
        })
        .collect();
    command("make", mix(rng, opts, ops))
}

const PYTEST_OPERANDS: &[&str] = &[
    "test_a.py",
    "test_a.py::test_ok",
    ".",
    "sub",
    "{OUT}",
    "{OUT}/test_outside.py",
    "../outside/test_outside.py",
    "link",
    "link/test_outside.py",
    "a.txt",
    "nosuch.py",
    "test_a.py::nosuch",
    "sub/up/test_outside.py",
];

fn pytest_words(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut opts = some_opts(rng, &p.opts, 2);
    if rng.chance(20) {
        opts.push(
            rng.pick(&[
                &["-q"][..],
                &["-x"],
                &["-k", "ok"],
                &["-p", "no:cacheprovider"],
                &["--junitxml=report.xml"],
                &["--junitxml", "{OUT}/pwned.xml"],
                &["-W", "error::os.x"],
                &["-W", "ignore::DeprecationWarning"],
                &["--rootdir={OUT}"],
                &["-c", "{OUT}/secret"],
                &["--basetemp=pwned"],
                &["-o", "addopts=-p x"],
                &["--debug"],
                &["--pyargs", "os"],
                &["--confcutdir={OUT}"],
                &["--co"],
                &["--cache-clear"],
            ])
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
        );
    }
    let ops = (0..rng.below(3))
        .map(|_| rng.word(PYTEST_OPERANDS))
        .collect();
    mix(rng, opts, ops)
}

pub(super) fn pytest(rng: &mut Rng, p: &Program) -> Vec<String> {
    command("pytest", pytest_words(rng, p))
}

pub(super) fn python_pytest(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut w = vec!["python3".to_owned()];
    if rng.chance(30) {
        w.push(rng.word(&[
            "-B", "-u", "-q", "-E", "-s", "-I", "-b", "-Bq", "-c", "-X", "-W", "-O", "-S", "-i",
            "-x",
        ]));
    }
    w.extend(["-m".to_owned(), "pytest".to_owned()]);
    w.extend(pytest_words(rng, p));
    w
}
