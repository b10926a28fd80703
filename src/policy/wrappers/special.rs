//! Runners with a reading of their own: `su`/`runuser -c`, `sg`, `unbuffer`, proxychains,
//! gdb, the runners whose options are not modelled, and the guess at what they run.

use super::*;

/// `su [-] [USER [ARG...]]`, `runuser [-u USER [--] CMD...]`: its `-c STR` and `-s SHELL`
/// are seen already; runuser's `-u USER` runs its words as they are; else the words after
/// USER go to the shell (`su root -- -c STR`), read as a shell's.
pub(super) fn su(
    w: &Wrapper,
    program: &str,
    p: &Parsed,
    depth: usize,
    script: ReadScript,
    seen: &mut Seen,
) {
    if program == "runuser" && p.has(&["-u", "--user"]) {
        if !p.rest.is_empty() {
            see(&p.rest, depth + 1, script, seen);
        }
        return;
    }
    let args: &[String] = p.rest.get(1..).unwrap_or(&[]);
    if !args.is_empty() {
        // The shell: `-s SHELL`, or the user's (a shell of [`SHELLS`], read as `sh`).
        let shell = p
            .options
            .iter()
            .rev()
            .find(|(n, _)| matches!(n.as_str(), "-s" | "--shell"))
            .and_then(|(_, v)| v.first().cloned());
        let mut sh = vec![shell.unwrap_or_else(|| "sh".to_owned())];
        sh.extend(args.iter().cloned());
        if shell_of(base(&sh[0])).is_some() {
            shell_c(&sh, depth, script, seen);
        } else {
            see(&sh, depth + 1, script, seen);
        }
    } else if !p.has(w.scripts) {
        mark(
            seen,
            format!("`{program}` runs a shell reading its standard input"),
        );
    }
}

/// `sg [-] GROUP [-c] STR [ARG...]`: STR run with `sh -c` (the words after it are its `$0`
/// and arguments); without STR a shell reading its standard input.
pub(super) fn sg(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
    let mut args = &words[1..];
    if args.first().is_some_and(|a| a == "-") {
        args = &args[1..];
    }
    let mut cmd = args.get(1..).unwrap_or(&[]);
    if cmd.first().is_some_and(|a| a == "-c") {
        cmd = &cmd[1..];
    }
    match cmd.first() {
        Some(s) => read_script(s, depth, script, seen),
        None => mark(seen, "`sg` runs a shell reading its standard input".into()),
    }
}

/// `unbuffer [-p] CMD...`: expect's `spawn -noecho CMD...`, whose own flags (any word with a
/// `-` first, by any prefix) are not modelled.
pub(super) fn unbuffer(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
    let mut args = &words[1..];
    if args.first().is_some_and(|a| a == "-p") {
        args = &args[1..];
    }
    if args.first().is_some_and(|a| a.starts_with('-')) {
        mark(
            seen,
            "`unbuffer`: expect's `spawn` flags are not modelled".into(),
        );
        return guess(args, depth, script, seen, false);
    }
    if !args.is_empty() {
        see(args, depth + 1, script, seen);
    }
}

/// `proxychains4 [-q] [-f FILE] CMD...`: at most two options, each a word beginning `-q` or
/// `-f` (the next word its file); another word beginning with `-` is the command.
pub(super) fn proxychains(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
    let mut i = 1;
    for _ in 0..2 {
        match words.get(i).map(|w| w.as_bytes()) {
            Some([b'-', b'q', ..]) => i += 1,
            Some([b'-', b'f', ..]) => i += 2,
            _ => break,
        }
    }
    if let Some(rest) = words.get(i..).filter(|r| !r.is_empty()) {
        see(rest, depth + 1, script, seen);
    }
}

/// gdb runs what its commands say (`-ex`, `-x FILE`, its standard input, `.gdbinit`):
/// never told; with `--args PROG ARG...` (`-args`), PROG is seen.
pub(super) fn gdb(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
    mark(
        seen,
        "`gdb` runs what its commands say (`-ex`, its standard input)".into(),
    );
    if let Some(at) = words.iter().position(|w| w == "--args" || w == "-args") {
        if let Some(rest) = words.get(at + 1..).filter(|r| !r.is_empty()) {
            see(rest, depth + 1, script, seen);
        }
    }
}

/// A program of [`UNMODELLED`]: never allowed; what it may run seen for denies.
pub(super) fn unmodelled(
    u: &Unmodelled,
    program: &str,
    words: &[String],
    depth: usize,
    script: ReadScript,
    seen: &mut Seen,
) {
    let mut from = 1;
    if !u.subcommands.is_empty() {
        // `perf record ...`, `perf lock record ...`: after the subcommand that runs one.
        match words
            .iter()
            .position(|w| u.subcommands.contains(&w.as_str()))
        {
            Some(at) if at <= 2 => from = at + 1,
            _ => return,
        }
        if words.get(from).is_some_and(|w| w == "record") {
            from += 1;
        }
    }
    mark(seen, format!("`{program}`: {}", u.why));
    for pair in words[from..].windows(2) {
        let name = pair[0].split('=').next().unwrap_or("");
        if u.scripts.contains(&name) {
            read_script(&pair[1], depth, script, seen);
        }
    }
    for w in &words[from..] {
        if let Some((name, v)) = w.split_once('=') {
            if u.scripts.contains(&name) {
                read_script(v, depth, script, seen);
            }
        }
    }
    guess(&words[from..], depth, script, seen, u.shell);
}

/// For a program whose options cannot be read exactly: what it runs if its command begins
/// at any word that may begin it (after `--`; else the first word that is not an option,
/// and each after an option that may have taken the one before as its value), at most
/// [`MAX_GUESSES`]; with `shell`, each as a script (its words joined).
pub(super) fn guess(
    args: &[String],
    depth: usize,
    script: ReadScript,
    seen: &mut Seen,
    shell: bool,
) {
    let take = |rest: &[String], seen: &mut Seen| {
        if shell {
            read_script(&rest.join(" "), depth, script, seen);
        } else {
            see(rest, depth + 1, script, seen);
        }
    };
    let mut after_option = false;
    let mut tried = 0;
    for (i, a) in args.iter().enumerate() {
        if a == "--" {
            if i + 1 < args.len() {
                take(&args[i + 1..], seen);
            }
            return;
        }
        if a.len() > 1 && a.starts_with('-') {
            after_option = !a.contains('=');
            continue;
        }
        take(&args[i..], seen);
        tried += 1;
        if !after_option || tried >= MAX_GUESSES {
            return;
        }
        after_option = false;
    }
}

/// `ssh [OPTION...] HOST [CMD...]`: each word after its options, read as a script (the
/// remote shell runs them joined). Only the options that run, load or write nothing are
/// followed (OpenSSH 9); any other (`-o ProxyCommand=…`, joined `-oProxyCommand=…` too,
/// `-F`, `-E`, `-I`, `-S`, a fifty-ninth review) leaves what it runs unclear.
pub(super) fn ssh(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
    // `-G` prints the configuration, `~/.ssh/config` read whole (a sixtieth review).
    const FLAGS: &str = "46AaCfgKkMNnqsTtVvXxYy";
    const VALUED: &str = "BbcDeLlmOpQRw";
    let mut i = 1;
    // ssh reads its options again after the host, up to `--` or the command (`ssh.c`'s
    // `goto again`: `ssh h -I ./x.so true` loaded the agent's library).
    let mut host = None;
    for pass in 0..2 {
        let mut ended = false;
        while let Some(w) = words.get(i).filter(|w| w.starts_with('-')) {
            i += 1;
            if w == "--" {
                ended = true;
                break;
            }
            for (at, c) in w.char_indices().skip(1) {
                if FLAGS.contains(c) {
                    continue;
                }
                if VALUED.contains(c) {
                    // Its value: the rest of the word, or the next.
                    i += usize::from(at + 1 == w.len());
                    break;
                }
                mark(
                    seen,
                    format!("`ssh -{c}`: what it runs, reads or writes then cannot be told"),
                );
                return;
            }
        }
        if ended || pass == 1 || i >= words.len() {
            break;
        }
        host = Some(i);
        i += 1;
    }
    // The host too, as before: a word read as a script more is only more seen.
    for s in host.iter().map(|h| &words[*h]).chain(words.iter().skip(i)) {
        read_script(s, depth, script, seen);
    }
}

/// The names a shell's `-o NAME` may take before its script: they change no grammar.
const SET_O: &[&str] = &["pipefail", "errexit", "nounset", "xtrace", "verbose"];

/// `bash -c SCRIPT` (and `-lc`, `-ec`, `-xc`, any shell of [`SHELLS`] whose grammar is
/// bash's): the script's commands; a shell given a script file or reading standard input,
/// or one whose grammar is not bash's (fish reads `\'` inside single quotes), runs what
/// cannot be seen.
pub(super) fn shell_c(words: &[String], depth: usize, script_of: ReadScript, seen: &mut Seen) {
    let shell = base(&words[0]);
    if !shell_of(shell).is_some_and(|s| BASH_GRAMMAR.contains(&s)) {
        seen.unclear = Some(format!(
            "`{shell}` reads its script by a grammar that is not bash's"
        ));
        return;
    }
    // Options read as allowed, never skipped: a cluster of `l`, `e`, `u`, `x`, `v`, with
    // `-o NAME` of a few names at its end or `c` and the script next. A value taken
    // inside the cluster (`bash -oc pipefail 'rm x'`), `--` (`bash -- -c ls` runs a file
    // `-c`), `--rcfile FILE`, `-i` (rc files, `$ENV`, a history), `-O`, `+o` (a
    // grammar of their own), or any other is unclear (a sixtieth review).
    let mut i = 1;
    let mut script = None;
    while i < words.len() {
        let a = words[i].as_str();
        match a.strip_prefix('-').filter(|f| !f.is_empty()) {
            Some("-login" | "-noprofile" | "-norc") => i += 1,
            Some(flags) if flags.bytes().all(|b| b"leuxvoc".contains(&b)) => {
                let (body, last) = flags.split_at(flags.len() - 1);
                if body.contains(['o', 'c']) {
                    break;
                }
                match last {
                    "c" => {
                        script = words.get(i + 1).filter(|s| !s.starts_with(['-', '+']));
                        break;
                    }
                    "o" if words
                        .get(i + 1)
                        .is_some_and(|v| SET_O.contains(&v.as_str())) =>
                    {
                        i += 2
                    }
                    "o" => break,
                    _ => i += 1,
                }
            }
            Some(_) => break,
            None if a.starts_with('+') => break,
            None => {
                // A script file, or `-s`: what it runs is not in its arguments.
                seen.unclear = Some(format!(
                    "`{}` runs a script that is not in its arguments",
                    base(&words[0])
                ));
                return;
            }
        }
    }
    if script.is_none() && i < words.len() {
        seen.unclear = Some(format!("`{}` with options it cannot follow", words[0]));
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
        // It runs what it reads (`echo 'rm x' | timeout 5 sh`, a fifty-eighth review).
        None => mark(
            seen,
            format!("`{}` runs what it reads from its input", base(&words[0])),
        ),
    }
}

/// Whether `/etc/shells` lists a program of this name: a login shell of this machine, which
/// runs a script by a grammar not modelled when it is none of [`SHELLS`] (`mksh-static`,
/// `git-shell`, a sixty-first review). Read once; a file that cannot be read lists none
/// (the names of [`SHELLS`] are shells all the same).
pub(super) fn listed_shell(program: &str) -> bool {
    static LISTED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    LISTED
        .get_or_init(|| {
            std::fs::read_to_string("/etc/shells")
                .unwrap_or_default()
                .lines()
                .filter(|l| l.starts_with('/'))
                .filter_map(|l| l.trim().rsplit('/').next().map(str::to_owned))
                .filter(|n| !n.is_empty())
                .collect()
        })
        .iter()
        .any(|n| n == program)
}

/// The long options by which a runner runs its command in another folder or root (as
/// parsed: `--chdir`, for `env -C`, `sudo -D`, `bwrap --chdir`, `unshare --wd`, `nsenter
/// --wdns`, `chroot`'s root), or in the home folder of a login (`sudo -i`, `su -l`).
pub(in crate::policy) const ELSEWHERE_LONG: &[&str] = &[
    "chdir",
    "wd",
    "wdns",
    "working-directory",
    "root",
    "chroot",
    "login",
];

/// Each runner's short options that do the same (`env -C`, `sudo -D`/`-R`/`-i`, `unshare
/// -w`/`-R`, `nsenter -w`/`-W`/`-r`, `su -l`), and nsenter's `-m`/`-a`: the kernel moves a
/// process that enters a mount namespace to its root, folder and root both (a
/// sixty-second review: `nsenter -t PID -m nl tmp/…/secrets/token` read the file from
/// `/`).
pub(in crate::policy) fn elsewhere_short(wrapper: &str) -> &'static str {
    match wrapper {
        "env" => "C",
        "sudo" => "DRi",
        "unshare" => "wR",
        "nsenter" => "wWrma",
        "su" | "runuser" => "l",
        _ => "",
    }
}

/// Whether option `name` of `wrapper`, as parsed, runs its command in another folder than
/// the one its words' paths are compared from (a sixty-first review: `env -C sub strings
/// ../secrets/token` read the denied file; the line's own `cd` is followed, no runner's).
pub(super) fn moves_folder(wrapper: &str, name: &str) -> bool {
    match name.strip_prefix("--") {
        Some(long) => {
            let long = long.split('=').next().unwrap_or_default();
            ELSEWHERE_LONG.contains(&long)
                || (wrapper == "nsenter" && matches!(long, "mount" | "all"))
        }
        None => {
            let short = name.strip_prefix('-').unwrap_or_default();
            short.len() == 1 && elsewhere_short(wrapper).contains(short)
        }
    }
}
