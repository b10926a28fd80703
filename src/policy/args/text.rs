//! Models of programs that write what an operand names (docs/POLICY.md, "Programs read by
//! their arguments"): `uniq [INPUT [OUTPUT]]` and `xxd [INFILE [OUTFILE]]` write their
//! second operand (`echo … | xxd -r -p - ~/.gitconfig` wrote a `core.fsmonitor`), `mkdir`
//! and `touch` every operand (`mkdir -p ~/.cargo`); `sort` reads its operands and writes
//! `-o`'s value. `sqlite3` is understood only in its safe mode.

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
    // GNU uniq reads `+N` as `-s N`: `uniq +0 .env` reads `.env`, which would be taken for
    // the output (a write) after an input `+0`.
    if let Some(&at) = ops.iter().find(|&&o| w[o].starts_with('+')) {
        return Err(stop(at, "an operand `+N`, which uniq reads as `-s N`"));
    }
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

/// sqlite3's options (one dash or two, whole words, anywhere: after the database too), and
/// whether each takes a value. Not here, so asked: `-cmd` and `-init` (dot-commands run
/// before any other; `-init`'s even in safe mode), `-nonce` (lifts
/// safe mode for one command), `-A` (an archive command), `-append`, `-deserialize`,
/// `-vfs`, `-zip` (other ways of opening the file).
const SQLITE3: &[(&str, bool)] = &[
    ("ascii", false),
    ("bail", false),
    ("batch", false),
    ("box", false),
    ("column", false),
    ("csv", false),
    ("echo", false),
    ("header", false),
    ("noheader", false),
    ("html", false),
    ("json", false),
    ("line", false),
    ("list", false),
    ("markdown", false),
    ("newline", true),
    ("nofollow", false),
    ("nullvalue", true),
    ("quote", false),
    ("readonly", false),
    ("safe", false),
    ("separator", true),
    ("stats", false),
    ("table", false),
    ("tabs", false),
    ("version", false),
];

/// The names of the sqlite3 shell's own tables and functions (sqlite3 3.40's `pragma
/// module_list` and `pragma function_list`, read whole) that read or write files or run
/// SQL given as text, whether safe mode refuses them or not.
const SQLITE3_FILES: &[&str] = &[
    "fsdir",
    "zipfile",
    "zipfile_cds",
    "sqlar",
    "readfile",
    "writefile",
    "edit",
    "lsmode",
    "load_extension",
    "fts3_tokenizer",
    "fts3tokenize",
    "sha3_query",
    "sqlite_dbdata",
    "sqlite_dbptr",
    "sqlite_dbpage",
    "shell_module_schema",
];

/// The words of SQL text, lower case: each run of letters, digits, `_` and `$`.
fn sql_words(sql: &str) -> impl Iterator<Item = String> + '_ {
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_lowercase)
}

/// The dot-commands that only print, or set how sqlite3 prints.
const SQLITE3_DOT: &[&str] = &[
    "tables",
    "schema",
    "fullschema",
    "indexes",
    "indices",
    "databases",
    "dbinfo",
    "dump",
    "mode",
    "headers",
    "header",
    "separator",
    "nullvalue",
    "width",
    "show",
    "timer",
    "changes",
    "eqp",
    "bail",
    "echo",
    "print",
    "stats",
];

/// `sqlite3`: its SQL and dot-commands are a language that runs programs and writes any
/// file (`.shell`, `.output F`, `writefile()`, `ATTACH`, `VACUUM INTO`, `load_extension()`),
/// on its command line or its standard input. Understood only in safe mode (`-safe`), where
/// sqlite3 itself refuses those, and read-only (`-readonly`: a virtual table the database
/// holds, `zipfile('~/.profile')`, writes its file on an insert), with SQL given (so no
/// standard input is read), and only dot-commands that print (safe mode lets `.trace FILE`
/// write); the database file is read.
pub(super) fn sqlite3(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let mut db = None;
    let mut safe = false;
    let mut readonly = false;
    let mut sql = false;
    let mut i = 1;
    while i < w.len() {
        let word = w[i].as_str();
        if db.is_some() && !word.starts_with('-') {
            // SQL (`-safe` checked below), or a dot-command: safe mode does not refuse all
            // that write (`.trace FILE` writes any file, the SQL it runs its text).
            if let Some(dot) = word.strip_prefix('.') {
                let name = dot.split_ascii_whitespace().next().unwrap_or("");
                if !SQLITE3_DOT.contains(&name) {
                    return Err(stop(
                        i,
                        "a sqlite3 dot-command that is not known as harmless",
                    ));
                }
            }
            // Safe mode leaves the shell's own table `fsdir` (every file's content beneath
            // a path): any word of a name that reads or writes files is asked, quoted,
            // in a string or in a comment too.
            if let Some(name) = sql_words(word).find(|t| SQLITE3_FILES.contains(&t.as_str())) {
                return Err(stop(
                    i,
                    format!("SQL naming `{name}`, which reads or writes files"),
                ));
            }
            sql = true;
            i += 1;
            continue;
        }
        if !word.starts_with('-') {
            db = Some(i);
            i += 1;
            continue;
        }
        let name = word.strip_prefix("--").unwrap_or(&word[1..]);
        match SQLITE3.iter().find(|(n, _)| *n == name) {
            Some((_, true)) if i + 1 < w.len() => i += 2,
            Some((_, false)) => {
                safe |= name == "safe";
                readonly |= name == "readonly";
                i += 1
            }
            _ => return Err(stop(i, "a sqlite3 option that is not known as harmless")),
        }
    }
    if !(safe && readonly) {
        return Err(stop(
            // At the end: whatever a rule's prefix holds, its words are not what decides.
            w.len(),
            "sqlite3 without `-safe` and `-readonly`: its SQL and dot-commands run programs and write files, and a table the database holds may write any file (`zipfile`)",
        ));
    }
    // With no SQL word it reads its standard input, whose dot-commands no word shows.
    if !sql {
        return Err(stop(
            w.len(),
            "sqlite3 with no SQL given reads its standard input, whose dot-commands no word shows",
        ));
    }
    if let Some(d) = db {
        // `:memory:` is no file; any other name with a `:` may be a URI (`file:…`).
        if w[d] != ":memory:" {
            if w[d].contains(':') {
                return Err(stop(d, "a database named by a URI, which is not read"));
            }
            paths(w, &[d], Access::Read, e);
        }
    }
    Ok(())
}
