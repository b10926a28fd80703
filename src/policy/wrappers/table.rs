//! The runners the wrapper reader knows ([`super::see`]), each by its real option syntax,
//! and those whose options it does not follow (never allowed; their likely commands seen).

use super::*;

/// The shells, each of which runs its `-c SCRIPT` ([`shell_of`]).
pub(super) const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "oksh", "lksh", "pdksh",
    "fish", "csh", "tcsh", "rc", "es", "nu", "elvish", "xonsh", "pwsh", "ion", "osh", "ysh",
];

/// The shells of [`SHELLS`] whose scripts the bash grammar reads as they do (zsh's own
/// builtins are never allowed: `shell::ZSH_NEVER`).
pub(super) const BASH_GRAMMAR: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "oksh", "lksh", "pdksh",
];

/// The shell of [`SHELLS`] `program` runs: the shell of that name, or of it with a
/// restricted shell's `r` before it (`rbash`, `rzsh`; `rsh` runs a remote one) or a
/// version after it (`zsh5`, `ksh93`, `bash-5.2`), all of them a shell that runs its `-c`
/// script (a fifty-ninth review: `timeout 5 rbash -c 'rm -f victim'` ran `rm` past a deny),
/// or Debian's statically linked build of it (`mksh-static`, a sixty-first review).
pub(super) fn shell_of(program: &str) -> Option<&'static str> {
    let name = program.strip_suffix("-static").unwrap_or(program);
    let name = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    let find = |n: &str| SHELLS.iter().copied().find(|s| *s == n);
    find(name).or_else(|| name.strip_prefix('r').and_then(find))
}

/// `setarch ARCH` and the names it is installed under (util-linux's `SETARCH_LINKS`), which
/// take no `ARCH`.
#[rustfmt::skip]
pub(super) const SETARCH: &[&str] = &[
    "setarch", "linux32", "linux64", "uname26", "i386", "x86_64", "s390", "s390x", "ppc", "ppc32",
    "ppc64", "sparc", "sparc32", "sparc64", "mips", "mips32", "mips64", "ia64", "parisc",
    "parisc32", "parisc64",
];

/// Every program modelled, each with its own options: coreutils 9.1 to 9.7, util-linux 2.38
/// to 2.41, sudo 1.9, findutils 4.9, procps 4.0, strace 6, and the others as Debian 12 has
/// them (an option of a later version is known too: a program that does not know it runs
/// nothing).
#[rustfmt::skip]
pub(super) const WRAPPERS: &[Wrapper] = &[
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
    Wrapper {
        // It sets NAME in what it runs (`--process-slot-var=PATH` ran `./0/echo`, a
        // fifty-eighth review).
        unclear: &["--process-slot-var"],
        ..getopt(
            &["xargs"],
            "0a:E:e::i::I:l::L:n:oprs:txP:d:",
            &[
                "null", "arg-file=", "delimiter=", "eof=?", "replace=?", "max-lines=?",
                "max-args=", "open-tty", "max-procs=", "interactive", "process-slot-var=",
                "no-run-if-empty", "max-chars=", "show-limits", "verbose", "exit", "help",
                "version",
            ],
        )
    },
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
pub(super) const BWRAP: &[&str] = &[
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
pub(super) struct Unmodelled {
    pub(super) names: &'static [&'static str],
    pub(super) why: &'static str,
    /// Where its options begin: after its subcommand (`perf record`), its subcommands that
    /// run a command (no other does).
    pub(super) subcommands: &'static [&'static str],
    /// It runs its command with a shell: the words read as a script.
    pub(super) shell: bool,
    /// Options whose value is a command line.
    pub(super) scripts: &'static [&'static str],
}

#[rustfmt::skip]
pub(super) const UNMODELLED: &[Unmodelled] = &[
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
        names: &["start-stop-daemon"],
        why: "its options are not modelled: it runs `-x`, `--exec` or `--startas` in the folder `-d` and the root `-r` name",
        subcommands: &[],
        shell: false,
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
pub(super) const RUNS_UNSEEN: &[(&str, &str)] = &[
    ("newgrp", "it runs a shell reading its standard input"),
    (
        "tmux",
        "its commands run shell command lines (`new -d CMD`, `run-shell`, `send-keys`) and its server's configuration",
    ),
    (
        "screen",
        "it runs its command, or a shell, in a session that reads `.screenrc` and keys sent to it (`-X stuff`)",
    ),
    ("sparc32bash", "it runs a shell reading its standard input"),
    ("expect", "it runs a Tcl script"),
];
