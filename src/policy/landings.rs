//! One copy, move or link whose operands change each other: GNU `cp`, `mv` and `ln` take
//! their sources in order, so what an earlier source lands is there when a later one is
//! opened ([`source_beneath_a_landing`]). Paths are resolved by the caller's resolver (as
//! the OS would, `~` from the caller's home); whether a source is there now is asked of the
//! OS itself ([`is_there`]).

use std::path::{Path, PathBuf};

use super::args::{self, Reading};

/// Why one copy, move or link may go through what it has just made: GNU `cp`, `mv` and
/// `ln` take their sources in order, so a source at or beneath where another of them lands
/// (`cp -r a/b/s out/s/x/l/key out/`: `a/b/s` lands a link at `out/s/x/l`, and the key is
/// then read through it), or two sources that land at or beneath each other (`cp -r a/x
/// b/x out/`: both land at `out/x`, and a link the first lands there takes the second's
/// file elsewhere), is not what the policy resolved; nor is a source that goes through a
/// landing and back out (`cp -r a/x out/x/../.env out/`: `out/x` is the link `a/x` lands).
/// Nor is a source that is not there now (a link through a name another source lands).
/// Compared as the OS resolves them, from each folder the command may run in. Each name
/// the OS would look at takes one of the decision's steps (`step`: `false` once spent, and
/// the command is then asked).
pub(super) fn source_beneath_a_landing(
    words: &[String],
    folders: &[PathBuf],
    home: Option<&Path>,
    resolve: &dyn Fn(&Path, &Path) -> Option<PathBuf>,
    step: &dyn Fn() -> bool,
) -> Option<String> {
    let Reading::Understood(e) = args::read(words) else {
        return None;
    };
    if e.lands.len() < 2 {
        return None;
    }
    for cwd in folders {
        // A source that is not there now, as the OS walks it (a link followed, and a `..`
        // after a name that does not exist failing as it does, never cancelled), can only
        // be there when the command reaches it if an earlier source made it: a link
        // `s -> out/dd/lnk/../../.env`, with `out/dd/lnk` landed by the first source.
        if let Some((source, _)) = e.lands.iter().find(|(s, _)| !is_there(s, cwd, home)) {
            return Some(format!(
                "`{source}` is not there now as the OS walks it: only another source of the same command could make it"
            ));
        }
        let at = |w: &str| resolve(Path::new(w), cwd);
        let mut landed = Vec::with_capacity(e.lands.len());
        // Each landing's own name, its folder resolved: a link there is replaced, not
        // followed (`mv`, `cp -P --remove-destination`, `ln -f`).
        let mut named = Vec::with_capacity(e.lands.len());
        for (_, landing) in &e.lands {
            let name = match (Path::new(landing).parent(), Path::new(landing).file_name()) {
                (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => {
                    resolve(dir, cwd).map(|d| d.join(name))
                }
                (Some(_), Some(name)) => resolve(Path::new("."), cwd).map(|d| d.join(name)),
                _ => at(landing),
            };
            match (at(landing), name) {
                (Some(l), Some(n)) => {
                    landed.push(l);
                    named.push(n);
                }
                _ => return Some(format!("where `{landing}` lands cannot be resolved")),
            }
        }
        // Every link each source goes through now, where it is: an earlier source landing
        // there replaces it (`mv a/x q/.env out/` with `q -> out/x/../.`, `out/x` a link:
        // `a/x` put in its place takes `q` elsewhere).
        let mut passed = Vec::with_capacity(e.lands.len());
        for (source, _) in &e.lands {
            match links_passed(source, cwd, home, step) {
                Some(links) => passed.push(links),
                None => {
                    return Some(format!(
                        "`{source}` goes through more links than the OS follows, or more than the decision may look at"
                    ))
                }
            }
        }
        for (i, landing) in landed.iter().enumerate() {
            for (j, (source, _)) in e.lands.iter().enumerate() {
                if i == j {
                    continue;
                }
                let replaced = |l: &&PathBuf| l.starts_with(landing) || l.starts_with(&named[i]);
                if let Some(link) = passed[j].iter().find(replaced) {
                    return Some(format!(
                        "`{source}` goes through the link {}, at or beneath {}, where another source of the same command lands first",
                        link.display(),
                        landing.display()
                    ));
                }
                // Each leading part as written, before a `..` after it is applied: the
                // OS walks `out/x/../.env` through what `out/x` is once another source
                // landed there.
                let mut through = leading_parts(source).map(|w| at(&w));
                if through.any(|s| s.is_none_or(|s| s.starts_with(landing))) {
                    return Some(format!(
                        "`{source}` is at or beneath {}, where another source of the same command lands first",
                        landing.display()
                    ));
                }
                if landed[j].starts_with(landing) {
                    return Some(format!(
                        "two of its sources land at or beneath {}: what the first lands there (a link) takes the second elsewhere",
                        landing.display()
                    ));
                }
            }
        }
    }
    None
}

/// Each leading part of path word `w`, as written (`out/x/../.env`: `out`, `out/x`,
/// `out/x/..`, `out/x/../.env`).
fn leading_parts(w: &str) -> impl Iterator<Item = String> + '_ {
    let ends = w
        .char_indices()
        .filter(|&(i, c)| c == '/' && i > 0)
        .map(|(i, _)| i)
        .chain(std::iter::once(w.len()));
    ends.map(|e| w[..e].to_owned())
}

/// Where source word `w` is, from `cwd` (`~/` from `home`).
fn joined(w: &str, cwd: &Path, home: Option<&Path>) -> Option<PathBuf> {
    match (w.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => Some(home.join(rest)),
        (Some(_), None) => None,
        (None, _) => Some(cwd.join(w)),
    }
}

/// The most links the kernel follows in one path (`ELOOP` past it).
const MOST_LINKS: usize = 40;

/// Every link the OS goes through to reach source word `w` now, each where it is (its own
/// name, the folders above it resolved), the source itself included when it is one; `None`
/// past [`MOST_LINKS`], with no home for `~/`, or once `step` says the decision's work is
/// spent. A `..` goes up from where the walk has got to, as in the kernel; a name that is
/// not there ends nothing (what is beneath it is not there either).
fn links_passed(
    w: &str,
    cwd: &Path,
    home: Option<&Path>,
    step: &dyn Fn() -> bool,
) -> Option<Vec<PathBuf>> {
    use std::collections::VecDeque;
    use std::path::Component;
    let start = joined(w, cwd, home)?;
    let owned = |p: &Path| -> Vec<std::ffi::OsString> {
        p.components().map(|c| c.as_os_str().to_owned()).collect()
    };
    let mut todo: VecDeque<std::ffi::OsString> = owned(&start).into();
    let mut at = PathBuf::from("/");
    let mut links = Vec::new();
    while let Some(part) = todo.pop_front() {
        match Path::new(&part).components().next() {
            Some(Component::RootDir) => at = PathBuf::from("/"),
            Some(Component::ParentDir) => {
                at.pop();
            }
            Some(Component::Normal(name)) => {
                if !step() {
                    return None;
                }
                let next = at.join(name);
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        if links.len() == MOST_LINKS {
                            return None;
                        }
                        let target = std::fs::read_link(&next).ok()?;
                        links.push(next);
                        for c in owned(&target).into_iter().rev() {
                            todo.push_front(c);
                        }
                    }
                    _ => at = next,
                }
            }
            _ => {}
        }
    }
    Some(links)
}

/// Whether source word `w` is there now, from `cwd` (`~/` from `home`), as the OS walks it:
/// itself, and what it leads to if it is a link.
fn is_there(w: &str, cwd: &Path, home: Option<&Path>) -> bool {
    joined(w, cwd, home)
        .is_some_and(|p| std::fs::symlink_metadata(&p).is_ok() && std::fs::metadata(&p).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_is_walked_only_while_the_decision_has_work_left() {
        let d = std::env::temp_dir().join(format!("landings-steps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for f in ["a/x", "b/y"] {
            std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            std::fs::write(d.join(f), "x").unwrap();
        }
        std::fs::create_dir_all(d.join("out")).unwrap();
        let d = std::fs::canonicalize(&d).unwrap();
        let words: Vec<String> = ["cp", "a/x", "b/y", "out/"].map(String::from).into();
        let resolve =
            |p: &Path, c: &Path| Some(std::fs::canonicalize(c.join(p)).unwrap_or(c.join(p)));
        let folders = [d.clone()];
        assert_eq!(
            source_beneath_a_landing(&words, &folders, None, &resolve, &|| true),
            None
        );
        let spent = source_beneath_a_landing(&words, &folders, None, &resolve, &|| false);
        assert!(
            spent
                .as_deref()
                .is_some_and(|w| w.contains("more than the decision may look at")),
            "{spent:?}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
