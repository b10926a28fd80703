//! `bench counts`: what the relay costs in the kernel, not in time. The same workload goes
//! through the bridge (`BRIDGE -- bench emit`), through a `cat` relay (`bench emit | cat`)
//! and from the emitter alone, each under `perf stat`, which counts the system calls by kind
//! and the context switches of the whole process tree; the bench's own `getrusage` counts
//! its waited-for descendants' voluntary context switches. The emitter's own counts are
//! taken off both, so what is left is the bridge's and `cat`'s. These figures do not move
//! with the CPU or the machine's load, as times do (issue "The relay at the limit").
//!
//! Needs `perf` with tracepoints (root, or `kernel.perf_event_paranoid` at -1).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

/// The kernel's counters read for each run: `perf stat` events.
const EVENTS: &[(&str, &str)] = &[
    ("raw_syscalls:sys_enter", "system calls"),
    ("syscalls:sys_enter_read", "read"),
    ("syscalls:sys_enter_write", "write"),
    ("syscalls:sys_enter_futex", "futex"),
    ("syscalls:sys_enter_epoll_wait", "epoll_wait"),
    ("syscalls:sys_enter_epoll_pwait", "epoll_pwait"),
    ("context-switches", "context switches"),
];

/// One run's counts, by the names of [`EVENTS`] and `voluntary switches`.
pub type Counts = BTreeMap<&'static str, f64>;

/// What is measured.
#[derive(Clone, Copy, PartialEq)]
pub enum Tree {
    Bridge,
    Cat,
    Emitter,
}

/// The voluntary context switches of this process's waited-for descendants so far.
fn voluntary_of_children() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| u.voluntary_context_switches() as f64)
}

/// The workload `kind` of `bytes` through `tree`, under `perf stat`: its counts.
pub fn run(kind: &str, bytes: usize, tree: Tree) -> Counts {
    let expect = super::workload(kind, bytes, 1).len();
    let me = super::me();
    let emit = format!("{me} emit {kind} {bytes} 1");
    let out = std::env::temp_dir().join(format!("acp-qb-counts-{}.csv", std::process::id()));
    let events: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
    let mut perf = Command::new("perf");
    perf.args(["stat", "-x", ",", "-o"])
        .arg(&out)
        .args(["-e", &events.join(","), "--"]);
    match tree {
        Tree::Bridge => {
            perf.arg(super::bridge())
                .args(["--log-level", "error", "--client-dialect", "extension"])
                .args(super::bridge_args())
                .arg("--")
                .args(emit.split(' '));
        }
        Tree::Cat => {
            perf.args(["sh", "-c", &format!("{emit} | cat")]);
        }
        Tree::Emitter => {
            perf.args(emit.split(' '));
        }
    }
    let before = voluntary_of_children();
    let mut child = perf
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("perf (install linux-perf)");
    super::sink(child.stdout.take().expect("stdout"), expect, 0);
    drop(child.stdin.take());
    let status = child.wait().expect("perf");
    assert!(status.success(), "perf stat failed: {status}");
    let voluntary = voluntary_of_children() - before;
    let text = std::fs::read_to_string(&out).expect("perf's output");
    let _ = std::fs::remove_file(&out);
    let mut counts = Counts::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        if let (Some(v), Some(e)) = (fields.first(), fields.get(2)) {
            if let (Ok(v), Some((_, name))) =
                (v.parse::<f64>(), EVENTS.iter().find(|(n, _)| n == e))
            {
                *counts.entry(name).or_default() += v;
            }
        }
    }
    assert!(
        counts.contains_key("system calls"),
        "perf counted no system calls (tracepoints need root or perf_event_paranoid -1): {text}"
    );
    counts.insert("voluntary switches", voluntary);
    counts
}

/// Best (fewest) of `runs` for each counter.
fn least(runs: usize, kind: &str, bytes: usize, tree: Tree) -> Counts {
    let mut best = Counts::new();
    for _ in 0..runs {
        for (k, v) in run(kind, bytes, tree) {
            let b = best.entry(k).or_insert(f64::MAX);
            *b = b.min(v);
        }
    }
    best
}

/// The guards of issue 55, per MiB of the steady stream: the bridge's system calls and
/// context switches at most this many times `cat`'s.
const RATIO_GUARD: f64 = 1.3;
/// ... and at most this many futex calls per MiB (no thread woken per read).
const FUTEX_GUARD: f64 = 2.0;

/// The counts table of both workloads: per MiB, the bridge's and `cat`'s, and their ratio;
/// then each guard, held or not. What a run costs once (starting the agent in its wall,
/// reading the policy, `sh` and `cat` starting) is a run of the same tree with an empty
/// stream, taken off; so are the emitter's own counts. What is left is the relay's, per
/// MiB streamed.
pub fn table(small: usize, mixed: usize, runs: usize) -> String {
    let mib = (1usize << 20) as f64;
    let mut table = String::from(
        "| stream, per MiB | counter | bridge | cat relay | ratio |\n|---|---|---|---|---|\n",
    );
    let mut guards = String::new();
    for (kind, bytes) in [("small", small), ("mixed", mixed)] {
        let _ = writeln!(std::io::stderr(), "bench: counts of {kind}");
        let emitter = least(runs, kind, bytes, Tree::Emitter);
        let emitter0 = least(runs, kind, 0, Tree::Emitter);
        let bridge = least(runs, kind, bytes, Tree::Bridge);
        let bridge0 = least(runs, kind, 0, Tree::Bridge);
        let cat = least(runs, kind, bytes, Tree::Cat);
        let cat0 = least(runs, kind, 0, Tree::Cat);
        let get = |c: &Counts, k: &str| c.get(k).copied().unwrap_or(0.0);
        let per = |c: &Counts, c0: &Counts, k: &str| {
            let emitted = get(&emitter, k) - get(&emitter0, k);
            (get(c, k) - get(c0, k) - emitted).max(0.0) / (bytes as f64 / mib)
        };
        let names: Vec<&str> = EVENTS
            .iter()
            .map(|(_, n)| *n)
            .chain(["voluntary switches"])
            .collect();
        for name in names {
            let (b, c) = (per(&bridge, &bridge0, name), per(&cat, &cat0, name));
            let ratio = if c > 0.0 {
                format!("{:.2}", b / c)
            } else {
                "-".into()
            };
            table.push_str(&format!(
                "| {kind} ({} MiB) | {name} | {b:.1} | {c:.1} | {ratio} |\n",
                bytes >> 20
            ));
            let verdict = |held: bool| if held { "holds" } else { "FAILS" };
            match name {
                "system calls" | "context switches" => guards.push_str(&format!(
                    "- {kind}: {name} at most {RATIO_GUARD}x `cat`'s: {b:.1} against {c:.1}: {}\n",
                    verdict(b <= RATIO_GUARD * c)
                )),
                "futex" => guards.push_str(&format!(
                    "- {kind}: futex calls at most {FUTEX_GUARD} per MiB: {b:.1}: {}\n",
                    verdict(b <= FUTEX_GUARD)
                )),
                _ => {}
            }
        }
    }
    table.push('\n');
    table.push_str(&guards);
    table
}
