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
}

/// The shells whose `-c SCRIPT` is read as the script.
pub const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "ash"];

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

/// `setarch ARCH` and the names it is installed under (util-linux's `SETARCH_LINKS`), which
/// take no `ARCH`.
#[rustfmt::skip]
const SETARCH: &[&str] = &[
    "setarch", "linux32", "linux64", "uname26", "i386", "x86_64", "s390", "s390x", "ppc", "ppc32",
    "ppc64", "sparc", "sparc32", "sparc64", "mips", "mips32", "mips64", "ia64", "parisc",
    "parisc32", "parisc64",
];

/// Every program modelled, each with its own options: coreutils 9.1 to 9.7, util-linux 2.38
/// to 2.41, sudo 1.9, findutils 4.9, procps 4.0, strace 6, and the others as Debian 12 has
/// them (an option of a later version is known too: a program that does not know it runs
/// nothing).
#[rustfmt::skip]
const WRAPPERS: &[Wrapper] = &[
    // bash's builtins and keyword, and GNU time.
    getopt(&["command"], "pVv", &[]),
    getopt(&["builtin"], "", &[]),
    getopt(&["exec"], "cla:", &[]),
    getopt(
        &["time"],
        "af:o:pqvV",
        &[
            "append", "format=", "help", "output=", "portability", "quiet", "verbose",
            "version",
        ],
    ),
    // coreutils.
    Wrapper {
        numeric: true,
        ..getopt(&["nice"], "n:", &["adjustment=", "help", "version"])
    },
    getopt(&["nohup"], "", &["help", "version"]),
    getopt(
        &["stdbuf"],
        "i:o:e:",
        &["input=", "output=", "error=", "help", "version"],
    ),
    Wrapper {
        assignments: Assign::Env,
        dash: true,
        // `-S` splits its value into words its own way (quotes, `${VAR}`); `--env0-from`
        // reads the environment from a file (`PATH`, `LD_PRELOAD`).
        unclear: &["-S", "--split-string", "--env0-from"],
        ..getopt(
            &["env"],
            "a:C:iS:u:v0P:",
            &[
                "argv0=", "ignore-environment", "env0-from=", "null", "unset=", "chdir=",
                "default-signal=?", "ignore-signal=?", "block-signal=?", "list-signal-handling",
                "debug", "split-string=", "help", "version",
            ],
        )
    },
    Wrapper {
        operands: 1,
        ..getopt(
            &["timeout"],
            "fk:ps:v",
            &[
                "foreground", "kill-after=", "preserve-status", "signal=", "verbose", "help",
                "version",
            ],
        )
    },
    Wrapper {
        operands: 1,
        alone: Alone::Shell,
        ..getopt(
            &["chroot"],
            "",
            &["groups=", "userspec=", "skip-chdir", "help", "version"],
        )
    },
    // sudo, doas, pkexec.
    Wrapper {
        assignments: Assign::Sudo,
        alone: Alone::ShellWith(&["-s", "--shell", "-i", "--login"]),
        ..getopt(
            &["sudo"],
            "Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv",
            &[
                "background", "preserve-env=?", "edit", "set-home", "login", "remove-timestamp",
                "list", "preserve-groups", "shell", "other-user=", "validate", "askpass",
                "auth-type=", "bell", "close-from=", "login-class=", "chdir=", "group=", "help",
                "host=", "reset-timestamp", "no-update", "non-interactive", "prompt=",
                "chroot=", "role=", "stdin", "command-timeout=", "type=", "user=", "version",
            ],
        )
    },
    Wrapper {
        alone: Alone::ShellWith(&["-s"]),
        ..getopt(&["doas"], "a:C:Lnsu:", &[])
    },
    Wrapper {
        alone: Alone::Shell,
        ..words(
            &["pkexec"],
            &[
                "--user=", "-u=", "--keep-cwd", "--disable-internal-agent", "--help",
                "--version",
            ],
        )
    },
    // util-linux.
    Wrapper {
        alone: Alone::Shell,
        ..getopt(
            SETARCH,
            "hVv3BFILRSTXZp:",
            &[
                "help", "version", "verbose", "addr-no-randomize", "fdpic-funcptrs",
                "mmap-page-zero", "addr-compat-layout", "read-implies-exec", "32bit",
                "short-inode", "whole-seconds", "sticky-timeouts", "3gb", "4gb", "uname-2.6",
                "list", "show=?", "pid=",
            ],
        )
    },
    getopt(
        &["prlimit"],
        "c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::p:o:Vh",
        &[
            "pid=", "output=", "as=?", "core=?", "cpu=?", "data=?", "fsize=?", "locks=?",
            "memlock=?", "msgqueue=?", "nice=?", "nofile=?", "nproc=?", "rss=?", "rtprio=?",
            "rttime=?", "sigpending=?", "stack=?", "version", "help", "noheadings", "raw",
            "verbose",
        ],
    ),
    getopt(
        &["setpriv"],
        "dhV",
        &[
            "dump", "nnp", "no-new-privs", "inh-caps=", "ambient-caps=", "list-caps", "ruid=",
            "euid=", "rgid=", "egid=", "reuid=", "regid=", "clear-groups", "keep-groups",
            "init-groups", "groups=", "bounding-set=", "securebits=", "pdeathsig=", "ptracer=",
            "selinux-label=", "apparmor-profile=", "landlock-access=", "landlock-rule=",
            "landlock-support", "list-landlock-access", "list-landlock-rights=",
            "seccomp-filter=", "help", "reset-env", "version",
        ],
    ),
    getopt(&["setsid"], "Vhcfw", &["ctty", "fork", "wait", "version", "help"]),
    // `taskset MASK CMD`, `taskset -c LIST CMD` (`-c` says how MASK reads).
    Wrapper {
        operands: 1,
        ..getopt(
            &["taskset"],
            "apchV",
            &["all-tasks", "pid", "cpu-list", "help", "version"],
        )
    },
    getopt(
        &["ionice"],
        "n:c:p:P:u:tVh",
        &[
            "classdata=", "class=", "help", "ignore", "pid=", "pgid=", "uid=", "version",
        ],
    ),
    // Its priority before the command: see [`chrt_priority`].
    getopt(
        &["chrt"],
        "abdD:efiphmoOP:T:rRU:X:GvV",
        &[
            "all-tasks", "batch", "clamp-min=", "clamp-max=", "deadline", "deadline-overrun",
            "ext", "fifo", "idle", "pid", "help", "max", "other", "rr", "sched-runtime=",
            "sched-period=", "sched-deadline=", "reset-on-fork", "reclaim-grub", "verbose",
            "version",
        ],
    ),
    // `flock FILE CMD`, `flock FILE -c STR`: see [`run`].
    Wrapper {
        operands: 1,
        ..getopt(
            &["flock"],
            "sexnoFuw:E:hV",
            &[
                "shared", "exclusive", "unlock", "nonblocking", "nb", "timeout=", "wait=",
                "conflict-exit-code=", "close", "no-fork", "verbose", "fcntl", "start=",
                "length=", "fd=", "help", "version",
            ],
        )
    },
    Wrapper {
        alone: Alone::Shell,
        // A binfmt interpreter, run for the files it matches.
        unclear: &["-l", "--load-interp"],
        ..getopt(
            &["unshare"],
            "fhVmuinpCTUrR:w:S:G:cl:",
            &[
                "help", "version", "mount=?", "uts=?", "ipc=?", "net=?", "pid=?", "user=?",
                "cgroup=?", "time=?", "fork", "kill-child=?", "forward-signals", "mount-proc=?",
                "mount-binfmt=?", "map-user=", "map-users=", "map-group=", "map-groups=",
                "map-root-user", "map-current-user", "map-auto", "map-subids", "owner=",
                "propagation=", "setgroups=", "keep-caps", "setuid=", "setgid=", "root=", "wd=",
                "monotonic=", "boottime=", "load-interp=", "clear-env", "whitelist-env=",
            ],
        )
    },
    Wrapper {
        alone: Alone::Shell,
        ..getopt(
            &["nsenter"],
            "ahVt:m::u::i::n::N:p::C::U::T::S:G:r::w::W::ecFZ",
            &[
                "all", "help", "version", "target=", "mount=?", "uts=?", "ipc=?", "net=?",
                "net-socket=", "pid=?", "user=?", "cgroup=?", "time=?", "setuid=", "setgid=",
                "root=?", "wd=?", "wdns=?", "env", "no-fork", "join-cgroup",
                "preserve-credentials", "keep-caps", "user-parent", "follow-context",
            ],
        )
    },
    // `su [USER [ARG...]]`: its ARGs go to the shell: see [`su`].
    Wrapper {
        syntax: Syntax::Permuted,
        dash: true,
        alone: Alone::Shell,
        scripts: &["-c", "--command", "--session-command"],
        programs: &["-s", "--shell"],
        ..getopt(
            &["su", "runuser"],
            "c:fg:G:lmpPTs:u:hVw:",
            &[
                "command=", "session-command=", "fast", "login", "preserve-environment", "pty",
                "no-pty", "shell=", "group=", "supp-group=", "user=", "whitelist-environment=",
                "help", "version",
            ],
        )
    },
    // `script [FILE]` runs `-c STR`, or a shell: see [`run`].
    Wrapper {
        syntax: Syntax::Permuted,
        scripts: &["-c", "--command"],
        ..getopt(
            &["script"],
            "aB:c:eE:fI:O:o:qm:T:t::Vh",
            &[
                "append", "command=", "echo=", "return", "flush", "force", "log-in=",
                "log-out=", "log-io=", "log-timing=", "logging-format=", "output-limit=",
                "quiet", "timing=?", "version", "help",
            ],
        )
    },
    // procps: its words joined, run by `sh -c` (with `-x`, as they are): see [`run`].
    getopt(
        &["watch"],
        "bCced::ghq:n:prtvwx",
        &[
            "beep", "color", "no-color", "differences=?", "errexit", "chgexit", "equexit=",
            "exec", "help", "interval=", "no-rerun", "precise", "no-title", "no-wrap",
            "no-linewrap", "version",
        ],
    ),
    // findutils.
    getopt(
        &["xargs"],
        "0a:E:e::i::I:l::L:n:oprs:txP:d:",
        &[
            "null", "arg-file=", "delimiter=", "eof=?", "replace=?", "max-lines=?", "max-args=",
            "open-tty", "max-procs=", "interactive", "process-slot-var=", "no-run-if-empty",
            "max-chars=", "show-limits", "verbose", "exit", "help", "version",
        ],
    ),
    // Tracers. strace's `-o |CMD` pipes to a command: see [`run`].
    getopt(
        &["strace"],
        "a:Ab:cCdDe:E:fFhiI:knNo:O:p:P:qrs:S:tTu:U:vVwxX:yYzZ",
        &[
            "columns=", "output-append-mode", "detach-on=", "summary-only", "summary", "debug",
            "daemonize=?", "daemonised=?", "daemonized=?", "env=", "follow-forks",
            "output-separately", "help", "instruction-pointer", "interruptible=",
            "kill-on-exit", "stack-trace=?", "stack-traces=?", "stack-trace-frame-limit=",
            "syscall-limit=", "syscall-number", "arg-names", "output=",
            "summary-syscall-overhead=", "attach=", "trace-path=", "relative-timestamps=?",
            "string-limit=", "summary-sort-by=", "absolute-timestamps=?", "timestamps=?",
            "syscall-times=?", "user=", "summary-columns=", "no-abbrev", "version",
            "summary-wall-clock", "strings-in-hex=?", "const-print-style=", "pidns-translation",
            "successful-only", "failed-only", "failing-only", "seccomp-bpf", "tips=?", "argv0=",
            "always-show-pid", "color=", "trace=", "trace-fds=", "abbrev=", "verbose=", "raw=",
            "signals=", "status=", "read=", "write=", "fault=", "inject=", "kvm=",
            "namespace=?", "quiet=?", "silent=?", "silence=?", "decode-fds=?", "decode-pids=",
            "secontext=?",
        ],
    ),
    getopt(
        &["ltrace"],
        "cfhiLrStTVbCa:A:D:e:F:l:n:o:p:s:u:x:X:w:",
        &[
            "align=", "config=", "debug=", "demangle", "indent=", "help", "library=", "output=",
            "version", "no-signals", "where=",
        ],
    ),
    Wrapper {
        syntax: Syntax::OneWord,
        ..getopt(&["valgrind"], "", &[])
    },
    // Resource and placement.
    getopt(
        &["numactl"],
        "ai:w:p:P:c:N:C:m:slbHS:f:o:L:tM:dDI:uTV",
        &[
            "all", "interleave=", "weighted-interleave=", "preferred=", "preferred-many=",
            "cpubind=", "cpunodebind=", "physcpubind=", "membind=", "show", "localalloc",
            "balancing", "hardware", "shm=", "file=", "offset=", "length=", "strict",
            "shmmode=", "dump", "dump-nodes", "shmid=", "huge", "touch", "cpu-compress",
            "verify", "version",
        ],
    ),
    getopt(&["cgexec"], "g:shbr", &["sticky", "help"]),
    getopt(
        &["systemd-inhibit"],
        "h",
        &[
            "help", "version", "what=", "who=", "why=", "mode=", "list", "no-pager",
            "no-legend",
        ],
    ),
    getopt(&["caffeinate"], "dimsut:w:", &[]),
    getopt(&["ssh-agent"], "cDdksE:a:O:P:t:", &[]),
    Wrapper {
        syntax: Syntax::WordsEq,
        // The bus daemon it starts.
        programs: &["--dbus-daemon"],
        ..words(
            &["dbus-run-session"],
            &["--config-file=", "--dbus-daemon=", "--help", "--version"],
        )
    },
    Wrapper {
        syntax: Syntax::WordsEq,
        ..words(
            &["dbus-launch"],
            &[
                "--help", "--version", "--sh-syntax", "-s", "--csh-syntax", "-c",
                "--auto-syntax", "--binary-syntax", "--close-stderr", "--exit-with-session",
                "--exit-with-x11", "--autolaunch=", "--config-file=",
            ],
        )
    },
    getopt(
        &["xvfb-run"],
        "ae:f:hn:lp:s:w:",
        &[
            "auto-servernum", "error-file=", "auth-file=", "help", "server-num=", "listen-tcp",
            "xauth-protocol=", "server-args=", "wait=",
        ],
    ),
    // fakeroot's `-l LIB` is `eval`ed and preloaded; `-f BIN` runs.
    Wrapper {
        alone: Alone::Shell,
        unclear: &["-l", "--lib"],
        programs: &["-f", "--faked"],
        ..getopt(
            &["fakeroot"],
            "l:f:i:s:ub:vh",
            &[
                "lib=", "faked=", "unknown-is-real", "fd-base=", "version", "help",
            ],
        )
    },
    Wrapper {
        alone: Alone::Shell,
        never: Some(
            "it sources a shell file named after the command (`~/.fakechroot/NAME.env`) and may run another program in its place",
        ),
        ..getopt(
            &["fakechroot"],
            "l:d:sc:e:b:vh",
            &[
                "lib=", "elfloader=", "use-system-libs", "config-dir=", "environment=",
                "bindir=", "version", "help",
            ],
        )
    },
    Wrapper {
        syntax: Syntax::OneWord,
        alone: Alone::Shell,
        never: Some("its profiles decide what it runs, and may run it through a shell"),
        ..getopt(&["firejail"], "", &[])
    },
    Wrapper {
        // Arguments read from a descriptor.
        unclear: &["--args"],
        ..words(&["bwrap"], BWRAP)
    },
    Wrapper {
        unclear: &["--shell"],
        ..words(
            &["torsocks"],
            &[
                "-u=", "--user=", "-p=", "--pass=", "-a=", "--address=", "-P=", "--port=", "-i",
                "--isolate", "-6", "--ipv6", "-d", "--debug", "-q", "--quiet", "-h", "--help",
                "--version", "--shell",
            ],
        )
    },
    // runit's chpst (`-e DIR`: its environment from files) and daemontools.
    Wrapper {
        unclear: &["-e"],
        ..getopt(&["chpst"], "u:U:b:e:m:d:o:p:f:c:r:t:/:n:l:L:vP012V", &[])
    },
    getopt(&["softlimit"], "a:c:d:f:l:m:o:p:r:s:t:", &[]),
    Wrapper {
        operands: 1,
        never: Some("its environment comes from the files of a folder (`PATH`, `LD_PRELOAD`)"),
        ..getopt(&["envdir"], "", &[])
    },
    Wrapper {
        operands: 1,
        ..getopt(&["setuidgid", "envuidgid"], "", &[])
    },
    Wrapper {
        operands: 1,
        ..getopt(&["setlock"], "nNxX", &[])
    },
    // moreutils, and programs of no options.
    getopt(&["chronic"], "ev", &[]),
    getopt(&["ifne"], "n", &[]),
    words(
        &[
            "pgrphack", "with-contenv", "catchsegv", "eatmydata", "proxychains3", "run-one",
            "run-this-one", "run-one-constantly", "run-one-until-success",
            "run-one-until-failure", "keep-one-running",
        ],
        &[],
    ),
    words(
        &["busybox"],
        &["--help", "--list", "--list-full", "--install", "--show="],
    ),
    // rlwrap's `-z FILTER` runs a filter program.
    Wrapper {
        unclear: &["-z", "--filter"],
        ..getopt(
            &["rlwrap"],
            "a::A::b:cC:d::D:e:Ef:F:g:hH:iIl:nNM:m::oO:p::P:q:rRs:S:t:TUvw:WXz:",
            &[
                "always-readline=?", "ansi-colour-aware=?", "break-chars=",
                "complete-filenames", "command-name=", "debug=?",
                "extra-char-after-completion=", "always-echo", "history-no-dupes=", "file=",
                "history-format=", "forget-matching=", "help", "history-filename=",
                "case-insensitive", "pass-sigint-as-sigterm", "logfile=", "multi-line=?",
                "multi-line-ext=", "no-warnings", "no-children", "one-shot", "only-cook=",
                "prompt-colour=?", "pre-given=", "quote-characters=", "remember", "renice",
                "histsize=", "substitute-prompt=", "set-terminal-name=", "test-terminal",
                "mirror-arguments", "version", "wait-before-prompt=", "polling", "skip-setctty",
                "filter=",
            ],
        )
    },
    // `entr -s STR` runs STR with `$SHELL -c`: see [`run`].
    Wrapper {
        scripts: &["-s"],
        ..getopt(&["entr"], "acdnprsxz", &[])
    },
];

/// bwrap's options (0.8 to 0.11), each with how many words it takes.
#[rustfmt::skip]
const BWRAP: &[&str] = &[
    "--help", "--version", "--args=", "--argv0=", "--level-prefix", "--unshare-all",
    "--unshare-user", "--unshare-user-try", "--unshare-ipc", "--unshare-pid", "--unshare-net",
    "--unshare-uts", "--unshare-cgroup", "--unshare-cgroup-try", "--share-net", "--chdir=",
    "--disable-userns", "--assert-userns-disabled", "--remount-ro=", "--bind==", "--bind-try==",
    "--ro-bind==", "--ro-bind-try==", "--dev-bind==", "--dev-bind-try==", "--bind-fd==",
    "--ro-bind-fd==", "--overlay-src=", "--overlay===", "--tmp-overlay=", "--ro-overlay=",
    "--proc=", "--exec-label=", "--file-label=", "--dev=", "--tmpfs=", "--mqueue=", "--dir=",
    "--file==", "--bind-data==", "--ro-bind-data==", "--symlink==", "--lock-file=",
    "--sync-fd=", "--block-fd=", "--userns-block-fd=", "--info-fd=", "--json-status-fd=",
    "--seccomp=", "--add-seccomp-fd=", "--userns=", "--userns2=", "--pidns=", "--clearenv",
    "--setenv==", "--unsetenv=", "--uid=", "--gid=", "--hostname=", "--new-session",
    "--die-with-parent", "--as-pid-1", "--cap-add=", "--cap-drop=", "--perms=", "--size=",
    "--chmod==",
];

/// Programs whose options are not modelled exactly, or whose command is not all in their
/// words: never allowed, and the commands they may run seen for denies ([`guess`]).
struct Unmodelled {
    names: &'static [&'static str],
    why: &'static str,
    /// Where its options begin: after its subcommand (`perf record`), its subcommands that
    /// run a command (no other does).
    subcommands: &'static [&'static str],
    /// It runs its command with a shell: the words read as a script.
    shell: bool,
    /// Options whose value is a command line.
    scripts: &'static [&'static str],
}

#[rustfmt::skip]
const UNMODELLED: &[Unmodelled] = &[
    Unmodelled {
        names: &["perf"],
        why: "its options are not modelled",
        subcommands: &[
            "record", "stat", "trace", "ftrace", "iostat", "lock", "mem", "c2c", "sched",
            "kmem", "kwork", "timechart", "kvm", "script", "daemon",
        ],
        shell: false,
        scripts: &[],
    },
    Unmodelled {
        names: &["systemd-run"],
        why: "its options are not modelled (`-p ExecStartPre=` runs another command)",
        subcommands: &[],
        shell: false,
        scripts: &[],
    },
    Unmodelled {
        names: &["parallel", "sem"],
        why: "it runs its command with a shell, and reads more from its input",
        subcommands: &[],
        shell: true,
        scripts: &[],
    },
    Unmodelled {
        names: &["watchexec"],
        why: "its options are not modelled, and it runs its command with a shell",
        subcommands: &[],
        shell: true,
        scripts: &[],
    },
    Unmodelled {
        names: &["nodemon"],
        why: "it runs a script or `--exec STR`, with a shell",
        subcommands: &[],
        shell: true,
        scripts: &["--exec", "-x"],
    },
];

/// Programs that run what is not in their words at all, or only as a language: never
/// allowed.
const RUNS_UNSEEN: &[(&str, &str)] = &[
    ("newgrp", "it runs a shell reading its standard input"),
    ("sparc32bash", "it runs a shell reading its standard input"),
    ("expect", "it runs a Tcl script"),
];

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
    let inner = script(s, depth + 1);
    seen.commands.extend(inner.commands);
    if let Some(why) = inner.unclear {
        mark(seen, why);
    }
}

/// Every command `words` runs or stands for: itself, its global options taken off, and
/// what the wrappers in it run, down to [`MAX_DEPTH`]; a shell's script is read by `script`.
/// A program in no table is itself only.
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
            mark(seen, "wrappers nested too deep to follow".into());
        }
        return;
    }
    let program = base(&words[0]);
    if SHELLS.contains(&program) {
        shell_c(words, depth, script, seen);
        return;
    }
    match program {
        "find" => return find(words, depth, script, seen),
        // `ssh HOST CMD...`: each word that is not an option, read as a script.
        "ssh" => {
            for s in words[1..].iter().filter(|w| !w.starts_with('-')) {
                read_script(s, depth, script, seen);
            }
            return;
        }
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
        run(w, program, words, depth, script, seen);
    }
}

pub(super) fn is_wrapper(words: &[String]) -> bool {
    let p = base(&words[0]);
    SHELLS.contains(&p)
        || matches!(
            p,
            "find" | "ssh" | "sg" | "unbuffer" | "proxychains" | "proxychains4" | "gdb"
        )
        || RUNS_UNSEEN.iter().any(|(n, _)| *n == p)
        || UNMODELLED.iter().any(|u| u.names.contains(&p))
        || WRAPPERS.iter().any(|w| w.names.contains(&p))
}

/// A wrapper's words read as it reads them.
#[derive(Debug, Default)]
struct Parsed {
    /// Each option given (`-c`; a long one by its whole name, `--command`), with its values.
    options: Vec<(String, Vec<String>)>,
    /// The words after its options: its operands, then what it runs (a [`Syntax::Permuted`]
    /// program's operands, in order).
    rest: Vec<String>,
    /// Why its words could not be read as it reads them.
    unclear: Option<String>,
}

impl Parsed {
    fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|(n, _)| names.contains(&n.as_str()))
    }
}

/// How many values an option takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Arity {
    None,
    /// Joined only (`-c10`, `--nofile=10`).
    Optional,
    /// This many, the first joined or apart, the others apart.
    Values(usize),
}

/// A long option's spec (`name`, `name=`, `name==`, `name=?`): its name and arity.
fn spec(entry: &str) -> (&str, Arity) {
    if let Some(name) = entry.strip_suffix("=?") {
        return (name, Arity::Optional);
    }
    let name = entry.trim_end_matches('=');
    match entry.len() - name.len() {
        0 => (name, Arity::None),
        n => (name, Arity::Values(n)),
    }
}

/// Short option `c` in a getopt optstring: its arity, `None` when it is not there.
fn short_arity(optstring: &str, c: char) -> Option<Arity> {
    let s = optstring.trim_start_matches(['+', ':']);
    let at = s.char_indices().find(|(_, x)| *x == c && *x != ':')?.0;
    let colons = s[at + c.len_utf8()..]
        .chars()
        .take_while(|x| *x == ':')
        .count();
    Some(match colons {
        0 => Arity::None,
        1 => Arity::Values(1),
        _ => Arity::Optional,
    })
}

/// A long option of a getopt program by its name or a prefix of it: its whole name and
/// arity. `Err` when none has it, or several that differ.
fn long_option(w: &Wrapper, given: &str) -> Result<(&'static str, Arity), String> {
    let specs = || w.long.iter().map(|e| spec(e));
    if let Some(found) = specs().find(|(n, _)| *n == given) {
        return Ok(found);
    }
    let mut matches = specs().filter(|(n, _)| n.starts_with(given));
    let Some(first) = matches.next() else {
        return Err(format!("an option it does not know (--{given})"));
    };
    let special = |n: &str| {
        let o = format!("--{n}");
        w.unclear.contains(&o.as_str())
            || w.scripts.contains(&o.as_str())
            || w.programs.contains(&o.as_str())
    };
    for m in matches {
        if m.1 != first.1 || special(m.0) || special(first.0) {
            return Err(format!("an option it cannot tell (--{given})"));
        }
    }
    Ok(first)
}

/// Whether `word` is a word nice reads as its adjustment (`-10`, `--5`, `-+3`).
fn numeric(word: &str) -> bool {
    let b = word.as_bytes();
    let at = 1 + usize::from(matches!(b.get(1), Some(b'-' | b'+')));
    b.first() == Some(&b'-') && b.get(at).is_some_and(u8::is_ascii_digit)
}

/// `args` (the words after the program) read as wrapper `w` reads them.
fn parse(w: &Wrapper, args: &[String]) -> Parsed {
    let mut out = Parsed::default();
    fn unclear(out: &mut Parsed, why: String) {
        out.unclear.get_or_insert(why);
    }
    let mut i = 0;
    let mut assigned = false;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if a == "--" && !assigned {
            out.rest.extend(args[i..].iter().cloned());
            return out;
        }
        if a == "-" && w.dash && !assigned {
            out.options.push(("-".into(), Vec::new()));
            continue;
        }
        let option = a.len() > 1 && a.starts_with('-') && !assigned;
        if option && w.numeric && numeric(a) {
            out.options.push((a.to_owned(), Vec::new()));
            continue;
        }
        if option {
            match w.syntax {
                Syntax::Getopt | Syntax::Permuted => {
                    if let Some(long) = a.strip_prefix("--") {
                        let (name, joined) = match long.split_once('=') {
                            Some((n, v)) => (n, Some(v)),
                            None => (long, None),
                        };
                        let (full, arity) = match long_option(w, name) {
                            Ok(found) => found,
                            Err(why) => {
                                unclear(&mut out, why);
                                out.options.push((format!("--{name}"), Vec::new()));
                                continue;
                            }
                        };
                        let mut values = Vec::new();
                        match (arity, joined) {
                            (Arity::None, Some(_)) => {
                                unclear(&mut out, format!("--{full} with a value it does not take"))
                            }
                            (Arity::None | Arity::Optional, None) => {}
                            (_, Some(v)) => values.push(v.to_owned()),
                            (Arity::Values(_), None) => match args.get(i) {
                                Some(v) => {
                                    values.push(v.clone());
                                    i += 1;
                                }
                                None => unclear(&mut out, format!("--{full} without its value")),
                            },
                        }
                        out.options.push((format!("--{full}"), values));
                        continue;
                    }
                    // A cluster of short options: the first that takes a value takes the
                    // rest of the word, or (when it must have one) the next word.
                    for (at, c) in a[1..].char_indices() {
                        let rest = &a[1 + at + c.len_utf8()..];
                        let name = format!("-{c}");
                        match short_arity(w.short, c) {
                            None => {
                                unclear(&mut out, format!("an option it does not know ({name})"));
                                out.options.push((name, Vec::new()));
                            }
                            Some(Arity::None) => out.options.push((name, Vec::new())),
                            Some(Arity::Optional) => {
                                let v = (!rest.is_empty()).then(|| rest.to_owned());
                                out.options.push((name, v.into_iter().collect()));
                                break;
                            }
                            Some(Arity::Values(_)) => {
                                let v = if !rest.is_empty() {
                                    Some(rest.to_owned())
                                } else {
                                    i += 1;
                                    args.get(i - 1).cloned()
                                };
                                if v.is_none() {
                                    unclear(&mut out, format!("{name} without its value"));
                                }
                                out.options.push((name, v.into_iter().collect()));
                                break;
                            }
                        }
                    }
                }
                Syntax::Words | Syntax::WordsEq => {
                    let (name, joined) = match a.split_once('=') {
                        Some((n, v)) if w.syntax == Syntax::WordsEq => (n, Some(v)),
                        _ => (a, None),
                    };
                    let Some((_, arity)) = w.long.iter().map(|e| spec(e)).find(|(n, _)| *n == name)
                    else {
                        unclear(&mut out, format!("an option it does not know ({name})"));
                        out.options.push((name.to_owned(), Vec::new()));
                        continue;
                    };
                    let n = match arity {
                        Arity::Values(n) => n,
                        _ => 0,
                    };
                    let mut values: Vec<String> = joined.iter().map(|v| v.to_string()).collect();
                    while values.len() < n {
                        match args.get(i) {
                            Some(v) => values.push(v.clone()),
                            None => {
                                unclear(&mut out, format!("{name} without its values"));
                                break;
                            }
                        }
                        i += 1;
                    }
                    if joined.is_some() && n == 0 {
                        unclear(&mut out, format!("{name} with a value it does not take"));
                    }
                    out.options.push((name.to_owned(), values));
                }
                Syntax::OneWord => {
                    let (name, v) = match a.split_once('=') {
                        Some((n, v)) => (n, vec![v.to_owned()]),
                        None => (a, Vec::new()),
                    };
                    out.options.push((name.to_owned(), v));
                }
            }
            continue;
        }
        match w.assignments {
            Assign::Env if a.contains('=') => {
                assigned = true;
                continue;
            }
            Assign::Sudo if a.contains('=') && !a.starts_with(['=', '/']) => continue,
            _ => {}
        }
        if w.syntax == Syntax::Permuted {
            out.rest.push(a.to_owned());
            continue;
        }
        out.rest.extend(args[i - 1..].iter().cloned());
        return out;
    }
    out
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
                see(std::slice::from_ref(v), depth + 1, script, seen);
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
            let replace = p.options.iter().rev().find_map(|(n, v)| match n.as_str() {
                "-I" | "-i" | "--replace" => Some(v.first().map_or("{}", String::as_str)),
                _ => None,
            });
            if replace.is_some_and(|r| !r.is_empty() && rest[0].contains(r)) {
                mark(seen, "`xargs -I` runs what it reads".into());
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

/// `su [-] [USER [ARG...]]`, `runuser [-u USER [--] CMD...]`: its `-c STR` and `-s SHELL`
/// are seen already; runuser's `-u USER` runs its words as they are; else the words after
/// USER go to the shell (`su root -- -c STR`), read as a shell's.
fn su(w: &Wrapper, program: &str, p: &Parsed, depth: usize, script: ReadScript, seen: &mut Seen) {
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
fn sg(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
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
fn unbuffer(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
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
fn proxychains(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
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
fn gdb(words: &[String], depth: usize, script: ReadScript, seen: &mut Seen) {
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
fn unmodelled(
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
fn guess(args: &[String], depth: usize, script: ReadScript, seen: &mut Seen, shell: bool) {
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
#[path = "wrappers_real.rs"]
mod real;

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
            "env -iu HOME A=1 rm -f victim",
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
            assert!(s.unclear.is_none(), "{line:?}: {:?}", s.unclear);
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
            ("env A=1 -i rm", "-i"),
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
            "gdb --args true",
            "gdb -ex run true",
            "perf record true",
            "perf lock record true",
            "systemd-run --user true",
            "parallel true ::: a",
            "watchexec -e rs cargo test",
            "nodemon --exec 'true'",
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
