//! A runner's words read as getopt (or its own reader) reads them: its options with their
//! values, then the command it runs.

use super::*;

/// A wrapper's words read as it reads them.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    /// Each option given (`-c`; a long one by its whole name, `--command`), with its values.
    pub(super) options: Vec<(String, Vec<String>)>,
    /// The words after its options: its operands, then what it runs (a [`Syntax::Permuted`]
    /// program's operands, in order).
    pub(super) rest: Vec<String>,
    /// Why its words could not be read as it reads them.
    pub(super) unclear: Option<String>,
}

impl Parsed {
    pub(super) fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|(n, _)| names.contains(&n.as_str()))
    }
}

/// How many values an option takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Arity {
    None,
    /// Joined only (`-c10`, `--nofile=10`).
    Optional,
    /// This many, the first joined or apart, the others apart.
    Values(usize),
}

/// A long option's spec (`name`, `name=`, `name==`, `name=?`): its name and arity.
pub(super) fn spec(entry: &str) -> (&str, Arity) {
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
pub(super) fn short_arity(optstring: &str, c: char) -> Option<Arity> {
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
pub(super) fn long_option(w: &Wrapper, given: &str) -> Result<(&'static str, Arity), String> {
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
pub(super) fn numeric(word: &str) -> bool {
    let b = word.as_bytes();
    let at = 1 + usize::from(matches!(b.get(1), Some(b'-' | b'+')));
    b.first() == Some(&b'-') && b.get(at).is_some_and(u8::is_ascii_digit)
}

/// `args` (the words after the program) read as wrapper `w` reads them.
pub(super) fn parse(w: &Wrapper, args: &[String]) -> Parsed {
    let mut out = Parsed::default();
    pub(super) fn unclear(out: &mut Parsed, why: String) {
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
                // `BASH_ENV=x`, `ENV=x`, `ZDOTDIR=z` make a shell run a file, `LD_PRELOAD`
                // load one (a sixtieth review): only the variables a command may be given
                // before it are read.
                if !crate::policy::shell::harmless_assignment(a) {
                    unclear(
                        &mut out,
                        format!("`{a}`, a variable that may change what runs"),
                    );
                }
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
