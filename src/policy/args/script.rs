//! Models of the programs whose argument is a program of their own: `sed`'s script and
//! `awk`'s program, each read by a small reader of the language that accepts only what
//! prints, and asks for anything that runs a program, reads a file it names or writes one.
//!
//! sed: addresses, `{ }`, `!`, and the commands `= a b c d D F g G h H i l n N p P q Q t T
//! x y z :` and `s///` with the flags `g p i I m M` and a number. Not `e`, `w`, `W`, `r`, `R`,
//! `v`, nor `s///e` or `s///w` (a program run, a file written or read). sed compiles its
//! whole script before it runs any of it, so a script it would reject runs nothing; where
//! this reader and sed could end a regular expression in different places (a delimiter or a
//! backslash inside `[...]`), it asks.
//!
//! awk: the program may not contain `system`, `getline`, `|`, `>`, `@`, `ARGV`, `ARGC`,
//! gawk's `SYMTAB` or `FUNCTAB`
//! anywhere, not even in a string: what runs a program, writes or reads a file it names, or
//! changes the files awk reads. That asks for some harmless programs (`$3 > 100`); it never
//! allows one that does more.

use super::{options, stop, Access, Effects, Stop};

const SED: &[&str] = &[
    "-n|--quiet|--silent",
    "-e|--expression=",
    "-f|--file=",
    "-E|-r|--regexp-extended",
    "-s|--separate",
    "-u|--unbuffered",
    "-z|--null-data|--zero-terminated",
    "-l|--line-length=",
    "-i|--in-place??",
    "-b|--binary",
    "--posix",
    "--debug",
    "--sandbox",
    "--follow-symlinks",
    "--help",
    "--version",
];

/// `sed`: its script read ([`sed_script`]); its files read, and written with `-i`.
pub(super) fn sed(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (met, ops) = options(w, 1, SED, true, e)?;
    let mut scripts: Vec<(usize, &str)> = Vec::new();
    let mut in_place = false;
    let mut suffix = String::new();
    for m in &met {
        match m.name.as_str() {
            "-f" | "--file" => return Err(stop(m.at, "a sed script from a file")),
            "-e" | "--expression" => {
                scripts.push((m.value_at(w), m.value.as_deref().unwrap_or("")))
            }
            "-i" | "--in-place" => {
                if m.value.as_deref().is_some_and(|s| s.contains(['/', '*'])) {
                    return Err(stop(
                        m.value_at(w),
                        "a backup suffix that names another place",
                    ));
                }
                in_place = true;
                suffix = m.value.clone().unwrap_or_default();
            }
            _ => {}
        }
    }
    let files = if scripts.is_empty() {
        let Some(&first) = ops.first() else {
            return Err(stop(w.len() - 1, "sed without a script"));
        };
        scripts.push((first, &w[first]));
        &ops[1..]
    } else {
        &ops[..]
    };
    for (at, s) in scripts {
        sed_script(s).map_err(|why| stop(at, why))?;
    }
    let access = if in_place {
        Access::Write
    } else {
        Access::Read
    };
    for &i in files {
        // In place, each file is read too: its content lands in the backup, and in place
        // of a link (GNU sed writes a new file where the link was: `sed -i p link`, then
        // `cat link`, printed what the link led to).
        if in_place {
            e.paths.push((Access::Read, w[i].clone()));
        }
        e.paths.push((access, w[i].clone()));
        // The backup `-i.bak` keeps beside it.
        if in_place && !suffix.is_empty() {
            e.paths.push((Access::Write, format!("{}{suffix}", w[i])));
        }
    }
    Ok(())
}

/// Whether `w` is sed's `-n`: alone, `--quiet` or `--silent`, or in a cluster of short
/// flags before any that takes a value (`-ne`, `-En`; in `-en` it is `-e`'s script).
pub fn sed_quiet(w: &str) -> bool {
    if w == "--quiet" || w == "--silent" {
        return true;
    }
    let Some(flags) = w.strip_prefix('-').filter(|f| !f.starts_with('-')) else {
        return false;
    };
    for c in flags.chars() {
        match c {
            'n' => return true,
            'e' | 'f' | 'l' | 'i' => return false,
            _ => {}
        }
    }
    false
}

/// Reads a sed script; `Err` names the first thing in it not known as harmless.
pub fn sed_script(s: &str) -> Result<(), String> {
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut depth = 0usize;
    let blank = |c: char| c == ' ' || c == '\t';
    loop {
        while i < c.len() && (blank(c[i]) || c[i] == ';' || c[i] == '\n') {
            i += 1;
        }
        if i >= c.len() {
            break;
        }
        if c[i] == '#' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            continue;
        }
        // Up to two addresses.
        if address(&c, &mut i)? {
            while i < c.len() && blank(c[i]) {
                i += 1;
            }
            if c.get(i) == Some(&',') {
                i += 1;
                while i < c.len() && blank(c[i]) {
                    i += 1;
                }
                if matches!(c.get(i), Some('+' | '~')) {
                    i += 1;
                    digits(&c, &mut i);
                } else if !address(&c, &mut i)? {
                    return Err("an address range without its end".into());
                }
            }
        }
        while i < c.len() && blank(c[i]) {
            i += 1;
        }
        while c.get(i) == Some(&'!') {
            i += 1;
            while i < c.len() && blank(c[i]) {
                i += 1;
            }
        }
        let Some(&cmd) = c.get(i) else {
            return Err("an address without a command".into());
        };
        i += 1;
        match cmd {
            '{' => {
                depth += 1;
                continue;
            }
            '}' => {
                depth = depth.checked_sub(1).ok_or("a `}` without its `{`")?;
            }
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
            'l' | 'q' | 'Q' => {
                while i < c.len() && blank(c[i]) {
                    i += 1;
                }
                digits(&c, &mut i);
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; a backslash takes the next character (a
                // newline too, which goes on with the text).
                while i < c.len() && c[i] != '\n' {
                    if c[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
            'b' | 't' | 'T' | ':' => {
                while i < c.len() && blank(c[i]) {
                    i += 1;
                }
                // A label ends at `;`, a newline or a blank (what sed reads after one
                // must then end the command, below).
                let from = i;
                while i < c.len() && c[i] != ';' && c[i] != '\n' && !blank(c[i]) {
                    i += 1;
                }
                if cmd == ':' && i == from {
                    return Err("a label without a name".into());
                }
            }
            's' => {
                let delim = delimiter(&c, i)?;
                i += 1;
                regex(&c, &mut i, delim)?;
                replacement(&c, &mut i, delim)?;
                while let Some(&f) = c.get(i) {
                    match f {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => {
                            return Err("`s///e`, which runs the pattern space as a command".into())
                        }
                        'w' => return Err("`s///w`, which writes a file".into()),
                        _ => break,
                    }
                }
            }
            'y' => {
                let delim = delimiter(&c, i)?;
                i += 1;
                replacement(&c, &mut i, delim)?;
                replacement(&c, &mut i, delim)?;
            }
            'e' => return Err("the sed command `e`, which runs a program".into()),
            'w' | 'W' => return Err(format!("the sed command `{cmd}`, which writes a file")),
            'r' | 'R' => return Err(format!("the sed command `{cmd}`, which reads a file")),
            other => return Err(format!("the sed command `{other}`")),
        }
        // After a command: its end.
        while i < c.len() && blank(c[i]) {
            i += 1;
        }
        match c.get(i) {
            None | Some(';' | '\n' | '}' | '#') => {}
            Some(other) => return Err(format!("`{other}` after a sed command")),
        }
    }
    Ok(())
}

fn digits(c: &[char], i: &mut usize) {
    while *i < c.len() && c[*i].is_ascii_digit() {
        *i += 1;
    }
}

/// An address, if one starts at `i`: a line number (`first~step` too), `$`, `/re/` or
/// `\%re%`, with the flags `I` and `M`.
fn address(c: &[char], i: &mut usize) -> Result<bool, String> {
    match c.get(*i) {
        Some(d) if d.is_ascii_digit() => {
            digits(c, i);
            if c.get(*i) == Some(&'~') {
                *i += 1;
                digits(c, i);
            }
            Ok(true)
        }
        Some('$') => {
            *i += 1;
            Ok(true)
        }
        Some('/') => {
            *i += 1;
            regex(c, i, '/')?;
            while matches!(c.get(*i), Some('I' | 'M')) {
                *i += 1;
            }
            Ok(true)
        }
        Some('\\') => {
            let delim = delimiter(c, *i + 1)?;
            *i += 2;
            regex(c, i, delim)?;
            while matches!(c.get(*i), Some('I' | 'M')) {
                *i += 1;
            }
            Ok(true)
        }
        _ => Ok(false),
    }
}

fn delimiter(c: &[char], i: usize) -> Result<char, String> {
    match c.get(i) {
        Some('\n' | '\\') | None => Err("a sed command without its delimiter".into()),
        Some(&d) => Ok(d),
    }
}

/// A regular expression up to its delimiter (taken). A backslash takes the next character.
/// A bracket expression that holds the delimiter, a backslash or a newline, or that does
/// not end, is asked: sed and this reader could end the expression in different places.
fn regex(c: &[char], i: &mut usize, delim: char) -> Result<(), String> {
    while let Some(&ch) = c.get(*i) {
        *i += 1;
        if ch == delim {
            return Ok(());
        }
        match ch {
            '\\' => {
                if *i >= c.len() {
                    break;
                }
                *i += 1;
            }
            '[' => {
                let mut j = *i;
                if c.get(j) == Some(&'^') {
                    j += 1;
                }
                if c.get(j) == Some(&']') {
                    j += 1;
                }
                loop {
                    match c.get(j) {
                        None => return Err("a bracket expression that does not end".into()),
                        Some(&x) if x == delim || x == '\\' || x == '\n' => {
                            return Err("a delimiter, backslash or newline inside `[...]`".into())
                        }
                        Some('[') if matches!(c.get(j + 1), Some(':' | '.' | '=')) => {
                            let kind = c[j + 1];
                            j += 2;
                            while j < c.len() && !(c[j] == kind && c.get(j + 1) == Some(&']')) {
                                if c[j] == delim || c[j] == '\\' || c[j] == '\n' {
                                    return Err(
                                        "a delimiter, backslash or newline inside `[...]`".into()
                                    );
                                }
                                j += 1;
                            }
                            j += 2;
                        }
                        Some(']') => break,
                        Some(_) => j += 1,
                    }
                }
                *i = j + 1;
            }
            '\n' => return Err("a newline inside a regular expression".into()),
            _ => {}
        }
    }
    Err("a regular expression without its closing delimiter".into())
}

/// A replacement (or `y`'s lists) up to its delimiter (taken); a backslash takes the next
/// character.
fn replacement(c: &[char], i: &mut usize, delim: char) -> Result<(), String> {
    while let Some(&ch) = c.get(*i) {
        *i += 1;
        if ch == delim {
            return Ok(());
        }
        if ch == '\\' {
            *i += 1;
        }
    }
    Err("a sed command without its closing delimiter".into())
}

const AWK: &[&str] = &["-F|--field-separator=", "-v|--assign=", "-f|--file="];

/// What an awk program may not hold, anywhere.
const AWK_NEVER: &[&str] = &[
    "system", "getline", "|", ">", "@", "ARGV", "ARGC", "SYMTAB", "FUNCTAB",
];

/// `awk`: its program read ([`AWK_NEVER`]); its files read; `NAME=VALUE` operands are
/// assignments.
pub(super) fn awk(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let (met, ops) = options(w, 1, AWK, false, e)?;
    if let Some(m) = met.iter().find(|m| m.name == "-f" || m.name == "--file") {
        return Err(stop(m.at, "an awk program from a file"));
    }
    for m in met
        .iter()
        .filter(|m| m.name == "-v" || m.name == "--assign")
    {
        let name = m
            .value
            .as_deref()
            .and_then(|v| v.split_once('='))
            .map(|(n, _)| n);
        if name.is_none_or(|n| n.starts_with("ARG")) {
            return Err(stop(
                m.value_at(w),
                "an awk assignment of ARGV or ARGC, or none",
            ));
        }
    }
    let Some((&program, files)) = ops.split_first() else {
        return Err(stop(w.len() - 1, "awk without a program"));
    };
    if let Some(k) = AWK_NEVER.iter().find(|k| w[program].contains(*k)) {
        return Err(stop(
            program,
            format!("an awk program with `{k}` (it may run a program, or read or write a file it names)"),
        ));
    }
    for &i in files {
        let word = &w[i];
        let assignment = word.split_once('=').is_some_and(|(n, _)| {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !n.starts_with(|c: char| c.is_ascii_digit())
        });
        if assignment {
            if word.starts_with("ARG") {
                return Err(stop(i, "an awk assignment of ARGV or ARGC"));
            }
            continue;
        }
        // gawk opens `/inet/tcp/…`, `/inet4/…`, `/inet6/…` as network connections.
        if word.starts_with("/inet") {
            return Err(stop(
                i,
                "an awk input that gawk opens as a network connection",
            ));
        }
        e.paths.push((Access::Read, word.clone()));
    }
    Ok(())
}
