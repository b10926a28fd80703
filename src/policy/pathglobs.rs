//! What a rule's path patterns cover: each pattern a glob with the policy's options (`*`
//! within one component, a deny's and an ask's in either case), an absolute one matched
//! against the absolute path, a relative one against the path inside the session's folder;
//! `dir/**` covers `dir` too for a deny or ask; where each pattern's literal part ends, for
//! what it could reach beneath a folder. Paths are resolved before ([`super::path`]).

use std::path::{Path, PathBuf};

/// A rule's path patterns: an absolute pattern is matched against the absolute path, a
/// relative one only against a path inside the session's folder, relative to it
/// ([`PathGlobs::new`]).
#[derive(Debug, Clone)]
pub struct PathGlobs {
    pub absolute: globset::GlobSet,
    pub relative: globset::GlobSet,
    /// The folders of the `dir/**` patterns, themselves (covered by a deny or ask).
    pub dirs_absolute: globset::GlobSet,
    pub dirs_relative: globset::GlobSet,
    /// The globs of the four sets above, in that order (for a tier's index: [`super::tier`]).
    pub each: [Vec<globset::Glob>; 4],
    /// A relative `**`: its folder itself is the session's.
    pub session_folder: bool,
    /// Where each pattern's literal part ends ([`PathGlobs::reaches_beneath`]).
    pub starts: Vec<GlobStart>,
    /// Letters match in either case (a deny's or an ask's patterns).
    pub fold: bool,
}

/// Where a path pattern's literal part ends: the components before the first with a glob
/// character in it.
#[derive(Debug, Clone)]
pub struct GlobStart {
    /// Absolute (`/etc/**`), or relative to the session's folder.
    pub absolute: bool,
    pub literal: PathBuf,
    /// Whether the pattern goes on past `literal` with a glob character.
    pub wild: bool,
    /// Whether the pattern is `literal/**`: the folder and everything beneath it.
    pub whole: bool,
}

/// A glob with the policy's options: `*` stays within one component, `./` is the session's
/// folder.
fn glob(pattern: &str, fold: bool) -> Result<globset::Glob, String> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(fold)
        .build()
        .map_err(|e| format!("paths {pattern:?}: {e}"))
}

impl PathGlobs {
    /// The globs of a rule's `paths`: absolute ones and ones relative to the session's
    /// folder; for each `dir/**`, also `dir` itself (for a deny or ask rule); and where each
    /// one's literal part ends. `fold` (a deny's or an ask's): in either case, as a file
    /// system that ignores case (macOS's) opens `.ENV` for `.env`.
    pub fn new(patterns: &[String], fold: bool) -> Result<PathGlobs, String> {
        let mut each: [Vec<globset::Glob>; 4] = Default::default();
        let mut session_folder = false;
        let mut starts = Vec::new();
        for p in patterns {
            let is_abs = p.starts_with('/');
            let pat = if is_abs {
                p.as_str()
            } else {
                p.trim_start_matches("./")
            };
            let g = glob(pat, fold)?;
            let dir = pat.strip_suffix("/**");
            if is_abs {
                each[0].push(g);
                if let Some(d) = dir {
                    each[2].push(glob(if d.is_empty() { "/" } else { d }, fold)?);
                }
            } else {
                each[1].push(g);
                match dir {
                    Some(d) if !d.is_empty() => {
                        each[3].push(glob(d, fold)?);
                    }
                    _ if pat == "**" => session_folder = true,
                    _ => {}
                }
            }
            let mut literal = PathBuf::new();
            let mut wild = false;
            for c in pat.split('/') {
                if c.contains(['*', '?', '[', '{', '\\']) {
                    wild = true;
                    break;
                }
                literal.push(
                    if c.is_empty() && literal.as_os_str().is_empty() && is_abs {
                        "/"
                    } else {
                        c
                    },
                );
            }
            let whole = dir.is_some_and(|d| !d.contains(['*', '?', '[', '{', '\\']));
            starts.push(GlobStart {
                absolute: is_abs,
                literal,
                wild,
                whole,
            });
        }
        let built = |k: usize| {
            let mut b = globset::GlobSetBuilder::new();
            for g in &each[k] {
                b.add(g.clone());
            }
            b.build().map_err(|e| format!("paths: {e}"))
        };
        Ok(PathGlobs {
            absolute: built(0)?,
            relative: built(1)?,
            dirs_absolute: built(2)?,
            dirs_relative: built(3)?,
            each,
            session_folder,
            starts,
            fold,
        })
    }

    /// Whether resolved path `p` is one of the patterns' (relative ones only inside `cwd`);
    /// with `dirs`, a `dir/**` also covers `dir` itself.
    pub fn covers(&self, p: &Path, cwd: &Path, dirs: bool) -> bool {
        let rel = p.strip_prefix(cwd).ok();
        if self.absolute.is_match(p) || rel.is_some_and(|r| self.relative.is_match(r)) {
            return true;
        }
        dirs && (self.dirs_absolute.is_match(p)
            || (self.session_folder && p == cwd)
            || rel.is_some_and(|r| !r.as_os_str().is_empty() && self.dirs_relative.is_match(r)))
    }

    /// Whether a pattern could match something beneath folder `dir` (resolved): the folder
    /// is above the pattern's literal part (`src` for `src/secrets/**`), or inside it with
    /// the pattern going on with a glob (`src/a` for `src/**/.env`). A relative pattern's
    /// literal part starts at `cwd`, so one starting with `**` can match beneath any folder
    /// inside the session's folder, and beneath any folder above it.
    pub fn reaches_beneath(&self, dir: &Path, cwd: &Path) -> bool {
        let fold = |p: PathBuf| match self.fold {
            true => PathBuf::from(p.to_string_lossy().to_lowercase()),
            false => p,
        };
        let dir = fold(dir.to_owned());
        self.starts.iter().any(|s| {
            let at = fold(match s.absolute {
                true => s.literal.clone(),
                false => cwd.join(&s.literal),
            });
            at.starts_with(&dir) || (s.wild && dir.starts_with(&at))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dir_glob_covers_the_dir_itself_for_a_deny_or_ask() {
        let g = PathGlobs::new(&["./secrets/**".into(), "/etc/**".into()], false).unwrap();
        let cwd = Path::new("/p");
        assert!(g.covers(Path::new("/p/secrets/key"), cwd, false));
        assert!(!g.covers(Path::new("/p/secrets"), cwd, false));
        assert!(g.covers(Path::new("/p/secrets"), cwd, true));
        assert!(g.covers(Path::new("/etc"), cwd, true));
        assert!(!g.covers(Path::new("/p/secretsx"), cwd, true));
        assert!(!g.covers(Path::new("/p"), cwd, true));
        let all = PathGlobs::new(&["**".into()], false).unwrap();
        assert!(all.covers(Path::new("/p"), cwd, true));
        assert!(!all.covers(Path::new("/q"), cwd, true));
    }

    #[test]
    fn what_a_pattern_reaches_beneath_a_folder() {
        let cwd = Path::new("/p");
        let g = PathGlobs::new(&["src/secrets/**".into()], false).unwrap();
        for above in ["/", "/p", "/p/src", "/p/src/secrets", "/p/src/secrets/a"] {
            assert!(g.reaches_beneath(Path::new(above), cwd), "{above}");
        }
        for beside in ["/p/docs", "/p/src/other", "/q"] {
            assert!(!g.reaches_beneath(Path::new(beside), cwd), "{beside}");
        }
        let env = PathGlobs::new(&["**/.env".into()], false).unwrap();
        for any in ["/", "/p", "/p/src/deep/er"] {
            assert!(env.reaches_beneath(Path::new(any), cwd), "{any}");
        }
        assert!(!env.reaches_beneath(Path::new("/q/x"), cwd));
        let lit = PathGlobs::new(&["/etc/shadow".into()], false).unwrap();
        assert!(lit.reaches_beneath(Path::new("/etc"), cwd));
        assert!(!lit.reaches_beneath(Path::new("/etc/ssh"), cwd));
        // A deny's, in either case; `./` is the session's folder.
        let folded = PathGlobs::new(&["./Src/**/.ENV".into()], true).unwrap();
        for any in ["/P", "/p/SRC", "/p/src/deep"] {
            assert!(folded.reaches_beneath(Path::new(any), cwd), "{any}");
        }
        assert!(!folded.reaches_beneath(Path::new("/p/docs"), cwd));
        let dotted = PathGlobs::new(&["./src/*.key".into()], false).unwrap();
        assert!(dotted.reaches_beneath(Path::new("/p/src"), cwd));
        assert!(!dotted.reaches_beneath(Path::new("/p/docs"), cwd));
    }
}
