//! The patterns of a plain command (`wc -l src/*.rs`: [`super::shell::Part::globs`]) put in
//! place by the names they match, as the shell would, before the command is decided
//! (docs/POLICY.md, "Patterns").
//!
//! Invariants:
//! - A superset of what bash and dash match, whatever options the user's shell sets: a
//!   `*` or `?` matches a leading `.` (`dotglob`), letters in either case (`nocaseglob`).
//!   The names the shell gives the program are among those the policy decided on, in the
//!   same place of the command; more, at most, if the folder gained some since.
//! - A pattern that matches nothing, one in a part after a `cd`, one whose folder cannot
//!   be listed, or a name that is not UTF-8, is not expanded: the command is not plain
//!   (`nullglob` and `failglob` would change the words otherwise).
//! - Bounded: a folder of more than [`MAX_LISTED`] entries, or more names in one command
//!   than its [`Bound`] (the paths one command may name, `super::named::MAX_NAMED`), is not
//!   expanded; each entry listed is a step of the decision's work (`super::path`).

use std::path::Path;

use super::shell::Part;

/// The most entries of one pattern's folder looked at.
pub const MAX_LISTED: usize = 4096;

/// How much one command's patterns may cost: `names` in all, and `step` taken for each
/// entry of a folder listed (`false`: the decision's work is spent).
pub struct Bound<'a> {
    pub names: usize,
    pub step: &'a mut dyn FnMut() -> bool,
}

/// `parts` with each pattern put in place by the names it matches from `cwd`, sorted
/// ([`Part::globs`] then says which words are names put in place), or why they cannot be.
pub fn expand(parts: &[Part], cwd: &Path, bound: &mut Bound) -> Result<Vec<Part>, String> {
    let mut total = 0;
    let mut out = Vec::with_capacity(parts.len());
    let mut moved = false;
    for part in parts {
        if part.globs.is_empty() {
            moved |= matches!(part.words[0].as_str(), "cd" | "chdir" | "pushd" | "popd");
            out.push(part.clone());
            continue;
        }
        if moved {
            return Err(
                "a pattern after a `cd`: the folder it is matched in cannot be told".into(),
            );
        }
        let mut words = Vec::with_capacity(part.words.len());
        let mut globs = Vec::new();
        for (i, word) in part.words.iter().enumerate() {
            if !part.globs.contains(&i) {
                words.push(word.clone());
                continue;
            }
            let names = matches(word, cwd, bound.step)?;
            total += names.len();
            if total > bound.names {
                return Err(format!(
                    "patterns that match more than {} names",
                    bound.names
                ));
            }
            for name in names {
                globs.push(words.len());
                words.push(name);
            }
        }
        out.push(Part {
            words,
            globs,
            ..part.clone()
        });
    }
    Ok(out)
}

/// The words `pattern` expands to from `cwd`: its folder as written, then each matching
/// name of that folder, sorted.
fn matches(
    pattern: &str,
    cwd: &Path,
    step: &mut dyn FnMut() -> bool,
) -> Result<Vec<String>, String> {
    let (folder, last) = pattern
        .rsplit_once('/')
        .ok_or_else(|| format!("the pattern {pattern} names no folder"))?;
    let dir = if folder.is_empty() {
        Path::new("/").to_path_buf()
    } else {
        cwd.join(folder)
    };
    let list = std::fs::read_dir(&dir)
        .map_err(|e| format!("the folder of the pattern {pattern} cannot be listed: {e}"))?;
    let mut names = Vec::new();
    for (n, entry) in list.enumerate() {
        if n >= MAX_LISTED || !step() {
            return Err(format!(
                "the folder of the pattern {pattern} holds more than can be listed"
            ));
        }
        let entry = entry.map_err(|e| format!("the folder of {pattern}: {e}"))?;
        let name = entry.file_name();
        let name = name
            .to_str()
            .ok_or_else(|| format!("a name that is not UTF-8 matched by {pattern}"))?;
        if fits(last, name) {
            names.push(format!("{folder}/{name}"));
        }
    }
    if names.is_empty() {
        return Err(format!("the pattern {pattern} matches nothing"));
    }
    names.sort();
    Ok(names)
}

/// Whether `name` may be matched by `pattern` (`*` any characters, `?` one), letters in
/// either case, a leading `.` included.
fn fits(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let same = |a: char, b: char| a == b || a.to_lowercase().eq(b.to_lowercase());
    // The classic walk with one point to return to after a `*`: linear in practice.
    let (mut i, mut j) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || (p[i] != '*' && same(p[i], n[j]))) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            back = Some((i, j));
            i += 1;
        } else if let Some((bi, bj)) = back {
            i = bi + 1;
            j = bj + 1;
            back = Some((bi, bj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_fits_names_as_the_shell_matches_them_and_more() {
        for (p, n) in [
            ("*.rs", "main.rs"),
            ("*.rs", ".hidden.rs"),
            ("*.RS", "lib.rs"),
            ("?.txt", "a.txt"),
            ("a*b*c", "aXbYc"),
            ("*", "x"),
            ("*a", "aaa"),
        ] {
            assert!(fits(p, n), "{p} should fit {n}");
        }
        for (p, n) in [("*.rs", "main.rs.bak"), ("?.txt", "ab.txt"), ("a*b", "ac")] {
            assert!(!fits(p, n), "{p} should not fit {n}");
        }
    }

    #[test]
    fn only_a_pattern_after_a_folder_written_out_is_read_as_one() {
        use crate::policy::shell::glob_word;
        for w in ["src/*.rs", "./?.txt", "/etc/*.conf", "a/b/c*", "src/x*y?z"] {
            assert!(glob_word(w), "{w} is a pattern");
        }
        for w in [
            "*.rs",
            "-x/*.rs",
            "src/**/x",
            "src/**",
            "src/*/x.rs",
            "~/x/*",
            "src/[ab].rs",
            "src/",
            "src/a.rs",
            "x=~/a/*",
        ] {
            assert!(!glob_word(w), "{w} is not a pattern read");
        }
        let c = crate::policy::command::parse("wc -l src/*.rs 'src/*.txt' && ls");
        let parts = c.parts().expect("plain");
        assert_eq!(parts[0].words, ["wc", "-l", "src/*.rs", "src/*.txt"]);
        assert_eq!(parts[0].globs, [2], "a quoted pattern is a word as it is");
        assert!(parts[1].globs.is_empty());
        for line in ["wc -l *.rs", "cat src/**/x.rs", "src/*.sh"] {
            let c = crate::policy::command::parse(line);
            assert!(c.parts().is_none(), "{line} is not plain");
        }
    }
}
