//! The release archives that `cargo binstall` takes: `packaging/archive.sh` makes, from this
//! build's binaries, exactly the file that `[package.metadata.binstall]` in Cargo.toml names,
//! with both binaries where its `bin-dir` says, and a checksum that matches.

use std::path::Path;
use std::process::Command;

/// The value of `key = "..."` in the `[package.metadata.binstall]` table of Cargo.toml.
fn binstall(key: &str) -> String {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("Cargo.toml");
    let table = manifest
        .split("\n[package.metadata.binstall]\n")
        .nth(1)
        .expect("a binstall table");
    let table = table.split("\n[").next().unwrap();
    table
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no {key} in the binstall table"))
        .to_owned()
}

/// Fills binstall's template variables.
fn fill(template: &str, target: &str, bin: &str) -> String {
    template
        .replace("{ repo }", env!("CARGO_PKG_REPOSITORY"))
        .replace("{ name }", env!("CARGO_PKG_NAME"))
        .replace("{ version }", env!("CARGO_PKG_VERSION"))
        .replace("{ target }", target)
        .replace("{ archive-suffix }", ".tar.gz")
        .replace("{ bin }", bin)
        .replace("{ binary-ext }", "")
}

#[test]
fn archive_sh_makes_what_binstall_looks_for() {
    assert_eq!(binstall("pkg-fmt"), "tgz");
    let target = "x86_64-unknown-linux-gnu";
    let dir = std::env::temp_dir().join(format!("acp-qb-release-{}", std::process::id()));
    let bins = dir.join("bins");
    std::fs::create_dir_all(&bins).unwrap();
    for (name, exe) in [
        (
            "acp-question-bridge",
            env!("CARGO_BIN_EXE_acp-question-bridge"),
        ),
        ("acp-mock-agent", env!("CARGO_BIN_EXE_acp-mock-agent")),
    ] {
        std::fs::copy(exe, bins.join(name)).unwrap();
    }
    let out = dir.join("dist");
    let made = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/archive.sh"))
        .arg(&bins)
        .arg(target)
        .arg(&out)
        .output()
        .expect("archive.sh runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let archive = String::from_utf8(made.stdout).unwrap().trim().to_owned();

    // The file is the last part of the URL binstall downloads.
    let url = fill(&binstall("pkg-url"), target, "");
    assert!(
        url.starts_with(&format!(
            "{}/releases/download/v{}/",
            env!("CARGO_PKG_REPOSITORY"),
            env!("CARGO_PKG_VERSION")
        )),
        "{url}"
    );
    let file = url.rsplit('/').next().unwrap();
    assert_eq!(Path::new(&archive).file_name().unwrap(), file);

    // Both binaries are where bin-dir says, executable.
    let listing = Command::new("tar")
        .arg("-tvzf")
        .arg(&archive)
        .output()
        .expect("tar runs");
    let listing = String::from_utf8(listing.stdout).unwrap();
    for bin in ["acp-question-bridge", "acp-mock-agent"] {
        let path = fill(&binstall("bin-dir"), target, bin);
        let line = listing
            .lines()
            .find(|l| l.ends_with(&format!(" {path}")))
            .unwrap_or_else(|| panic!("no {path} in\n{listing}"));
        assert!(line.starts_with("-rwx"), "{line}");
    }

    // The checksum beside it is the archive's.
    let sum = std::fs::read_to_string(format!("{archive}.sha256")).unwrap();
    let check = Command::new("sha256sum")
        .arg("--check")
        .current_dir(&out)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(sum.as_bytes())?;
            c.wait()
        })
        .expect("sha256sum runs");
    assert!(check.success(), "{sum}");
    let _ = std::fs::remove_dir_all(&dir);
}
