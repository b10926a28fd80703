//! Seeing through wrappers, for deny and ask rules: the command a wrapper runs
//! (`sudo rm`, `env X=1 rm`, `xargs rm`, `find … -exec rm`, `bash -c 'rm …'`), and a
//! program's global options taken off (`git -C dir push` is `git push`).
//!
//! Invariants:
//! - What a wrapper runs is added beside the command, never instead of it: a rule that
//!   covers the wrapper itself still covers it.
//! - Where the inner command cannot be told (an option this module does not know, a shell
//!   given a script file), it says so ([`Seen::unclear`]): such a command is never allowed.
//! - Bounded: at most [`MAX_DEPTH`] wrappers deep (a shell's script read again counts), and
//!   the caller bounds how many commands there are.

/// How deep wrappers and shell scripts are followed.
pub const MAX_DEPTH: usize = 4;

/// The commands seen in one command, wrappers seen through.
#[derive(Debug, Default)]
pub struct Seen {
    pub commands: Vec<Vec<String>>,
    /// Why what one of them runs could not be told.
    pub unclear: Option<String>,
}

/// The shells whose `-c SCRIPT` is read as the script.
pub const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "ash"];

/// A wrapper: its name, its options that take a value (as `-u USER`), and whether a first
/// non-option argument comes before the command (`timeout 10 rm`).
struct Wrapper {
    name: &'static str,
    with_value: &'static [&'static str],
    /// Its non-option words before the command (`timeout DURATION`, `flock FILE`).
    skip: usize,
    /// Whether `NAME=VALUE` words stand before the command (`env`, `sudo`).
    assignments: bool,
}

const WRAPPERS: &[Wrapper] = &[
    w("command", &[], 0, false),
    w("builtin", &[], 0, false),
    w("exec", &["-a"], 0, false),
    w("time", &["-f", "-o", "--format", "--output"], 0, false),
    w("nice", &["-n", "--adjustment"], 0, false),
    w("nohup", &[], 0, false),
    w("setsid", &[], 0, false),
    w("stdbuf", &["-i", "-o", "-e"], 0, false),
    w(
        "env",
        &[
            "-u",
            "--unset",
            "-C",
            "--chdir",
            "-S",
            "--split-string",
            "-P",
        ],
        0,
        true,
    ),
    w(
        "sudo",
        &[
            "-R",
            "-u",
            "-g",
            "-C",
            "-D",
            "-h",
            "-p",
            "-r",
            "-t",
            "-U",
            "-T",
            "--user",
            "--group",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--command-timeout",
            "--close-from",
        ],
        0,
        true,
    ),
    w("doas", &["-u", "-C"], 0, false),
    w(
        "timeout",
        &["-s", "-k", "--signal", "--kill-after"],
        1,
        false,
    ),
    w(
        "ionice",
        &["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"],
        0,
        false,
    ),
    w("chrt", &[], 1, false),
    w("taskset", &[], 1, false),
    w(
        "flock",
        &["-w", "-E", "--timeout", "--conflict-exit-code"],
        1,
        false,
    ),
    w("unbuffer", &[], 0, false),
    w(
        "watch",
        &["-n", "-d", "--interval", "--differences"],
        0,
        false,
    ),
    w(
        "xargs",
        &[
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "-d",
            "-E",
            "-a",
            "--replace",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--delimiter",
            "--eof",
            "--arg-file",
        ],
        0,
        false,
    ),
    w("strace", &["-o", "-e", "-p", "-s", "-u"], 0, false),
    w("caffeinate", &["-t", "-w"], 0, false),
    w("busybox", &[], 0, false),
    w("chroot", &["--userspec", "--groups"], 1, false),
    w(
        "unshare",
        &[
            "--map-user",
            "--map-group",
            "--setuid",
            "--setgid",
            "--wd",
            "--root",
        ],
        0,
        false,
    ),
    w(
        "runuser",
        &["-u", "-g", "-G", "--user", "--group"],
        0,
        false,
    ),
    w("parallel", &["-j", "--jobs", "-S", "--sshlogin"], 0, false),
    w("nsenter", &["-t", "--target"], 0, false),
];

/// Programs that run a command given as ONE string, after the option named (`su -c STR`,
/// `flock FILE -c STR`, `script -c STR`), or as their first non-option argument (`watch
/// STR`): the string is read as a script, as `bash -c`'s.
const RUNS_A_STRING: &[(&str, &[&str])] = &[
    ("su", &["-c", "--command"]),
    ("runuser", &["-c", "--command"]),
    ("flock", &["-c", "--command"]),
    ("script", &["-c", "--command"]),
    ("watch", &[]),
    ("ssh", &[]),
];

const fn w(
    name: &'static str,
    with_value: &'static [&'static str],
    skip: usize,
    assignments: bool,
) -> Wrapper {
    Wrapper {
        name,
        with_value,
        skip,
        assignments,
    }
}

fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Reads a shell script `depth` wrappers deep into the commands it holds (the caller's
/// reader of a line: `command::read`).
pub type ReadScript = fn(&str, usize) -> Seen;

/// Every command `words` runs or stands for: itself, its global options taken off, and
/// what the wrappers in it run, down to [`MAX_DEPTH`]; a shell's script is read by `script`.
pub fn see(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
    if words.is_empty() {
        return;
    }
    seen.commands.push(words.to_vec());
    if let Some(n) = normalized(words) {
        seen.commands.push(n);
    }
    if depth >= MAX_DEPTH {
        if is_wrapper(words) {
            seen.unclear = Some("wrappers nested too deep to follow".into());
        }
        return;
    }
    let program = base(&words[0]);
    if SHELLS.contains(&program) {
        shell_c(words, depth, script, seen);
        return;
    }
    if program == "find" {
        find(words, depth, script, seen);
        return;
    }
    if let Some((_, options)) = RUNS_A_STRING.iter().find(|(p, _)| *p == program) {
        // The string after the option (or any argument, where none is named): each read as
        // a script, so whatever it runs is seen.
        let strings: Vec<&String> = if options.is_empty() {
            words[1..].iter().filter(|w| !w.starts_with('-')).collect()
        } else {
            words
                .windows(2)
                .filter(|p| options.contains(&p[0].as_str()))
                .map(|p| &p[1])
                .collect()
        };
        for s in strings {
            let inner = script(s, depth + 1);
            seen.commands.extend(inner.commands);
            if seen.unclear.is_none() {
                seen.unclear = inner.unclear;
            }
        }
        if options.is_empty() {
            return;
        }
    }
    let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == program) else {
        return;
    };
    match inner(wrapper, &words[1..]) {
        Ok(Some(rest)) => see(rest, depth + 1, script, seen),
        Ok(None) => {}
        Err(why) => seen.unclear = Some(format!("`{program}`: {why}")),
    }
}

pub(super) fn is_wrapper(words: &[String]) -> bool {
    let p = base(&words[0]);
    SHELLS.contains(&p)
        || p == "find"
        || WRAPPERS.iter().any(|w| w.name == p)
        || RUNS_A_STRING.iter().any(|(n, _)| *n == p)
}

/// The command a wrapper runs, from its arguments: `Ok(None)` when it runs none (`env`
/// alone prints the environment), `Err` when it cannot be told.
fn inner<'a>(wrapper: &Wrapper, args: &'a [String]) -> Result<Option<&'a [String]>, String> {
    let mut i = 0;
    let mut skip = wrapper.skip;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if wrapper.name == "env" && (a.starts_with("-S") || a.starts_with("--split-string")) {
            return Err("a command given as one string (-S)".into());
        }
        if a.starts_with('-') && a.len() > 1 {
            let (flag, has_value) = match a.split_once('=') {
                Some((f, _)) => (f, true),
                None => (a, false),
            };
            // A flag that takes a value, given apart (`-u root`), skips two words; given
            // joined (`-uroot`, `--user=root`, `nice -10`) or with none, one. In a cluster
            // of short flags (`-iu HOME`, `-Eu root`), the first that takes a value takes
            // the rest of the cluster, or the next word when it is the last.
            let cluster_takes_next = !flag.starts_with("--")
                && flag.len() > 2
                && flag[1..].char_indices().find_map(|(at, c)| {
                    let f = format!("-{c}");
                    wrapper
                        .with_value
                        .contains(&f.as_str())
                        .then_some(at + 1 + c.len_utf8() == flag.len())
                }) == Some(true);
            i += if (wrapper.with_value.contains(&flag) && !has_value) || cluster_takes_next {
                2
            } else {
                1
            };
            continue;
        }
        if wrapper.assignments && a.contains('=') && !a.starts_with('=') {
            i += 1;
            continue;
        }
        if skip > 0 {
            skip -= 1;
            i += 1;
            continue;
        }
        break;
    }
    if i > args.len() {
        return Err("an option without its value".into());
    }
    let rest = &args[i..];
    if rest.is_empty() {
        return Ok(None);
    }
    Ok(Some(rest))
}

/// `bash -c SCRIPT` (and `-lc`, `-ec`, `-xc`, any shell of [`SHELLS`]): the script's
/// commands; a shell given a script file or reading standard input runs what cannot be
/// seen.
fn shell_c(words: &[String], depth: usize, script_of: ReadScript, seen: &mut Seen) {
    let mut i = 1;
    let mut script = None;
    while i < words.len() {
        let a = words[i].as_str();
        if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") {
            if a[1..].contains('c') {
                script = words.get(i + 1).filter(|_| a.ends_with('c'));
                if script.is_none() {
                    seen.unclear = Some(format!("`{}` with options it cannot follow", words[0]));
                    return;
                }
                break;
            }
            if a.contains('o') || a.contains('O') {
                // `-o option`: skip its value.
                i += 2;
                continue;
            }
            i += 1;
            continue;
        }
        if a.starts_with("--") || a.starts_with('+') {
            i += 1;
            continue;
        }
        // A script file, or `-s`: what it runs is not in its arguments.
        seen.unclear = Some(format!(
            "`{}` runs a script that is not in its arguments",
            base(&words[0])
        ));
        return;
    }
    match script {
        Some(s) => {
            let inner = script_of(s, depth + 1);
            seen.commands.extend(inner.commands);
            if seen.unclear.is_none() {
                seen.unclear = inner.unclear;
            }
        }
        None if words.len() > 1 => {
            seen.unclear = Some(format!(
                "`{}` with options it cannot follow",
                base(&words[0])
            ));
        }
        None => {}
    }
}

/// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`) runs CMD; `-delete` removes
/// what it finds, as `rm -rf` would.
fn find(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
    let mut i = 1;
    let starts: Vec<String> = words[1..]
        .iter()
        .take_while(|w| !w.starts_with('-') && !matches!(w.as_str(), "(" | "!" | ")"))
        .cloned()
        .collect();
    while i < words.len() {
        match words[i].as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = words[i + 1..]
                    .iter()
                    .position(|w| w == ";" || w == "+")
                    .map(|p| i + 1 + p)
                    .unwrap_or(words.len());
                if words.get(i + 1).is_some_and(|w| w.contains("{}")) {
                    // It runs what it finds: nothing a rule could name.
                    seen.unclear = Some("`find -exec` runs the files it finds".into());
                }
                let cmd: Vec<String> = words[i + 1..end]
                    .iter()
                    .filter(|w| w.as_str() != "{}")
                    .cloned()
                    .collect();
                if !cmd.is_empty() {
                    see(&cmd, depth + 1, script, seen);
                }
                i = end + 1;
            }
            "-delete" => {
                let mut rm = vec!["rm".to_owned(), "-rf".to_owned()];
                rm.extend(starts.iter().cloned());
                seen.commands.push(rm);
                i += 1;
            }
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                seen.unclear = Some("`find` writing to a file".into());
                i += 1;
            }
            _ => i += 1,
        }
    }
}

/// A program's global options taken off, for those whose subcommand follows them:
/// `git -C dir -c k=v --no-pager push` is `git push`, `cargo +nightly publish` is `cargo
/// publish`. `None` when there is nothing to take off.
fn normalized(words: &[String]) -> Option<Vec<String>> {
    let program = base(&words[0]);
    let mut i = 1;
    match program {
        "git" => {
            while i < words.len() {
                let a = words[i].as_str();
                if matches!(
                    a,
                    "-C" | "-c"
                        | "--git-dir"
                        | "--work-tree"
                        | "--namespace"
                        | "--exec-path"
                        | "--config-env"
                        | "--super-prefix"
                        | "--list-cmds"
                        | "--attr-source"
                ) && !a.contains('=')
                {
                    i += 2;
                } else if a.starts_with('-') {
                    i += 1;
                } else {
                    break;
                }
            }
        }
        "cargo" | "rustup" => {
            while i < words.len() {
                let a = words[i].as_str();
                if a.starts_with('+') {
                    i += 1;
                } else if matches!(a, "-Z" | "--config" | "-C" | "--color") {
                    i += 2;
                } else if a.starts_with('-') {
                    i += 1;
                } else {
                    break;
                }
            }
        }
        "npm" | "pnpm" | "yarn" => {
            while i < words.len() {
                let a = words[i].as_str();
                if matches!(
                    a,
                    "--prefix" | "-C" | "--dir" | "--cwd" | "--workspace" | "-w" | "--filter"
                ) {
                    i += 2;
                } else if a.starts_with('-') {
                    i += 1;
                } else {
                    break;
                }
            }
        }
        _ => return None,
    }
    if i == 1 || i >= words.len() {
        return None;
    }
    let mut out = vec![words[0].clone()];
    out.extend(words[i..].iter().cloned());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(line: &str) -> Seen {
        super::super::command::script(line, 0)
    }

    fn has(line: &str, want: &[&str]) {
        let s = seen(line);
        assert!(
            s.commands
                .iter()
                .any(|c| c.len() >= want.len() && c.iter().zip(want).all(|(a, b)| a == b)),
            "{line:?}: {:?}",
            s.commands
        );
    }

    #[test]
    fn wrappers_are_seen_through() {
        for line in [
            "command rm -rf x",
            "env VAR=1 rm -rf x",
            "env -i -u HOME VAR=1 rm -rf x",
            "sudo rm -rf x",
            "sudo -u root -E rm -rf x",
            "sudo -uroot rm -rf x",
            "exec rm -rf x",
            "time rm -rf x",
            "nice rm -rf x",
            "nice -n 10 rm -rf x",
            "nohup rm -rf x",
            "timeout 10 rm -rf x",
            "timeout -s KILL 10 rm -rf x",
            "xargs rm -rf",
            "xargs -0 -n 1 rm -rf",
            "find . -name x -exec rm -rf {} ;",
            "find . -execdir rm -rf {} +",
            "bash -c 'rm -rf x'",
            "sh -c 'cd y && rm -rf x'",
            "bash -lc \"rm -rf x\"",
            "sudo env X=1 nohup bash -c 'rm -rf x'",
            "(rm -rf x)",
            "{ rm -rf x; }",
            "/usr/bin/env rm -rf x",
        ] {
            has(line, &["rm", "-rf"]);
        }
        has("find . -delete", &["rm", "-rf", "."]);
        for line in [
            "git -C dir push",
            "git -c k=v push",
            "git --no-pager push",
            "git -C a -c b=c --no-pager push origin",
        ] {
            has(line, &["git", "push"]);
        }
        has("cargo +nightly publish", &["cargo", "publish"]);
    }

    #[test]
    fn what_cannot_be_told_is_unclear() {
        for line in [
            "bash script.sh",
            "sh -s",
            "env -S 'rm -rf x'",
            "find . -fprint out",
        ] {
            assert!(seen(line).unclear.is_some(), "{line:?}");
        }
        assert!(seen("cargo test").unclear.is_none());
        assert!(seen("env").unclear.is_none());
    }
}
