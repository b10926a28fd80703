//! The npm distribution as a user gets it (packaging/npm/): the tarballs made by
//! `packaging/npm/build.sh` from this build's binary (stripped, as the dist profile makes
//! them) with no cargo or rustc on PATH, installed offline into an empty prefix.
//!
//! - The platform package is one binary with no debug info or symbols (its ELF section
//!   table read here), and nothing else of weight; build.sh refuses a binary with debug info;
//!   the dist profile strips.
//! - Installed with its install script, `acp-question-bridge` on PATH is the native binary
//!   (the running bridge's `/proc/PID/exe`), not Node.js; installed with `--ignore-scripts`,
//!   the Node.js shim runs the same binary.
//! - `npx acp-question-bridge -- acp-question-bridge mock-agent` answers a real question;
//!   SIGTERM to the bridge under npx reaches the agent, nothing is left running, and the exit
//!   code comes back; Ctrl-C to npx's whole group reaches the bridge once; a missing platform
//!   package is a clear error naming the platform.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::Command;

const NATIVE: &str =
    r#"{"_meta":{"sandboxagent.dev":{"extensions":{"sessionRequestQuestion":true}}}}"#;

/// The bound on the platform package's unpacked size for an optimised build: the dist
/// binary is 16.2 MB (x86_64 Linux, November 2026; docs/INSTALL.md), so 25 MB leaves half
/// again for growth, while the unstripped binary (73 MB) or its line tables alone are far
/// over. A debug build's binary is 37 MB even stripped, so there the bound is the binary's
/// own size and [`PACKAGE_FILES`].
const MAX_UNPACKED_OPTIMISED: u64 = 25_000_000;

/// What the platform package may hold besides its binary: package.json and the two
/// license files (about 12 KB).
const PACKAGE_FILES: u64 = 64 * 1024;

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

/// A user's PATH: `first`, then node and npm, and nothing of Rust.
fn user_path(first: &[PathBuf]) -> String {
    let node = which("node").expect("node on PATH");
    let mut dirs = first.to_vec();
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

/// The PATH of a project with the packages installed in `prefix`.
fn project_path(prefix: &Path) -> String {
    user_path(&[prefix.join("node_modules/.bin")])
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Runs `cmd` to its end (killed after 10 minutes): its exit code, stdout and stderr.
fn output(cmd: &mut std::process::Command, what: &str) -> (Option<i32>, String, String) {
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
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `cmd` to its end: its stdout, or a panic with what it said.
fn run(cmd: &mut std::process::Command, what: &str) -> String {
    let (code, stdout, stderr) = output(cmd, what);
    assert_eq!(code, Some(0), "{what} failed: {stdout}\n{stderr}");
    stdout
}

/// `packaging/npm/build.sh OUT PLATFORM=BINS` with a user's PATH (no cargo).
fn build_sh(out: &Path, bins: &Path) -> std::process::Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = std::process::Command::new(root.join("packaging/npm/build.sh"));
    cmd.arg(out)
        .arg(format!("{}={}", platform(), bins.display()))
        .env("PATH", user_path(&[]));
    cmd
}

/// The two tarballs of this build, packed once for every test here.
struct Tarballs {
    platform: PathBuf,
    launcher: PathBuf,
    /// The binary they were packed from.
    binary: PathBuf,
}

fn tarballs() -> &'static Tarballs {
    static PACKED: OnceLock<Tarballs> = OnceLock::new();
    PACKED.get_or_init(|| {
        let dir = temp_dir("npm-pack");
        // This build's binary, stripped as the dist profile strips (a test build has line
        // tables, and build.sh refuses those).
        let bins = dir.join("bins");
        std::fs::create_dir_all(&bins).unwrap();
        let binary = bins.join("acp-question-bridge");
        std::fs::copy(BRIDGE, &binary).unwrap();
        let strip = std::process::Command::new("strip").arg(&binary).status();
        assert!(
            strip.as_ref().is_ok_and(|s| s.success()),
            "`strip {binary:?}` (GNU binutils, which a Rust toolchain's linker comes with): {strip:?}"
        );
        let made = run(&mut build_sh(&dir.join("tarballs"), &bins), "build.sh");
        let tarballs: Vec<PathBuf> = made.lines().map(PathBuf::from).collect();
        assert_eq!(tarballs.len(), 2, "{made}");
        let (platform, launcher): (Vec<_>, Vec<_>) = tarballs
            .into_iter()
            .partition(|t| t.to_str().unwrap().contains(&format!("-{}-", platform())));
        Tarballs {
            platform: platform.into_iter().next().expect("the platform tarball"),
            launcher: launcher.into_iter().next().expect("the launcher tarball"),
            binary,
        }
    })
}

/// How to install the tarballs.
#[derive(Clone, Copy, PartialEq)]
enum Install {
    /// Into a project (`npm install --prefix`), as `npx` finds it.
    Project,
    /// Without the platform package, into a project.
    ProjectWithoutPlatform,
    /// `npm install -g --prefix`: the bin on PATH, with the install script run.
    Global,
    /// The same with `--ignore-scripts`.
    GlobalNoScripts,
}

/// The tarballs installed offline into an empty prefix (`dir/prefix`): the prefix.
fn install(dir: &Path, how: Install) -> PathBuf {
    let t = tarballs();
    let prefix = dir.join("prefix");
    std::fs::create_dir_all(&prefix).unwrap();
    let mut npm = std::process::Command::new("npm");
    npm.arg("install");
    if matches!(how, Install::Global | Install::GlobalNoScripts) {
        npm.arg("--global");
    }
    if how == Install::GlobalNoScripts {
        npm.arg("--ignore-scripts");
    }
    npm.args(["--offline", "--no-audit", "--no-fund", "--prefix"])
        .arg(&prefix)
        .env("PATH", user_path(&[]))
        .env("npm_config_cache", dir.join("npm-cache"));
    if how != Install::ProjectWithoutPlatform {
        npm.arg(&t.platform);
    }
    npm.arg(&t.launcher);
    run(&mut npm, "npm install of the tarballs");
    prefix
}

/// `npx acp-question-bridge ARGS` in `prefix`, as a user's editor starts it.
fn npx(prefix: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("npx");
    cmd.args(["--offline", "acp-question-bridge"])
        .args(args)
        .current_dir(prefix)
        .env("PATH", project_path(prefix))
        .env("npm_config_cache", dir.join("npm-cache"))
        .env("RUST_LOG", "debug");
    cmd
}

/// The names of the sections of an ELF file that a stripped binary has none of: debug info
/// and the symbol table, those not loaded to run (as packaging/npm/debug-sections.js reads
/// them; `.debug_gdb_scripts` is loaded, a few bytes that `strip` keeps).
fn debug_sections(elf: &[u8]) -> Vec<String> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "a 64-bit ELF file");
    assert_eq!(elf[5], 1, "a little-endian ELF file");
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    assert!(shnum > 0 && shstrndx < shnum, "a plain section table");
    // A section header: name (offset in the names' section), flags, offset, size.
    let header = |i: usize| {
        let h = shoff + i * shentsize;
        (u32_at(h), u64_at(h + 8), u64_at(h + 0x18), u64_at(h + 0x20))
    };
    let names = header(shstrndx).2;
    let name = |at: usize| {
        let start = names + at;
        let end = start + elf[start..].iter().position(|&b| b == 0).unwrap();
        String::from_utf8_lossy(&elf[start..end]).into_owned()
    };
    const SHF_ALLOC: usize = 0x2;
    (1..shnum)
        .map(header)
        .filter(|&(_, flags, _, _)| flags & SHF_ALLOC == 0)
        .map(|(n, _, _, _)| name(n))
        .filter(|n| {
            n.starts_with(".debug") || n.starts_with(".zdebug") || n == ".symtab" || n == ".strtab"
        })
        .collect()
}

/// Every file under `dir` (relative path, size).
fn files(dir: &Path) -> Vec<(String, u64)> {
    let mut found = vec![];
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                todo.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
                found.push((rel, meta.len()));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn the_platform_package_is_one_stripped_binary_of_bounded_size() {
    let t = tarballs();
    let dir = temp_dir("npm-unpacked");
    run(
        std::process::Command::new("tar")
            .arg("-xzf")
            .arg(&t.platform)
            .arg("-C")
            .arg(&dir),
        "tar -xzf of the platform package",
    );
    let unpacked = files(&dir.join("package"));
    let names: Vec<&str> = unpacked.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "LICENSE-APACHE",
            "LICENSE-MIT",
            "bin/acp-question-bridge",
            "package.json"
        ],
        "one binary: the mock agent is `acp-question-bridge mock-agent`"
    );
    let binary = std::fs::read(dir.join("package/bin/acp-question-bridge")).unwrap();
    assert_eq!(
        debug_sections(&binary),
        Vec::<String>::new(),
        "debug info or symbols in the packed binary"
    );
    let size: u64 = unpacked.iter().map(|(_, s)| s).sum();
    let own = std::fs::metadata(&t.binary).unwrap().len();
    assert!(
        size <= own + PACKAGE_FILES,
        "unpacked {size} B: more than the binary ({own} B) and {PACKAGE_FILES} B: {unpacked:?}"
    );
    if !cfg!(debug_assertions) {
        assert!(
            size <= MAX_UNPACKED_OPTIMISED,
            "unpacked {size} B, over {MAX_UNPACKED_OPTIMISED}"
        );
    }
}

#[test]
fn build_sh_refuses_a_binary_with_debug_info_and_the_dist_profile_strips() {
    // This test build's binary has line tables (`debug = "line-tables-only"`).
    let dir = temp_dir("npm-unstripped");
    let bins = dir.join("bins");
    std::fs::create_dir_all(&bins).unwrap();
    std::fs::copy(BRIDGE, bins.join("acp-question-bridge")).unwrap();
    let elf = std::fs::read(BRIDGE).unwrap();
    assert!(debug_sections(&elf).contains(&".debug_line".to_owned()));
    let (code, stdout, stderr) = output(&mut build_sh(&dir.join("out"), &bins), "build.sh");
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("has debug info or symbols (")
            && stderr.contains(".debug_line")
            && stderr.contains("--profile dist"),
        "{stderr}"
    );
    assert!(
        !dir.join("out").read_dir().unwrap().any(|_| true),
        "packed nothing"
    );

    // What makes the binaries build.sh takes: the dist profile of Cargo.toml.
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let dist = manifest
        .split("\n[profile.dist]\n")
        .nth(1)
        .expect("a [profile.dist] in Cargo.toml")
        .split("\n[")
        .next()
        .unwrap();
    let settings: Vec<&str> = dist
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(
        settings,
        ["inherits = \"release\"", "debug = false", "strip = true"]
    );
}

/// The file the process `pid` runs: (device, inode).
fn exe(pid: u32) -> (u64, u64) {
    let m = std::fs::metadata(format!("/proc/{pid}/exe")).expect("/proc/PID/exe");
    (m.dev(), m.ino())
}

fn file_id(path: &Path) -> (u64, u64) {
    let m = std::fs::metadata(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    (m.dev(), m.ino())
}

#[tokio::test]
async fn installed_the_bin_on_path_is_the_native_binary_and_without_scripts_the_shim_runs_it() {
    let native_dir = temp_dir("npm-global");
    let prefix = install(&native_dir, Install::Global);
    let bin = prefix.join("lib/node_modules/acp-question-bridge/bin/acp-question-bridge");
    let platform_bin = prefix.join(format!(
        "lib/node_modules/acp-question-bridge-{}/bin/acp-question-bridge",
        platform()
    ));
    let on_path = prefix.join("bin/acp-question-bridge");
    assert_eq!(std::fs::canonicalize(&on_path).unwrap(), bin);
    assert!(
        std::fs::read(&bin).unwrap() == std::fs::read(&platform_bin).unwrap(),
        "the install script puts the platform's binary in place of the shim"
    );

    // The bridge an editor starts from PATH, around the mock agent of the same binary.
    let path = user_path(&[prefix.join("bin")]);
    let mut cmd = Command::new("acp-question-bridge");
    cmd.args(["--no-control", "--", "acp-question-bridge", "mock-agent"])
        .env("PATH", &path)
        .env("RUST_LOG", "debug");
    let mut b = Bridge::from_command(cmd);
    answer_the_mock_question(&mut b, "option-a").await;
    // The process started is the bridge itself: it runs the bin, no Node.js in between.
    assert!(std::fs::read(&bin).unwrap().starts_with(b"\x7fELF"));
    assert_eq!(exe(b.pid()), file_id(&bin));
    b.close_stdin();
    assert_eq!(b.wait().await, 0, "{}", b.stderr());

    // Installed with --ignore-scripts, the bin is the shim, and runs the same bridge.
    let shim_dir = temp_dir("npm-global-no-scripts");
    let prefix = install(&shim_dir, Install::GlobalNoScripts);
    let shim = prefix.join("lib/node_modules/acp-question-bridge/bin/acp-question-bridge");
    assert!(
        std::fs::read_to_string(&shim)
            .unwrap()
            .starts_with("#!/usr/bin/env node\n"),
        "the shim, as packed"
    );
    let path = user_path(&[prefix.join("bin")]);
    let version = run(
        std::process::Command::new("acp-question-bridge")
            .arg("--version")
            .env("PATH", &path),
        "acp-question-bridge --version through the shim",
    );
    assert_eq!(
        version.trim(),
        format!("acp-question-bridge {}", env!("CARGO_PKG_VERSION"))
    );
    let mut cmd = Command::new("acp-question-bridge");
    cmd.args(["--no-control", "--", "acp-question-bridge", "mock-agent"])
        .env("PATH", &path)
        .env("RUST_LOG", "debug");
    let mut b = Bridge::from_command(cmd);
    answer_the_mock_question(&mut b, "option-b").await;
    let node = which("node").unwrap();
    assert_eq!(exe(b.pid()), file_id(&node), "the shim is Node.js");
    b.close_stdin();
    assert_eq!(b.wait().await, 0, "{}", b.stderr());
}

/// The bridge under `root` (npx, its shell): the first process, breadth first, that runs
/// `bin` with neither `mock-agent` nor `agent-guard` as its first argument.
fn bridge_under(root: u32, bin: (u64, u64)) -> Option<u32> {
    let mut todo = std::collections::VecDeque::from([root]);
    while let Some(pid) = todo.pop_front() {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let first_arg = cmdline.split(|&b| b == 0).nth(1).unwrap_or_default();
        let runs_bin =
            std::fs::metadata(format!("/proc/{pid}/exe")).is_ok_and(|m| (m.dev(), m.ino()) == bin);
        if runs_bin && first_arg != b"mock-agent" && first_arg != b"agent-guard" {
            return Some(pid);
        }
        todo.extend(children(pid));
    }
    None
}

async fn wait_bridge_under(root: u32, bin: (u64, u64)) -> u32 {
    tokio::time::timeout(WAIT, async {
        loop {
            if let Some(pid) = bridge_under(root, bin) {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the bridge under npx")
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

/// Every live process that runs the file `bin`, or whose command line names `needle`.
fn running(bin: (u64, u64), needle: &str) -> Vec<u32> {
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
            let runs_bin = std::fs::metadata(format!("/proc/{pid}/exe"))
                .is_ok_and(|m| (m.dev(), m.ino()) == bin);
            let names = std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle));
            !zombie && (runs_bin || names)
        })
        .collect()
}

/// The installed bin of a project install: what `npx acp-question-bridge` runs.
fn project_bin(prefix: &Path) -> (u64, u64) {
    let bin = prefix.join("node_modules/acp-question-bridge/bin/acp-question-bridge");
    assert!(
        std::fs::read(&bin).unwrap().starts_with(b"\x7fELF"),
        "the install script put the native binary in place of the shim"
    );
    file_id(&bin)
}

#[tokio::test]
async fn npx_runs_the_bridge_a_question_is_answered_and_sigterm_leaves_nothing() {
    let dir = temp_dir("npm");
    let prefix = install(&dir, Install::Project);
    let bin = project_bin(&prefix);

    // `--version` through npx, with no Rust on PATH.
    let version = run(
        npx(&prefix, &dir, &["--version"]).as_std_mut(),
        "npx acp-question-bridge --version",
    );
    assert_eq!(
        version.trim(),
        format!("acp-question-bridge {}", env!("CARGO_PKG_VERSION"))
    );

    // A real question through `npx acp-question-bridge -- acp-question-bridge mock-agent`.
    let mut b = Bridge::from_command(npx(
        &prefix,
        &dir,
        &["--", "acp-question-bridge", "mock-agent"],
    ));
    let ask = answer_the_mock_question(&mut b, "option-a").await;
    assert_eq!(ask["params"]["prompt"], "Which option?");

    // SIGTERM to the bridge under npx: it ends its agent, and npx reports its exit.
    let bridge = wait_bridge_under(b.pid(), bin).await;
    let everything = prefix.to_str().unwrap().to_owned();
    assert_eq!(
        running(bin, &everything).len(),
        5,
        "the bridge, its guard, the wall's watcher and init, and the mock agent, and nothing else from the prefix: {:?}",
        running(bin, &everything)
    );
    kill(Pid::from_raw(bridge as i32), Signal::SIGTERM).unwrap();
    let code = b.wait().await;
    assert_eq!(code, 128 + 15, "{}", b.stderr());
    assert!(
        b.stderr().contains("received signal; forwarding to agent"),
        "{}",
        b.stderr()
    );
    tokio::time::timeout(WAIT, async {
        while !running(bin, &everything).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("left running: {:?}", running(bin, &everything)));

    // The bridge's own exit code comes back through npx: 2 for bad usage.
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
/// bridge). The bridge gets exactly one SIGINT, not a second that would mean "SIGKILL the
/// agent now" (npm forwards SIGINT to its child, the shell, which does not pass it on).
#[tokio::test]
async fn sigint_to_npxs_whole_group_reaches_the_bridge_once() {
    let dir = temp_dir("npm-sigint");
    let prefix = install(&dir, Install::Project);
    let bin = project_bin(&prefix);
    let mut cmd = npx(&prefix, &dir, &["--", "acp-question-bridge", "mock-agent"]);
    cmd.process_group(0);
    let mut b = Bridge::from_command(cmd);
    b.initialize(serde_json::from_str(NATIVE).unwrap()).await;
    wait_bridge_under(b.pid(), bin).await;
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
    assert!(!stderr.contains("second signal"), "{stderr}");
}

#[tokio::test]
async fn a_missing_platform_package_is_a_clear_error_naming_the_platform() {
    let dir = temp_dir("npm-no-platform");
    let prefix = install(&dir, Install::ProjectWithoutPlatform);
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
    // How to install it, by name and version (the launcher's tarball alone installs fine).
    let how = format!(
        "npm install acp-question-bridge-{}@{}",
        platform(),
        env!("CARGO_PKG_VERSION")
    );
    assert!(stderr.contains(&how), "{stderr}");
}
