//! The programs under test: where each is, what it may start and keep ([`Helpers`],
//! [`Own`]), its options (read from its own `--help` when the test starts, with what the
//! help leaves out added by hand), and a generator of its argument lists; the generators
//! of the file tools and tar are here, sed's, jq's and awk's in `scripts.rs`, git's, make's
//! and pytest's in `projects.rs`.
//!
//! Each generator writes a command the way the program is used (a sed script then files,
//! tar's mode then its archive, git's global options then a subcommand), then mixes in
//! random options of the help written every way ([`gen::render`]) and hostile values:
//! paths out of the folder, through links, in `/proc/self`; sed scripts and awk programs
//! built from the language's commands (`e`, `w`, `W`, `r`, `R`, `s///e`, `s///w`, every
//! delimiter, brackets, backslashes, newlines); tar's old-style letter clusters; git's
//! global options, subcommands and URLs; make's targets and `NAME=VALUE`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::gen::{self, mix, path_read, path_write, render, value_for, Opt, Rng, Takes};
use super::judge::{Helpers, Own};
use super::projects::{git, make, pytest, python_pytest, GIT_GLOBAL_EXTRA, GIT_SUBS};
use super::scripts::{awk, jq, sed, AWK_EXTRA, JQ_EXTRA};

/// A program under test.
pub struct Program {
    /// Its name as a command gives it (`words[0]`).
    pub name: &'static str,
    /// The real program, by its absolute path.
    pub exe: PathBuf,
    pub helpers: Helpers,
    pub own: Own,
    /// Its options, from its help.
    pub opts: Vec<Opt>,
    /// git's subcommands' options (`git SUB -h`).
    pub subs: BTreeMap<String, Vec<Opt>>,
    /// How often it is picked, against the others (pytest is slow to start).
    pub weight: u32,
    make: fn(&mut Rng, &Program) -> Vec<String>,
}

impl Program {
    /// A generated command: `words[0]` is [`Program::name`].
    pub fn generate(&self, rng: &mut Rng) -> Vec<String> {
        (self.make)(rng, self)
    }
}

/// What a help text says, by running `exe args` (killed after a few seconds).
fn help(exe: &Path, args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!(
        "acp-qb-policy-args-help-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::create_dir_all(&dir);
    let out = dir.join("out");
    let Ok(file) = std::fs::File::create(&out) else {
        return String::new();
    };
    let err = file.try_clone().ok();
    let child = Command::new(exe)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C")
        .env("HOME", &dir)
        .env("COLUMNS", "100")
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err.map_or(Stdio::null(), Stdio::from))
        .spawn();
    if let Ok(mut child) = child {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    text
}

fn opts_of(exe: &Path, args: &[&str], extra: &[(&str, Option<&str>)]) -> Vec<Opt> {
    let mut opts = gen::parse_help(&help(exe, args));
    for (name, v) in extra {
        if !opts.iter().any(|o| o.name == *name) {
            opts.push(Opt {
                name: (*name).to_owned(),
                takes: v.map_or(Takes::Nothing, |h| Takes::Value(h.to_owned())),
            });
        }
    }
    opts
}

/// The real programs, by absolute path (installed by the setup when missing).
pub struct Paths {
    pub git: PathBuf,
    pub git_exec_path: PathBuf,
    pub rg: PathBuf,
    pub pytest: PathBuf,
    pub python3: PathBuf,
    pub jq: PathBuf,
    pub make: PathBuf,
    pub mawk: PathBuf,
    pub gawk: Option<PathBuf>,
    pub sqlite3: PathBuf,
}

/// Every program under test, its options read from its help.
pub fn all(p: &Paths) -> Vec<Program> {
    let bin = |n: &str| {
        ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(n))
            .find(|x| x.is_file())
            .unwrap_or_else(|| {
                panic!("{n} is missing: the differential test needs the real program")
            })
    };
    let simple = |name: &'static str, make: fn(&mut Rng, &Program) -> Vec<String>| {
        let exe = bin(name);
        Program {
            name,
            opts: opts_of(&exe, &["--help"], &[]),
            exe,
            helpers: Helpers::Nothing,
            own: Own::Nothing,
            subs: BTreeMap::new(),
            weight: 10,
            make,
        }
    };
    let mut out = vec![
        simple("sed", sed),
        simple("grep", grep),
        simple("find", find),
        simple("sort", reads),
        simple("cp", copy),
        simple("mv", copy),
        simple("ln", copy),
        simple("install", copy),
        simple("tee", tee),
        simple("rm", rm),
        simple("cat", reads),
        simple("head", reads),
        simple("tail", tail),
        simple("wc", reads),
        simple("ls", reads),
        simple("du", reads),
    ];
    // sed's script is a language of its own: more of it.
    out[0].weight = 24;
    let tar = bin("tar");
    out.push(Program {
        name: "tar",
        opts: opts_of(&tar, &["--help"], &[]),
        exe: tar,
        helpers: Helpers::Compressors,
        own: Own::Nothing,
        subs: BTreeMap::new(),
        weight: 16,
        make: tar_command,
    });
    out.push(Program {
        name: "rg",
        opts: opts_of(&p.rg, &["--help"], &[]),
        exe: p.rg.clone(),
        helpers: Helpers::Nothing,
        own: Own::Nothing,
        subs: BTreeMap::new(),
        weight: 10,
        make: grep,
    });
    out.push(Program {
        name: "jq",
        opts: opts_of(&p.jq, &["--help"], JQ_EXTRA),
        exe: p.jq.clone(),
        helpers: Helpers::Nothing,
        own: Own::Nothing,
        subs: BTreeMap::new(),
        weight: 8,
        make: jq,
    });
    for (name, exe) in [
        ("awk", Some(p.mawk.clone())),
        ("mawk", Some(p.mawk.clone())),
        ("gawk", p.gawk.clone()),
    ] {
        let Some(exe) = exe else { continue };
        let help_args: &[&str] = if name == "gawk" {
            &["--help"]
        } else {
            &["-W", "usage"]
        };
        out.push(Program {
            name,
            opts: opts_of(&exe, help_args, AWK_EXTRA),
            exe,
            helpers: Helpers::Nothing,
            own: Own::Nothing,
            subs: BTreeMap::new(),
            weight: if name == "mawk" { 4 } else { 8 },
            make: awk,
        });
    }
    let mut subs = BTreeMap::new();
    for sub in GIT_SUBS {
        subs.insert((*sub).to_owned(), opts_of(&p.git, &[sub, "-h"], &[]));
    }
    out.push(Program {
        name: "git",
        opts: opts_of(&p.git, &[], GIT_GLOBAL_EXTRA),
        exe: p.git.clone(),
        helpers: Helpers::Git {
            exe: p.git.clone(),
            exec_path: p.git_exec_path.clone(),
        },
        own: Own::Git,
        subs,
        weight: 40,
        make: git,
    });
    out.push(Program {
        name: "make",
        opts: opts_of(&p.make, &["--help"], &[]),
        exe: p.make.clone(),
        helpers: Helpers::Make,
        own: Own::Make,
        subs: BTreeMap::new(),
        weight: 8,
        make,
    });
    out.push(Program {
        name: "sqlite3",
        opts: Vec::new(),
        exe: p.sqlite3.clone(),
        helpers: Helpers::Nothing,
        own: Own::Nothing,
        subs: BTreeMap::new(),
        weight: 8,
        make: sqlite3,
    });
    let pytest_opts = opts_of(&p.pytest, &["--help"], &[]);
    out.push(Program {
        name: "pytest",
        opts: pytest_opts.clone(),
        exe: p.pytest.clone(),
        helpers: Helpers::Nothing,
        own: Own::Pytest,
        subs: BTreeMap::new(),
        weight: 1,
        make: pytest,
    });
    out.push(Program {
        name: "python3",
        opts: pytest_opts,
        exe: p.python3.clone(),
        helpers: Helpers::Nothing,
        own: Own::Pytest,
        subs: BTreeMap::new(),
        weight: 1,
        make: python_pytest,
    });
    out
}

/// Up to `n` options of `p`, each written some way.
pub(super) fn some_opts(rng: &mut Rng, opts: &[Opt], n: usize) -> Vec<Vec<String>> {
    if opts.is_empty() {
        return Vec::new();
    }
    let k = rng.below(n + 1);
    (0..k)
        .map(|_| {
            let o = rng.pick(opts).clone();
            render(rng, &o, opts, &mut |r, h| value_for(r, h))
        })
        .collect()
}

pub(super) fn command(name: &str, rest: Vec<String>) -> Vec<String> {
    let mut w = vec![name.to_owned()];
    w.extend(rest);
    w
}

/// cat, head, tail, wc, ls, du, sort: options and files read.
fn reads(rng: &mut Rng, p: &Program) -> Vec<String> {
    let opts = some_opts(rng, &p.opts, 3);
    let files = (0..rng.below(3)).map(|_| path_read(rng)).collect();
    command(p.name, mix(rng, opts, files))
}

/// tail: as [`reads`], its options that follow a file for ever (until the run's timeout)
/// less often.
fn tail(rng: &mut Rng, p: &Program) -> Vec<String> {
    loop {
        let w = reads(rng, p);
        let follows = w.iter().any(|x| {
            x.starts_with("--f")
                || x.starts_with("--retry")
                || (x.starts_with('-') && !x.starts_with("--") && x.contains(['f', 'F']))
        });
        if !follows || rng.chance(10) {
            return w;
        }
    }
}

fn tee(rng: &mut Rng, p: &Program) -> Vec<String> {
    let opts = some_opts(rng, &p.opts, 2);
    let files = (0..rng.below(3)).map(|_| path_write(rng)).collect();
    command(p.name, mix(rng, opts, files))
}

fn rm(rng: &mut Rng, p: &Program) -> Vec<String> {
    let opts = some_opts(rng, &p.opts, 3);
    let files = (0..1 + rng.below(2)).map(|_| path_write(rng)).collect();
    command(p.name, mix(rng, opts, files))
}

/// cp, mv, ln, install: sources, then a destination (or `-t DIR`).
fn copy(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut opts = some_opts(rng, &p.opts, 3);
    let mut ops: Vec<String> = (0..1 + rng.below(2))
        .map(|_| {
            if rng.chance(20) {
                rng.word(&[
                    "../outside/secret",
                    "sub/../a.txt",
                    "sub/up/secret",
                    "sub/up/dir",
                    "../outside/dir",
                    "link/dir",
                    "sub/c.txt",
                    "./sub",
                ])
            } else {
                path_read(rng)
            }
        })
        .collect();
    if rng.chance(25) {
        opts.push(vec![rng.word(&[
            "--parents",
            "-r",
            "-a",
            "-L",
            "-b",
            "--backup=numbered",
            "-s",
            "-l",
            "-D",
            "-T",
        ])]);
    }
    if rng.chance(80) {
        ops.push(if rng.chance(60) {
            rng.word(&["newdir", "sub", "out.txt", "new/x", "b.txt"])
        } else {
            path_write(rng)
        });
    }
    command(p.name, mix(rng, opts, ops))
}

fn grep(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut opts = some_opts(rng, &p.opts, 3);
    let mut ops = Vec::new();
    match rng.below(10) {
        0 => opts.push(vec!["-e".into(), rng.word(PATTERNS)]),
        1 => opts.push(vec!["-f".into(), path_read(rng)]),
        _ => ops.push(rng.word(PATTERNS)),
    }
    if rng.chance(15) {
        opts.push(vec![rng.word(&[
            "-R",
            "-r",
            "-L",
            "--follow",
            "-z",
            "--search-zip",
            "--pre=id",
            "--pre",
            "-u",
            "--hidden",
            "--no-ignore-parent",
        ])]);
    }
    for _ in 0..rng.below(3) {
        ops.push(path_read(rng));
    }
    command(p.name, mix(rng, opts, ops))
}

pub(super) const PATTERNS: &[&str] = &[
    "x", "a", "alpha", "TOP", "SECRET", "^", "a\\|b", "[a-z]+", "-e", "--", "(?=a)", ".", "", "-",
];

fn find(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut w = vec!["find".to_owned()];
    if rng.chance(25) {
        let lead = rng.word(&["-H", "-L", "-P", "-D", "-O3", "-Ohelp", "-D"]);
        let d = lead == "-D";
        w.push(lead);
        if d {
            w.push(rng.word(&["tree", "exec", "search", "stat", "all", "help", "opt"]));
        }
    }
    for _ in 0..rng.below(3) {
        w.push(if rng.chance(70) {
            rng.word(&[
                ".",
                "sub",
                "link",
                "link/",
                "sub/up",
                "{OUT}",
                "../outside",
                "a.txt",
            ])
        } else {
            path_read(rng)
        });
    }
    let exprs: Vec<&Opt> = p
        .opts
        .iter()
        .filter(|o| !o.name.starts_with("--"))
        .collect();
    for _ in 0..rng.below(4) {
        match rng.below(12) {
            0 => w.push(rng.word(&["!", "(", ")", "-o", ",", "-not", "-a"])),
            1 => w.extend(["-exec", "id", ";"].map(str::to_owned)),
            2 => w.extend(["-newer".to_owned(), path_read(rng)]),
            3 => w.extend(["-fprint".to_owned(), path_write(rng)]),
            4 => w.extend(["-printf".to_owned(), rng.word(&["%p\\n", "%l", "%f", "%s"])]),
            5 => w.extend(["-name".to_owned(), rng.word(&["*.txt", "secret", "*"])]),
            6 => w.push(rng.word(&[
                "-print", "-ls", "-print0", "-prune", "-quit", "-delete", "-follow", "-xdev",
            ])),
            _ if !exprs.is_empty() => {
                let o = *rng.pick(&exprs);
                w.push(o.name.clone());
                if let Takes::Value(h) | Takes::Optional(h) = &o.takes {
                    w.push(value_for(rng, h));
                    if o.name.starts_with("-exec") || o.name.starts_with("-ok") {
                        w.push(";".into());
                    }
                }
            }
            _ => {}
        }
    }
    w
}

/// tar: new-style, old-style letters, or a dash cluster; list or create (and the rest).
fn tar_command(rng: &mut Rng, p: &Program) -> Vec<String> {
    let create = rng.chance(50);
    let arch = |rng: &mut Rng| {
        if create {
            if rng.chance(60) {
                rng.word(&[
                    "out.tar",
                    "out.tar.gz",
                    "out.tgz",
                    "out.tar.xz",
                    "sub/o.tar",
                    "-",
                ])
            } else {
                path_write(rng)
            }
        } else if rng.chance(70) {
            rng.word(&["a.tar", "a.tar.gz", "-", "host:a.tar", "a:b"])
        } else {
            path_read(rng)
        }
    };
    let operand = |rng: &mut Rng| {
        if create {
            path_read(rng)
        } else {
            rng.word(&["a.txt", "b.txt", "missing", "--wildcards", "*.txt"])
        }
    };
    let mode = if create { 'c' } else { 't' };
    let mut opts = some_opts(rng, &p.opts, 2);
    let mut w = vec!["tar".to_owned()];
    let mut ops: Vec<String> = (0..rng.below(3)).map(|_| operand(rng)).collect();
    match rng.below(3) {
        0 => {
            opts.push(vec![rng.word(if create {
                &["-c", "--create", "-cv"]
            } else {
                &["-t", "--list", "-tv"]
            })]);
            let a = arch(rng);
            opts.push(match rng.below(3) {
                0 => vec!["-f".into(), a],
                1 => vec![format!("--file={a}")],
                _ => vec![format!("-f{a}")],
            });
            if rng.chance(10) {
                opts.push(vec![rng.word(&["-x", "-r", "-u", "-A", "--delete", "-d"])]);
            }
            w.extend(mix(rng, opts, ops));
        }
        style => {
            // Letters: the mode, some others, `f`; values in the letters' order.
            let mut letters = vec![mode];
            for _ in 0..rng.below(3) {
                letters.push(*rng.pick(&[
                    'v', 'z', 'j', 'J', 'H', 'h', 'O', 'p', 'k', 'm', 'W', 'S', 'a', 'T', 'X', 'b',
                    'C', 'x', 'I', 'F', 'P', 'K', 'N', 'V', 'g', 'L', 'M',
                ]));
            }
            if rng.chance(90) {
                letters.push('f');
            }
            if rng.chance(30) {
                let n = letters.len();
                letters.swap(rng.below(n), rng.below(n));
            }
            let mut cluster: String = letters.iter().collect();
            if style == 2 {
                cluster.insert(0, '-');
            }
            w.push(cluster);
            let mut values = Vec::new();
            for c in &letters {
                values.push(match c {
                    'f' => arch(rng),
                    'b' => rng.word(&["20", "1"]),
                    'T' => rng.word(&["list", "opts.list", "list0", "{OUT}/secret"]),
                    'X' => path_read(rng),
                    'H' => {
                        if rng.chance(50) {
                            rng.word(&["pax", "ustar", "gnu", "posix"])
                        } else {
                            arch(rng)
                        }
                    }
                    'C' | 'g' | 'K' | 'N' | 'V' | 'I' | 'F' | 'L' => {
                        rng.word(&["id", "{OUT}", "x", "1"])
                    }
                    _ => continue,
                });
            }
            if rng.chance(10) && !values.is_empty() {
                values.pop();
            }
            w.extend(values);
            let rest: Vec<Vec<String>> = opts;
            ops.truncate(2);
            w.extend(mix(rng, rest, ops));
        }
    }
    w
}

/// sqlite3's options (its help's, one dash or two): those that print, and those that run
/// or read more (`-cmd`, `-init`, `-nonce`, `-A`).
const SQLITE3_OPTS: &[&str] = &[
    "-json",
    "-csv",
    "-header",
    "-noheader",
    "-bail",
    "-batch",
    "-box",
    "-line",
    "-readonly",
    "-nofollow",
    "-echo",
    "-stats",
    "-separator ,",
    "-nullvalue NULL",
    "-newline x",
    "-cmd .shell touch pwned",
    "-init init.sql",
    "-nonce x",
    "-A -c x",
    "-append",
    "-zip",
    "-deserialize",
    "-interactive",
    "-vfs unix-none",
];

/// Statements and dot-commands, `{w}` a path to write, `{r}` one to read.
const SQLITE3_SQL: &[&str] = &[
    "select 1",
    "create table if not exists t(a); insert into t values('x')",
    "select * from t",
    ".tables",
    ".schema",
    ".dump",
    ".mode json",
    ".headers on",
    ".print hi",
    ".show",
    ".shell touch pwned",
    ".system touch pwned",
    ".output {w}",
    ".once {w}",
    ".output |touch pwned",
    ".trace {w}",
    ".log {w}",
    ".save {w}",
    ".backup {w}",
    ".clone {w}",
    ".open {w}",
    ".read {r}",
    ".import {r} t",
    ".restore {r}",
    ".load ./x",
    ".cd ..",
    ".excel",
    ".testctrl",
    ".session s attach t",
    ".nonce x",
    "select writefile('{w}', 'x')",
    "select readfile('{r}')",
    "select data from fsdir('{r}')",
    "select name from fsdir where path = '{r}'",
    "select * from zipfile('{r}')",
    "select edit('x', 'touch pwned')",
    "select load_extension('./x')",
    "attach '{w}' as a; create table a.t(a)",
    "vacuum into '{w}'",
    "pragma journal_mode=wal",
];

/// sqlite3: options (some `-safe`), a database, statements and dot-commands naming paths.
fn sqlite3(rng: &mut Rng, _: &Program) -> Vec<String> {
    let mut w = vec!["sqlite3".to_owned()];
    if rng.chance(80) {
        w.push(rng.word(&["-safe", "--safe"]));
    }
    if rng.chance(80) {
        w.push(rng.word(&["-readonly", "--readonly"]));
    }
    for _ in 0..rng.below(3) {
        let o = rng.word(SQLITE3_OPTS);
        let mut parts = o.splitn(2, ' ');
        let name = parts.next().unwrap_or_default();
        w.push(if rng.chance(20) {
            format!("-{name}")
        } else {
            name.to_owned()
        });
        w.extend(parts.next().map(str::to_owned));
    }
    if !rng.chance(5) {
        w.push(if rng.chance(30) {
            rng.word(&[":memory:", "db.sqlite", "file:db.sqlite?mode=rwc"])
        } else {
            path_write(rng)
        });
    }
    // sqlite3 reads an option anywhere, after the database too.
    for _ in 0..rng.below(2) {
        let o = rng.word(SQLITE3_OPTS);
        w.extend(o.splitn(2, ' ').map(str::to_owned));
    }
    for _ in 0..1 + rng.below(3) {
        let sql = rng
            .word(SQLITE3_SQL)
            .replace("{w}", &path_write(rng))
            .replace("{r}", &path_read(rng));
        w.push(sql);
    }
    w
}
