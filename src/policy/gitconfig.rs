//! git's configuration as git reads it: every file it reads from a repository, includes too
//! ([`config_chain`]), and the settings of one, parsed as git's own parser parses them
//! ([`entries`]).
//!
//! Invariant: a superset of the files git reads, and each value exactly git's, or `None`
//! where git would refuse the file.

use std::path::{Path, PathBuf};

/// The most configuration files read for one decision, includes and all.
const MAX_CONFIG_FILES: usize = 16;

/// Every configuration file git reads in repository `repo`: its own (`config.worktree`
/// too), its common folder's (a worktree's), the user's (`GIT_CONFIG_GLOBAL`, else `~/.gitconfig` and
/// `$XDG_CONFIG_HOME/git/config`), the system's, and every file one of them includes
/// (`include.path`, and `includeIf.*.path` whatever its condition), each with its text
/// (empty where it is not there). `Err`: why that cannot be told (too many files, one that
/// cannot be read).
pub(super) fn config_chain(
    repo: Option<&Path>,
    env: super::rc::Env<'_>,
) -> Result<Vec<(PathBuf, String)>, String> {
    let (home, xdg) = super::rc::home_and_config(env);
    let var = |k: &str| env(k).map(PathBuf::from);
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(r) = repo {
        // A worktree's own settings (`extensions.worktreeConfig`), then the repository's.
        files.push(r.join("config.worktree"));
        files.push(r.join("config"));
        let common = common_of(r);
        if common != r {
            files.push(common.join("config"));
        }
    }
    match var("GIT_CONFIG_GLOBAL") {
        Some(g) => files.push(g),
        None => {
            files.extend(home.as_ref().map(|h| h.join(".gitconfig")));
            files.extend(xdg.map(|x| x.join("git/config")));
        }
    }
    files.push(var("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    let mut chain = Vec::new();
    while let Some(file) = files.pop() {
        if chain.len() >= MAX_CONFIG_FILES {
            return Err("(more configuration files than are read for one decision)".into());
        }
        let text = match super::file::bounded::read_file(&file) {
            // `GIT_CONFIG_SYSTEM=/dev/null`, the usual way to leave it out: empty.
            _ if file == Path::new("/dev/null") => String::new(),
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("({} cannot be read: {e})", file.display())),
        };
        for (section, key, value) in entries(&text) {
            let Some(value) = value else {
                return Err(format!(
                    "(a line of {} is not read as git reads it)",
                    file.display()
                ));
            };
            if key == "path" && section.starts_with("include") && !value.is_empty() {
                match place(&value, &file, None, home.as_deref()) {
                    Some(f) => files.push(f),
                    None => return Err(format!("(an include in {})", file.display())),
                }
            }
        }
        chain.push((file, text));
    }
    Ok(chain)
}

/// The (section, key, value) of each setting of a configuration file's `text`, read as
/// git's own parser reads it (`config.c`): section and key lowered; a `#` or `;` outside
/// quotes starts a comment to the line's end (`path = x  # note` is `x`); a value's `\` at
/// a line's end goes on to the next line (a multi-line alias); `"…"` joined and `\"`, `\\`,
/// `\n`, `\t`, `\b` unescaped. A value is `None` where git would refuse the file (an
/// unknown escape, an unclosed quote).
pub(super) fn entries(text: &str) -> Vec<(String, String, Option<String>)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            '#' | ';' => while chars.next_if(|c| *c != '\n').is_some() {},
            '[' => {
                chars.next();
                let mut header = String::new();
                let mut quoted = false;
                while let Some(c) = chars.next() {
                    match c {
                        '\\' if quoted => header.extend(chars.next()),
                        '"' => quoted = !quoted,
                        ']' if !quoted => break,
                        '\n' => break,
                        c => header.push(c),
                    }
                }
                section = header.trim().to_ascii_lowercase();
            }
            c if c.is_alphanumeric() => {
                let mut key = String::new();
                while let Some(c) = chars.next_if(|c| c.is_alphanumeric() || *c == '-') {
                    key.push(c.to_ascii_lowercase());
                }
                while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
                let value = match chars.next_if_eq(&'=') {
                    Some(_) => value_of(&mut chars),
                    None => Some(String::new()),
                };
                out.push((section.clone(), key, value));
            }
            _ => {
                chars.next();
            }
        }
    }
    out
}

/// A value, read from after its `=` to the end of its (logical) line.
fn value_of(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let mut out = String::new();
    let mut quoted = false;
    let mut pending = String::new();
    let mut started = false;
    while let Some(c) = chars.next() {
        match c {
            '\n' => break,
            '\\' => match chars.next() {
                // The value goes on to the next line.
                Some('\n') => continue,
                Some('\r') if chars.next_if_eq(&'\n').is_some() => continue,
                Some(e) => {
                    out.push_str(&std::mem::take(&mut pending));
                    started = true;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'b' => out.push('\u{8}'),
                        '"' | '\\' => out.push(e),
                        _ => return None,
                    }
                }
                None => return None,
            },
            '"' => {
                out.push_str(&std::mem::take(&mut pending));
                started = true;
                quoted = !quoted;
            }
            '#' | ';' if !quoted => {
                while chars.next_if(|c| *c != '\n').is_some() {}
                break;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    pending.push(c);
                }
            }
            c => {
                out.push_str(&std::mem::take(&mut pending));
                started = true;
                out.push(c);
            }
        }
    }
    (!quoted).then_some(out)
}

/// Where a path `value` set in configuration `file` points: `~/` from the home folder, a
/// relative one from `relative_to` (else the file's folder).
pub(super) fn place(
    value: &str,
    file: &Path,
    relative_to: Option<&Path>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    match value.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        // Another user's home, git's own prefix: not placed here.
        None if value.starts_with('~') || value.starts_with("%(") => None,
        None if Path::new(value).is_absolute() => Some(PathBuf::from(value)),
        None => relative_to.or(file.parent()).map(|d| d.join(value)),
    }
}

/// The common folder of repository `repo` (a linked worktree's main repository), its
/// `commondir` read exactly as git reads it (`get_common_dir_noenv`: all of it but the line
/// feeds and carriage returns at its end; a sixty-fifth review: read trimmed, ` ../x` with
/// a leading space was `x` here, while git used the folder ` ../x` the agent made). Where
/// git dies on it (empty, not a regular file, or too large to read here), the file itself:
/// nothing of a repository is read from beneath it, so what asks for its config asks.
pub(super) fn common_of(repo: &Path) -> PathBuf {
    let file = repo.join("commondir");
    match super::file::bounded::read_file(&file) {
        Ok(bytes) if !bytes.is_empty() => repo.join(c_path(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => repo.to_path_buf(),
        _ => file,
    }
}

/// The path in `bytes`, a file git reads as one path (a `gitdir:` file's rest, a
/// `commondir`), as git reads it: the line feeds and carriage returns at its end left out,
/// and ending at a NUL, as a C string does.
pub(super) fn c_path(bytes: &[u8]) -> &Path {
    use std::os::unix::ffi::OsStrExt;
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b'\n' | b'\r'))
        .map_or(0, |i| i + 1);
    let bytes = &bytes[..end];
    let bytes = bytes.split(|b| *b == 0).next().unwrap_or_default();
    Path::new(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_read_as_git_reads_them() {
        let d = std::env::temp_dir().join(format!("acp-qb-gitcfg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("config");
        let text = "# a comment \\\n[include]\n\tpath = ../a  # note\n[include \"x\"] path = \"../b c\" ; note\n[core]\n\thooksPath = .githooks;x\n\texcludesFile = \"q\\\"r\"\n[alias]\n\tlg = log \\\n\t  --oneline\n\tt = \"a\\tb\"\n[includeIf \"gitdir:/w/\"]\n\tpath = ~/c\n\tbare\n";
        std::fs::write(&file, text).unwrap();
        let ours: Vec<String> = entries(text)
            .into_iter()
            .map(|(s, k, v)| format!("{}.{k}={}", s.replace(' ', "."), v.expect("a value")))
            .map(|l| l.trim_end_matches('=').to_owned())
            .collect();
        let out = std::process::Command::new("git")
            .args(["config", "--no-includes", "-f"])
            .arg(&file)
            .arg("--list")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let git: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(ours, git);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A `commondir` that is a FIFO (the agent may make one) is not waited on: git would
    /// wait forever, so nothing of it is read and the repository's config is not told.
    #[test]
    fn a_commondir_that_is_a_fifo_is_not_waited_on() {
        let d = std::env::temp_dir().join(format!("acp-qb-commonfifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        nix::unistd::mkfifo(&d.join("commondir"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let repo = d.clone();
        std::thread::spawn(move || {
            let _ = tx.send(common_of(&repo));
        });
        // Far above the microseconds it takes: a read of the FIFO would never end.
        let common = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("found without waiting on the FIFO");
        assert_eq!(common, d.join("commondir"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
