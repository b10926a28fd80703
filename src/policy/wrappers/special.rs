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
        if SHELLS.contains(&base(&sh[0])) {
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
