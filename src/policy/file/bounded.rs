//! A file the policy reads whole, which the agent may have put there: only a regular file
//! of at most [`MAX_FILE`] bytes, opened without blocking (`/dev/zero`, a FIFO, a link to
//! either would hold the bridge or fill its memory). The policy's own files, the trusted
//! folders' list, git's configuration, ripgrep's. A leaf: it uses nothing of the policy.

use std::path::Path;

/// The most bytes such a file may hold.
pub const MAX_FILE: u64 = 1 << 20;

/// The bytes of a file the policy reads (its own files, the trusted-folders list, git's
/// and ripgrep's configuration): only a regular file of at most
/// [`MAX_FILE`] bytes, opened without blocking. Anything else the agent could have put in
/// its place (`/dev/zero`, a FIFO, a link to either: a project's `.acp-question-bridge`
/// made after the wall was built is not walled) would hold the bridge or fill its memory.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = f.metadata()?;
    let other = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    if !meta.is_file() {
        return Err(other("not a regular file".into()));
    }
    if meta.len() > MAX_FILE {
        return Err(other(format!("larger than {MAX_FILE} bytes")));
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(other(format!("larger than {MAX_FILE} bytes")));
    }
    Ok(bytes)
}
