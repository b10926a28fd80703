//! Models of programs that write what an operand names (docs/POLICY.md, "Programs read by
//! their arguments"): `uniq [INPUT [OUTPUT]]` and `xxd [INFILE [OUTFILE]]` write their
//! second operand (`echo … | xxd -r -p - ~/.gitconfig` wrote a `core.fsmonitor`), `mkdir`
//! and `touch` every operand (`mkdir -p ~/.cargo`); `sort` reads its operands and writes
//! `-o`'s value.

use super::{has, options, paths, stop, Access, Effects, Stop};

const UNIQ: &[&str] = &[
    "-c|--count",
    "-d|--repeated",
    "-D",
    "--all-repeated?",
    "-f|--skip-fields=",
    "--group?",
    "-i|--ignore-case",
    "-s|--skip-chars=",
    "-u|--unique",
    "-z|--zero-terminated",
    "-w|--check-chars=",
];

/// `uniq`: its input read, its output (the second operand) written.
pub(super) fn uniq(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, UNIQ, true, e)?;
    in_out(w, &ops, e)
}

/// xxd's options (one dash, whole words), and whether each takes a value.
const XXD: &[(&str, bool)] = &[
    ("-a", false),
    ("-autoskip", false),
    ("-b", false),
    ("-bits", false),
    ("-C", false),
    ("-capitalize", false),
    ("-c", true),
    ("-cols", true),
    ("-E", false),
    ("-EBCDIC", false),
    ("-e", false),
    ("-g", true),
    ("-groupsize", true),
    ("-i", false),
    ("-include", false),
    ("-l", true),
    ("-len", true),
    ("-n", true),
    ("-name", true),
    ("-o", true),
    ("-offset", true),
    ("-p", false),
    ("-ps", false),
    ("-postscript", false),
    ("-plain", false),
    ("-r", false),
    ("-revert", false),
    ("-d", false),
    ("-s", true),
    ("-seek", true),
    ("-u", false),
];

/// `xxd`: its options as whole words (a value in the next word), then its input read and
/// its output (the second operand) written.
pub(super) fn xxd(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let mut ops = Vec::new();
    let mut i = 1;
    while i < w.len() {
        let word = w[i].as_str();
        if word == "-" || !word.starts_with('-') || !ops.is_empty() {
            ops.push(i);
            i += 1;
            continue;
        }
        match XXD.iter().find(|(name, _)| *name == word) {
            Some((_, true)) if i + 1 < w.len() => i += 2,
            Some((_, false)) => i += 1,
            _ => return Err(stop(i, "an xxd option that is not known")),
        }
    }
    in_out(w, &ops, e)
}

/// At most two operands: the first read (`-`: standard input), the second written.
fn in_out(w: &[String], ops: &[usize], e: &mut Effects) -> Result<(), Stop> {
    match ops {
        [] => {}
        [input] => read(w, *input, e),
        [input, output] => {
            read(w, *input, e);
            if w[*output] != "-" {
                paths(w, &[*output], Access::Write, e);
            }
        }
        [_, _, extra, ..] => return Err(stop(*extra, "a third operand")),
    }
    Ok(())
}

fn read(w: &[String], at: usize, e: &mut Effects) {
    if w[at] != "-" {
        paths(w, &[at], Access::Read, e);
    }
}

const MKDIR: &[&str] = &["-p|--parents", "-m|--mode=", "-v|--verbose", "-Z"];

/// `mkdir`: each folder made is written (so it stays inside the session's folder, and is
/// never a `.git` or `.cargo`); with `-p`, through no `..` (`mkdir -p .git/x/../../y`
/// makes `.git/x` on the way), as `install -D`.
pub(super) fn mkdir(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (met, ops) = options(w, 1, MKDIR, true, e)?;
    if has(&met, &["-p", "--parents"]) {
        if let Some(&o) = ops.iter().find(|&&o| w[o].split('/').any(|c| c == "..")) {
            return Err(stop(
                o,
                "a folder to make through `..` (each folder on the way is made)",
            ));
        }
    }
    paths(w, &ops, Access::Write, e);
    Ok(())
}

const TOUCH: &[&str] = &[
    "-a",
    "-c|--no-create",
    "-d|--date=",
    "-f",
    "-h|--no-dereference",
    "-m",
    "-r|--reference=R",
    "-t=",
    "--time=",
];

/// `touch`: each file made or touched is written; `-r`'s file is read.
pub(super) fn touch(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, TOUCH, true, e)?;
    paths(w, &ops, Access::Write, e);
    Ok(())
}

const SORT: &[&str] = &[
    "-b|--ignore-leading-blanks",
    "-d|--dictionary-order",
    "-f|--ignore-case",
    "-g|--general-numeric-sort",
    "-i|--ignore-nonprinting",
    "-M|--month-sort",
    "-h|--human-numeric-sort",
    "-n|--numeric-sort",
    "-R|--random-sort",
    "--random-source=R",
    "-r|--reverse",
    "--sort=",
    "-V|--version-sort",
    "-c|-C|--check?",
    "--debug",
    "-k|--key=",
    "-m|--merge",
    "-o|--output=W",
    "-s|--stable",
    "-S|--buffer-size=",
    "-t|--field-separator=",
    "--parallel=",
    "-u|--unique",
    "-z|--zero-terminated",
];

pub(super) fn sort(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (_, ops) = options(w, 1, SORT, true, e)?;
    paths(w, &ops, Access::Read, e);
    Ok(())
}
