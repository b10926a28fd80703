//! Paths as the OS opens them, for the approval policy (docs/POLICY.md, "Paths"). What a
//! rule's path patterns say of them is [`super::pathglobs`].
//!
//! [`resolve`] makes a path absolute (against the session's folder, `/`, or the home folder
//! for `~`, `~/x`, `$HOME/x` and `${HOME}/x`) and walks it one component at a time from `/`,
//! as the kernel's path walk does, each step relative to a descriptor of the folder reached
//! so far. Invariants:
//! - A symbolic link is followed where it stands, before any `..` after it: with `src/lnk ->
//!   ../secrets/sub`, `src/lnk/../key` is `secrets/key`, the file the OS opens. At most
//!   [`MAX_LINKS`] links in one walk (Linux's `ELOOP`); more: not resolved.
//! - A `..` of a folder that exists is that folder's real parent. A component that does not
//!   exist (or that comes after a file) is kept as written and the rest appended lexically:
//!   a `..` after it takes it off again, and once none is left the walk goes on, links and
//!   all, from the folder that exists.
//! - Bounded as the kernel bounds it, and linear: a path of more than [`MAX_PATH_BYTES`]
//!   bytes (Linux's `PATH_MAX`, 4,096 with its NUL: the OS refuses a longer one) is not
//!   resolved, nor is a link's target longer than that, nor a walk through more than
//!   [`MAX_LINKS`] links. So one walk takes at most [`MAX_WALK`] components, and each step is
//!   at most two system calls on one name, never a walk of the whole path again. The work of
//!   one decision is bounded apart ([`Decision`], [`Budget`]): a path past it is not
//!   resolved (asked), never skipped.
//! - A path through another process's view is not resolved: `/proc/self`,
//!   `/proc/thread-self`, `/proc/<digits>` (procfs wherever it is mounted), `/dev/fd`,
//!   `/dev/stdin`, `/dev/stdout`, `/dev/stderr`, at any step of the walk, a link's target's
//!   included. Resolved here they would be the bridge's (its folder, its descriptors), while
//!   the command runs in another process with another folder: `/proc/self/cwd/..` is not
//!   the same folder there.
//! - Not resolved (`None`) is never an allow: the policy asks ([`super::Policy::decide`]).
//!   So is `~user`, and `~` without a `$HOME`.
//!
//! [`readings`] gives the path the OS opens and, for a path with `..`, also the one a tool
//! that cleans `..` lexically before opening (Node's `path.resolve`, Python's `normpath`)
//! opens: a rule decides on both.

use std::cell::Cell;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{openat, readlinkat, AtFlags, OFlag, AT_FDCWD};
use nix::sys::stat::{fstatat, Mode, SFlag};

/// The longest path resolved, in bytes: Linux's `PATH_MAX` (4,096) counts the terminating
/// NUL, so the OS opens no longer path given at once. A longer one is asked.
pub const MAX_PATH_BYTES: usize = 4095;

/// The most symbolic links one walk follows, as Linux (`MAXSYMLINKS`, then `ELOOP`).
pub const MAX_LINKS: usize = 40;

/// The most components one walk can take, its links' targets' included: the path and each
/// of [`MAX_LINKS`] targets at most [`MAX_PATH_BYTES`] bytes, a component and its `/` two
/// bytes. Not a bound of its own: it follows from the kernel's two, which are the only ones a
/// walk has (a bound the OS does not have would leave a path the OS opens unresolved).
pub const MAX_WALK: usize = (MAX_LINKS + 1) * (MAX_PATH_BYTES + 1) / 2;

/// The components resolved for one decision, all its paths and words together: three walks
/// of [`MAX_WALK`]. A step is one or two system calls on one name: the whole budget, every
/// step a `..` of a link's target, took 0.3 s (a debug build), so a decision's resolving
/// stays well within the bridge's bound whatever its paths; past it, a path is not
/// resolved, and so asked.
pub const MAX_DECISION_STEPS: usize = 3 * MAX_WALK;

/// What is left of one decision's work ([`MAX_DECISION_STEPS`]), shared by every walk of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    left: usize,
}

impl Budget {
    /// A decision's whole budget.
    pub fn new() -> Budget {
        Budget {
            left: MAX_DECISION_STEPS,
        }
    }

    /// Whether it ran out: a path was left unresolved for it.
    pub fn spent(&self) -> bool {
        self.left == 0
    }

    /// One step; `false` when none is left.
    fn take(&mut self) -> bool {
        #[cfg(test)]
        STEPS.with(|s| s.set(s.get() + 1));
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        true
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new()
    }
}

#[cfg(test)]
thread_local! {
    /// The steps walked on this thread (tests count a decision's work with it).
    pub static STEPS: Cell<usize> = const { Cell::new(0) };
}

thread_local! {
    /// The budget of the decision running on this thread, if one is ([`Decision`]).
    static DECISION: Cell<Option<Budget>> = const { Cell::new(None) };
}

/// One decision's work: while it lives, every walk on this thread ([`resolve`],
/// [`readings`], whichever module asks) is taken out of one [`Budget`]; outside one, each
/// path has a budget of its own (the kernel's bounds only).
#[must_use]
pub struct Decision {
    outer: Option<Budget>,
}

impl Decision {
    pub fn start() -> Decision {
        Decision {
            outer: DECISION.with(|d| d.replace(Some(Budget::new()))),
        }
    }
}

impl Drop for Decision {
    fn drop(&mut self) {
        DECISION.with(|d| d.set(self.outer));
    }
}

/// Whether the decision running on this thread spent its budget: a path was (or would be)
/// left unresolved for it.
pub fn decision_spent() -> bool {
    DECISION.with(|d| d.get().is_some_and(|b| b.spent()))
}

/// Takes one step of the decision's work for other work than a walk (an entry of a folder
/// listed beneath a search: [`super::named`]); `false` once the budget is spent.
pub fn take_step() -> bool {
    with_budget(Budget::take)
}

/// `f` with the budget of the decision running on this thread, or one of its own.
fn with_budget<T>(f: impl FnOnce(&mut Budget) -> T) -> T {
    match DECISION.with(Cell::get) {
        Some(mut b) => {
            let out = f(&mut b);
            DECISION.with(|d| d.set(Some(b)));
            out
        }
        None => f(&mut Budget::new()),
    }
}

/// A path as the OS names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, with no link, `.` or `..` in the part that exists.
    pub path: PathBuf,
    /// It is a folder that exists.
    pub is_dir: bool,
    /// When the path's last component is a link: that link, in its folder resolved (what a
    /// delete or a move acts on, and what a rule for the name as written speaks of).
    pub link: Option<PathBuf>,
}

/// `path` as the OS opens it, from `cwd` (absolute; a relative one is taken from `/`) and
/// the home folder of `$HOME`; `None` when it is not resolved (see the module's invariants).
pub fn resolve(path: &Path, cwd: &Path) -> Option<Resolved> {
    with_budget(|b| resolve_in(path, cwd, home().as_deref(), b))
}

/// Every path `path` may stand for: what [`resolve`] gives; for a path with a `..`, also the
/// path with its `..` taken off lexically first and then resolved (what a tool that cleans a
/// path before opening it opens); and for a last component that is a link, the link itself
/// (what a delete or move acts on). Each once.
pub fn readings(path: &Path, cwd: &Path) -> Option<Vec<Resolved>> {
    with_budget(|b| readings_in(path, cwd, home().as_deref(), b))
}

/// The home folder: `$HOME`, absolute and not empty.
pub(super) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

fn resolve_in(
    path: &Path,
    cwd: &Path,
    home: Option<&Path>,
    budget: &mut Budget,
) -> Option<Resolved> {
    walk(&absolute(path, cwd, home)?, budget)
}

fn readings_in(
    path: &Path,
    cwd: &Path,
    home: Option<&Path>,
    budget: &mut Budget,
) -> Option<Vec<Resolved>> {
    let abs = absolute(path, cwd, home)?;
    let mut found = vec![walk(&abs, budget)?];
    if path
        .as_os_str()
        .as_bytes()
        .split(|b| *b == b'/')
        .any(|c| c == b"..")
    {
        found.push(walk(&clean(&abs), budget)?);
    }
    let mut out: Vec<Resolved> = Vec::new();
    for r in found {
        let link = r.link.clone().map(|path| Resolved {
            path,
            is_dir: false,
            link: None,
        });
        for r in std::iter::once(r).chain(link) {
            if !out.iter().any(|o| o.path == r.path) {
                out.push(r);
            }
        }
    }
    Some(out)
}

/// `path` as an absolute path's bytes: the home folder's forms expanded, a relative path
/// after `cwd`; `None` over the bound, for `~user`, or for `~` with no home.
fn absolute(path: &Path, cwd: &Path, home: Option<&Path>) -> Option<Vec<u8>> {
    let b = path.as_os_str().as_bytes();
    if b.len() > MAX_PATH_BYTES {
        return None;
    }
    let under_home = ["~", "$HOME", "${HOME}"].iter().find_map(|h| {
        let rest = b.strip_prefix(h.as_bytes())?;
        (rest.is_empty() || rest.starts_with(b"/")).then_some(rest)
    });
    let (base, rest): (&[u8], &[u8]) = match under_home {
        Some(rest) => (home?.as_os_str().as_bytes(), rest),
        // `~user`: another user's home, not looked up.
        None if b.starts_with(b"~") => return None,
        None if b.starts_with(b"/") => (b"", b),
        None => {
            let c = cwd.as_os_str().as_bytes();
            if c.len() > MAX_PATH_BYTES {
                return None;
            }
            (c, b)
        }
    };
    let mut out = Vec::with_capacity(base.len() + rest.len() + 2);
    out.push(b'/');
    out.extend_from_slice(base);
    out.push(b'/');
    out.extend_from_slice(rest);
    Some(out)
}

/// An absolute path's bytes with `.` and `..` taken off lexically (`..` of `/` is `/`).
fn clean(abs: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in abs.split(|b| *b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = Vec::with_capacity(abs.len());
    for p in parts {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// How a folder is held while walking: only to look names up in it.
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIR: OFlag = OFlag::O_PATH
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const DIR: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

fn open_root() -> Option<OwnedFd> {
    openat(AT_FDCWD, "/", DIR, Mode::empty()).ok()
}

/// The walk of an absolute path's bytes (see the module's invariants), each component a
/// step of `budget`.
fn walk(abs: &[u8], budget: &mut Budget) -> Option<Resolved> {
    // What is left to walk, the next component last.
    let mut pending: Vec<Vec<u8>> = components(abs).rev().map(<[u8]>::to_vec).collect();
    let mut cur = open_root()?;
    // The path reached: `/a/b` (empty for `/`), and where each of its components begins.
    let mut out: Vec<u8> = Vec::with_capacity(abs.len());
    let mut starts: Vec<usize> = Vec::new();
    // How many components at the end of `out` are past what exists (`cur` is the folder
    // before them).
    let mut missing = 0usize;
    let mut links = 0usize;
    let mut is_dir = true;
    // The last component, when it is a link: the link itself.
    let mut link: Option<Vec<u8>> = None;
    let push = |out: &mut Vec<u8>, starts: &mut Vec<usize>, name: &[u8]| {
        starts.push(out.len());
        out.push(b'/');
        out.extend_from_slice(name);
    };
    while let Some(name) = pending.pop() {
        if !budget.take() {
            return None;
        }
        match name.as_slice() {
            b"." => continue,
            b".." => {
                if missing > 0 {
                    missing -= 1;
                } else if !starts.is_empty() {
                    cur = openat(&cur, "..", DIR, Mode::empty()).ok()?;
                }
                if let Some(s) = starts.pop() {
                    out.truncate(s);
                }
                is_dir = missing == 0;
                continue;
            }
            _ => {}
        }
        if another_process(&out, &name, (missing == 0).then_some(&cur)) {
            return None;
        }
        if missing > 0 {
            push(&mut out, &mut starts, &name);
            missing += 1;
            continue;
        }
        let os_name = OsStr::from_bytes(&name);
        let st = match fstatat(&cur, os_name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            // A name longer than its filesystem takes names nothing there, as one that is
            // not there: kept as written (a `..` after it takes it off, as for a tool that
            // cleans `..` first).
            Err(Errno::ENOENT | Errno::ENAMETOOLONG) => {
                push(&mut out, &mut starts, &name);
                missing = 1;
                is_dir = false;
                continue;
            }
            // No search permission, a name too long, ...: the OS would not open it either;
            // nothing is told of it.
            Err(_) => return None,
        };
        let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        if kind == SFlag::S_IFLNK {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            if pending.is_empty() && link.is_none() {
                let mut l = out.clone();
                l.push(b'/');
                l.extend_from_slice(&name);
                link = Some(l);
            }
            let target = readlinkat(&cur, os_name).ok()?;
            let target = target.as_bytes();
            if target.is_empty() || target.len() > MAX_PATH_BYTES {
                return None;
            }
            if target.starts_with(b"/") {
                cur = open_root()?;
                out.clear();
                starts.clear();
            }
            pending.extend(components(target).rev().map(<[u8]>::to_vec));
            is_dir = true;
        } else if kind == SFlag::S_IFDIR {
            push(&mut out, &mut starts, &name);
            if !pending.is_empty() {
                cur = openat(&cur, os_name, DIR, Mode::empty()).ok()?;
            }
            is_dir = true;
        } else {
            // A file: what follows it does not exist (the OS says ENOTDIR).
            push(&mut out, &mut starts, &name);
            missing = 1;
            is_dir = false;
        }
    }
    if out.is_empty() {
        out.push(b'/');
    }
    Some(Resolved {
        path: PathBuf::from(OsStr::from_bytes(&out)),
        is_dir,
        link: link.map(|l| PathBuf::from(OsStr::from_bytes(&l))),
    })
}

/// Whether component `name`, in the folder reached so far (`at`, resolved; `folder`, held
/// open when it exists), names another process's view: `self`, `thread-self` or a process
/// id in procfs's root (`/proc`, or procfs mounted elsewhere), `fd`, `stdin`, `stdout` or
/// `stderr` in `/dev`. The bridge would resolve them as its own, not the command's.
fn another_process(at: &[u8], name: &[u8], folder: Option<&OwnedFd>) -> bool {
    if at == b"/dev" && matches!(name, b"fd" | b"stdin" | b"stdout" | b"stderr") {
        return true;
    }
    let of_a_process = matches!(name, b"self" | b"thread-self")
        || (!name.is_empty() && name.iter().all(u8::is_ascii_digit));
    of_a_process && (at == b"/proc" || folder.is_some_and(is_procfs_root))
}

/// Whether `folder` is the root of a procfs mount (its type, and inode 1).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn is_procfs_root(folder: &OwnedFd) -> bool {
    use nix::sys::stat::fstat;
    use nix::sys::statfs::{fstatfs, PROC_SUPER_MAGIC};
    fstatfs(folder).is_ok_and(|s| s.filesystem_type() == PROC_SUPER_MAGIC)
        && fstat(folder).is_ok_and(|st| st.st_ino == 1)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn is_procfs_root(_: &OwnedFd) -> bool {
    false
}

fn components(path: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
    path.split(|b| *b == b'/').filter(|c| !c.is_empty())
}

/// A folder held open, to tell at the cost of one system call that a plain name is not in
/// it (a command's words: most name nothing).
pub struct Folder(OwnedFd);

impl Folder {
    /// `dir` (absolute, resolved).
    pub fn open(dir: &Path) -> Option<Folder> {
        openat(AT_FDCWD, dir, DIR, Mode::empty()).ok().map(Folder)
    }

    /// Whether `word` is one name (no `/`, not `.`, `..` or a home folder's form) that is
    /// not in the folder, so it names no file; `false` when it could name one.
    pub fn lacks(&self, word: &str) -> bool {
        let plain = !word.is_empty()
            && !word.contains('/')
            && !matches!(word, "." | "..")
            && !word.starts_with(['~', '$']);
        plain
            && matches!(
                fstatat(&self.0, word, AtFlags::AT_SYMLINK_NOFOLLOW),
                Err(Errno::ENOENT | Errno::ENAMETOOLONG)
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("acp-qb-path-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        // The folder as the OS names it (the temporary folder may be a link, as on macOS).
        d.canonicalize().unwrap()
    }

    fn at(p: &str, cwd: &Path) -> PathBuf {
        resolve(Path::new(p), cwd).unwrap().path
    }

    #[test]
    fn finding_4_a_link_before_dotdot_is_followed_as_the_os_does() {
        let d = scratch("link");
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::create_dir_all(d.join("secrets/sub")).unwrap();
        std::fs::write(d.join("secrets/key"), "k").unwrap();
        std::fs::write(d.join("src/key"), "not this one").unwrap();
        std::os::unix::fs::symlink("../secrets/sub", d.join("src/lnk")).unwrap();
        // What the OS opens.
        let opened = std::fs::read_to_string(d.join("src/lnk/../key")).unwrap();
        assert_eq!(opened, "k");
        assert_eq!(at("src/lnk/../key", &d), d.join("secrets/key"));
        // Both readings: the OS's, and a tool's that cleans `..` first.
        let both: Vec<PathBuf> = readings(Path::new("src/lnk/../key"), &d)
            .unwrap()
            .into_iter()
            .map(|r| r.path)
            .collect();
        assert_eq!(both, [d.join("secrets/key"), d.join("src/key")]);
        // A link to a folder is a folder; `..` of it is its real parent.
        let r = resolve(Path::new("src/lnk"), &d).unwrap();
        assert_eq!(
            (r.path, r.is_dir, r.link),
            (d.join("secrets/sub"), true, Some(d.join("src/lnk")))
        );
        // A last component that is a link: the link itself is a reading too.
        std::fs::write(d.join("secrets/prod.env"), "").unwrap();
        std::os::unix::fs::symlink("secrets/prod.env", d.join(".env")).unwrap();
        let both: Vec<PathBuf> = readings(Path::new(".env"), &d)
            .unwrap()
            .into_iter()
            .map(|r| r.path)
            .collect();
        assert_eq!(both, [d.join("secrets/prod.env"), d.join(".env")]);
        assert_eq!(at("src/lnk/..", &d), d.join("secrets"));
        // Absolute links, `.`, `//`, and `..` of `/`.
        std::os::unix::fs::symlink(d.join("secrets"), d.join("abs")).unwrap();
        assert_eq!(at("./abs//./key", &d), d.join("secrets/key"));
        assert_eq!(at("/../../..", &d), PathBuf::from("/"));
        // A missing component: the rest lexically, and a `..` takes it off again, the walk
        // then going on through links.
        assert_eq!(at("src/new/file.rs", &d), d.join("src/new/file.rs"));
        assert_eq!(at("src/new/../lnk/../key", &d), d.join("secrets/key"));
        assert_eq!(at("src/key/../lnk", &d), d.join("secrets/sub"));
        assert_eq!(at("src/new/a/../../../x", &d), d.join("x"));
        // A link loop is not resolved (ELOOP), nor is a chain of 41 links.
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert_eq!(resolve(Path::new("loop/x"), &d), None);
        std::fs::create_dir_all(d.join("chain")).unwrap();
        for i in 0..41 {
            std::os::unix::fs::symlink(format!("l{}", i + 1), d.join(format!("chain/l{i}")))
                .unwrap();
        }
        std::fs::create_dir_all(d.join("chain/l41")).unwrap();
        assert_eq!(at("chain/l1", &d), d.join("chain/l41"), "40 links");
        assert_eq!(resolve(Path::new("chain/l0"), &d), None, "41 links");
    }

    /// `/proc/self`, `/proc/thread-self`, `/proc/<pid>` and `/dev/fd` (and `/dev/stdin`, ...)
    /// are the bridge's own here, another process's where the command runs: not resolved,
    /// at any step, through a link's target too.
    #[test]
    fn a_path_through_another_process_view_is_not_resolved() {
        let d = scratch("proc");
        let me = std::process::id();
        std::os::unix::fs::symlink("/proc/self", d.join("me")).unwrap();
        std::os::unix::fs::symlink("/proc", d.join("procfs")).unwrap();
        std::os::unix::fs::symlink("/dev", d.join("dev")).unwrap();
        std::os::unix::fs::symlink("me/cwd/x", d.join("deep")).unwrap();
        for p in [
            "/proc/self/cwd/../../.config/acp-question-bridge/policy.toml".to_owned(),
            "/proc/self".to_owned(),
            "/proc/thread-self/cwd".to_owned(),
            format!("/proc/{me}/cwd/x"),
            format!("/proc/{me}"),
            "/proc/1/root/etc".to_owned(),
            "/proc/sys/../self/cwd".to_owned(),
            "/proc/nothing/../self/cwd".to_owned(),
            "/proc/99999999/cwd".to_owned(),
            // procfs's own links into `self`.
            "/proc/mounts".to_owned(),
            "/proc/net/dev".to_owned(),
            "/dev/fd/3".to_owned(),
            "/dev/fd".to_owned(),
            "/dev/stdin".to_owned(),
            "/dev/stdout".to_owned(),
            "/dev/stderr".to_owned(),
            // Through links in the project.
            "me/cwd/x".to_owned(),
            "deep".to_owned(),
            "procfs/self/cwd".to_owned(),
            "procfs/thread-self".to_owned(),
            "dev/fd/0".to_owned(),
            "dev/stdout".to_owned(),
        ] {
            assert_eq!(resolve(Path::new(&p), &d), None, "{p}");
            assert_eq!(readings(Path::new(&p), &d), None, "{p}");
        }
        // The session's folder under it is not resolved either; procfs's other files are.
        assert_eq!(resolve(Path::new("x"), Path::new("/proc/self/cwd")), None);
        assert_eq!(at("/proc/cpuinfo", &d), PathBuf::from("/proc/cpuinfo"));
        assert_eq!(
            at("procfs/sys/kernel", &d),
            PathBuf::from("/proc/sys/kernel")
        );
        assert_eq!(at("/dev/null", &d), PathBuf::from("/dev/null"));
    }

    /// `L -> ./././…` (2,000 components) walked three times is 6,000 steps but three links:
    /// the OS opens `L/L/L/P/f`, so it is resolved where the OS opens it. The bound is the
    /// kernel's: 40 links resolve, 41 do not (`ELOOP`), however long each target.
    #[test]
    fn a_long_link_target_is_resolved_up_to_the_kernels_40_links() {
        let d = scratch("long-link");
        std::fs::create_dir_all(d.join("dir")).unwrap();
        std::fs::write(d.join("dir/f"), "").unwrap();
        std::os::unix::fs::symlink("./".repeat(2000), d.join("L")).unwrap();
        std::os::unix::fs::symlink("dir", d.join("P")).unwrap();
        for n in [3, 39] {
            let p = format!("{}P/f", "L/".repeat(n));
            let os = std::fs::canonicalize(d.join(&p)).unwrap();
            assert_eq!(at(&p, &d), os, "{n} links of 2,000 components, and P");
        }
        let p = format!("{}P/f", "L/".repeat(40));
        let os = std::fs::canonicalize(d.join(&p)).unwrap_err();
        assert_eq!(os.raw_os_error(), Some(nix::libc::ELOOP), "41 links");
        assert_eq!(resolve(Path::new(&p), &d), None, "41 links");
        // A decision's budget: the walks of one decision, whoever asks for them, are bounded
        // together; outside one, each path has its own.
        let p = format!("{}P/f", "L/".repeat(39));
        {
            let _decision = Decision::start();
            let mut resolved = 0;
            while resolve(Path::new(&p), &d).is_some() {
                resolved += 1;
            }
            assert!(decision_spent());
            assert_eq!(
                resolved, 3,
                "three walks of 78k components in a decision's budget"
            );
            assert_eq!(readings(Path::new("dir/f"), &d), None);
        }
        assert!(!decision_spent());
        for _ in 0..4 {
            assert!(resolve(Path::new(&p), &d).is_some());
        }
    }

    #[test]
    fn finding_4_tilde_is_home() {
        let d = scratch("home");
        let home = d.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let cwd = d.join("project");
        std::fs::create_dir_all(&cwd).unwrap();
        let key = home.join(".ssh/id_rsa");
        for p in ["~/.ssh/id_rsa", "$HOME/.ssh/id_rsa", "${HOME}/.ssh/id_rsa"] {
            let r = resolve_in(Path::new(p), &cwd, Some(&home), &mut Budget::new()).unwrap();
            assert_eq!(r.path, key, "{p}");
        }
        assert_eq!(
            resolve_in(Path::new("~"), &cwd, Some(&home), &mut Budget::new())
                .unwrap()
                .path,
            home
        );
        // A folder named `~x` or `$HOMEX` is not the home folder; `~user` and `~` without a
        // home are not resolved.
        assert_eq!(
            resolve_in(Path::new("$HOMEX/a"), &cwd, Some(&home), &mut Budget::new())
                .unwrap()
                .path,
            cwd.join("$HOMEX/a")
        );
        assert_eq!(
            resolve_in(Path::new("~root/x"), &cwd, Some(&home), &mut Budget::new()),
            None
        );
        assert_eq!(
            resolve_in(Path::new("~/x"), &cwd, None, &mut Budget::new()),
            None
        );
        // And from the process's own $HOME.
        if let Some(h) = super::home() {
            assert_eq!(
                at("~/x", &cwd),
                resolve(&h.join("x"), Path::new("/")).unwrap().path
            );
        }
    }

    #[test]
    fn finding_7_a_path_of_640k_components_is_asked_not_resolved() {
        let d = scratch("long");
        let long = "a/".repeat(640 * 1024);
        assert_eq!(resolve(Path::new(&long), &d), None);
        assert_eq!(readings(Path::new(&long), &d), None);
        // The bound is the OS's: 4,095 bytes resolve, 4,096 do not.
        // A name longer than the filesystem takes (255 bytes here) names nothing: the OS
        // says ENAMETOOLONG, and it is kept as written, as a name that is not there.
        let name = format!("/{}", "x".repeat(MAX_PATH_BYTES - 1));
        let os = std::fs::symlink_metadata(&name).unwrap_err();
        assert_eq!(os.raw_os_error(), Some(nix::libc::ENAMETOOLONG));
        let r = resolve(Path::new(&name), Path::new("/")).unwrap();
        assert_eq!((r.path, r.is_dir), (PathBuf::from(&name), false));
        let name = format!("/{}", "x".repeat(300));
        assert_eq!(at(&format!("{name}/../tmp"), &d), at("/tmp", &d));
        let at_bound = format!("/{}", "a/".repeat((MAX_PATH_BYTES - 1) / 2));
        assert_eq!(at_bound.len(), MAX_PATH_BYTES);
        assert!(resolve(Path::new(&at_bound), Path::new("/")).is_some());
        assert!(resolve(Path::new(&format!("{at_bound}b")), Path::new("/")).is_none());
        // A relative path within the bound from a session folder that is not.
        let deep = PathBuf::from(format!("/{}", "d/".repeat(3000)));
        assert!(resolve(Path::new("x"), &deep).is_none());
    }
}
