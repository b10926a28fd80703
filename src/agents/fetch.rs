//! Reading the registry, and downloads: over HTTPS (plain HTTP only to this machine, for
//! tests and local mirrors), bounded in size and time, and the registry kept in a cache so
//! that a bridge started offline still finds its agent.
//!
//! Invariants:
//! - A URL is `https://`, or `http://` to a loopback host; redirects stay on HTTPS.
//! - The registry is taken from the cache while it is younger than [`MAX_AGE`]; older, it is
//!   fetched again, and if that fails the cached copy is used with its age said. Only a
//!   fetched text that parses as a registry replaces the cached one (atomically).
//! - Every read is bounded: [`REGISTRY_LIMIT`] for the registry, [`ARCHIVE_LIMIT`] for an
//!   archive, [`TIMEOUT`] for each request.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{AgentsError, Registry};

/// How long a cached registry is used without asking the network.
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// The largest registry read.
pub const REGISTRY_LIMIT: u64 = 16 << 20;
/// The largest archive downloaded.
pub const ARCHIVE_LIMIT: u64 = 1 << 30;
/// How long one download may take, start to end.
pub const TIMEOUT: Duration = Duration::from_secs(300);
/// How long fetching the registry may take (the cached copy is used after that).
pub const REGISTRY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long opening a connection may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A registry read, and where it came from.
#[derive(Debug)]
pub struct Loaded {
    pub registry: Registry,
    /// The file or URL.
    pub source: String,
    /// How it was read, when not straight from its source: "cached 5m ago", and why.
    pub note: Option<String>,
}

/// Whether `url` may be fetched: HTTPS, or plain HTTP to this machine.
pub fn check_url(url: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("{url:?} is not a URL"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match hostport.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(h, _)| h),
        None => hostport.rsplit_once(':').map_or(hostport, |(h, _)| h),
    };
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match scheme {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => Err(format!(
            "{url} is plain HTTP to another machine; only HTTPS is fetched (or HTTP to this one)"
        )),
        other => Err(format!("{url}: the scheme {other:?} is not fetched")),
    }
}

fn agent(url: &str, timeout: Duration) -> ureq::Agent {
    let https = url.starts_with("https://");
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .https_only(https)
        // Plain HTTP is fetched only from this machine, and is not followed elsewhere.
        .max_redirects(if https { 10 } else { 0 })
        .user_agent(concat!("acp-question-bridge/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// GETs `url` and copies its body into `to`, at most `limit` bytes (more is an error);
/// returns how many bytes it copied.
pub fn download(url: &str, to: &mut dyn Write, limit: u64) -> Result<u64, String> {
    download_within(url, to, limit, TIMEOUT)
}

fn download_within(
    url: &str,
    to: &mut dyn Write,
    limit: u64,
    timeout: Duration,
) -> Result<u64, String> {
    check_url(url)?;
    let mut resp = agent(url, timeout)
        .get(url)
        .call()
        .map_err(|e| format!("{url}: {e}"))?;
    let mut body = resp.body_mut().with_config().limit(limit).reader();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = body.read(&mut buf).map_err(|e| format!("{url}: {e}"))?;
        if n == 0 {
            return Ok(total);
        }
        to.write_all(&buf[..n])
            .map_err(|e| format!("writing {url}: {e}"))?;
        total += n as u64;
    }
}

/// The registry at `source` (a URL or a file), through the cache under `cache` for URLs.
pub fn load(source: &str, cache: &Path) -> Result<Loaded, AgentsError> {
    let err = |reason: String| AgentsError::Registry {
        source_name: source.to_owned(),
        reason,
    };
    if !source.contains("://") {
        let text = std::fs::read_to_string(source).map_err(|e| err(e.to_string()))?;
        return Ok(Loaded {
            registry: Registry::parse(&text, source)?,
            source: source.to_owned(),
            note: None,
        });
    }
    check_url(source).map_err(err)?;
    let cached = cache_file(cache, source);
    let age = std::fs::metadata(&cached)
        .and_then(|m| m.modified())
        .ok()
        .map(|t| SystemTime::now().duration_since(t).unwrap_or_default());
    let read_cached = |note: String| -> Result<Loaded, AgentsError> {
        let text = std::fs::read_to_string(&cached).map_err(|e| err(e.to_string()))?;
        Ok(Loaded {
            registry: Registry::parse(&text, source)?,
            source: source.to_owned(),
            note: Some(note),
        })
    };
    if let Some(age) = age.filter(|a| *a < MAX_AGE) {
        if let Ok(loaded) = read_cached(format!("cached {} ago", human(age))) {
            return Ok(loaded);
        }
    }
    let mut body = Vec::new();
    let fetched =
        download_within(source, &mut body, REGISTRY_LIMIT, REGISTRY_TIMEOUT).and_then(|_| {
            let text = String::from_utf8(body).map_err(|_| "not UTF-8".to_owned())?;
            let registry = Registry::parse(&text, source).map_err(|e| e.to_string())?;
            Ok((text, registry))
        });
    match (fetched, age) {
        (Ok((text, registry)), _) => {
            if let Err(e) = keep(&cached, text.as_bytes()) {
                tracing::warn!(error = %e, "cannot keep the registry in the cache");
            }
            Ok(Loaded {
                registry,
                source: source.to_owned(),
                note: None,
            })
        }
        (Err(why), Some(age)) => {
            tracing::warn!(registry = source, error = %why, "cannot fetch the registry; using the cached copy");
            read_cached(format!(
                "cached {} ago; fetching it again failed: {why}",
                human(age)
            ))
        }
        (Err(why), None) => {
            // `download` names the URL; the error names it once already.
            let why = why
                .strip_prefix(&format!("{source}: "))
                .unwrap_or(&why)
                .to_owned();
            Err(err(format!(
                "{why}; no copy of it is cached (in {}). Offline, give the registry as a file: --agent-registry FILE",
                cached.parent().unwrap_or(cache).display()
            )))
        }
    }
}

/// Whether the registry at `source` can be read now, for `doctor`: how many agents it has,
/// or why not. A URL is fetched (within [`CHECK_TIMEOUT`], nothing kept); when that fails,
/// a cached copy is what `--agent` would use, and is named.
pub fn check(source: &str, cache: &Path) -> Result<String, String> {
    let count = |text: &str| {
        Registry::parse(text, source)
            .map(|r| r.agents.len())
            .map_err(|e| e.to_string())
    };
    if !source.contains("://") {
        let text = std::fs::read_to_string(source).map_err(|e| format!("{source}: {e}"))?;
        return count(&text).map(|n| format!("{source}: {n} agents"));
    }
    let mut body = Vec::new();
    let fetched = download_within(source, &mut body, REGISTRY_LIMIT, CHECK_TIMEOUT)
        .and_then(|_| count(&String::from_utf8_lossy(&body)));
    match fetched {
        Ok(n) => Ok(format!("{source}: {n} agents")),
        Err(why) => {
            let cached = cache_file(cache, source);
            match std::fs::read_to_string(&cached).ok().map(|t| count(&t)) {
                Some(Ok(n)) => Ok(format!(
                    "{source} cannot be reached ({why}); --agent uses the copy cached in {} ({n} agents)",
                    cached.display()
                )),
                _ => Err(format!("{source} cannot be reached ({why}), and no copy of it is cached")),
            }
        }
    }
}

/// How long `doctor` waits for the registry.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the registry at `url` is cached.
fn cache_file(cache: &Path, url: &str) -> PathBuf {
    let digest = ring::digest::digest(&ring::digest::SHA256, url.as_bytes());
    let name: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    cache.join("registry").join(format!("{name}.json"))
}

/// Writes `bytes` to `path` at once: beside it, then renamed over it.
pub fn keep(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // A link (a dotfiles checkout) keeps being one: its target is what is replaced.
    let target;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            target = std::fs::canonicalize(path)?;
            target.as_path()
        }
        _ => path,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}",
        path.file_name()
            .map_or("tmp".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    // The file's mode is kept (a private policy file stays private).
    let mode = std::fs::metadata(path).ok().map(|m| m.permissions());
    std::fs::File::create(&tmp)
        .and_then(|mut f| {
            if let Some(m) = mode {
                f.set_permissions(m)?;
            }
            f.write_all(bytes).and_then(|()| f.sync_all())
        })
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// `3h`, `12m`, `40s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_replaces_a_links_target_and_keeps_the_files_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("acp-qb-keep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("dotfiles-policy.toml");
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.join("policy.toml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        keep(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_https_or_http_to_this_machine() {
        for ok in [
            "https://cdn.example/r.json",
            "http://127.0.0.1:8080/r.json",
            "http://localhost/r.json",
            "http://[::1]:9/x",
            "http://127.5.6.7/x",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://example.com/r.json",
            "http://10.0.0.1/r.json",
            "http://127.0.0.1.evil.com/x",
            "http://localhost.evil.com/x",
            "http://user@evil.com/x",
            "ftp://127.0.0.1/x",
            "file:///etc/passwd",
            "/etc/passwd",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ages_read_as_a_person_would() {
        assert_eq!(human(Duration::from_secs(5)), "5s");
        assert_eq!(human(Duration::from_secs(125)), "2m");
        assert_eq!(human(Duration::from_secs(7300)), "2h");
        assert_eq!(human(Duration::from_secs(200000)), "2d");
    }
}
