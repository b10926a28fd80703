//! The mounts this process sees (`/proc/self/mountinfo`), and the other places a walled
//! path can be reached by: a file system mounted twice (a bind mount of `/`, Fedora
//! Atomic's `/sysroot`, the top of a btrfs volume) shows the same folder at another path,
//! which a mount over the path alone does not cover.

use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};

/// One mount: its device (`major:minor`), the folder of its file system it shows, and
/// where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub dev: String,
    pub root: PathBuf,
    pub at: PathBuf,
}

/// The mounts of this process's namespace, in the order the kernel lists them.
pub fn mountinfo() -> Vec<Mount> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (dev, root, at) = (f.nth(2)?, f.next()?, f.next()?);
            Some(Mount {
                dev: dev.to_owned(),
                root: unescaped(root),
                at: unescaped(at),
            })
        })
        .collect()
}

/// A mountinfo field with its octal escapes (`\040` for a space) read.
fn unescaped(field: &str) -> PathBuf {
    let (b, mut out, mut i) = (field.as_bytes(), Vec::new(), 0);
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// The other paths at which `path` (whole, resolved) is reached through `mounts`: the mount
/// it is on (the deepest whose place holds it, the last listed of those) shows folder R of
/// its file system there; every other mount of the same device whose folder holds R shows
/// it too, at its place joined with the rest of R.
pub fn aliases(path: &Path, mounts: &[Mount]) -> Vec<PathBuf> {
    let Some(on) = mounts
        .iter()
        .filter(|m| path.starts_with(&m.at))
        .max_by_key(|m| m.at.components().count())
    else {
        return Vec::new();
    };
    let Ok(rest) = path.strip_prefix(&on.at) else {
        return Vec::new();
    };
    let r = on.root.join(rest);
    let mut out: Vec<PathBuf> = mounts
        .iter()
        .filter(|m| m.dev == on.dev && m.at != on.at)
        .filter_map(|m| Some(m.at.join(r.strip_prefix(&m.root).ok()?)))
        .filter(|p| p != path)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(dev: &str, root: &str, at: &str) -> Mount {
        Mount {
            dev: dev.into(),
            root: root.into(),
            at: at.into(),
        }
    }

    /// Fedora Atomic's layout: `/var` a bind of `/sysroot/ostree/deploy/fedora/var`, the
    /// physical root at `/sysroot`; a btrfs volume's top mounted beside its `@home`.
    #[test]
    fn a_folder_is_found_wherever_its_file_system_shows_it() {
        let mounts = [
            m("0:30", "/", "/sysroot"),
            m("0:30", "/ostree/deploy/fedora/var", "/var"),
            m("0:40", "/@home", "/home"),
            m("0:40", "/", "/mnt/top"),
            m("0:50", "/", "/tmp"),
        ];
        assert_eq!(
            aliases(
                Path::new("/var/home/u/.local/state/acp-question-bridge"),
                &mounts
            ),
            [PathBuf::from(
                "/sysroot/ostree/deploy/fedora/var/home/u/.local/state/acp-question-bridge"
            )]
        );
        assert_eq!(
            aliases(Path::new("/home/u/.config/acp-question-bridge"), &mounts),
            [PathBuf::from(
                "/mnt/top/@home/u/.config/acp-question-bridge"
            )]
        );
        assert!(aliases(Path::new("/tmp/x"), &mounts).is_empty());
        // A mount showing a folder beside it, not above it: no alias.
        let beside = [m("0:30", "/a", "/x"), m("0:30", "/b", "/y")];
        assert!(aliases(Path::new("/x/secret"), &beside).is_empty());
    }

    #[test]
    fn escapes_in_mountinfo_are_read() {
        assert_eq!(unescaped(r"/a\040b\134c"), PathBuf::from("/a b\\c"));
    }
}
