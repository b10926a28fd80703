//! The generator's parts: a seeded PRNG, the options read from a program's own `--help`,
//! how an option is written (alone, its value joined or apart, `=`, clustered, abbreviated),
//! and the pools of values, hostile ones among them.
//!
//! A word may hold `{OUT}` (the outside folder's absolute path), `{BOX}` or `{HOME}`: each
//! scratch fills them in ([`super::sandbox::Scratch::expand`]).

use std::collections::BTreeSet;

/// A small deterministic PRNG (SplitMix64): the same seed, the same commands.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len())]
    }

    /// `from` a word chosen among `pool`, as an owned string.
    pub fn word(&mut self, pool: &[&str]) -> String {
        (*self.pick(pool)).to_owned()
    }
}

/// What an option takes, as its help says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Takes {
    Nothing,
    /// A value (its help's name for it, upper case: `FILE`, `NUM`, `<PATH>`).
    Value(String),
    /// A value joined to it only, or none (`--color[=WHEN]`, `-i[SUFFIX]`).
    Optional(String),
}

/// One option of a program's help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    pub name: String,
    pub takes: Takes,
}

/// The options a help text lists: on every line that starts with `-` (after blanks), the
/// options before the description (two blanks), each with what it takes (`=X`, `[=X]`,
/// `[X]`, ` X`, ` <x>`); elsewhere, options followed by an upper-case value (find's
/// `-newer FILE`). `--[no-]x` gives `--x` and `--no-x`.
pub fn parse_help(text: &str) -> Vec<Opt> {
    let mut out: Vec<Opt> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut add = |name: String, takes: Takes, out: &mut Vec<Opt>| {
        if name.len() < 2 || name == "--" || !seen.insert(name.clone()) {
            return;
        }
        out.push(Opt { name, takes });
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        let option_line = trimmed.starts_with('-');
        let head = if option_line {
            match trimmed.find("  ").or_else(|| trimmed.find('\t')) {
                Some(i) => &trimmed[..i],
                None => trimmed,
            }
        } else {
            trimmed
        };
        let mut group: Vec<(String, Takes)> = Vec::new();
        let b = head.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let at_start = i == 0 || matches!(b[i - 1], b' ' | b',' | b'[' | b'|' | b'(');
            if !(b[i] == b'-' && at_start) {
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            if b.get(i) == Some(&b'-') {
                i += 1;
            }
            let negatable = head[i..].starts_with("[no-]");
            if negatable {
                i += 5;
            }
            let name_start = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'-' | b'_' | b'.' | b'?'))
            {
                i += 1;
            }
            if i == name_start || !b[name_start].is_ascii_alphanumeric() && b[name_start] != b'?' {
                continue;
            }
            let dashes = &head[start..name_start.min(start + 2)];
            let dashes = if dashes.starts_with("--") { "--" } else { "-" };
            let base = &head[name_start..i];
            let rest = &head[i..];
            let value_name = |s: &str| -> String {
                s.chars()
                    .take_while(|c| !matches!(c, ']' | ' ' | ',' | ')'))
                    .collect()
            };
            let takes = if let Some(r) = rest.strip_prefix("[=") {
                Takes::Optional(value_name(r))
            } else if let Some(r) = rest.strip_prefix('=') {
                Takes::Value(value_name(r))
            } else if rest.starts_with('[') && !rest.starts_with("[-") && !rest.starts_with("[no") {
                Takes::Optional(value_name(&rest[1..]))
            } else if let Some(r) = rest.strip_prefix(' ') {
                let v = value_name(r);
                let upper = v
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_uppercase() || c == '<');
                if !v.is_empty() && !v.starts_with('-') && (upper || (option_line && v != "or")) {
                    Takes::Value(v)
                } else {
                    Takes::Nothing
                }
            } else {
                Takes::Nothing
            };
            if !option_line && matches!(takes, Takes::Nothing) && dashes == "-" && base.len() > 1 {
                // A word like `-newer` in running text: kept only with its value.
                group.push((format!("{dashes}{base}"), takes));
                continue;
            }
            group.push((format!("{dashes}{base}"), takes.clone()));
            if negatable {
                group.push((format!("--no-{base}"), Takes::Nothing));
            }
        }
        // Options written together (`-e script, --expression=script`) take the same.
        let shared = group
            .iter()
            .find(|(_, t)| !matches!(t, Takes::Nothing))
            .map(|(_, t)| t.clone());
        for (name, takes) in group {
            let takes = match (&takes, &shared) {
                (Takes::Nothing, Some(t)) if option_line && !name.starts_with("--no-") => t.clone(),
                _ => takes,
            };
            add(name, takes, &mut out);
        }
    }
    out
}

/// Values by the name a help gives them.
pub fn value_for(rng: &mut Rng, hint: &str) -> String {
    let h = hint.to_ascii_uppercase();
    if rng.chance(12) {
        return rng.word(HOSTILE_VALUES);
    }
    if [
        "FILE",
        "PATH",
        "DIR",
        "ARCHIVE",
        "NAME-FILE",
        "LIST",
        "SCRIPT-FILE",
        "PROGRAM-FILE",
        "FOLDER",
    ]
    .iter()
    .any(|k| h.contains(k))
    {
        return match rng.below(4) {
            // Files that name the secret inside them: a list of files, a configuration.
            0 => rng.word(NAMING_FILES),
            1 => path_write(rng),
            _ => path_read(rng),
        };
    }
    if ["COMMAND", "PROG", "CMD", "SCRIPT", "PAGER", "EDITOR"]
        .iter()
        .any(|k| h.contains(k))
    {
        return rng.word(COMMANDS);
    }
    if [
        "NUM", "N", "LINES", "BYTES", "SIZE", "LEVEL", "DEPTH", "COUNT", "BLOCKS", "INT",
    ]
    .iter()
    .any(|k| h == *k || h.contains(k))
    {
        return rng.word(NUMBERS);
    }
    rng.word(PLAIN_VALUES)
}

/// Writes `opt` the ways its program may read it; `value` gives a value for a hint.
pub fn render(
    rng: &mut Rng,
    opt: &Opt,
    all: &[Opt],
    value: &mut dyn FnMut(&mut Rng, &str) -> String,
) -> Vec<String> {
    let long = opt.name.starts_with("--");
    let name = if long && rng.chance(10) {
        abbreviate(rng, &opt.name, all)
    } else {
        opt.name.clone()
    };
    match &opt.takes {
        Takes::Nothing => {
            if rng.chance(4) {
                vec![format!("{name}={}", rng.word(PLAIN_VALUES))]
            } else if !long && name.len() == 2 && rng.chance(30) {
                // A cluster of options that take nothing, maybe ending with one that takes.
                let mut w = name.clone();
                for _ in 0..=rng.below(2) {
                    let o = rng.pick(all);
                    if o.name.len() == 2 && !o.name.starts_with("--") {
                        w.push_str(&o.name[1..]);
                        if !matches!(o.takes, Takes::Nothing) {
                            let hint = match &o.takes {
                                Takes::Value(h) | Takes::Optional(h) => h.clone(),
                                Takes::Nothing => String::new(),
                            };
                            let v = value(rng, &hint);
                            if rng.chance(50) {
                                w.push_str(&v);
                                return vec![w];
                            }
                            return vec![w, v];
                        }
                    }
                }
                vec![w]
            } else {
                vec![name]
            }
        }
        Takes::Value(hint) => {
            let v = value(rng, hint);
            match (long, rng.below(3)) {
                (true, 0) => vec![format!("{name}={v}")],
                (false, 0) => vec![format!("{name}{v}")],
                _ => vec![name, v],
            }
        }
        Takes::Optional(hint) => match rng.below(3) {
            0 => vec![name],
            1 if long => vec![format!("{name}={}", value(rng, hint))],
            1 => vec![format!("{name}{}", value(rng, hint))],
            _ => vec![name, value(rng, hint)],
        },
    }
}

/// A prefix of a long option: unique among `all` or not.
fn abbreviate(rng: &mut Rng, name: &str, all: &[Opt]) -> String {
    let body = &name[2..];
    if body.len() < 3 {
        return name.to_owned();
    }
    let len = 1 + rng.below(body.len() - 1);
    let prefix = format!("--{}", &body[..len]);
    if rng.chance(50) {
        return prefix;
    }
    // The shortest unique one, if any.
    for l in 1..body.len() {
        let p = format!("--{}", &body[..l]);
        if all.iter().filter(|o| o.name.starts_with(&p)).count() == 1 {
            return p;
        }
    }
    prefix
}

/// Puts `options` (groups of words) among `operands`, in random places, maybe with `--`
/// before an operand (after which an option is an operand).
pub fn mix(rng: &mut Rng, options: Vec<Vec<String>>, operands: Vec<String>) -> Vec<String> {
    let mut out: Vec<Vec<String>> = operands.into_iter().map(|o| vec![o]).collect();
    let n_operands = out.len();
    for o in options {
        let at = if rng.chance(70) {
            rng.below(1 + out.len().min(1 + n_operands / 2))
        } else {
            rng.below(out.len() + 1)
        };
        out.insert(at.min(out.len()), o);
    }
    if rng.chance(12) {
        let at = rng.below(out.len() + 1);
        out.insert(at, vec!["--".into()]);
    }
    out.into_iter().flatten().collect()
}

/// Paths a command may read: inside, through links out of the folder, outside it.
pub const READ_PATHS: &[&str] = &[
    "a.txt",
    "b.txt",
    "sub/c.txt",
    "sub",
    ".",
    "./a.txt",
    "sub/../a.txt",
    "data.json",
    "a.tar",
    "a.tar.gz",
    "Makefile",
    "test_a.py",
    "missing.txt",
    "-",
    "/dev/null",
    "link",
    "link/",
    "link/secret",
    "link/dir",
    "sec",
    "abs",
    "sub/up",
    "sub/up/secret",
    "sub/up/../outside/secret",
    "../outside/secret",
    "../outside",
    "{OUT}/secret",
    "{OUT}",
    "{OUT}/dir",
    "/proc/self/cwd/a.txt",
    "/proc/self/cwd/../outside/secret",
    "/proc/self/root{OUT}/secret",
    "/proc/self/environ",
    "/etc/hostname",
    "{HOME}/.gitconfig",
    ".git/config",
    "list0",
    "list",
    "opts.list",
    "inc.cfg",
    ".env",
];

/// Paths a command may write: inside, through links out, outside, the policy's own kinds.
pub const WRITE_PATHS: &[&str] = &[
    "out.txt",
    "new/x",
    "sub/new.txt",
    "a.txt",
    "b.txt",
    "sub",
    "newdir",
    "./o",
    "sub/../o2",
    "link/pwned",
    "link",
    "sec",
    "abs",
    "sub/up/pwned",
    "../outside/pwned",
    "{OUT}/pwned",
    "{OUT}",
    "../pwned",
    ".git/config",
    ".git/hooks/pre-commit",
    ".bashrc",
    "-",
    "/dev/null",
    "/dev/stdout",
    "/proc/self/cwd/o3",
    "/proc/self/cwd/../outside/pwned",
    "{HOME}/.bashrc",
];

/// Files whose content names the secret: `list0` (NUL-separated, for `--files0-from`),
/// `list` (lines, for `tar -T`), `opts.list` (`--directory=` the outside folder, then
/// `secret`), `inc.cfg` (a git configuration that includes it).
pub const NAMING_FILES: &[&str] = &["list0", "list", "opts.list", "inc.cfg"];

pub fn path_read(rng: &mut Rng) -> String {
    rng.word(READ_PATHS)
}

pub fn path_write(rng: &mut Rng) -> String {
    rng.word(WRITE_PATHS)
}

/// Commands a value may name.
pub const COMMANDS: &[&str] = &[
    "id",
    "touch pwned",
    "sh -c id",
    "/bin/sh",
    "gpg",
    "./x",
    "true",
];

pub const NUMBERS: &[&str] = &["1", "2", "0", "5", "-1", "+1", "10k", "1M", "3x", "007"];

/// Values that name nothing in particular.
pub const PLAIN_VALUES: &[&str] = &[
    "x", "a", "auto", "never", "always", "all", "none", "1", "y", "short", "%s", "oneline",
    "default", "no", "yes", "utf-8", "plain", "sorted", "main", "HEAD", "test",
];

/// Values that may make a program do more: a program to run, a file elsewhere, an option.
pub const HOSTILE_VALUES: &[&str] = &[
    "id",
    "sh -c id",
    "!id",
    "|id",
    "$(id)",
    "--help",
    "-",
    "--",
    "{OUT}/secret",
    "../outside/pwned",
    "sec",
    "link/x",
    "/proc/self/environ",
    "exec=id",
    "x=y",
    "%G?",
    "%(signature)",
    "",
    "-o",
    "-u",
    "=",
];
