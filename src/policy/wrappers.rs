//! Seeing through wrappers, for deny and ask rules: the command a wrapper runs
//! (`sudo rm`, `env X=1 rm`, `xargs rm`, `find … -exec rm`, `bash -c 'rm …'`, `setarch
//! x86_64 rm`), and a program's global options taken off (`git -C dir push` is `git push`).
//!
//! Each wrapper's options are read as the program reads them ([`WRAPPERS`]: its own option
//! table, taken from its source or its `--help` on Debian, the value each option takes, one
//! or two words, joined or apart, a long option by any prefix `getopt_long` accepts), so the
//! word where its command starts is the program's own. `src/policy/wrappers_real.rs` runs the
//! real programs to hold the models to them.
//!
//! Invariants:
//! - What a wrapper runs is added beside the command, never instead of it: a rule that
//!   covers the wrapper itself still covers it.
//! - Where the inner command cannot be told (an option the model does not know, a program
//!   whose options it does not model exactly, a shell given a script file or reading its
//!   standard input, a command taken from a file or a descriptor), it says so
//!   ([`Seen::unclear`]): such a command is never allowed. Its likely commands are still
//!   seen, for denies.
//! - A program in no table is one command, nothing more (the caller compares its words to
//!   denied programs itself).
//! - Bounded: at most [`MAX_DEPTH`] wrappers deep (a shell's script read again counts), at
//!   most [`MAX_GUESSES`] places a command may start in a program not modelled exactly,
//!   and the caller bounds how many commands there are.

/// How deep wrappers and shell scripts are followed.
pub const MAX_DEPTH: usize = 4;

/// The commands seen in one command, wrappers seen through.
#[derive(Debug, Default)]
pub struct Seen {
    pub commands: Vec<Vec<String>>,
    /// Why what one of them runs could not be told.
    pub unclear: Option<String>,
    /// Whether the one doubt of a script read is that its grammar is not plain (text no
    /// shell reads whole may be such: [`given`]).
    pub unplain_only: bool,
}

/// The most places a command may start at that are tried in a program whose options are
/// not modelled exactly ([`guess`]); wrappers nested in it multiply them, [`MAX_DEPTH`] deep.
pub const MAX_GUESSES: usize = 4;

/// How a program reads its options.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Syntax {
    /// GNU `getopt_long` with a `+` (and BSD `getopt`): short options in clusters, as
    /// getopt's optstring says (`short`: a letter, then `:` when it takes a value, joined or
    /// the next word, `::` when it takes one only joined); long options (`long`: `name`,
    /// `name=` with a value joined by `=` or the next word, `name=?` with one only joined by
    /// `=`) by any prefix that names one option alone. The first word that is not an option,
    /// or `--`, ends them.
    Getopt,
    /// As [`Syntax::Getopt`], the options standing anywhere (GNU `getopt` without a `+`):
    /// every other word is an operand, in order.
    Permuted,
    /// Whole words only (`long`, with their dashes: `--bind==` takes the next two words), no
    /// prefix, no cluster; the first other word, or `--`, ends them (bwrap, pkexec).
    Words,
    /// As [`Syntax::Words`], and a value joined by `=` too (`--config-file=F`).
    WordsEq,
    /// Each word that begins with `-` is one option (`--tool=none`); the first other word, or
    /// `--`, ends them (valgrind, firejail).
    OneWord,
}

/// `NAME=VALUE` words before the command.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Assign {
    None,
    /// `env`: any word with a `=`, once the options end (an option after one is the command).
    Env,
    /// `sudo`: among its options, a word with a `=` that does not begin with `/` or `=`.
    Sudo,
}

/// What a wrapper given no command runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Alone {
    Nothing,
    /// A shell reading its standard input: what it runs is not in its words.
    Shell,
    /// A shell, with one of these options (`sudo -s`).
    ShellWith(&'static [&'static str]),
}

/// A program that runs a command given in its words: how it reads them.
struct Wrapper {
    /// Its names (`setarch` and the names it is installed under: `linux64`, `x86_64`, ...).
    names: &'static [&'static str],
    syntax: Syntax,
    short: &'static str,
    long: &'static [&'static str],
    /// Its words after the options and before the command (`timeout DURATION`).
    operands: usize,
    assignments: Assign,
    /// `-` alone is an option (`env -`: `env -i`).
    dash: bool,
    /// A word `-N`, `--N` or `-+N` (a digit after the dashes) is one option (`nice -10`).
    numeric: bool,
    alone: Alone,
    /// Options whose value is a command line, read as a script (`su -c STR`).
    scripts: &'static [&'static str],
    /// Options whose value is a program it runs (`su -s SHELL`, `fakeroot --faked BIN`).
    programs: &'static [&'static str],
    /// Options with which what it runs cannot be told (`fakeroot -l LIB`: a library loaded
    /// into it, its name `eval`ed; `env -S STR`).
    unclear: &'static [&'static str],
    /// Why what it runs can never be told from its words, if it cannot.
    never: Option<&'static str>,
}

const fn getopt(
    names: &'static [&'static str],
    short: &'static str,
    long: &'static [&'static str],
) -> Wrapper {
    Wrapper {
        names,
        syntax: Syntax::Getopt,
        short,
        long,
        operands: 0,
        assignments: Assign::None,
        dash: false,
        numeric: false,
        alone: Alone::Nothing,
        scripts: &[],
        programs: &[],
        unclear: &[],
        never: None,
    }
}

const fn words(names: &'static [&'static str], long: &'static [&'static str]) -> Wrapper {
    Wrapper {
        syntax: Syntax::Words,
        ..getopt(names, "", long)
    }
}

fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Reads a shell script `depth` wrappers deep into the commands it holds (the caller's
/// reader of a line: `command::read`).
pub type ReadScript = fn(&str, usize) -> Seen;

/// Says why what a command runs cannot be told, unless something else already did.
fn mark(seen: &mut Seen, why: String) {
    seen.unclear.get_or_insert(why);
}

/// What script `s` runs, beside the commands seen.
fn read_script(s: &str, depth: usize, script: ReadScript, seen: &mut Seen) {
    // `xargs ssh`, `xargs sh -c`: the script is what it reads.
    if s.contains(FROM_INPUT) {
        mark(seen, "`xargs` runs what it reads as a script".into());
    }
    let inner = script(s, depth + 1);
    seen.commands.extend(inner.commands);
    if let Some(why) = inner.unclear {
        mark(seen, why);
    }
}

/// What `xargs` reads, as this reader fills it in: in place of `-I R`'s R, or after the
/// words of the command it starts without `-I` (a word that holds it as it is is only asked
/// the more).
const FROM_INPUT: &str = "[what xargs reads]";

/// Every command `words` runs or stands for: itself, its global options taken off, and
/// what the wrappers in it run, down to [`MAX_DEPTH`]; a shell's script is read by `script`.
/// A program in no table is itself only.
pub fn see(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
    if words.is_empty() {
        return;
    }
    if words[0].contains(FROM_INPUT) {
        mark(seen, "`xargs` runs what it reads".into());
    }
    // `exec "$@"`, `timeout 5 $0` in a script: what runs is not in the words.
    if words[0].contains(['$', '`']) {
        mark(
            seen,
            format!("`{}` runs a program an expansion names", words[0]),
        );
    }
    // dash expands an alias where a later line names it (`alias x=rm` then `x victim`).
    if base(&words[0]) == "alias" && words.len() > 1 {
        mark(seen, "`alias` changes what a later word runs".into());
    }
    seen.commands.push(words.to_vec());
    if let Some(n) = normalized(words) {
        seen.commands.push(n);
    }
    if depth >= MAX_DEPTH {
        if is_wrapper(words) || given::may_run_words(words, base(&words[0])) {
            mark(seen, "wrappers nested too deep to follow".into());
        }
        return;
    }
    let program = base(&words[0]);
    // A program with no model that a runner runs, given an argument that names a program
    // or a file (`timeout 5 rsync -e 'rm x' a h:b`, a fifty-ninth review), as a prefix
    // rule on it would not allow.
    if depth > 0
        && super::never::names_more(words, 1)
        && matches!(
            super::args::under_prefix(words, 1),
            super::args::Reading::NoModel
        )
    {
        mark(
            seen,
            format!("`{program}` takes an argument that runs or names more"),
        );
    }
    if shell_of(program).is_some() {
        shell_c(words, depth, script, seen);
        return;
    }
    match program {
        "find" => return find(words, depth, script, seen),
        "ssh" => return ssh(words, depth, script, seen),
        "sg" => return sg(words, depth, script, seen),
        "unbuffer" => return unbuffer(words, depth, script, seen),
        "proxychains" | "proxychains4" => return proxychains(words, depth, script, seen),
        "gdb" => return gdb(words, depth, script, seen),
        _ => {}
    }
    if let Some((_, why)) = RUNS_UNSEEN.iter().find(|(p, _)| *p == program) {
        mark(seen, format!("`{program}`: {why}"));
        return;
    }
    if let Some(u) = UNMODELLED.iter().find(|u| u.names.contains(&program)) {
        return unmodelled(u, program, words, depth, script, seen);
    }
    if let Some(w) = WRAPPERS.iter().find(|w| w.names.contains(&program)) {
        return run(w, program, words, depth, script, seen);
    }
    if let Some(why) = given::reads_its_input(words, program).filter(|_| depth > 0) {
        mark(seen, why);
    }
    if listed_shell(program) {
        mark(
            seen,
            format!("`{program}` is a shell /etc/shells lists, whose grammar is not modelled"),
        );
    }
    // A program in no table and with no model may run any word it is given as a script
    // (sixty-eighth to seventieth reviews): [`given::words_run`].
    given::words_run(words, program, depth, script, seen);
}

pub(super) fn is_wrapper(words: &[String]) -> bool {
    let p = base(&words[0]);
    shell_of(p).is_some()
        || matches!(
            p,
            "find" | "ssh" | "sg" | "unbuffer" | "proxychains" | "proxychains4" | "gdb"
        )
        || RUNS_UNSEEN.iter().any(|(n, _)| *n == p)
        || UNMODELLED.iter().any(|u| u.names.contains(&p))
        || WRAPPERS.iter().any(|w| w.names.contains(&p))
        || listed_shell(p)
}

/// What wrapper `w` (run as `program`) runs, from its words.
fn run(
    w: &Wrapper,
    program: &str,
    words: &[String],
    depth: usize,
    script: ReadScript,
    seen: &mut Seen,
) {
    let mut args = &words[1..];
    // `setarch ARCH ...`: its first word, unless an option (its other names take none).
    if program == "setarch" && args.first().is_some_and(|a| !a.starts_with('-')) {
        args = &args[1..];
    }
    let p = parse(w, args);
    if let Some(why) = &p.unclear {
        mark(seen, format!("`{program}`: {why}"));
    }
    // `su -`, and pkexec but with `--keep-cwd` (it runs its command in the user's home).
    let login = (matches!(program, "su" | "runuser") && args.iter().any(|a| a == "-"))
        || (program == "pkexec" && !p.options.iter().any(|(n, _)| n == "--keep-cwd"));
    if login || program == "chroot" || p.options.iter().any(|(n, _)| moves_folder(program, n)) {
        mark(
            seen,
            format!("`{program}` runs its command in another folder or root, where its paths are not those the rules are compared with"),
        );
    }
    if let Some(why) = w.never {
        mark(seen, format!("`{program}`: {why}"));
    }
    for (name, values) in &p.options {
        if w.unclear.contains(&name.as_str()) {
            mark(
                seen,
                format!("`{program} {name}`: what it runs then cannot be told"),
            );
        }
        for v in values {
            if w.scripts.contains(&name.as_str()) {
                read_script(v, depth, script, seen);
            }
            if w.programs.contains(&name.as_str()) {
                if shell_of(base(v)).is_some() {
                    // The shell `su -s SHELL` runs; what it runs is read with su's words.
                    seen.commands.push(vec![v.clone()]);
                } else {
                    see(std::slice::from_ref(v), depth + 1, script, seen);
                }
            }
            // `strace -o |CMD` (or `!CMD`) pipes its output to CMD, run by a shell.
            if program == "strace" && matches!(name.as_str(), "-o" | "--output") {
                if let Some(cmd) = v.strip_prefix(['|', '!']) {
                    read_script(cmd, depth, script, seen);
                }
            }
        }
    }
    let mut rest: &[String] = &p.rest;
    match program {
        "su" | "runuser" => return su(w, program, &p, depth, script, seen),
        // `script [FILE]`: `-c STR`, else an interactive shell (BSD's runs the words after
        // FILE).
        "script" => {
            if rest.len() > 1 {
                see(&rest[1..], depth + 1, script, seen);
            } else if !p.has(w.scripts) {
                mark(
                    seen,
                    "`script` without `-c` runs a shell reading its standard input".into(),
                );
            }
            return;
        }
        "chrt" => rest = chrt_priority(rest),
        _ => {}
    }
    if rest.len() < w.operands {
        return;
    }
    rest = &rest[w.operands..];
    match program {
        // `flock FILE -c STR`.
        "flock" if matches!(rest.first().map(String::as_str), Some("-c" | "--command")) => {
            if let Some(s) = rest.get(1) {
                read_script(s, depth, script, seen);
            }
            return;
        }
        // watch runs its words joined by spaces with `sh -c`, unless `-x`.
        "watch" if !rest.is_empty() && !p.has(&["-x", "--exec"]) => {
            read_script(&rest.join(" "), depth, script, seen);
            return;
        }
        "entr" if !rest.is_empty() => {
            if p.has(&["-s"]) {
                read_script(&rest[0], depth, script, seen);
                return;
            }
            // `/_` is the file that changed: as the program, what runs is not known.
            if rest[0] == "/_" {
                mark(seen, "`entr /_` runs the file that changed".into());
            }
        }
        "xargs" if !rest.is_empty() => {
            // `-I R` (`-i`, `--replace`: `{}`) puts what it reads in place of R, the
            // program's name too.
            // GNU xargs drops it for a `-L`, `-l`, `--max-lines`, `-n` or `--max-args` after
            // it, and then appends what it reads (a fifty-eighth review: `xargs -I 5 -L1
            // timeout 5` ran the `rm` it read).
            let replace = p.options.iter().rev().find_map(|(n, v)| match n.as_str() {
                "-I" | "-i" | "--replace" => Some(Some(v.first().map_or("{}", String::as_str))),
                "-L" | "-l" | "--max-lines" | "-n" | "--max-args" => Some(None),
                _ => None,
            });
            let replace = replace.flatten();
            // Wherever R stands, what it reads may be taken as a program further on
            // (`xargs -I P env P`): the words are read with R as [`FROM_INPUT`].
            if let Some(r) = replace.filter(|r| !r.is_empty()) {
                if rest.iter().any(|w| w.contains(r)) {
                    let filled: Vec<String> =
                        rest.iter().map(|w| w.replace(r, FROM_INPUT)).collect();
                    see(&filled, depth + 1, script, seen);
                    return;
                }
            } else {
                // Without it, what it reads comes after the words: a runner's program
                // (`xargs env`, `xargs timeout 5`, `xargs xargs`), or its operands and then
                // its program (`xargs timeout` reading `5 rm x`, `xargs find`, `xargs sh -c
                // 'exec "$@"' sh`), is what it reads.
                if is_wrapper(rest) {
                    mark(seen, "`xargs` gives a runner what it reads".into());
                }
                let mut added = rest.to_vec();
                added.push(FROM_INPUT.to_owned());
                see(&added, depth + 1, script, seen);
            }
        }
        _ => {}
    }
    if rest.is_empty() {
        let shell = match w.alone {
            Alone::Nothing => false,
            Alone::Shell => true,
            Alone::ShellWith(with) => p.has(with),
        };
        if shell {
            mark(
                seen,
                format!("`{program}` runs a shell reading its standard input"),
            );
        }
        return;
    }
    see(rest, depth + 1, script, seen);
}

/// chrt's priority before its command: a first word of digits with words after it.
fn chrt_priority(rest: &[String]) -> &[String] {
    match rest {
        [prio, _, ..] if !prio.is_empty() && prio.bytes().all(|b| b.is_ascii_digit()) => &rest[1..],
        _ => rest,
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
                if words[i].ends_with("dir") {
                    // It runs in each found file's folder, where its paths lead elsewhere.
                    seen.unclear = Some(format!(
                        "`find {}` runs its command in each found file's folder",
                        words[i]
                    ));
                }
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
pub(super) fn normalized(words: &[String]) -> Option<Vec<String>> {
    let program = base(&words[0]);
    let mut i = 1;
    match program {
        "git" => i = super::args::git::subcommand_at(words),
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

mod given;
pub(super) use given::OPENS_NOTHING;
mod options;
mod special;
mod table;
use options::*;
use special::*;
pub(super) use special::{elsewhere_short, ELSEWHERE_LONG};
use table::*;

#[cfg(test)]
#[path = "wrappers_real.rs"]
mod real;

#[cfg(test)]
mod tests {
    use super::*;

    /// What a line seen at the top runs (a script a wrapper runs is read more strictly).
    fn seen(line: &str) -> Seen {
        let c = super::super::command::read(line, 0);
        Seen {
            commands: c.seen,
            unclear: c.unclear,
            unplain_only: false,
        }
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

    /// Whether a command seen in `line` starts with `word`.
    fn starts(line: &str, word: &str) -> bool {
        seen(line).commands.iter().any(|c| c[0] == word)
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

    /// The hostile tester's `find . -exec setarch x86_64 rm -f victim ';'` ran rm past a
    /// deny of it: every common runner is seen through, by its own options, and what it
    /// runs is read exactly (never unclear).
    #[test]
    fn every_common_runner_is_seen_through_by_its_own_options() {
        for line in [
            "find . -exec setarch x86_64 rm -f victim ';'",
            "setarch x86_64 rm -f victim",
            "setarch x86_64 -R --addr-compat-layout rm -f victim",
            "setarch -R linux64 rm -f victim",
            "setarch --addr-no x86_64 rm -f victim",
            "linux32 rm -f victim",
            "linux64 -3 rm -f victim",
            "i386 -B rm -f victim",
            "x86_64 --uname-2.6 rm -f victim",
            "uname26 rm -f victim",
            "prlimit --nofile=10 --cpu rm -f victim",
            "prlimit -n10 -c rm -f victim",
            "prlimit --pid 1 rm -f victim",
            "setpriv --reuid 1000 --regid=1000 --init-groups rm -f victim",
            "setpriv --nnp --no-new rm -f victim",
            "ssh-agent -t 10 -a sock rm -f victim",
            "dbus-run-session -- rm -f victim",
            "dbus-run-session --config-file f rm -f victim",
            "dbus-run-session --config-file=f rm -f victim",
            "dbus-launch --exit-with-session rm -f victim",
            "fakeroot -u -s f rm -f victim",
            "fakeroot -- rm -f victim",
            "valgrind --tool=none -q rm -f victim",
            "valgrind -q -- rm -f victim",
            "ltrace -o out -e malloc rm -f victim",
            "strace -f -e trace=file -o out rm -f victim",
            "strace --output out --follow-forks rm -f victim",
            "numactl --interleave=all --localalloc rm -f victim",
            "numactl -i all -l rm -f victim",
            "cgexec -g cpu:/ --sticky rm -f victim",
            "systemd-inhibit --what idle --why x rm -f victim",
            "sg wheel 'rm -f victim'",
            "sg - wheel -c 'rm -f victim'",
            "run-one rm -f victim",
            "keep-one-running rm -f victim",
            "chpst -u nobody -/ root rm -f victim",
            "softlimit -m 100 -t10 rm -f victim",
            "setuidgid nobody rm -f victim",
            "envuidgid nobody rm -f victim",
            "pgrphack rm -f victim",
            "setlock -n lock rm -f victim",
            "torsocks -u a -P 9050 rm -f victim",
            "torsocks --isolate rm -f victim",
            "proxychains4 -q -f conf rm -f victim",
            "proxychains -f conf rm -f victim",
            "proxychains3 rm -f victim",
            "bwrap --bind / / --dev /dev --setenv A B -- rm -f victim",
            "bwrap --overlay a b c --chmod 0755 x rm -f victim",
            "unbuffer rm -f victim",
            "unbuffer -p rm -f victim",
            "stdbuf -oL -e 0 rm -f victim",
            "stdbuf --output L rm -f victim",
            "ionice -c 3 -t rm -f victim",
            "ionice -c3 rm -f victim",
            "taskset -c 0 rm -f victim",
            "taskset 0x1 rm -f victim",
            "taskset -ac 0-3 rm -f victim",
            "time -o out -f %e rm -f victim",
            "/usr/bin/time --format=%e -a rm -f victim",
            "doas -u root rm -f victim",
            "pkexec --user root rm -f victim",
            "pkexec --keep-cwd rm -f victim",
            "with-contenv rm -f victim",
            "xvfb-run -a -s '-screen 0 8x8x8' -n 5 -e err -f auth -p proto -w 1 rm -f victim",
            "xvfb-run --server-args='-screen 0' rm -f victim",
            "script -q -c 'rm -f victim' /dev/null",
            "script /dev/null -qc 'rm -f victim'",
            "rlwrap -C x -a rm -f victim",
            "rlwrap --always-readline rm -f victim",
            "entr -r rm -f victim",
            "entr -s 'rm -f victim'",
            "eatmydata -- rm -f victim",
            "chronic -e rm -f victim",
            "ifne -n rm -f victim",
            "catchsegv rm -f victim",
            "nice -10 rm -f victim",
            "nice --5 -n 2 rm -f victim",
            "env - rm -f victim",
            "env -iu HOME CI=1 rm -f victim",
            "chrt -o 0 rm -f victim",
            "chrt --fifo 10 rm -f victim",
            "chrt -b rm -f victim",
            "flock lock rm -f victim",
            "flock -w 5 lock -c 'rm -f victim'",
            "flock -E 3 lock --command 'rm -f victim'",
            "watch -n 1 rm -f victim",
            "watch -d rm -f victim",
            "watch -x rm -f victim",
            "sudo -s rm -f victim",
            "sudo -h rm -f victim",
            "su -c 'rm -f victim'",
            "su - root -c 'rm -f victim'",
            "su root -- -c 'rm -f victim'",
            "runuser -u nobody -- rm -f victim",
            "runuser -u nobody -- rm -f victim -l",
            "unshare -r --mount-proc rm -f victim",
            "unshare --map-user=0 -R / rm -f victim",
            "nsenter -t 1 -m -u rm -f victim",
            "nsenter --target=1 --mount rm -f victim",
            "chroot --userspec=1:1 / rm -f victim",
            "busybox rm -f victim",
            "caffeinate -i rm -f victim",
            "xargs -I {} rm -f {}",
            "xargs --max-lines rm -f victim",
            "strace -o '|rm -f victim' true",
            "strace -o '!rm -f victim' true",
        ] {
            has(line, &["rm", "-f"]);
            let s = seen(line);
            // A runner that changes folder or root (`su -`, `chroot`) is seen through, and
            // never allowed.
            let elsewhere = |u: &str| u.contains("another folder or root");
            assert!(
                s.unclear.as_deref().is_none_or(elsewhere),
                "{line:?}: {:?}",
                s.unclear
            );
        }
        for line in [
            "su - root -c 'rm -f victim'",
            "unshare -R / rm -f victim",
            "env -C / rm",
            "nsenter -t 1 -m nl x",
            "nsenter -t 1 -a nl x",
            "nsenter -t 1 --mount nl x",
            "nsenter -t 1 --mount=/proc/1/ns/mnt nl x",
            "nsenter -t 1 --all nl x",
            "nsenter -t 1 --mo nl x",
            "busybox nsenter -t 1 -m nl x",
            "pkexec nl x",
            "pkexec --user root nl x",
        ] {
            assert!(seen(line).unclear.is_some(), "{line:?}");
        }
    }

    /// A value that looks like a command is the option's, as the program reads it; an
    /// optional value is only ever joined.
    #[test]
    fn an_options_value_is_read_as_the_program_reads_it() {
        for (line, program) in [
            // `--nofile` takes its value only joined: `10` is the command.
            ("prlimit --nofile 10 rm x", "10"),
            ("xargs --max-lines 1 rm x", "1"),
            // Two values each: `rm` is a path.
            ("bwrap --bind rm rm true", "true"),
            ("bwrap --setenv rm rm true", "true"),
            ("bwrap --overlay rm rm rm true", "true"),
            // `-u` takes a value, apart or joined; `-s` none.
            ("sudo -u rm true", "true"),
            ("sudo -s -urm true", "true"),
            ("timeout -s rm 5 true", "true"),
            ("timeout 5 rm", "rm"),
            ("ionice -n rm true", "true"),
            ("softlimit -m rm true", "true"),
            ("chpst -/ rm true", "true"),
            ("setpriv --reuid rm true", "true"),
            ("setpriv --reu rm true", "true"),
            ("systemd-inhibit --what rm true", "true"),
            ("torsocks -u rm true", "true"),
            ("proxychains4 -f rm true", "true"),
            ("pkexec --user rm true", "true"),
            ("numactl --membind rm true", "true"),
            ("ssh-agent -a rm true", "true"),
            ("dbus-launch --config-file rm true", "true"),
            // GNU env: a `-` word after `NAME=VALUE` is the command.
            ("env CI=1 -i rm", "-i"),
            // `setarch ARCH`: the first word only.
            ("setarch rm true", "true"),
            // chrt's priority is digits only.
            ("chrt 10 rm", "rm"),
        ] {
            assert!(starts(line, program), "{line:?}: {:?}", seen(line).commands);
            if program != "rm" {
                assert!(!starts(line, "rm"), "{line:?}: {:?}", seen(line).commands);
            }
        }
    }

    #[test]
    fn what_cannot_be_told_is_unclear() {
        for line in [
            "bash script.sh",
            "sh -s",
            "env -S 'rm -rf x'",
            "env --split=x",
            "env --env0-from=f rm",
            "find . -fprint out",
            // Options a model does not know, or a prefix naming several.
            "setarch x86_64 --bogus rm",
            "setarch --s rm",
            "prlimit --no rm",
            "timeout --signal",
            "setarch x86_64 -R=1 rm",
            "bwrap --bogus rm",
            "bwrap --bind a",
            // What runs is not in the words.
            "bwrap --args 3 rm",
            "fakeroot -l '$(rm x)' true",
            "fakeroot --lib x true",
            "unshare --load-interp=x true",
            "unshare -l x true",
            "rlwrap -z filter true",
            "chpst -e dir true",
            "envdir dir true",
            "fakechroot true",
            "firejail --private true",
            "torsocks --shell",
            "unbuffer -nottyinit true",
            "entr /_",
            "xargs -I{} {} x",
            "xargs -i {} x",
            // What it reads comes after its words.
            "xargs timeout",
            "xargs find",
            "xargs sh -c 'exec \"$@\"' sh",
            "sh -c 'exec \"$@\"' sh rm",
            "xargs env",
            "xargs timeout 5",
            "xargs xargs",
            "xargs ssh",
            // `-L` or `-n` after `-I` drops it: what it reads is appended.
            "xargs -I 5 -L1 timeout 5",
            "xargs -I 5 -n9 timeout 5",
            // A shell with no script runs what it reads.
            "timeout 5 sh",
            "nice bash",
            // It sets the variable it names in what it runs.
            "xargs --process-slot-var=PATH echo",
            "xargs --proc PATH echo",
            "gdb --args true",
            "gdb -ex run true",
            "perf record true",
            "perf lock record true",
            "systemd-run --user true",
            "parallel true ::: a",
            "watchexec -e rs cargo test",
            "nodemon --exec 'true'",
            "start-stop-daemon -S -x /bin/true",
            "start-stop-daemon -S -d sub -x /bin/cat -- ../secrets/token",
            "busybox start-stop-daemon -S -r sub -x /bin/cat -- /secrets/token",
            "expect -c 'spawn true'",
            "newgrp wheel",
            "sparc32bash",
            // A shell reading its standard input.
            "setarch x86_64",
            "sudo -s",
            "sudo -i",
            "doas -s",
            "fakeroot",
            "pkexec",
            "chroot /",
            "unshare -r",
            "nsenter -t 1 -m",
            "su",
            "su - root",
            "runuser nobody",
            "sg wheel",
            "script -q /dev/null",
        ] {
            assert!(seen(line).unclear.is_some(), "{line:?}");
        }
        for line in [
            "cargo test",
            "xargs rm -f",
            "xargs -I {} env x",
            "env",
            "sudo -l",
            "perf report",
            "perf stat -e cycles true",
        ] {
            let s = seen(line);
            assert_eq!(
                s.unclear.is_none(),
                !line.starts_with("perf stat"),
                "{line:?}"
            );
        }
    }

    /// Where what runs cannot be told, the commands it may run are still seen, for denies.
    #[test]
    fn an_unclear_runners_likely_commands_are_seen() {
        for line in [
            "gdb -q --args rm -f victim",
            "gdb -args rm -f victim",
            "perf record -e cycles -- rm -f victim",
            "perf stat rm -f victim",
            "perf stat -e cycles rm -f victim",
            "perf lock record rm -f victim",
            "systemd-run --user --scope rm -f victim",
            "systemd-run -p Nice=5 rm -f victim",
            "firejail --private --net=none rm -f victim",
            "fakechroot -s rm -f victim",
            "envdir ./env rm -f victim",
            "parallel 'rm -f {}' ::: victim",
            "parallel -j 2 rm -f ::: victim",
            "watchexec -e rs -- rm -f victim",
            "nodemon --exec 'rm -f victim'",
            "nodemon -x 'rm -f victim'",
            "unbuffer -nottyinit rm -f victim",
            "fakeroot -l lib rm -f victim",
            "setarch x86_64 --bogus rm -f victim",
            "su -s rm root -- -f victim",
        ] {
            has(line, &["rm", "-f"]);
        }
        // And the programs they are given to run.
        has("fakeroot --faked ./faked true", &["./faked"]);
        has("su -s ./shell root", &["./shell"]);
        has("dbus-run-session --dbus-daemon=./d true", &["./d"]);
    }

    /// A program in no table is one command, its words as they are.
    #[test]
    fn a_program_in_no_table_is_itself_only() {
        for line in ["cargo test", "mytool rm -rf x", "make -C rm check"] {
            let s = seen(line);
            let words: Vec<String> = line.split(' ').map(str::to_owned).collect();
            assert_eq!(s.commands, [words], "{line:?}");
            assert!(s.unclear.is_none());
        }
    }

    /// Guesses in programs not modelled exactly are bounded, nested too.
    #[test]
    fn guesses_are_bounded() {
        let line = format!("{} rm", "systemd-run -a x -b y -c z -d w -e v ".repeat(6));
        let s = seen(&line);
        assert!(s.unclear.is_some());
        assert!(s.commands.len() < 2000, "{}", s.commands.len());
    }
}
