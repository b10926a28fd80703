//! Arguments never allowed under a prefix rule of a program no model reads: each names a
//! program to run, a file to write, or another place or configuration to act on
//! (docs/POLICY.md, "A program with no model"). `names_more` is what a prefix rule and
//! "Always allow" both ask of a command.
//!
//! Invariant: only ever turns an allow into an ask, and a remembered rule into an exact one.

mod words;

/// Arguments that, under a prefix, would name a program to run, a file to write, or
/// another place or configuration to act on, per program (`cargo test --config
/// 'target.….runner="…"'`, `go test -exec prog`, `git -c alias.x='!…' x`, `npm test
/// --node-options=…`). A command that has one is remembered exactly, and no allow rule that
/// is a prefix covers one ([`super::Rule::covers`], [`names_more`]).
pub const NEVER_UNDER_A_PREFIX: &[(&str, &[&str])] = &[
    (
        "cargo",
        &[
            "--config",
            "-Z",
            "--target-dir",
            "--manifest-path",
            "--artifact-dir",
            "--out-dir",
            "--logfile",
        ],
    ),
    (
        "go",
        &[
            "-exec",
            "-toolexec",
            "-vettool",
            "-o",
            "-modfile",
            "-overlay",
            "-C",
            "-ldflags",
            "-gcflags",
            "-asmflags",
            "-gccgoflags",
            "-coverprofile",
            "-cpuprofile",
            "-memprofile",
            "-blockprofile",
            "-mutexprofile",
            "-trace",
            "-outputdir",
            "-pkgdir",
            "-pgo",
        ],
    ),
    (
        "git",
        &[
            "-c",
            "-C",
            "--config-env",
            "--git-dir",
            "--work-tree",
            "--exec-path",
            "--namespace",
            "--output",
            "-o",
            "--ext-diff",
            "--textconv",
            "--upload-pack",
            "--exec",
            "-x",
            "--receive-pack",
            "--extcmd",
            "--tool",
            "--open-files-in-pager",
            "-O",
            "--template",
            "--separate-git-dir",
            // filter-branch's filters, send-email's and instaweb's commands: each runs one.
            "--tree-filter",
            "--index-filter",
            "--msg-filter",
            "--env-filter",
            "--commit-filter",
            "--parent-filter",
            "--tag-name-filter",
            "--setup",
            "--sendmail-cmd",
            "--smtp-server",
            "--to-cmd",
            "--cc-cmd",
            "--header-cmd",
            "--httpd",
            "--browser",
        ],
    ),
    // tar's ways of running a program (a tar rule no model reads: `Bash(tar -x:*)`).
    (
        "tar",
        &[
            "--rsh-command",
            "--rmt-command",
            "-I",
            "--use-compress-program",
            "--to-command",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
            "-F",
        ],
    ),
    // A man-db configuration names the programs man runs (`DEFINE nroff …`); the pager and
    // the browser are programs.
    (
        "man",
        &["-C", "--config-file", "-P", "--pager", "-H", "--html"],
    ),
    // less's key files set `LESSOPEN`, a program it runs on each file; `-o` writes a log.
    (
        "less",
        &[
            "-k",
            "--lesskey-file",
            "--lesskey-src",
            "--lesskey-content",
            "-o",
            "-O",
            "--log-file",
            "--LOG-FILE",
            "-T",
            "--tag-file",
        ],
    ),
    ("sdiff", &["--diff-program", "-o", "--output"]),
    ("diff3", &["--diff-program"]),
    // A list of files read from a file: what it names is not seen.
    ("md5sum", &["-c", "--check"]),
    ("sha1sum", &["-c", "--check"]),
    ("sha224sum", &["-c", "--check"]),
    ("sha256sum", &["-c", "--check"]),
    ("sha384sum", &["-c", "--check"]),
    ("sha512sum", &["-c", "--check"]),
    ("b2sum", &["-c", "--check"]),
    ("cksum", &["-c", "--check"]),
    ("file", &["-f", "--files-from", "-m", "--magic-file"]),
    // The names of the files they read come on stdin (`ls -a | cpio -o`).
    (
        "cpio",
        &[
            "-o",
            "--create",
            "-p",
            "--pass-through",
            "-E",
            "--pattern-file",
            "-F",
            "--file",
            "-O",
            "-I",
        ],
    ),
    ("npm", NPM_FLAGS),
    ("pnpm", NPM_FLAGS),
    ("yarn", NPM_FLAGS),
    ("bun", NPM_FLAGS),
    ("docker", &["-H", "--host", "--context", "--config"]),
    // `tree -o FILE` writes FILE (`-o ~/.profile`), `-R` writes `00Tree.html` in every
    // folder, `--fromfile` reads a list of names.
    ("tree", &["-o", "-R", "--fromfile"]),
    ("podman", &["-H", "--host", "--url", "--connection"]),
    (
        "kubectl",
        &[
            "--kubeconfig",
            "--server",
            "-s",
            "--context",
            "--cluster",
            "--profile-output",
            "--cache-dir",
            "--log-file",
            "--log-dir",
        ],
    ),
    (
        "dotnet",
        &[
            "-o",
            "--output",
            "-bl",
            "-logger",
            "--logger",
            "-l",
            "--diag",
            "-d",
            "--results-directory",
            "--test-adapter-path",
            "-p",
            "--property",
            "-property",
        ],
    ),
    (
        "swift",
        &[
            "-Xlinker",
            "-Xcc",
            "-Xswiftc",
            "-Xcxx",
            "--scratch-path",
            "--build-path",
            "--toolchain",
            "--sdk",
        ],
    ),
    (
        "uv",
        &[
            "--python",
            "-p",
            "--project",
            "--directory",
            "--config-file",
            "--with",
            "--index-url",
            "--find-links",
        ],
    ),
    ("poetry", &["--directory", "-C", "--project", "-P"]),
    // A config file holds more options, which no word shows (`output = "…/policy.toml"`);
    // curl's variables and `--expand-*` make names no word holds (`{{HOME}}/.config/…`).
    ("curl", &["-K", "--config", "--variable"]),
    // wget: `-x` makes folders of the URL's path (`.git/config`); askpass runs a program.
    (
        "wget",
        &[
            "-e",
            "--execute",
            "--config",
            "-x",
            "--force-directories",
            "--use-askpass",
            // It goes on in the background and returns at once: later commands change
            // the paths it was decided by (a link made in its way) while it runs.
            "-b",
            "--background",
            // Names the server chooses: links followed, a header's, a redirect's, a list's.
            "-r",
            "--recursive",
            "-m",
            "--mirror",
            "-p",
            "--page-requisites",
            "--content-disposition",
            "--trust-server-names",
            "-i",
            "--input-file",
            "-B",
            "--base",
        ],
    ),
    // split names its files PREFIX + a suffix: its options that shape the suffix make any
    // name (`-a1 --hex-suffixes=c x .envr` wrote `.envrc`; digits end no such name);
    // csplit's `-b` FORMAT (`-f .gi -b %.0dt/config` wrote `.git/config`). A PREFIX is the
    // guard's (`super::guard`: a word that begins a name that runs programs is asked).
    (
        "split",
        &[
            "--filter",
            "-a",
            "--suffix-length",
            "--additional-suffix",
            "-x",
            "--hex-suffixes",
        ],
    ),
    ("csplit", &["-b", "--suffix-format"]),
    // binutils that load a plugin.
    ("ar", &["--plugin"]),
    ("nm", &["--plugin"]),
    ("ranlib", &["--plugin"]),
    // The linker loads a plugin (`-plugin ./p.so` runs its code).
    ("ld", LD_RUNS),
    ("ld.bfd", LD_RUNS),
    ("ld.gold", LD_RUNS),
    ("ld.lld", LD_RUNS),
    ("mold", LD_RUNS),
    (
        "zip",
        &[
            "-TT",
            "--unzip-command",
            "-@",
            "--names-stdin",
            "-i@",
            "-x@",
        ],
    ),
    ("scp", &["-S", "-o", "-F"]),
    ("ssh", &["-o", "-F"]),
    ("sftp", &["-S", "-o", "-F"]),
    ("rsync", &["-e", "--rsh", "--rsync-path"]),
    ("mix", &["--exec"]),
    // Searchers: fd runs a command per file found, ag and ack a pager, ugrep filters and a
    // viewer (and writes or reads a configuration).
    ("fd", FD_RUNS),
    ("fdfind", FD_RUNS),
    ("ag", &["--pager"]),
    ("bat", &["--pager"]),
    ("batcat", &["--pager"]),
    (
        "cloc",
        &[
            "--extract-with",
            "--vcs",
            "--out",
            "--report-file",
            "--sql",
            "--write-lang-def",
            "--write-lang-def-incl-dup",
            "--categorized",
            "--counted",
            "--ignored",
            "--found",
            "--list-file",
            "--exclude-list-file",
            "--read-lang-def",
            "--force-lang-def",
        ],
    ),
    ("ctags", &["-f", "-o", "-L", "--options", "--options-maybe"]),
    ("cscope", &["-i", "-f", "-F"]),
    // The compilers' ways of running another program (`-wrapper sh,-c,…`, a plugin, a
    // specs file, a folder of their own programs).
    ("gcc", CC_RUNS),
    ("g++", CC_RUNS),
    ("cc", CC_RUNS),
    ("c++", CC_RUNS),
    ("clang", CC_RUNS),
    ("clang++", CC_RUNS),
    ("ack", ACK_RUNS),
    ("ack-grep", ACK_RUNS),
    ("ugrep", UGREP_RUNS),
    ("ug", UGREP_RUNS),
    ("gh", &["-R", "--repo", "--hostname"]),
];

/// Also what a compiler passes on to the programs it runs, which no word of it reads: the
/// linker's (`-Wl,-plugin,./p.so`, `-Wl,-o,.git/hooks/pre-commit`), the assembler's and
/// the preprocessor's; and clang's ways of loading code or naming a linker.
const CC_RUNS: &[&str] = &[
    "-wrapper",
    "-B",
    "-fplugin",
    "-specs",
    "--specs",
    "-Wl,",
    "-Xlinker",
    "-Wa,",
    "-Xassembler",
    "-Wp,",
    "-Xpreprocessor",
    "-Xclang",
    "-fpass-plugin",
    "-fuse-ld",
    "--ld-path",
    // gcc's long forms: `--prefix` is `-B`, `--for-linker` `-Xlinker`.
    "--prefix",
    "--for-linker",
    "--for-assembler",
    // Compiles again with the options it names (`-fcompare-debug=-fplugin=./p.so`).
    "-fcompare-debug",
    // A linker script names its output (`OUTPUT(.git/hooks/pre-commit)`).
    "-T",
];

/// The linkers' plugins, and their scripts, which name the output (`OUTPUT(…)`) and more
/// inputs.
const LD_RUNS: &[&str] = &[
    "-plugin",
    "--plugin",
    "-plugin-opt",
    "--plugin-opt",
    "-T",
    "--script",
    "-dT",
    "--default-script",
    "-c",
    "--mri-script",
];

// fd's `-l` is `--exec-batch ls -l`.
const FD_RUNS: &[&str] = &["-x", "--exec", "-X", "--exec-batch", "-l", "--list-details"];
// `--files-from` and `-x` (names on stdin): a list of files whose names no word shows.
const ACK_RUNS: &[&str] = &["--pager", "--output", "--ackrc", "--files-from", "-x"];
// `-Q` is a text interface that opens files in `--view`'s program (`$PAGER`).
const UGREP_RUNS: &[&str] = &[
    "--filter",
    "--pager",
    "--view",
    "--save-config",
    "--config",
    "-Q",
    "--query",
];

const NPM_FLAGS: &[&str] = &[
    "--prefix",
    "-C",
    "--dir",
    "--cwd",
    "--script-shell",
    "--userconfig",
    "--globalconfig",
    "--node-options",
    "--cache",
    "--shell",
    "--workspace",
    "-w",
];

/// Programs that read their arguments from a file named `@FILE` (a response file): what
/// it names (`strings @list`, a list holding `.env`) is not seen.
const RESPONSE_FILES: &[&str] = &[
    "strings",
    "nm",
    "objdump",
    "readelf",
    "size",
    "c++filt",
    "ar",
    "ranlib",
    "objcopy",
    "strip",
    "addr2line",
    "elfedit",
    "as",
    "ld",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "cpp",
    "javac",
    "java",
    "javadoc",
    "jar",
    "rustc",
    "rustdoc",
    "kotlinc",
    "scalac",
    "ghc",
    "gfortran",
    "swiftc",
    "csc",
    "tcc",
    "clang-cl",
    "lld",
    "ld.lld",
    "ld.gold",
    "dlltool",
    "windres",
];

/// Whether `words` (a command) has, from index `from` on, an argument of
/// [`NEVER_UNDER_A_PREFIX`]: alone, with `=VALUE`, a short flag with its value joined
/// (`-Zflag`, `-TTcmd`), any beginning of a long one (getopt_long takes `--filt` for
/// `--filter`, npm `--node-opt` for `--node-options`; a linker `-plug` for `-plugin`), or
/// Go's `--exec` for `-exec`. For `cargo`, any argument after `--`
/// of a subcommand other than `test` and `bench` (it goes to rustc, clippy or rustfmt), and
/// for those two any after `--` that names a file (`--logfile`) or is not plain.
pub fn names_more(words: &[String], from: usize) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    let program = first.rsplit('/').next().unwrap_or(first);
    // `@FILE`: the arguments are read from FILE (binutils, compilers, javac).
    let rest = words.get(from..).unwrap_or_default();
    if RESPONSE_FILES.contains(&program) && rest.iter().any(|w| w.starts_with('@')) {
        return true;
    }
    if words::IMAGEMAGICK.contains(&program) && rest.iter().any(|w| words::has_escape(w)) {
        return true;
    }
    let Some((_, flags)) = NEVER_UNDER_A_PREFIX.iter().find(|(p, _)| *p == program) else {
        return false;
    };
    let args = words.get(from..).unwrap_or_default();
    // Programs whose single-dash words are long flags (`-exec`, `-logger`), not clusters.
    let compiler = matches!(program, "gcc" | "g++" | "cc" | "c++" | "clang" | "clang++");
    // getopt_long_only (the linkers): a long option after one dash, abbreviated too.
    let only_long = matches!(program, "ld" | "ld.bfd" | "ld.gold" | "ld.lld" | "mold");
    let long_single = matches!(program, "go" | "dotnet" | "swift") || compiler || only_long;
    let flagged = |word: &str| {
        let mut word = word.to_owned();
        if program == "go" {
            // Go reads `--flag` as `-flag`, and `go test` its `-test.flag` forms.
            if word.starts_with("--") {
                word.remove(0);
            }
            if word.starts_with("-test.") {
                word.replace_range(1..6, "");
            }
        }
        if program == "dotnet" && word.starts_with('/') {
            // MSBuild's switches: `/logger:X` is `-logger:X`.
            word.replace_range(0..1, "-");
        }
        let name = match program {
            "dotnet" => word.split([':', '=']).next().unwrap_or(&word),
            _ => word.split('=').next().unwrap_or(&word),
        };
        // A cluster of short flags (`-iO…`): any of them, wherever it stands.
        let cluster = !long_single && !word.starts_with("--") && word.starts_with('-');
        let bare = |n: &str| n.trim_start_matches('-').to_owned();
        flags.iter().any(|f| {
            let single = f.starts_with('-') && !f.starts_with("--");
            name == *f
                // A single-dash option with its value joined (`-Zflag`, zip's `-TTcmd`,
                // `-Wl,…`).
                || (single && word.starts_with(f))
                || (cluster && f.len() == 2 && single && word[1..].contains(&f[1..]))
                // getopt_long takes any unambiguous beginning of a long option (`split
                // --filt=`, `zip --unzip-comm`): any beginning counts.
                || (name.len() > 2 && name.starts_with("--") && f.starts_with(name))
                || (only_long && name.len() > 2 && name.starts_with('-') && bare(f).starts_with(&bare(name)))
        })
    };
    if program == "cargo" {
        if let Some(dd) = words.iter().position(|w| w == "--") {
            let sub = words.get(1).map(String::as_str).unwrap_or_default();
            let after = &words[dd + 1..];
            // The test harness's own flags, plain; any other word is a filter on test
            // names, which names nothing.
            let harness_ok = |w: &String| {
                !w.starts_with("--logfile")
                    && !w.starts_with("-Z")
                    && (!w.starts_with('-')
                        || w.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_-=:.".contains(c)))
            };
            if !after.is_empty()
                && (!matches!(sub, "test" | "bench") || !after.iter().all(harness_ok))
            {
                return true;
            }
            return args.iter().take_while(|w| *w != "--").any(|w| flagged(w));
        }
    }
    args.iter()
        .filter(|w| !(compiler && words::harmless_linker_word(w)))
        .any(|w| flagged(w))
        // ugrep's `---FILE` is `--config=FILE`.
        || (matches!(program, "ugrep" | "ug") && args.iter().any(|w| w.starts_with("---")))
        || (program == "curl" && words::curl_names_more(args))
        || (program == "git" && words::git_runs_given(words, args))
        || (program == "tar" && words::tar_names_a_host(words, args))
        || (matches!(program, "wget" | "wget2") && words::wget_names_a_file(args))
        // split's PREFIX is finished by a suffix: one that begins a name that runs
        // programs (`.zlog` + `in`) may make it, existing or not.
        || (program == "split"
            && args.iter().any(|w| {
                !w.starts_with('-') && super::writes::begins_runs_name(w.rsplit('/').next().unwrap_or(w))
            }))
}
