//! Generators of the programs whose argument is a program of their own: sed's scripts
//! (every command, every delimiter, brackets, backslashes, newlines, `e`, `w`, `W`, `r`,
//! `R`, `s///e`, `s///w`), jq's filters, awk's programs (`system`, `getline`, `|`, `>`,
//! `ARGV`, gawk's `@`).

use super::gen::{mix, path_read, path_write, render, value_for, Rng};
use super::programs::{command, some_opts, Program};

/// sed: a script (bare or `-e`), options (`-i` in its forms), files.
pub(super) fn sed(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut opts = some_opts(rng, &p.opts, 2);
    let mut ops = Vec::new();
    if rng.chance(25) {
        for _ in 0..1 + rng.below(2) {
            let s = sed_script(rng);
            opts.push(if rng.chance(30) {
                vec![format!("--expression={s}")]
            } else {
                vec!["-e".into(), s]
            });
        }
    } else {
        ops.push(sed_script(rng));
    }
    let in_place = rng.chance(25);
    if in_place {
        opts.push(vec![rng.word(&[
            "-i",
            "-i.bak",
            "-ibak",
            "--in-place",
            "--in-place=.orig",
            "-i~",
            "-ni",
            "-in",
            "-i.x/y",
            "-i*.bak",
            "-si",
            "-Ei",
            "-irc",
            "--follow-symlinks",
        ])]);
    }
    for _ in 0..rng.below(3) {
        ops.push(if in_place && rng.chance(60) {
            path_write(rng)
        } else {
            path_read(rng)
        });
    }
    command("sed", mix(rng, opts, ops))
}

/// A sed script of one to three commands.
pub fn sed_script(rng: &mut Rng) -> String {
    let mut s = String::new();
    if rng.chance(4) {
        s.push_str("#n\n");
    }
    for k in 0..1 + rng.below(3) {
        if k > 0 {
            s.push_str(&rng.word(&[";", "\n", " ; ", ";\n", " ", "}"]));
        }
        // Everyday commands too, so that more scripts are run with the options around them.
        if rng.chance(35) {
            s.push_str(&rng.word(&[
                "p",
                "1,5p",
                "/a/p",
                "s/a/b/",
                "s/a/b/g",
                "$d",
                "2q",
                "=",
                "s|x|y|2",
                "/b/!d",
                "1~2d",
                "y/ab/AB/",
                "n;p",
                "0,/a/s//X/",
                "l",
                "$!N",
                "s/\\(a\\)/[\\1]/",
                "G",
                "h;x",
            ]));
        } else {
            s.push_str(&sed_command(rng));
        }
    }
    s
}

fn sed_command(rng: &mut Rng) -> String {
    let addr = rng.word(&[
        "", "", "", "", "1", "$", "2,3", "/a/", "/a/I", "\\%a%", "\\,a,", "0,/a/", "1~2", "/a/,+1",
        "/a/,~2", "/[/]/", "\\|a|", "/a\\/b/", "\\;a;", "\\wawp",
    ]);
    let bang = if rng.chance(10) { "!" } else { "" };
    let r = path_read(rng);
    let w = path_write(rng);
    let cmd = match rng.below(14) {
        0..=4 => sed_s(rng),
        5 => rng.word(&[
            "p", "d", "=", "l", "l 3", "q", "Q", "q5", "n", "N", "g", "G", "h", "H", "x", "z", "F",
            "D", "P",
        ]),
        6 => rng.word(&["e", "e id", "v", "L", "e\n", "v 4.2", "z;e id"]),
        7 => format!(
            "{} {}",
            rng.word(&["r", "R", "w", "W"]),
            if rng.chance(50) { &r } else { &w }
        ),
        8 => format!("{}{}", rng.word(&["r", "R", "w", "W"]), w),
        9 => rng.word(&[
            "a text",
            "a\\\ntext",
            "a\\",
            "i\\\nx",
            "c\\\nx",
            "a x\\\nw pwned",
            "a\\\\\nw pwned",
            "i x;w pwned",
            "a\\\n\\\nw pwned",
            "c\\",
        ]),
        10 => rng.word(&[
            "y/abc/xyz/",
            "y|a|b|",
            "y/a\\/b/xyz/",
            "y/a/b/;w pwned",
            "y,a,b,",
            "y/a/\\n/",
        ]),
        11 => rng.word(&[
            "{p}",
            "{p;}",
            "{\ns/a/b/w pwned\n}",
            "{e id\n}",
            "{p};w pwned",
            "}",
            "{",
            "{\n}",
        ]),
        12 => rng.word(&[
            ":a",
            "b a",
            "ba",
            "t",
            "T x",
            ": x;w pwned",
            "b x;w pwned",
            "bx\nw pwned",
            ":a\nw pwned",
            "t;e id",
        ]),
        _ => rng.word(&[
            "# w pwned",
            "#\nw pwned",
            "#n",
            "  p",
            ";;p",
            "p;;",
            "p # c",
        ]),
    };
    format!("{addr}{bang}{cmd}")
}

/// An `s` command: every delimiter, brackets, backslashes, the flags that run or write.
fn sed_s(rng: &mut Rng) -> String {
    let d = if rng.chance(50) {
        '/'
    } else {
        *rng.pick(&[
            '/', '|', ',', '#', ':', '@', '!', '%', '_', 'a', 'e', 'w', 's', ' ', '[', ']', '{',
            '}', ';', '\\', '\n', 'é', '"', '.', '*', '1', 'g', 'p', '\t',
        ])
    };
    let ds = d.to_string();
    let re = rng
        .word(&[
            "a",
            "",
            "x*",
            "[/]",
            "[[:alpha:]]",
            "\\/",
            "[^]]",
            "\\(a\\)",
            "[a\\]",
            "\\D",
            "D",
            "[D]",
            "a\\nb",
            "\\n",
            "[",
            "a[",
            "[]D]",
            "\\",
            "$",
            "^",
            "[[:D:]]",
            "[[.D.]]",
            "[\\D]",
            "\\[D",
        ])
        .replace('D', &ds);
    let rep = rng
        .word(&[
            "b", "", "\\1", "&", "\\n", "\\D", "e", "w x", "D", "\\\n", "x\\\ny",
        ])
        .replace('D', &ds);
    let w = path_write(rng);
    let flags = rng
        .word(&[
            "", "", "", "", "", "g", "g", "p", "e", "w W", "gw W", "2", "I", "m", "pe", "e;p",
            "gpw W", "wW", "3g", "M", "ie", ";e id", "\ne", " w x", "w", "g\nw W", "e\n", "ge",
        ])
        .replace('W', &w);
    format!("s{d}{re}{d}{rep}{d}{flags}")
}

/// jq's options that its `--help` does not list.
pub(super) const JQ_EXTRA: &[(&str, Option<&str>)] = &[
    ("-f", Some("FILE")),
    ("--from-file", Some("FILE")),
    ("-L", Some("DIR")),
    ("--argfile", Some("NAME")),
    ("--seq", None),
    ("--stream", None),
    ("--indent", Some("N")),
    ("-a", None),
    ("-j", None),
    ("--unbuffered", None),
    ("--run-tests", Some("FILE")),
    ("-h", None),
    ("--exit-status", None),
    ("--jsonargs", None),
    ("--ascii-output", None),
    ("--join-output", None),
    ("--sort-keys", None),
    ("--raw-input", None),
    ("--null-input", None),
    ("--slurp", None),
    ("--raw-output", None),
    ("--compact-output", None),
    ("--color-output", None),
    ("--monochrome-output", None),
    ("--debug-dump-disasm", None),
    ("--debug-trace", None),
];

pub(super) fn jq(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut opts: Vec<Vec<String>> = some_opts(rng, &p.opts, 2)
        .into_iter()
        .filter(|o| {
            !matches!(
                o[0].as_str(),
                "--arg" | "--argjson" | "--slurpfile" | "--rawfile" | "--argfile"
            )
        })
        .collect();
    if rng.chance(20) {
        let o = rng.word(&[
            "--arg",
            "--argjson",
            "--slurpfile",
            "--rawfile",
            "--argfile",
        ]);
        let v = if o.ends_with("file") {
            path_read(rng)
        } else {
            rng.word(&["1", "\"x\"", "{}"])
        };
        opts.push(vec![o, "x".into(), v]);
    }
    let filter = if rng.chance(20) {
        format!("{} | {}", rng.word(JQ_FILTERS), rng.word(JQ_FILTERS))
    } else {
        rng.word(JQ_FILTERS)
    };
    let mut ops = vec![filter];
    for _ in 0..rng.below(3) {
        ops.push(if rng.chance(50) {
            "data.json".into()
        } else {
            path_read(rng)
        });
    }
    // The filter comes first among the operands: options go anywhere but before it only
    // half the time.
    command("jq", mix(rng, opts, ops))
}

const JQ_FILTERS: &[&str] = &[
    ".",
    ".a",
    ".[]",
    "keys",
    "input",
    "[inputs]",
    "input_filename",
    "$__loc__",
    "env.HOME",
    "$ENV.PATH",
    "@sh \"echo \\(.)\"",
    "import \"a\" as a; .",
    "include \"a\"; .",
    "modulemeta",
    "get_search_list",
    "limit(1; .[]?)",
    "debug",
    "stderr",
    "input_line_number",
    "getpath([\"a\"])",
    "ltrimstr(\"a\")",
    "tojson",
    "halt_error",
    "builtins",
    "now",
    "def f: .; f",
    "reduce .b[] as $x (0; .+$x)",
    "try error(\"x\") catch .",
    "@base64d",
    "$x",
    "$__prog_args",
    "get_jq_origin",
    "get_prog_origin",
    "import \"{OUT}/secret\" as $s; $s",
    "\"\\(input_filename)\"",
    "splits(\"a\")",
    "..",
    "path(..)",
    "$ENV",
    "env",
    "input_filename | ltrimstr(\"/\")",
    "@text",
    "ascii",
];

/// What awk's usage leaves out, and gawk's dangerous ones.
pub(super) const AWK_EXTRA: &[(&str, Option<&str>)] = &[
    ("-F", Some("FS")),
    ("-v", Some("var=val")),
    ("-f", Some("FILE")),
    ("-W", Some("OPT")),
    ("--assign", Some("var=val")),
    ("--field-separator", Some("FS")),
    ("--file", Some("FILE")),
    ("-e", Some("PROGRAM")),
    ("-E", Some("FILE")),
    ("-i", Some("FILE")),
    ("-l", Some("LIB")),
    ("-o", None),
    ("--exec", Some("FILE")),
    ("--pretty-print", Some("FILE")),
    ("--profile", Some("FILE")),
    ("--dump-variables", Some("FILE")),
    ("--debug", Some("FILE")),
];

pub(super) fn awk(rng: &mut Rng, p: &Program) -> Vec<String> {
    let mut opts: Vec<Vec<String>> = Vec::new();
    for _ in 0..rng.below(3) {
        opts.push(match rng.below(6) {
            0 => vec!["-F".into(), rng.word(&[":", ",", "t", "\\t", "x"])],
            1 => vec![
                "-v".into(),
                rng.word(&["x=1", "ARGV=x", "ARGC=3", "FS=:", "x", "ENVIRON=1", "OFS=-"]),
            ],
            2 => vec![
                "-W".into(),
                rng.word(&[
                    "version",
                    "dump",
                    "help",
                    "interactive",
                    "exec",
                    "random=1",
                    "sprintf=99",
                    "posix_space",
                    "usage",
                    "e",
                ]),
            ],
            3 => vec![rng.word(&["-vx=1", "-F:", "-Wv", "-Wexec", "-f", "--", "-"])],
            _ => {
                let o = rng.pick(&p.opts).clone();
                render(rng, &o, &p.opts, &mut |r, h| {
                    if h.contains('=') {
                        r.word(&["x=1", "ARGV=x"])
                    } else {
                        value_for(r, h)
                    }
                })
            }
        });
    }
    let mut w = vec![p.name.to_owned()];
    for o in opts {
        w.extend(o);
    }
    w.push(awk_program(rng));
    for _ in 0..rng.below(3) {
        w.push(if rng.chance(30) {
            rng.word(&["x=1", "ARGV=x", "FS=:", "a.b=c", "_x=1"])
        } else {
            path_read(rng)
        });
    }
    w
}

fn awk_program(rng: &mut Rng) -> String {
    let pattern = rng.word(&[
        "",
        "",
        "BEGIN",
        "END",
        "NR==1",
        "/a/",
        "$0 ~ \"a\"",
        "NR>1",
        "length($0) < 5",
        "BEGINFILE",
        "1",
    ]);
    let action = rng.word(&[
        "{print}",
        "{print $1}",
        "{printf \"%s\\n\", $0}",
        "{system(\"id\")}",
        "{\"id\" | getline x}",
        "{getline x < \"{OUT}/secret\"; print x}",
        "{print > \"pwned\"}",
        "{print | \"id\"}",
        "{print >> \"p\"}",
        "{ARGV[1]=\"{OUT}/secret\"}",
        "{ARGC=2}",
        "@include \"x\"",
        "{print ENVIRON[\"HOME\"]}",
        "{close(\"x\")}",
        "{fflush()}",
        "{nextfile}",
        "{exit}",
        "{x=substr($0,1,2); gsub(/a/,\"b\"); print x}",
        "function f(a){return a} {print f($0)}",
        "{while (i<3) i++; print i}",
        "{print toupper($0)}",
        "{getline}",
        "{print sprintf(\"%c\", 65)}",
        "{print PROCINFO[\"pid\"]}",
        "{\"date\" |& getline}",
        "{ s = \"sys\" \"tem\"; print s }",
        "{print \"x\" > \"/dev/stderr\"}",
        "{ FILENAME = \"{OUT}/secret\" }",
        "{ f = \"id\"; @f() }",
        "",
        "{ print FILENAME }",
        "{ nextfile; print }",
        "{ printf(\"%s\", $0) }",
    ]);
    format!(
        "{pattern}{}{action}",
        if pattern.is_empty() { "" } else { " " }
    )
}
