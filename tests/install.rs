//! The tests' install lock (`tests/it/common/install.rs`) on a bare machine: two test binaries
//! started together on an empty cache both ask for the same npm package. Both must get it,
//! and `npm install` must run once: the second waits for the first and uses its result.
//!
//! The "two test binaries" are two copies of this binary (so it has its own `main`, not
//! libtest's): started with `ACP_QB_INSTALL_CHILD=1`, a copy only installs and exits.
//! Needs Node.js, npm and the npm registry, like the other npm-backed tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

// The install helper of the integration tests (`tests/it`), the only part of them this
// binary needs (so the rest of it goes unused here).
#[allow(dead_code)]
#[path = "it/common/install.rs"]
mod install;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

const PACKAGE: &str = "is-number";
const VERSION: &str = "7.0.0";
const CHILD_RUN: Duration = Duration::from_secs(600);

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::var_os("ACP_QB_INSTALL_CHILD").is_some() {
        let dir = install::npm_package(PACKAGE, VERSION)
            .await
            .unwrap_or_else(|why| panic!("{why}"));
        assert!(dir.join("package.json").is_file());
        return;
    }
    // libtest's `--list` and name filters, so `cargo test NAME` and nextest treat it as
    // one test named NAME.
    const NAME: &str = "two_binaries_on_an_empty_cache_install_once";
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        if !args.iter().any(|a| a == "--ignored") {
            say(&format!("{NAME}: test"));
        }
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    if !filters.is_empty() && !filters.iter().any(|f| NAME.contains(f.as_str())) {
        say("install: 0 passed, 0 failed");
        return;
    }
    two_binaries_on_an_empty_cache_install_once().await;
    say("install: 1 passed, 0 failed");
}

#[allow(clippy::print_stdout)]
fn say(line: &str) {
    println!("{line}");
}

/// A new, empty folder of its own under the system's temporary folder.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "acp-qb-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn two_binaries_on_an_empty_cache_install_once() {
    let cache = temp_dir("install-cache");
    let me = std::env::current_exe().expect("own path");
    let start = |cache: &Path| {
        tokio::process::Command::new(&me)
            .env("ACP_QB_INSTALL_CHILD", "1")
            .env("ACP_QB_CACHE", cache)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start a copy of the test binary")
    };
    let (a, b) = (start(&cache), start(&cache));
    let (a, b) = tokio::time::timeout(CHILD_RUN, async {
        tokio::join!(a.wait_with_output(), b.wait_with_output())
    })
    .await
    .expect("the two installs did not finish");
    for out in [a.expect("copy a"), b.expect("copy b")] {
        assert!(
            out.status.success(),
            "an install failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let log = std::fs::read_to_string(cache.join("install.log")).unwrap_or_default();
    let runs = log
        .lines()
        .filter(|l| l.starts_with(&format!("npm install {PACKAGE}@{VERSION}")))
        .count();
    assert_eq!(runs, 1, "npm ran {runs} times, not once:\n{log}");
    let manifest = cache
        .join("npm/node_modules")
        .join(PACKAGE)
        .join("package.json");
    let manifest = std::fs::read_to_string(&manifest).expect("the package is installed");
    assert!(manifest.contains(&format!("\"version\": \"{VERSION}\"")));
    let _ = std::fs::remove_dir_all(&cache);
}
