//! Reads what `strace -f -qq -y -xx` wrote about one run: every program started and every
//! file opened, created, renamed, removed, linked, truncated or whose mode, owner or times
//! changed, each path resolved as the kernel resolved it.
//!
//! With `-xx` every string is hex (`"\x2f\x74"`), and with `-y` every file descriptor is
//! followed by its path (`3<\x2f...>`, `AT_FDCWD<\x2f...>`: the folder a relative path is
//! taken from), so no byte of a path can be mistaken for the log's own syntax. A call split
//! by another process's (`<unfinished ...>`, `<... resumed>`) is joined again. A path given
//! to a call without a folder descriptor (`mkdir`, `rename`) is taken from the folder of its
//! process, followed through `chdir`, `fchdir` and the clones that inherit it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The system calls traced (`-e trace=`).
pub const TRACED: &str = "execve,execveat,open,openat,openat2,creat,rename,renameat,renameat2,\
unlink,unlinkat,rmdir,link,linkat,symlink,symlinkat,mkdir,mkdirat,mknod,mknodat,truncate,\
ftruncate,chmod,fchmod,fchmodat,chown,lchown,fchown,fchownat,utimensat,chdir,fchdir,clone,\
clone3,fork,vfork";

/// One thing a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A program started (`execve`; also one refused by the OS, as a stand-in on a
    /// `noexec` mount), its path and argv.
    Exec { path: PathBuf, argv: Vec<String> },
    /// A file opened to read (its real path), `dir` when opened as a folder.
    Read { path: PathBuf, dir: bool },
    /// A path written, created, removed, renamed, linked or changed (`what` says how),
    /// attempted whether or not it succeeded (`ok`).
    Change {
        what: &'static str,
        path: PathBuf,
        ok: bool,
        /// It made something new at `path` (created, renamed or linked to).
        made: bool,
    },
    /// `from` renamed to `to` (both also given as [`Event::Change`]).
    Rename { from: PathBuf, to: PathBuf },
}

/// One argument of a call, as strace shows it.
#[derive(Debug, Clone)]
enum Arg {
    Str(Vec<u8>),
    /// A descriptor (`cwd`: `AT_FDCWD`) and the path `-y` gave it (`deleted`: a file no
    /// longer reachable by any name, as an `O_TMPFILE`).
    Fd {
        cwd: bool,
        path: Option<PathBuf>,
        deleted: bool,
    },
    List(Vec<Arg>),
    Other(String),
}

/// The events of a log, in order.
pub fn parse(log: &str, start: &Path) -> Vec<Event> {
    let mut pending: HashMap<String, String> = HashMap::new();
    let mut cwd: HashMap<String, PathBuf> = HashMap::new();
    let mut first = None;
    let mut events = Vec::new();
    for line in log.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        let call = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid.to_owned(), head.to_owned());
            continue;
        } else if let Some(tail) = rest.strip_prefix("<... ") {
            let Some((_, after)) = tail.split_once(" resumed>") else {
                continue;
            };
            match pending.remove(pid) {
                Some(head) => format!("{head}{after}"),
                None => continue,
            }
        } else if rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        } else {
            rest.to_owned()
        };
        let first_pid = first.get_or_insert_with(|| pid.to_owned()).clone();
        if !cwd.contains_key(pid) {
            let inherited = cwd.get(&first_pid).cloned();
            cwd.insert(
                pid.to_owned(),
                inherited.unwrap_or_else(|| start.to_owned()),
            );
        }
        let Some((name, args, ret)) = split_call(&call) else {
            continue;
        };
        // `AT_FDCWD<path>` is the process's folder at that moment.
        if let Some(p) = args.iter().find_map(|a| match a {
            Arg::Fd {
                cwd: true,
                path: Some(p),
                ..
            } => Some(p.clone()),
            _ => None,
        }) {
            cwd.insert(pid.to_owned(), p);
        }
        let here = cwd.get(pid).cloned().unwrap_or_else(|| start.to_owned());
        let ok = !ret.starts_with('-') && !ret.starts_with('?');
        let ret_path = ret_fd_path(&ret);
        let path_at = |dirfd: Option<&Arg>, p: Option<&Arg>| -> Option<PathBuf> {
            let p = match p {
                // The OS opens no empty path (`ENOENT`).
                Some(Arg::Str(b)) if b.is_empty() => return None,
                Some(Arg::Str(b)) => PathBuf::from(OsStr::from_bytes(b)),
                Some(Arg::Other(o)) if o == "NULL" => {
                    return match dirfd {
                        Some(Arg::Fd { path: Some(d), .. }) => Some(d.clone()),
                        _ => None,
                    }
                }
                _ => return None,
            };
            if p.is_absolute() {
                return Some(p);
            }
            let base = match dirfd {
                Some(Arg::Fd { path: Some(d), .. }) => d.clone(),
                _ => here.clone(),
            };
            Some(base.join(p))
        };
        let mut changes: Vec<(&'static str, Option<PathBuf>, bool, bool)> = Vec::new();
        let a = |i: usize| args.get(i);
        match name.as_str() {
            // A program started; or one that could not be (not a miss of a `PATH` search).
            "execve" | "execveat" if ok || !(ret.contains("ENOENT") || ret.contains("ENOTDIR")) => {
                let (p, argv) = if name == "execve" {
                    (path_at(None, a(0)), a(1))
                } else {
                    (path_at(a(0), a(1)), a(2))
                };
                let argv = match argv {
                    Some(Arg::List(l)) => l
                        .iter()
                        .map(|x| match x {
                            Arg::Str(b) => String::from_utf8_lossy(b).into_owned(),
                            Arg::Other(o) => o.clone(),
                            _ => String::new(),
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                if let Some(p) = p {
                    events.push(Event::Exec {
                        path: resolve(&p, true),
                        argv,
                    });
                }
            }
            "open" | "openat" | "openat2" | "creat" => {
                let (dirfd, p, flags) = match name.as_str() {
                    "open" => (None, a(0), a(1)),
                    "creat" => (None, a(0), None),
                    _ => (a(0), a(1), a(2)),
                };
                let flags = match (name.as_str(), flags) {
                    ("creat", _) => "O_WRONLY|O_CREAT|O_TRUNC".to_owned(),
                    (_, Some(Arg::Other(f))) => f.clone(),
                    (_, Some(Arg::List(_))) | (_, _) => call.clone(),
                };
                let writes = ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
                    .iter()
                    .any(|f| flags.contains(f));
                let nofollow = flags.contains("O_NOFOLLOW")
                    || (flags.contains("O_CREAT") && flags.contains("O_EXCL"));
                if flags.contains("O_TMPFILE") {
                    // A file with no name, unreachable unless linked (`linkat`, traced).
                } else if writes {
                    let path = match &ret_path {
                        Some(r) if ok => Some(r.clone()),
                        _ => path_at(dirfd, p).map(|x| resolve(&x, !nofollow)),
                    };
                    if let Some(path) = path {
                        events.push(Event::Change {
                            what: "opened to write",
                            path,
                            ok,
                            made: ok && flags.contains("O_CREAT"),
                        });
                    }
                } else if ok && !flags.contains("O_PATH") {
                    if let Some(r) = ret_path.clone() {
                        events.push(Event::Read {
                            path: r,
                            dir: flags.contains("O_DIRECTORY"),
                        });
                    }
                }
            }
            "rename" | "renameat" | "renameat2" => {
                let (from, to) = if name == "rename" {
                    (path_at(None, a(0)), path_at(None, a(1)))
                } else {
                    (path_at(a(0), a(1)), path_at(a(2), a(3)))
                };
                let (from, to) = (
                    from.map(|p| resolve(&p, false)),
                    to.map(|p| resolve(&p, false)),
                );
                if let (Some(f), Some(t)) = (&from, &to) {
                    if ok {
                        events.push(Event::Rename {
                            from: f.clone(),
                            to: t.clone(),
                        });
                    }
                }
                changes.push(("renamed away", from, false, false));
                changes.push(("renamed to", to, true, false));
            }
            "unlink" | "rmdir" => changes.push(("removed", path_at(None, a(0)), false, false)),
            "unlinkat" => changes.push(("removed", path_at(a(0), a(1)), false, false)),
            "link" => changes.push(("hard-linked", path_at(None, a(1)), true, false)),
            "linkat" => changes.push(("hard-linked", path_at(a(2), a(3)), true, false)),
            "symlink" => changes.push(("made a symbolic link", path_at(None, a(1)), true, false)),
            "symlinkat" => changes.push(("made a symbolic link", path_at(a(1), a(2)), true, false)),
            "mkdir" | "mknod" => changes.push(("made", path_at(None, a(0)), true, false)),
            "mkdirat" | "mknodat" => changes.push(("made", path_at(a(0), a(1)), true, false)),
            "truncate" => changes.push(("truncated", path_at(None, a(0)), false, true)),
            "chmod" => changes.push(("changed the mode of", path_at(None, a(0)), false, true)),
            "chown" => changes.push(("changed the owner of", path_at(None, a(0)), false, true)),
            "lchown" => changes.push(("changed the owner of", path_at(None, a(0)), false, false)),
            "fchmodat" | "fchownat" | "utimensat" => {
                let what = match name.as_str() {
                    "fchmodat" => "changed the mode of",
                    "fchownat" => "changed the owner of",
                    _ => "changed the times of",
                };
                // `AT_SYMLINK_NOFOLLOW`: a link itself (`cp -a` copying a link).
                let follow = !call.contains("AT_SYMLINK_NOFOLLOW");
                changes.push((what, path_at(a(0), a(1)), false, follow));
            }
            "ftruncate" | "fchmod" | "fchown" => {
                if let Some(Arg::Fd {
                    path: Some(p),
                    deleted: false,
                    ..
                }) = a(0)
                {
                    let what = match name.as_str() {
                        "ftruncate" => "truncated",
                        "fchmod" => "changed the mode of",
                        _ => "changed the owner of",
                    };
                    changes.push((what, Some(p.clone()), false, false));
                }
            }
            "chdir" if ok => {
                if let Some(p) = path_at(None, a(0)) {
                    cwd.insert(pid.to_owned(), resolve(&p, true));
                }
            }
            "fchdir" if ok => {
                if let Some(Arg::Fd { path: Some(p), .. }) = a(0) {
                    cwd.insert(pid.to_owned(), p.clone());
                }
            }
            "clone" | "clone3" | "fork" | "vfork" if ok => {
                let child = ret.split_whitespace().next().unwrap_or("").to_owned();
                cwd.entry(child).or_insert_with(|| here.clone());
            }
            _ => {}
        }
        for (what, path, made, follow) in changes {
            // Making what is there already changes nothing (`mkdir -p`'s way down).
            if what == "made" && ret.contains("EEXIST") {
                continue;
            }
            if let Some(p) = path {
                events.push(Event::Change {
                    what,
                    path: resolve(&p, follow),
                    ok,
                    made: made && ok,
                });
            }
        }
    }
    events
}

/// `name`, its arguments and what it returned (`= ...` without the `= `).
fn split_call(call: &str) -> Option<(String, Vec<Arg>, String)> {
    let open = call.find('(')?;
    let name = call[..open].to_owned();
    let b = call.as_bytes();
    let mut i = open + 1;
    let mut depth = 0i32;
    let mut parts = Vec::new();
    let mut start = i;
    let mut end = None;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'<' => {
                while i < b.len() && b[i] != b'>' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'[' | b'{' | b'(' => depth += 1,
            b']' | b'}' => depth -= 1,
            b')' if depth == 0 => {
                parts.push(&call[start..i]);
                end = Some(i);
                break;
            }
            b')' => depth -= 1,
            b',' if depth == 0 => {
                parts.push(&call[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let end = end?;
    let ret = call[end + 1..].trim_start();
    let ret = ret.strip_prefix('=').unwrap_or(ret).trim().to_owned();
    let args = parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(arg)
        .collect();
    Some((name, args, ret))
}

fn arg(text: &str) -> Arg {
    let t = text.trim();
    if let Some(inner) = t.strip_prefix('"') {
        let inner = inner.split('"').next().unwrap_or("");
        return Arg::Str(unhex(inner));
    }
    if let Some(inner) = t.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        let mut out = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        let mut quoted = false;
        for (i, c) in inner.char_indices() {
            match c {
                '"' => quoted = !quoted,
                '[' | '{' if !quoted => depth += 1,
                ']' | '}' if !quoted => depth -= 1,
                ',' if !quoted && depth == 0 => {
                    out.push(arg(&inner[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        if !inner[start..].trim().is_empty() {
            out.push(arg(&inner[start..]));
        }
        return Arg::List(out);
    }
    if let Some(open) = t.find('<') {
        let head = &t[..open];
        if head == "AT_FDCWD" || head.bytes().all(|c| c.is_ascii_digit()) {
            let close = t[open..].find('>').map_or(t.len(), |c| c + open);
            return Arg::Fd {
                cwd: head == "AT_FDCWD",
                path: Some(PathBuf::from(OsStr::from_bytes(&unhex(
                    &t[open + 1..close],
                )))),
                deleted: t[close..].contains("(deleted)"),
            };
        }
    }
    if t == "AT_FDCWD" {
        return Arg::Fd {
            cwd: true,
            path: None,
            deleted: false,
        };
    }
    Arg::Other(t.to_owned())
}

/// The path `-y` gave a returned descriptor (`3<\x2f...>`).
fn ret_fd_path(ret: &str) -> Option<PathBuf> {
    let open = ret.find('<')?;
    if !ret[..open].bytes().all(|c| c.is_ascii_digit()) || open == 0 {
        return None;
    }
    let close = ret[open..].find('>')? + open;
    Some(PathBuf::from(OsStr::from_bytes(&unhex(
        &ret[open + 1..close],
    ))))
}

/// `\x2f\x74` to bytes (other escapes as strace writes them, for safety).
fn unhex(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 4);
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                b'x' if i + 3 < b.len() => {
                    let h = std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("3f");
                    out.push(u8::from_str_radix(h, 16).unwrap_or(b'?'));
                    i += 4;
                    continue;
                }
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                c => out.push(c),
            }
            i += 2;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// `path` resolved as the kernel walks it now: each component in turn, a symbolic link
/// followed where it stands (before a `..` after it), the last one only if `follow`. What
/// does not exist is kept as written.
pub fn resolve(path: &Path, follow: bool) -> PathBuf {
    walk(path, follow, 0)
}

fn walk(path: &Path, follow: bool, depth: usize) -> PathBuf {
    let mut out = PathBuf::from("/");
    let comps: Vec<Component> = path.components().collect();
    for (k, c) in comps.iter().enumerate() {
        let last = k + 1 == comps.len();
        match c {
            Component::RootDir | Component::Prefix(_) => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => {
                let next = out.join(n);
                if (!last || follow) && depth < 40 {
                    if let Ok(target) = std::fs::read_link(&next) {
                        let joined = if target.is_absolute() {
                            target
                        } else {
                            out.join(target)
                        };
                        out = walk(&joined, true, depth + 1);
                        continue;
                    }
                }
                out = next;
            }
        }
    }
    out
}
