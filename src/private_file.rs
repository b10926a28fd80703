//! Files only their owner may read: created with mode 0600 (an existing one is tightened to
//! it), synced, and, with [`replace`], put in place by a rename so that a reader sees the old
//! content or the new, never a part.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` (0600).
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its mode on open: tighten it.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Writes `bytes` to a temporary file beside `path` (0600), then renames it to `path`.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp: PathBuf = path.with_file_name(format!(".{name}.tmp"));
    write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
