//! The models of what programs do with their arguments (`policy::args`, docs/POLICY.md)
//! against the real programs (ENGINEERING.md, "Security": test an allow against the real
//! thing), as `policy_shell` tests the shell grammar against the real shells.
//!
//! Argument lists are generated for every modelled program ([`programs`]): the options of
//! its own `--help` written every way, and hostile values. Each one its model reads as
//! `Understood` (and whose written paths stay inside the session's folder, as the policy
//! requires of a prefix rule) runs for real under `strace -f` in a fresh scratch folder
//! ([`sandbox`]); the log must show it start no program, write no file and read no file
//! outside the folder that its model did not list ([`judge`] says exactly what counts).
//!
//!   cargo test --test it policy_args::                          # 10,000 generated (~40 s)
//!   ARGS_DIFF_CASES=60000 cargo test --test it policy_args::    # a longer search
//!   ARGS_DIFF_SEED=7 ...                                        # another sequence
//!   ARGS_DIFF_JOBS=1 ...                     # runs at once (default: cores, max 4)
//!
//! A failure names each program and kind (`ran`, `wrote`, `read`) found, with its
//! shortest command, shrunk, and what the program did. The options come from the installed
//! programs' help, so a seed gives the same commands only with the same versions. [`KNOWN`] holds the escapes found so
//! far, word for word: each must be asked (not `Understood`) or run within its model.
//! Until a model is fixed, a generated command of the same shape ([`Known::shape`]) is
//! reported but does not fail the generated test; once the exact command is asked, its
//! shape is judged again like any other.
//!
//! The real programs come from Debian (installed once, under the install lock, when the
//! tests run as root: `strace`, `ripgrep`, `python3-pytest`, `jq`, `make`, `mawk`,
//! `sqlite3`); git is
//! the one on `PATH`. gawk is tested when installed (installing it would change which
//! program `/usr/bin/awk` is for every other test).

mod gen;
mod judge;
mod known;
mod programs;
mod projects;
mod sandbox;
mod scripts;
mod trace;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use acp_question_bridge::policy::args::{self, Reading};

use crate::common::install;
use gen::Rng;
use judge::Violation;
use known::{Known, BY_DESIGN, KNOWN};
use programs::Program;
use sandbox::{Scratch, Tools};

/// How long one generated command may run (a `tail -f` runs until then).
const TIMEOUT: Duration = Duration::from_secs(5);

/// How long a required or known command may run: a slow machine must not make one pass.
const LONG_TIMEOUT: Duration = Duration::from_secs(60);

/// Commands each model must understand, and that run within it and succeed: a model that
/// asks everything does not pass.
const REQUIRED: &[&str] = &[
    "sed -n 1,5p a.txt",
    "sed -n /alpha/p a.txt",
    "sed s/alpha/ALPHA/g a.txt",
    "sed -i s/alpha/ALPHA/ a.txt",
    "sed -e 1d -e s/b/B/ a.txt b.txt",
    "grep -n alpha a.txt",
    "grep -rn alpha .",
    "rg -n alpha",
    "rg --files",
    "find . -name '*.txt'",
    "find sub -type f -print",
    "sort -o out.txt a.txt",
    "sort -r a.txt b.txt",
    "tar -tf a.tar",
    "tar -tzf a.tar.gz",
    "tar -czf out.tar.gz a.txt sub",
    "tar cf out.tar a.txt",
    "cp a.txt copy.txt",
    "cp -r sub sub2",
    "mv b.txt moved.txt",
    "ln -s a.txt alink",
    "install -m 644 a.txt inst.txt",
    "tee out.txt",
    "rm b.txt",
    "rm -r sub",
    "cat a.txt b.txt",
    "head -n 2 a.txt",
    "tail -n 1 a.txt",
    "wc -l a.txt",
    "ls -la",
    "du -sh .",
    "jq .a data.json",
    "jq -r '.b[]' data.json",
    "awk '{print $1}' a.txt",
    "git status --short",
    "git diff HEAD~1",
    "git log --oneline -n 3",
    "git show --stat HEAD~1",
    "git add a.txt",
    "git commit --allow-empty -m msg",
    "git clone . copy",
    "git grep -n alpha",
    "git branch -a",
    "git rev-parse HEAD",
    "make test",
    "make",
    "pytest -q",
    "python3 -m pytest -q test_a.py",
    "sqlite3 -safe -readonly -json :memory: 'select 1 as a' .tables",
    "sqlite3 --readonly --safe :memory: .schema 'select 2'",
];

/// The tools, installed once.
struct Setup {
    tools: Tools,
    programs: Vec<Program>,
}

static SETUP: OnceLock<Setup> = OnceLock::new();

/// The first `name` on the test's own `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

async fn setup() -> &'static Setup {
    if let Some(s) = SETUP.get() {
        return s;
    }
    let strace = install::debian_program("strace", &["/usr/bin/strace"]).await;
    let rg = install::debian_program("ripgrep", &["/usr/bin/rg"]).await;
    let pytest =
        install::debian_program("python3-pytest", &["/usr/bin/pytest", "/usr/bin/pytest-3"]).await;
    let jq = install::debian_program("jq", &["/usr/bin/jq"]).await;
    let make = install::debian_program("make", &["/usr/bin/make"]).await;
    let mawk = install::debian_program("mawk", &["/usr/bin/mawk"]).await;
    let tar = install::debian_program("tar", &["/usr/bin/tar", "/bin/tar"]).await;
    let sqlite3 = install::debian_program("sqlite3", &["/usr/bin/sqlite3"]).await;
    let git = match on_path("git") {
        Some(g) => g,
        None => install::debian_program("git", &["/usr/bin/git"]).await,
    };
    let python3 = PathBuf::from("/usr/bin/python3");
    let gawk = Some(PathBuf::from("/usr/bin/gawk")).filter(|p| p.is_file());
    tokio::task::spawn_blocking(move || {
        SETUP.get_or_init(|| {
            let exec_path = std::process::Command::new(&git)
                .arg("--exec-path")
                .stdin(std::process::Stdio::null())
                .output()
                .expect("git --exec-path");
            let git_exec_path =
                PathBuf::from(String::from_utf8_lossy(&exec_path.stdout).trim().to_owned());
            let as_nobody = rustix::process::geteuid().is_root();
            let tools = Tools {
                strace,
                git: git.clone(),
                tar,
                as_nobody,
            };
            let programs = programs::all(&programs::Paths {
                git,
                git_exec_path,
                rg,
                pytest,
                python3,
                jq,
                make,
                mawk,
                gawk,
                sqlite3,
            });
            Setup { tools, programs }
        })
    })
    .await
    .expect("the setup")
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// What became of one command.
#[derive(Debug)]
enum Checked {
    /// Its model does not read it as harmless: the policy asks.
    NotUnderstood,
    /// Understood, but the policy asks: a path its model lists is written outside the
    /// session's folder, or is one the policy does not resolve (`/proc/self/...`).
    Asked,
    Ran {
        violations: Vec<Violation>,
        hung: bool,
        success: bool,
        stderr: String,
    },
}

/// Reads `words` (placeholders filled in by `s`) with the model; runs it if understood.
fn check(s: &Scratch, program: &Program, words: &[String]) -> Checked {
    let words: Vec<String> = words.iter().map(|w| s.expand(w)).collect();
    let Reading::Understood(effects) = args::read(&words) else {
        return Checked::NotUnderstood;
    };
    s.reset();
    let Ok(listed) = judge::listed(&effects, &s.box_dir()) else {
        return Checked::Asked;
    };
    if judge::writes_outside(&listed, &s.box_dir()).is_some() {
        return Checked::Asked;
    }
    let run = s.run(&program.exe, &words[1..]);
    let violations = judge::judge(
        s,
        &program.exe,
        &program.helpers,
        program.own,
        &listed,
        &run,
    );
    Checked::Ran {
        violations,
        hung: run.hung,
        success: run.status.is_some_and(|st| st.success()),
        stderr: run.stderr,
    }
}

fn program_of<'a>(setup: &'a Setup, words: &[String]) -> &'a Program {
    let name = args::base(&words[0]);
    setup
        .programs
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no program {name} under test"))
}

fn words_of(cmd: &str) -> Vec<String> {
    shlex::split(cmd).unwrap_or_else(|| panic!("{cmd:?} is not shell words"))
}

fn shown(words: &[String]) -> String {
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| format!("{words:?}"))
}

fn scratch(setup: &Setup, name: &str) -> Scratch {
    Scratch::new(name, &setup.tools, TIMEOUT, true)
}

/// Each model understands the everyday commands, and the real program runs them within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_commands_are_understood_and_run_within_their_model() {
    let setup = setup().await;
    let work = tokio::task::spawn_blocking(move || {
        // An everyday project: no link out of its folder.
        let s = Scratch::new("required", &setup.tools, LONG_TIMEOUT, false);
        let mut wrong = Vec::new();
        for cmd in REQUIRED {
            let words = words_of(cmd);
            match check(&s, program_of(setup, &words), &words) {
                Checked::Ran {
                    violations,
                    hung,
                    success,
                    stderr,
                } => {
                    if !violations.is_empty() || hung || !success {
                        wrong.push(format!(
                            "{cmd}: {violations:?}{}{}; stderr: {stderr}",
                            if hung { ", hung" } else { "" },
                            if success { "" } else { ", failed" }
                        ));
                    }
                }
                other => wrong.push(format!("{cmd} is not run: {other:?}")),
            }
        }
        wrong
    });
    let wrong = tokio::time::timeout(Duration::from_secs(300), work)
        .await
        .expect("the required commands run in time")
        .expect("the required commands' thread");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every escape found so far is asked by its model, or runs within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_escapes_are_asked() {
    let setup = setup().await;
    let work = tokio::task::spawn_blocking(move || {
        let s = Scratch::new("known", &setup.tools, LONG_TIMEOUT, true);
        let mut wrong = Vec::new();
        for k in KNOWN {
            let words = words_of(k.cmd);
            if let Checked::Ran { violations, .. } = check(&s, program_of(setup, &words), &words) {
                if !violations.is_empty() {
                    wrong.push(format!(
                        "{}\n    is understood, and the real program {}:\n    {}",
                        k.cmd,
                        k.found,
                        violations
                            .iter()
                            .map(|v| v.what.as_str())
                            .collect::<Vec<_>>()
                            .join("\n    ")
                    ));
                }
            }
        }
        wrong
    });
    let wrong = tokio::time::timeout(Duration::from_secs(300), work)
        .await
        .expect("the known escapes run in time")
        .expect("the known escapes' thread");
    assert!(
        wrong.is_empty(),
        "{} known escapes are still understood by their model:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Whether a known escape's exact command is still understood (not fixed yet), its
/// placeholders filled in as a scratch would.
fn still_known(k: &Known) -> bool {
    let words: Vec<String> = words_of(k.cmd)
        .iter()
        .map(|w| {
            w.replace("{OUT}", "/tmp/scratch/j/outside")
                .replace("{BOX}", "/tmp/scratch/j/box")
                .replace("{HOME}", "/tmp/scratch/j/home")
        })
        .collect();
    matches!(args::read(&words), Reading::Understood(_))
}

/// A generated command (its index) that did more, and all it did.
type Found = (usize, Vec<Violation>);

/// Counts for the report, per program.
#[derive(Default, Debug)]
struct Counts {
    generated: usize,
    understood: usize,
    /// Understood, but asked by the policy for its paths.
    asked: usize,
    ran: usize,
    hung: usize,
    failed: usize,
    known: usize,
}

/// Every generated command its model understands runs within it (judge.rs says what that
/// is).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stdout)] // the counts are the test's report
async fn generated_commands_do_only_what_their_model_says() {
    let setup = setup().await;
    let work = tokio::task::spawn_blocking(move || generated(setup));
    let report = tokio::time::timeout(Duration::from_secs(1800), work)
        .await
        .expect("the generated commands run in time")
        .expect("the generated commands' thread");
    if let Some(report) = report {
        panic!("{report}");
    }
}

#[allow(clippy::print_stdout)] // the counts are the test's report
fn generated(setup: &'static Setup) -> Option<String> {
    let started = Instant::now();
    let cases = env_number("ARGS_DIFF_CASES", 10000) as usize;
    let seed = env_number("ARGS_DIFF_SEED", 0x5eed);
    let jobs = env_number(
        "ARGS_DIFF_JOBS",
        std::thread::available_parallelism().map_or(2, |n| n.get().min(4) as u64),
    )
    .max(1) as usize;
    let mut rng = Rng(seed);
    let total: u32 = setup.programs.iter().map(|p| p.weight).sum();
    let all: Vec<(usize, Vec<String>)> = (0..cases)
        .map(|_| {
            let mut at = (rng.next() % u64::from(total)) as u32;
            let i = setup
                .programs
                .iter()
                .position(|p| {
                    if at < p.weight {
                        true
                    } else {
                        at -= p.weight;
                        false
                    }
                })
                .unwrap_or(0);
            (i, setup.programs[i].generate(&mut rng))
        })
        .collect();
    let known: Vec<&Known> = KNOWN
        .iter()
        .filter(|k| still_known(k))
        .chain(BY_DESIGN)
        .collect();

    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Checked)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for job in 0..jobs {
            let (all, next, results) = (&all, &next, &results);
            scope.spawn(move || {
                let s = scratch(setup, &format!("job{job}"));
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((p, words)) = all.get(i) else {
                        break;
                    };
                    let c = check(&s, &setup.programs[*p], words);
                    results.lock().expect("results").push((i, c));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);

    let mut counts: BTreeMap<&str, Counts> = BTreeMap::new();
    let mut failures: BTreeMap<(&str, &str), Vec<Found>> = BTreeMap::new();
    let mut known_found: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, c) in &results {
        let (p, words) = &all[*i];
        let name = setup.programs[*p].name;
        let n = counts.entry(name).or_default();
        n.generated += 1;
        match c {
            Checked::NotUnderstood => {}
            Checked::Asked => {
                n.understood += 1;
                n.asked += 1;
            }
            Checked::Ran {
                violations, hung, ..
            } => {
                n.understood += 1;
                n.ran += 1;
                n.hung += usize::from(*hung);
                if violations.is_empty() {
                    continue;
                }
                if let Some(k) = known.iter().find(|k| (k.shape)(words)) {
                    n.known += 1;
                    *known_found.entry(k.cmd).or_default() += 1;
                    continue;
                }
                n.failed += 1;
                let mut kinds: Vec<&str> = violations.iter().map(|v| v.kind).collect();
                kinds.dedup();
                for kind in kinds {
                    failures
                        .entry((name, kind))
                        .or_default()
                        .push((*i, violations.clone()));
                }
            }
        }
    }
    println!(
        "policy_args: seed {seed:#x}: generated {cases}, in {:.1?} with {jobs} jobs",
        started.elapsed()
    );
    for (name, n) in &counts {
        println!(
            "  {name:<8} generated {:>5}, understood {:>5}, asked for its paths {:>4}, ran {:>5}, \
             hung {:>2}, known {:>3}, failed {:>3}",
            n.generated, n.understood, n.asked, n.ran, n.hung, n.known, n.failed
        );
    }
    for (cmd, n) in &known_found {
        println!("  known escape, {n} generated commands of its shape: {cmd}");
    }
    let ran: usize = counts.values().map(|n| n.ran).sum();
    assert!(
        ran > cases / 10,
        "too few commands understood and run: {counts:?}"
    );
    if failures.is_empty() {
        return None;
    }

    // By program and kind: how many, and the shortest, shrunk.
    let s = scratch(setup, "shrink");
    let mut report = vec![format!(
        "{} generated commands did more than their model says (seed {seed:#x}, \
         ARGS_DIFF_SEED to repeat); by program and kind, the shortest, then shrunk:",
        counts.values().map(|n| n.failed).sum::<usize>()
    )];
    for ((name, kind), found) in &failures {
        let (i, violations) = found
            .iter()
            .min_by_key(|(i, _)| shown(&all[*i].1).len())
            .expect("a failure");
        let (p, words) = &all[*i];
        report.push(format!(
            "\n[{name} {kind}] {} commands; shortest: {}",
            found.len(),
            shown(words)
        ));
        for v in violations.iter().filter(|v| v.kind == *kind).take(4) {
            report.push(format!("    {}", v.what));
        }
        let small = shrink(&s, &setup.programs[*p], words, kind, 40);
        if small != *words {
            report.push(format!("  shrunk: {}", shown(&small)));
            if let Checked::Ran { violations, .. } = check(&s, &setup.programs[*p], &small) {
                for v in violations.iter().filter(|v| v.kind == *kind).take(4) {
                    report.push(format!("    {}", v.what));
                }
            }
        }
    }
    Some(report.join("\n"))
}

/// Drops words from a failing command while it stays understood and still does something
/// of `kind`; at most `budget` runs.
fn shrink(
    s: &Scratch,
    program: &Program,
    words: &[String],
    kind: &str,
    budget: usize,
) -> Vec<String> {
    let mut best = words.to_vec();
    let mut runs = 0;
    let mut at = 1;
    while at < best.len() && runs < budget {
        let mut candidate = best.clone();
        candidate.remove(at);
        runs += 1;
        match check(s, program, &candidate) {
            Checked::Ran { violations, .. } if violations.iter().any(|v| v.kind == kind) => {
                best = candidate;
            }
            _ => at += 1,
        }
    }
    best
}
