//! The wrapper models against the real programs (docs/POLICY.md, "Commands": each model is
//! tested against the real program). Each case runs a
//! real runner around a recording stand-in, and the argv the stand-in was started with must
//! be among the commands [`see`] finds in the line; a case the program reads otherwise
//! (`prlimit --nofile 10 REC`: `10` is the command) must not start the stand-in, nor may the
//! model say it does. The programs of coreutils, util-linux and findutils are on every
//! Debian and must be there; the others are checked where installed (Debian packages:
//! strace, valgrind, numactl, cgroup-tools, runit, daemontools, torsocks, proxychains4,
//! expect, xvfb, dbus, rlwrap, entr, moreutils, eatmydata, fakeroot, time, bubblewrap).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{see, Seen};

/// What a case says of the stand-in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// It runs: the program (when installed) starts the stand-in.
    Runs,
    /// It may not run for want of a privilege or a service (`sudo`, `bwrap`); when it does,
    /// the model must see it.
    Maybe,
    /// The program reads the words otherwise: the stand-in does not run, and the model
    /// says no command starts with it.
    Not,
}
use Expect::{Maybe, Not, Runs};

/// Programs every Debian has (coreutils, util-linux, findutils): their cases must run.
const BASE: &[&str] = &[
    "env", "nice", "nohup", "timeout", "stdbuf", "setsid", "setarch", "linux64", "prlimit",
    "setpriv", "taskset", "ionice", "chrt", "flock", "script", "xargs",
];

/// The cases: a line's words (`{R}` the stand-in, `{D}` a folder of the test's), what it
/// runs, and its standard input.
#[rustfmt::skip]
const CASES: &[(&[&str], Expect, &str)] = &[
    (&["env", "-i", "-u", "HOME", "CI=1", "{R}", "a", "-i"], Runs, ""),
    (&["env", "-i", "CI=1", "-u", "HOME", "{R}", "a"], Not, ""),
    (&["env", "-", "{R}", "a"], Runs, ""),
    (&["env", "-iu", "HOME", "{R}", "a"], Runs, ""),
    (&["env", "-C", "/", "--unset=HOME", "{R}", "a"], Runs, ""),
    (&["env", "CI=1", "-i", "{R}", "a"], Not, ""),
    (&["nice", "-n", "5", "{R}", "a", "-n", "3"], Runs, ""),
    (&["nice", "-5", "{R}", "a"], Runs, ""),
    (&["nice", "--adjustment=2", "{R}", "a"], Runs, ""),
    (&["nice", "--adj", "2", "{R}", "a"], Runs, ""),
    (&["nohup", "{R}", "a"], Runs, ""),
    (&["timeout", "-k", "1", "-s", "TERM", "10", "{R}", "a", "-s"], Runs, ""),
    (&["timeout", "--sig=TERM", "10", "{R}", "a"], Runs, ""),
    (&["timeout", "--preserve", "10", "{R}", "a"], Runs, ""),
    (&["stdbuf", "-oL", "-e", "0", "{R}", "a"], Runs, ""),
    (&["stdbuf", "--output", "L", "{R}", "a"], Runs, ""),
    (&["setsid", "-w", "{R}", "a"], Runs, ""),
    (&["setarch", "linux64", "-R", "{R}", "a", "-R"], Runs, ""),
    (&["setarch", "-R", "linux64", "{R}", "a"], Runs, ""),
    (&["setarch", "linux64", "--addr-no", "--3gb", "{R}", "a"], Runs, ""),
    (&["linux64", "-R", "{R}", "a"], Runs, ""),
    (&["prlimit", "--nofile=64", "{R}", "a"], Runs, ""),
    (&["prlimit", "-n64", "--core", "{R}", "a"], Runs, ""),
    (&["prlimit", "--nofile", "{R}", "a"], Runs, ""),
    (&["prlimit", "--nofile", "64", "{R}", "a"], Not, ""),
    (&["setpriv", "--nnp", "{R}", "a"], Runs, ""),
    (&["setpriv", "--no-new", "{R}", "a"], Runs, ""),
    (&["taskset", "-c", "0-1023", "{R}", "a"], Runs, ""),
    (&["taskset", "ffffffff", "{R}", "a"], Runs, ""),
    (&["taskset", "-ac", "0-1023", "{R}", "a"], Runs, ""),
    (&["ionice", "-c", "3", "{R}", "a"], Runs, ""),
    (&["ionice", "-c3", "-t", "{R}", "a"], Runs, ""),
    (&["chrt", "-o", "0", "{R}", "a"], Runs, ""),
    (&["chrt", "--other", "0", "{R}", "a"], Runs, ""),
    (&["flock", "{D}/lock", "{R}", "a", "-c", "b"], Runs, ""),
    (&["flock", "-w", "5", "{D}/lock", "-c", "{R} a 'b c'"], Runs, ""),
    (&["flock", "{D}/lock", "--command", "{R} a"], Runs, ""),
    (&["script", "-q", "-c", "{R} a", "/dev/null"], Runs, ""),
    (&["script", "/dev/null", "-qc", "{R} a"], Runs, ""),
    (&["xargs", "{R}", "a"], Runs, ""),
    (&["xargs", "-n", "1", "-P", "2", "{R}", "a"], Runs, ""),
    (&["xargs", "--max-lines", "{R}", "a"], Runs, ""),
    (&["xargs", "--max-lines", "1", "{R}", "a"], Not, ""),
    (&["xargs", "-E", "x", "-e", "{R}", "a"], Runs, ""),
    (&["xargs", "-l1", "{R}", "a"], Runs, ""),
    (&["watch", "-e", "-x", "{R}", "a"], Runs, ""),
    (&["watch", "-e", "-n", "1", "{R}", "a"], Runs, ""),
    (&["watch", "-e", "-d", "{R}", "a"], Runs, ""),
    (&["time", "-o", "/dev/null", "-f", "%e", "{R}", "a", "-o"], Runs, ""),
    (&["time", "--form", "x", "-q", "{R}", "a"], Runs, ""),
    (&["strace", "-o", "/dev/null", "-f", "{R}", "a", "-f"], Maybe, ""),
    (&["strace", "-o", "|{R} a", "true"], Maybe, ""),
    (&["valgrind", "--tool=none", "-q", "{R}", "a"], Runs, ""),
    (&["valgrind", "-q", "--", "{R}", "a"], Runs, ""),
    (&["numactl", "--all", "{R}", "a"], Runs, ""),
    (&["numactl", "-l", "{R}", "a"], Runs, ""),
    (&["cgexec", "-g", "cpu:/", "{R}", "a"], Maybe, ""),
    (&["softlimit", "-m", "100000000", "{R}", "a"], Runs, ""),
    (&["softlimit", "-t10", "{R}", "a"], Runs, ""),
    (&["chpst", "-b", "x", "-v", "{R}", "a"], Runs, ""),
    (&["chpst", "-n", "1", "{R}", "a"], Runs, ""),
    (&["pgrphack", "{R}", "a"], Runs, ""),
    (&["setlock", "-n", "{D}/lock2", "{R}", "a"], Runs, ""),
    (&["setuidgid", "root", "{R}", "a"], Maybe, ""),
    (&["proxychains4", "-q", "-f", "/etc/proxychains4.conf", "{R}", "a"], Runs, ""),
    (&["torsocks", "-q", "-P", "9050", "{R}", "a"], Runs, ""),
    (&["fakeroot", "-u", "{R}", "a"], Runs, ""),
    (&["fakeroot", "--", "{R}", "a", "-f", "x"], Runs, ""),
    (&["xvfb-run", "-a", "-s", "-screen 0 8x8x8", "{R}", "a"], Maybe, ""),
    (&["dbus-run-session", "--", "{R}", "a", "-x"], Maybe, ""),
    (&["dbus-launch", "--exit-with-session", "{R}", "a"], Maybe, ""),
    (&["ssh-agent", "-t", "10", "{R}", "a", "-x"], Runs, ""),
    (&["unbuffer", "{R}", "a", "-x"], Runs, ""),
    (&["unbuffer", "-p", "{R}", "a"], Runs, ""),
    (&["rlwrap", "-C", "x", "-a", "{R}", "a"], Runs, ""),
    (&["entr", "-zn", "{R}", "a", "-x"], Runs, "{D}/lock\n"),
    (&["entr", "-zns", "{R} a 'b c'"], Runs, "{D}/lock\n"),
    (&["eatmydata", "--", "{R}", "a"], Runs, ""),
    (&["chronic", "-e", "{R}", "a", "-e"], Runs, ""),
    (&["ifne", "-n", "{R}", "a"], Runs, ""),
    (&["ifne", "{R}", "a"], Runs, "x\n"),
    (&["bwrap", "--dev-bind", "/", "/", "--setenv", "A", "B", "--", "{R}", "a"], Maybe, ""),
    (&["bwrap", "--dev-bind", "/", "/", "{R}", "a"], Maybe, ""),
    (&["sudo", "-n", "-u", "root", "A=1", "{R}", "a"], Maybe, ""),
    (&["sudo", "-n", "-E", "{R}", "a", "-u"], Maybe, ""),
    (&["sg", "root", "-c", "{R} a"], Maybe, ""),
    (&["sg", "root", "{R} a", "b"], Maybe, ""),
    (&["chroot", "/", "{R}", "a"], Maybe, ""),
    (&["runuser", "-u", "root", "--", "{R}", "a", "-l"], Maybe, ""),
    (&["su", "root", "-s", "/bin/sh", "-c", "{R} a"], Maybe, ""),
    (&["su", "-s", "{R}", "root", "--", "a", "b"], Maybe, ""),
    (&["unshare", "-r", "{R}", "a"], Maybe, ""),
];

/// A folder of the test's own.
fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("acp-qb-wrappers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d.canonicalize().unwrap()
}

/// Whether `program` is on `PATH`.
fn installed(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p)
            .any(|d| std::fs::metadata(d.join(program)).is_ok_and(|m| m.is_file()))
    })
}

/// Runs `words` with `stdin`, at most 20 s; the argv the stand-in recorded in `out`, if it
/// ran.
fn run(words: &[String], stdin: &str, out: &Path) -> Option<Vec<String>> {
    let _ = std::fs::remove_file(out);
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(stdin.as_bytes());
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    let bytes = std::fs::read(out).ok()?;
    let mut fields = bytes
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let n: usize = fields.next()?.parse().ok()?;
    Some(fields.take(n).collect())
}

#[test]
fn every_runner_starts_what_its_model_sees() {
    let d = scratch();
    // The stand-in: its arguments, NUL-separated after their count, to a file anyone may
    // write (a runner may change the user); it fails, so `watch -e` ends.
    let out = d.join("out");
    let rec = d.join("rec");
    std::fs::write(
        &rec,
        format!(
            "#!/bin/sh\n{{ printf '%s\\0' \"$#\"; printf '%s\\0' \"$@\"; }} > '{}'\nexit 1\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::write(d.join("lock"), "").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rec, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let r = rec.to_str().unwrap();
    let fill = |w: &str| w.replace("{R}", r).replace("{D}", d.to_str().unwrap());
    let mut checked = Vec::new();
    for (words, expect, stdin) in CASES {
        let program = words[0];
        if !installed(program) {
            assert!(!BASE.contains(&program), "{program} is on every Debian");
            continue;
        }
        let words: Vec<String> = words.iter().map(|w| fill(w)).collect();
        let mut seen = Seen::default();
        see(&words, 0, super::super::command::script, &mut seen);
        let ran = run(&words, &fill(stdin), &out);
        let line = words.join(" ");
        match (expect, ran) {
            (Not, ran) => {
                assert_eq!(ran, None, "{line}: the stand-in ran");
                assert!(
                    !seen.commands.iter().any(|c| c[0] == r),
                    "{line}: the model says it runs: {:?}",
                    seen.commands
                );
            }
            (_, Some(args)) => {
                let mut argv = vec![r.to_owned()];
                argv.extend(args);
                assert!(
                    seen.commands.contains(&argv),
                    "{line}: ran {argv:?}, the model sees {:?}",
                    seen.commands
                );
                // A runner that changes folder is seen through, and never allowed; and a
                // program no model reads (the stand-in) given what `xargs` reads is unclear
                // by itself.
                let elsewhere = |u: &str| {
                    u.contains("another folder or root")
                        || u.contains("is given what `xargs` reads")
                };
                assert!(
                    seen.unclear.as_deref().is_none_or(elsewhere),
                    "{line}: {:?}",
                    seen.unclear
                );
            }
            (Runs, None) => panic!("{line}: the stand-in did not run"),
            (Maybe, None) => continue,
        }
        checked.push(program);
    }
    for base in BASE {
        assert!(checked.contains(base), "{base} was not checked");
    }
    let _ = std::fs::remove_dir_all(&d);
}
