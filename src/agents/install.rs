//! A registry agent's `binary` archive, installed once into the cache:
//! `<cache>/agents/<id>/<version>/<platform>/`.
//!
//! Invariants:
//! - Never run a half-downloaded or half-unpacked file: the archive is downloaded into a
//!   private staging folder, its SHA-256 checked against the registry's (when it gives one;
//!   without one the digest is logged and kept beside the install), unpacked there, and
//!   only then is the staging folder renamed into place. An install folder exists whole, or
//!   not at all; a failed install leaves nothing behind, not even the empty folders made
//!   for it.
//! - Unpacking cannot write outside the staging folder (tar's `unpack_in` and zip's
//!   enclosed names refuse `..`, absolute paths and links out), and the command the registry
//!   names must be a file inside the install folder, links resolved.
//! - Two bridges installing the same agent at once both end with the same complete folder:
//!   the second rename finds the first one's folder and uses it.

use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use super::{fetch, Agent, AgentsError, Binary};

/// The program to run for `bin`, installed first if it is not in the cache.
pub fn binary(
    agent: &Agent,
    platform: &str,
    bin: &Binary,
    cache: &Path,
) -> Result<PathBuf, AgentsError> {
    let err = |reason: String| AgentsError::Install {
        id: agent.id.clone(),
        reason,
    };
    let version = if agent.version.is_empty() {
        "0"
    } else {
        &agent.version
    };
    for part in [&agent.id, version, platform] {
        if part.is_empty() || part.contains('/') || part.starts_with('.') {
            return Err(err(format!("{part:?} cannot name a folder")));
        }
    }
    let dir = cache
        .join("agents")
        .join(&agent.id)
        .join(version)
        .join(platform);
    if !dir.is_dir() {
        install(bin, &dir).map_err(err)?;
    }
    command_in(&dir, &bin.cmd).map_err(err)
}

/// `cmd` (`./codex-acp`) inside `dir`: a file there, links resolved.
pub fn command_in(dir: &Path, cmd: &str) -> Result<PathBuf, String> {
    let root = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = root
        .join(cmd.trim_start_matches("./"))
        .canonicalize()
        .map_err(|e| format!("the archive has no {cmd:?} ({e})"))?;
    if !path.starts_with(&root) || !path.is_file() {
        return Err(format!("{cmd:?} is not a file inside the archive"));
    }
    Ok(path)
}

/// Downloads, checks and unpacks `bin` into `dir` (which does not exist yet). On failure,
/// the folders made for it are removed again (those still empty): a refused download
/// leaves nothing in the cache.
fn install(bin: &Binary, dir: &Path) -> Result<(), String> {
    let parent = dir.parent().ok_or("no folder for the install")?;
    let made: Vec<PathBuf> = parent
        .ancestors()
        .take_while(|d| !d.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let done = install_in(bin, dir, parent);
    if done.is_err() {
        // Innermost first; `remove_dir` leaves a folder another bridge has filled meanwhile.
        for d in &made {
            let _ = std::fs::remove_dir(d);
        }
    }
    done
}

fn install_in(bin: &Binary, dir: &Path, parent: &Path) -> Result<(), String> {
    let stage = Stage::new(parent)?;
    let archive_path = stage.0.join("download");
    let mut file = std::fs::File::options()
        .create_new(true)
        .read(true)
        .write(true)
        .open(&archive_path)
        .map_err(|e| format!("{}: {e}", archive_path.display()))?;
    tracing::info!(url = %bin.archive, "downloading the agent's archive");
    let mut hashing = Hashing::new(&mut file);
    let size = fetch::download(&bin.archive, &mut hashing, fetch::ARCHIVE_LIMIT)?;
    let digest = hashing.hex();
    match bin.sha256.as_deref() {
        Some(want) if !want.eq_ignore_ascii_case(&digest) => {
            return Err(format!(
                "the archive's SHA-256 is {digest}, not the registry's {want}: refused (a corrupt or altered download)"
            ))
        }
        Some(_) => tracing::info!(size, "the archive's SHA-256 matches the registry's"),
        None => tracing::warn!(size, sha256 = %digest, "the registry gives no SHA-256 for this archive; trusting the HTTPS download"),
    }
    file.sync_all().map_err(|e| e.to_string())?;
    file.rewind().map_err(|e| e.to_string())?;
    let unpacked = stage.0.join("agent");
    std::fs::create_dir(&unpacked).map_err(|e| e.to_string())?;
    unpack(&bin.archive, file, &unpacked)?;
    std::fs::write(
        unpacked.join(".sha256"),
        format!("{digest}  {}\n", bin.archive),
    )
    .map_err(|e| e.to_string())?;
    // The command must be there before the install is.
    command_in(&unpacked, &bin.cmd)?;
    match std::fs::rename(&unpacked, dir) {
        Ok(()) => Ok(()),
        // Another bridge installed it meanwhile: use that one.
        Err(_) if dir.is_dir() => Ok(()),
        Err(e) => Err(format!(
            "cannot move the install into {}: {e}",
            dir.display()
        )),
    }
}

/// Unpacks `file` into `into`, by the archive's name: `.tar.gz`/`.tgz`, `.zip`, or a single
/// program (no archive).
fn unpack(url: &str, file: std::fs::File, into: &Path) -> Result<(), String> {
    let name = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
        // The archive's modes, without set-id bits (mode & 0o777), and nothing writable by others.
        archive.set_preserve_permissions(false);
        archive.set_mask(0o022);
        archive.set_overwrite(false);
        let entries = archive
            .entries()
            .map_err(|e| format!("not a .tar.gz archive ({e})"))?;
        let mut total = 0u64;
        for entry in entries {
            let mut entry = entry.map_err(|e| format!("not a .tar.gz archive ({e})"))?;
            total = total.saturating_add(entry.header().entry_size().unwrap_or(u64::MAX));
            if total > UNPACKED_LIMIT {
                return Err(too_big());
            }
            let unpacked = entry
                .unpack_in(into)
                .map_err(|e| format!("cannot unpack the archive ({e})"))?;
            if !unpacked {
                return Err(format!(
                    "the archive holds a path outside its folder ({}); refused",
                    entry
                        .path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                ));
            }
        }
        Ok(())
    } else if name.ends_with(".zip") {
        let mut archive =
            zip::ZipArchive::new(file).map_err(|e| format!("not a .zip archive ({e})"))?;
        let mut total = 0u64;
        for i in 0..archive.len() {
            let entry = archive
                .by_index(i)
                .map_err(|e| format!("not a .zip archive ({e})"))?;
            total = total.saturating_add(entry.size());
            if total > UNPACKED_LIMIT {
                return Err(too_big());
            }
            if entry.enclosed_name().is_none() {
                return Err(format!(
                    "the archive holds a path outside its folder ({}); refused",
                    entry.name()
                ));
            }
        }
        archive
            .extract(into)
            .map_err(|e| format!("cannot unpack the archive ({e})"))
    } else if [
        ".tar.bz2", ".tbz2", ".tar.xz", ".dmg", ".pkg", ".deb", ".rpm", ".msi",
    ]
    .iter()
    .any(|s| name.ends_with(s))
    {
        Err(format!(
            "{name}: this kind of archive is not unpacked (.tar.gz, .tgz, .zip or a program are)"
        ))
    } else {
        // A program, as it is.
        let target = into.join(if name.is_empty() { "agent" } else { &name });
        let mut out = std::fs::File::create(&target).map_err(|e| e.to_string())?;
        std::io::copy(&mut { file }, &mut out).map_err(|e| e.to_string())?;
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())
    }
}

/// The most an archive may unpack to (a compressed archive is bounded by
/// `fetch::ARCHIVE_LIMIT`; what it inflates to, by this).
pub const UNPACKED_LIMIT: u64 = 4 << 30;

fn too_big() -> String {
    format!(
        "the archive unpacks to more than {} GiB; refused",
        UNPACKED_LIMIT >> 30
    )
}

/// A private staging folder beside the install, removed when dropped (after a successful
/// install it holds only the emptied download).
struct Stage(PathBuf);

impl Stage {
    fn new(parent: &Path) -> Result<Stage, String> {
        for n in 0..100u32 {
            let dir = parent.join(format!(".staging-{}-{n}", std::process::id()));
            let mut builder = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&dir) {
                Ok(()) => return Ok(Stage(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("{}: {e}", dir.display())),
            }
        }
        Err(format!("no staging folder in {}", parent.display()))
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A writer that hashes what it writes (SHA-256).
struct Hashing<'a> {
    to: &'a mut dyn Write,
    ctx: ring::digest::Context,
}

impl<'a> Hashing<'a> {
    fn new(to: &'a mut dyn Write) -> Self {
        Hashing {
            to,
            ctx: ring::digest::Context::new(&ring::digest::SHA256),
        }
    }

    fn hex(self) -> String {
        self.ctx
            .finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl Write for Hashing<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.to.write(buf)?;
        self.ctx.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.to.flush()
    }
}

/// Whether `bin` of `agent` is in the cache.
pub fn cached(agent: &Agent, platform: &str, cache: &Path) -> bool {
    let version = if agent.version.is_empty() {
        "0"
    } else {
        &agent.version
    };
    cache
        .join("agents")
        .join(&agent.id)
        .join(version)
        .join(platform)
        .is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("acp-qb-install-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A .tar.gz with one entry at `path` (written raw, so `..` can be put in it).
    fn tar_gz(path: &str) -> Vec<u8> {
        let mut header = tar::Header::new_gnu();
        let data = b"#!/bin/sh\n";
        header.set_size(data.len() as u64);
        header.set_mode(0o755);
        {
            let name = &mut header.as_old_mut().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
        }
        header.set_cksum();
        let mut tar = Vec::new();
        tar.extend_from_slice(header.as_bytes());
        tar.extend_from_slice(data);
        tar.resize(tar.len().div_ceil(512) * 512 + 1024, 0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    fn unpack_bytes(name: &str, bytes: &[u8], into: &Path) -> Result<(), String> {
        let file_path = into.with_extension("download");
        std::fs::write(&file_path, bytes).unwrap();
        unpack(name, std::fs::File::open(&file_path).unwrap(), into)
    }

    #[test]
    fn a_tar_gz_unpacks_and_its_command_is_found() {
        let d = temp("ok");
        let into = d.join("agent");
        std::fs::create_dir(&into).unwrap();
        unpack_bytes("https://x/a-1.0.tar.gz", &tar_gz("bin/agent"), &into).unwrap();
        let cmd = command_in(&into, "./bin/agent").unwrap();
        assert!(cmd.ends_with("bin/agent"));
        assert!(
            command_in(&into, "../agent.download").is_err(),
            "outside the folder"
        );
        assert!(command_in(&into, "./missing").is_err());
    }

    #[test]
    fn paths_out_of_the_folder_and_corrupt_archives_are_refused() {
        let d = temp("evil");
        let into = d.join("agent");
        std::fs::create_dir(&into).unwrap();
        let err = unpack_bytes("https://x/a.tgz", &tar_gz("../escape"), &into).unwrap_err();
        assert!(
            err.contains("outside") || err.contains("cannot unpack"),
            "{err}"
        );
        assert!(!d.join("escape").exists());
        let err = unpack_bytes("https://x/a.tar.gz", b"not gzip at all", &into).unwrap_err();
        assert!(err.contains("archive"), "{err}");
        let err = unpack_bytes("https://x/a.zip", b"PK not a zip", &into).unwrap_err();
        assert!(err.contains("not a .zip"), "{err}");
        let err = unpack_bytes("https://x/a.dmg", b"x", &into).unwrap_err();
        assert!(err.contains("not unpacked"), "{err}");
    }
}
