//! The npm distribution as a user gets it (packaging/npm/): the tarballs made by
//! `packaging/npm/build.sh` from this build's binaries, installed offline into an empty
//! prefix, and run with a PATH that has no cargo or rustc: `npx acp-question-bridge --
//! acp-mock-agent` answers a real question; SIGTERM to the launcher reaches the bridge and
//! the agent, nothing is left running, and the launcher dies of the same signal; the exit
//! code comes back; a missing platform package is a clear error naming the platform.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::Command;

const NATIVE: &str =
    r#"{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}"#;

/// The npm name of this machine's platform (`linux-x64`, ...; the registry's names differ).
fn platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{os}-{cpu}")
}

/// A PATH with node and npm and nothing of Rust, and the folder of the installed bins.
fn user_path(prefix: &Path) -> String {
    let node = which("node").expect("node on PATH");
    let mut dirs = vec![prefix.join("node_modules/.bin")];
    dirs.push(node.parent().unwrap().to_owned());
    dirs.extend(["/usr/bin", "/bin"].map(PathBuf::from));
    for d in &dirs {
        for tool in ["cargo", "rustc"] {
            assert!(!d.join(tool).exists(), "{tool} in {d:?}: not a user's PATH");
        }
    }
    std::env::join_paths(dirs)
        .unwrap()
        .into_string()
        .expect("a UTF-8 PATH")
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Runs `cmd` to its end (killed after 10 minutes); its stdout, or a panic with what it
/// said.
fn run(cmd: &mut std::process::Command, what: &str) -> String {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} ran for 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The tarballs of this build, installed into an empty prefix: the prefix.
fn install(dir: &Path, with_platform_package: bool) -> PathBuf {
    // This build's binaries, stripped where `strip` is there (a debug build is large).
    let bins = dir.join("bins");
    std::fs::create_dir_all(&bins).unwrap();
    for (name, exe) in [("acp-question-bridge", BRIDGE), ("acp-mock-agent", MOCK)] {
        std::fs::copy(exe, bins.join(name)).unwrap();
        let _ = std::process::Command::new("strip")
            .arg(bins.join(name))
            .status();
    }
    let out = dir.join("tarballs");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let made = run(
        std::process::Command::new(root.join("packaging/npm/build.sh"))
            .arg(&out)
            .arg(format!("{}={}", platform(), bins.display())),
        "packaging/npm/build.sh",
    );
    let tarballs: Vec<&str> = made.lines().collect();
    assert_eq!(tarballs.len(), 2, "{made}");
    let prefix = dir.join("prefix");
    std::fs::create_dir_all(&prefix).unwrap();
    let mut npm = std::process::Command::new("npm");
    npm.args([
        "install",
        "--offline",
        "--no-audit",
        "--no-fund",
        "--prefix",
    ])
    .arg(&prefix)
    .env("PATH", user_path(&prefix))
    .env("npm_config_cache", dir.join("npm-cache"));
    for t in &tarballs {
        if with_platform_package || !t.contains(&format!("-{}-", platform())) {
            npm.arg(t);
        }
    }
    run(&mut npm, "npm install of the tarballs");
    prefix
}

/// `npx acp-question-bridge ARGS` in `prefix`, as a user's editor starts it.
fn npx(prefix: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("npx");
    cmd.args(["--offline", "acp-question-bridge"])
        .args(args)
        .current_dir(prefix)
        .env("PATH", user_path(prefix))
        .env("npm_config_cache", dir.join("npm-cache"))
        .env("RUST_LOG", "debug");
    cmd
}

/// The pid of the launcher (the node process running our bin script) under `root`.
fn launcher_under(root: u32) -> Option<u32> {
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.first().is_some_and(|a| a.ends_with(b"node"))
            && args
                .get(1)
                .is_some_and(|a| a.ends_with(b".bin/acp-question-bridge"))
        {
            return Some(pid);
        }
        todo.extend(children(pid));
    }
    None
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Every process whose command line names `needle`.
fn running(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(") ")
                .is_some_and(|(_, r)| r.starts_with('Z'));
            !zombie
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

#[tokio::test]
async fn npx_runs_the_bridge_a_question_is_answered_and_sigterm_leaves_nothing() {
    let dir = temp_dir("npm");
    let prefix = install(&dir, true);
    let bin_dir = prefix.join(format!(
        "node_modules/acp-question-bridge-{}/bin",
        platform()
    ));

    // `--version` through npx and the launcher, with no Rust on PATH.
    let version = run(
        npx(&prefix, &dir, &["--version"]).as_std_mut(),
        "npx acp-question-bridge --version",
    );
    assert_eq!(
        version.trim(),
        format!("acp-question-bridge {}", env!("CARGO_PKG_VERSION"))
    );

    // A real question through `npx acp-question-bridge -- acp-mock-agent` (the mock agent's
    // own launcher, from the same package).
    let mut b = Bridge::from_command(npx(&prefix, &dir, &["--", "acp-mock-agent"]));
    let ask = answer_the_mock_question(&mut b, "option-a").await;
    assert_eq!(ask["params"]["prompt"], "Which option?");

    // SIGTERM to the launcher: forwarded to the bridge, which ends its agent; the launcher
    // dies of the same signal, and npx reports it.
    let launcher = tokio::time::timeout(WAIT, async {
        loop {
            if let Some(pid) = launcher_under(b.pid()) {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the launcher under npx");
    let binaries = bin_dir.to_str().unwrap().to_owned();
    assert_eq!(
        running(&binaries).len(),
        3,
        "the bridge, its guard and the mock agent run from the package"
    );
    kill(Pid::from_raw(launcher as i32), Signal::SIGTERM).unwrap();
    let code = b.wait().await;
    assert_eq!(code, 128 + 15, "{}", b.stderr());
    assert!(
        b.stderr().contains("received signal; forwarding to agent"),
        "{}",
        b.stderr()
    );
    tokio::time::timeout(WAIT, async {
        while !running(&binaries).is_empty() || !running(prefix.to_str().unwrap()).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("left running: {:?}", running(prefix.to_str().unwrap())));

    // The bridge's own exit code comes back through the launcher: 2 for bad usage.
    let out = npx(&prefix, &dir, &[])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no agent command given"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Ctrl-C in a terminal: SIGINT to the whole process group npx runs in (npm, its shell, the
/// launcher; the bridge runs in a session of its own). The bridge gets exactly one SIGINT,
/// not a second that would mean "SIGKILL the agent now" (as it would if it shared the group
/// and the launcher forwarded the same signal).
#[tokio::test]
async fn sigint_to_npxs_whole_group_reaches_the_bridge_once() {
    let dir = temp_dir("npm-sigint");
    let prefix = install(&dir, true);
    let mut cmd = npx(&prefix, &dir, &["--", "acp-mock-agent"]);
    cmd.process_group(0);
    let mut b = Bridge::from_command(cmd);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    // The launcher is up (it forwards signals from its start).
    tokio::time::timeout(WAIT, async {
        while launcher_under(b.pid()).is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the launcher under npx");
    nix::sys::signal::killpg(Pid::from_raw(b.pid() as i32), Signal::SIGINT).unwrap();
    let code = b.wait().await;
    let stderr = b.stderr();
    assert_eq!(code, 128 + 2, "{stderr}");
    assert_eq!(
        stderr
            .matches("received signal; forwarding to agent")
            .count(),
        1,
        "{stderr}"
    );
}

#[tokio::test]
async fn a_missing_platform_package_is_a_clear_error_naming_the_platform() {
    let dir = temp_dir("npm-no-platform");
    let prefix = install(&dir, false);
    let out = npx(&prefix, &dir, &["--version"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let expected = format!(
        "the package with the binary for this platform ({0}), acp-question-bridge-{0}, is not installed",
        platform()
    );
    assert!(stderr.contains(&expected), "{stderr}");
}
