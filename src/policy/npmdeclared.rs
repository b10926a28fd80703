//! What a project's files declare that makes npm, pnpm or yarn run or read more than the
//! workspace: the package manager `package.json` pins (corepack, and pnpm itself, run the
//! version it names), and dependencies on folders (`file:`, `link:`, a path) in the
//! manifests, the lockfiles (read by `npmlocks`) and the links of `node_modules`. It uses
//! nothing of the policy but its bounded file reader, through `npmbins::manifest`.
//!
//! A sixty-sixth review, with real pnpm 12, corepack and npm 11: `"packageManager":
//! "pnpm@http://…/evil.tgz"` made an allowed `pnpm ls` run the program it named; a pin to
//! pnpm 10 read a patch under a `Read` deny through package.json's `pnpm` field, which pnpm
//! 12 no longer reads; `"sec": "file:secrets"` ran `secrets/`'s scripts under that deny, and
//! `file:../outside` ran a project outside the workspace.

use std::path::{Path, PathBuf};

use super::npmlocks::{
    each_text, lexical, lockfiles, spec_folder, split_spec, yaml, DEPENDENCY_KEYS,
};

/// The pnpm whose behaviour the policy models: a pin to an older one, with package.json's
/// `pnpm` settings there, is asked.
const MODELLED_PNPM: u64 = 12;

/// Why running package manager `manager` (`npm`, `pnpm`, `yarn`) from folder `cwd` may run
/// another program than the one the policy models: a `package.json` from `cwd` up pins
/// (`packageManager`, `devEngines.packageManager`) that manager by something that is no
/// version (a URL, a path), yarn 2 or later (another program, with its own settings and
/// plug-ins), or a pnpm older than the modelled one while package.json sets `pnpm` settings
/// (which it reads and pnpm 12 does not); or a `.corepack.env` there sets how corepack
/// fetches it. A pin to another manager makes it stop, and runs nothing.
pub(super) fn pin_refused(cwd: &Path, manager: &str) -> Option<String> {
    let mut older_pnpm = false;
    let mut pnpm_settings = false;
    for d in cwd.ancestors() {
        let env = d.join(".corepack.env");
        if env.symlink_metadata().is_ok() {
            return Some(format!(
                "{} sets how corepack picks the package manager it runs",
                env.display()
            ));
        }
        let f = d.join("package.json");
        if f.symlink_metadata().is_err() {
            continue;
        }
        let Some(v) = super::npmbins::manifest(&f) else {
            // A file no JSON reader takes pins nothing, unless another reader may.
            if mentions(&f, &["packageManager", "devEngines"]) {
                return Some(format!(
                    "{} cannot be read as JSON, so the package manager it pins cannot be told",
                    f.display()
                ));
            }
            continue;
        };
        pnpm_settings |= v.get("pnpm").is_some();
        let mut pins: Vec<(&str, &str)> = Vec::new();
        if let Some(p) = v.get("packageManager") {
            let Some(p) = p.as_str() else {
                return Some(format!("{}: `packageManager` is not text", f.display()));
            };
            pins.push(split_spec(p));
        }
        if let Some(p) = v.get("devEngines").and_then(|e| e.get("packageManager")) {
            let list = match p {
                serde_json::Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            for p in list {
                let name = p.get("name").and_then(|n| n.as_str());
                let version = p.get("version").map(|v| v.as_str());
                match (name, version) {
                    (Some(n), None) => pins.push((n, "")),
                    (Some(n), Some(Some(v))) => pins.push((n, v)),
                    _ => {
                        return Some(format!(
                            "{}: a `devEngines.packageManager` that is not a name and a version",
                            f.display()
                        ))
                    }
                }
            }
        }
        for (name, version) in pins {
            if name != manager {
                continue;
            }
            let why = |what: &str| {
                Some(format!(
                    "{} pins {manager} `{version}`, {what}",
                    f.display()
                ))
            };
            // An empty version: the one installed.
            if version.is_empty() {
                continue;
            }
            let Some(major) = major(version) else {
                return why("which is no version: it may name any program");
            };
            match manager {
                "yarn" if major >= 2 => {
                    return why("a yarn whose settings and plug-ins the policy does not read")
                }
                "pnpm" if major < MODELLED_PNPM => older_pnpm = true,
                _ => {}
            }
        }
    }
    (older_pnpm && pnpm_settings).then(|| {
        format!(
            "a pnpm older than {MODELLED_PNPM} is pinned, and reads the `pnpm` settings of package.json (a patch, an override may name any file)"
        )
    })
}

/// The major version a version or a range of one major names (`12.1.0`, `^10`, `~9.1`,
/// `10.x`, `12.1.0+sha512.ab`): `None` for anything else (a URL, a path, `>=9`, `*`).
fn major(v: &str) -> Option<u64> {
    let v = v.strip_prefix(['^', '~', '=', 'v']).unwrap_or(v);
    let (nums, _hash) = v.split_once('+').unwrap_or((v, ""));
    let digits: String = nums.chars().take_while(char::is_ascii_digit).collect();
    let rest = &nums[digits.len()..];
    let plain = rest.is_empty()
        || (rest.starts_with('.')
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c)));
    if !plain {
        return None;
    }
    digits.parse().ok()
}

/// Whether file `f`, which this policy's JSON reader does not take, may hold any of `words`
/// as another reader sees it: written out, or spelled by a `\u` escape (Node's `JSON.parse`
/// takes a lone surrogate `"\ud800"`, which this reader refuses, and reads
/// `"package\u004danager"` as `packageManager`: a sixty-seventh review).
pub(super) fn mentions(f: &Path, words: &[&str]) -> bool {
    holds(f, words) || holds(f, &["\\u"])
}

/// Whether file `f`'s bytes hold any of `words` (or it cannot be read).
fn holds(f: &Path, words: &[&str]) -> bool {
    super::file::bounded::read_file(f).map_or(true, |b| {
        words
            .iter()
            .any(|w| b.windows(w.len()).any(|x| x == w.as_bytes()))
    })
}

/// The folders the projects' manifests (each project's `package.json`), their lockfiles
/// and the top's, and the links in their `node_modules` name as dependencies, that are not
/// projects of the workspace: each inside the top, for the policy to read as the install
/// does (their scripts run and their files are copied); `Err` when one is outside the top,
/// is a tarball (whose own dependencies are not read), or cannot be told.
pub(super) fn local_dependencies(projects: &[PathBuf], top: &Path) -> Result<Vec<PathBuf>, String> {
    let mut named = Vec::new();
    for p in projects {
        for other in ["package.yaml", "package.json5"] {
            if p.join(other).symlink_metadata().is_ok() {
                return Err(format!(
                    "{} is read only by pnpm's own reader",
                    p.join(other).display()
                ));
            }
        }
        declared_in(p, DEPENDENCY_KEYS, &mut named)?;
        // A project's own lockfile (pnpm's `sharedWorkspaceLockfile: false`, a project a
        // workspace above does not name), and the packages its `node_modules` links: npm
        // kept `node_modules/sec -> ../secrets` and ran its scripts (a sixty-eighth review).
        lockfiles(p, &mut named)?;
        node_modules_links(p, &mut named)?;
    }
    workspace_specs(top, &mut named)?;
    let top_c = top
        .canonicalize()
        .map_err(|e| format!("the workspace's top {}: {e}", top.display()))?;
    let own: Vec<PathBuf> = projects
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while let Some(d) = named.pop() {
        // The managers resolve `..` in the words first (Node's `path.resolve`:
        // `file:secrets/none/..` is `secrets`), then the system follows the links.
        let l = lexical(&d);
        if !seen.insert(l.clone()) {
            continue;
        }
        let c = l
            .canonicalize()
            .map_err(|e| format!("the dependency {} cannot be placed ({e})", d.display()))?;
        if own.contains(&c) {
            continue;
        }
        if !c.starts_with(&top_c) {
            return Err(format!(
                "a dependency on {}, outside the workspace {}: the install runs its scripts",
                d.display(),
                top.display()
            ));
        }
        if seen.len() > MAX_LOCAL {
            return Err(format!(
                "more than {MAX_LOCAL} dependencies on folders of the workspace"
            ));
        }
        if !c.is_dir() {
            return Err(format!(
                "a dependency on the file {}: the package in it may name others",
                d.display()
            ));
        }
        // A folder's own dependencies are installed with it (`file:../../secrets` in
        // `vendor/a/package.json` ran too), from where the manager found it: npm and pnpm
        // take `..` from the link's own path (`vendor/a -> ../lib/x/a`), so from both.
        declared_in(&l, INSTALLED_KEYS, &mut named)?;
        if c != l {
            declared_in(&c, INSTALLED_KEYS, &mut named)?;
        }
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

/// Dependencies on folders a workspace's projects may name, with theirs, per command.
const MAX_LOCAL: usize = 256;

/// The keys of a dependency's `package.json` an install of it reads (npm installs a linked
/// folder's `devDependencies` too: a sixty-eighth review).
const INSTALLED_KEYS: &[&str] = &[
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
];

/// The most entries of a `node_modules` folder (and of its scopes) listed for its links.
const MAX_MODULES: usize = 20_000;

/// Each link among the packages of project `p`'s `node_modules` (`name`, `@scope/name`)
/// that leads to no installed package (a folder under a `node_modules`, as pnpm's
/// `.pnpm` store is), added to `named`: npm keeps such a link and runs its scripts.
fn node_modules_links(p: &Path, named: &mut Vec<PathBuf>) -> Result<(), String> {
    let m = p.join("node_modules");
    if !m.symlink_metadata().is_ok_and(|t| t.is_dir()) {
        return Ok(());
    }
    let mut left = MAX_MODULES;
    let mut folders = vec![m];
    while let Some(dir) = folders.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| format!("{} cannot be listed ({e})", dir.display()))?;
        for entry in entries {
            left = left
                .checked_sub(1)
                .ok_or_else(|| format!("more than {MAX_MODULES} packages in {}", p.display()))?;
            let entry = entry.map_err(|e| format!("{} cannot be listed ({e})", dir.display()))?;
            let name = entry.file_name();
            let kind = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            let scope = name.as_encoded_bytes().starts_with(b"@");
            if scope && kind.is_dir() && dir.ends_with("node_modules") {
                folders.push(entry.path());
            } else if kind.is_symlink() && !name.as_encoded_bytes().starts_with(b".") {
                let installed = entry
                    .path()
                    .canonicalize()
                    .is_ok_and(|c| c.components().any(|x| x.as_os_str() == "node_modules"));
                if !installed {
                    named.push(entry.path());
                }
            }
        }
    }
    Ok(())
}

/// The folders `package.json` in folder `p` names under `keys`, added to `named`.
fn declared_in(p: &Path, keys: &[&str], named: &mut Vec<PathBuf>) -> Result<(), String> {
    let f = p.join("package.json");
    if f.symlink_metadata().is_err() {
        return Ok(());
    }
    let v = super::npmbins::manifest(&f)
        .ok_or_else(|| format!("{} cannot be read as JSON", f.display()))?;
    for k in keys {
        if let Some(deps) = v.get(*k) {
            specs_in(deps, &mut |s| {
                if let Some(d) = spec_folder(s, p)? {
                    named.push(d);
                }
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Each text value in `v`, at any depth.
fn specs_in(
    v: &serde_json::Value,
    each: &mut dyn FnMut(&str) -> Result<(), String>,
) -> Result<(), String> {
    match v {
        serde_json::Value::String(s) => each(s),
        serde_json::Value::Object(m) => m.values().try_for_each(|x| specs_in(x, each)),
        serde_json::Value::Array(a) => a.iter().try_for_each(|x| specs_in(x, each)),
        _ => Ok(()),
    }
}

/// The folders `pnpm-workspace.yaml`'s dependency settings (`overrides`, `catalog`,
/// `catalogs`, `packageExtensions`) name, from the top.
fn workspace_specs(top: &Path, named: &mut Vec<PathBuf>) -> Result<(), String> {
    let f = top.join("pnpm-workspace.yaml");
    if f.symlink_metadata().is_err() {
        return Ok(());
    }
    let mut specs = Vec::new();
    for doc in yaml(&f)? {
        let yaml_rust2::Yaml::Hash(map) = doc else {
            continue;
        };
        for (k, v) in map {
            let dependencies = ["overrides", "catalog", "catalogs", "packageExtensions"];
            if k.as_str().is_some_and(|k| dependencies.contains(&k)) {
                each_text(&v, &mut |key, s| {
                    if key.is_some() {
                        specs.push(s.to_owned());
                    }
                });
            }
        }
    }
    for s in specs {
        if let Some(d) = spec_folder(&s, top)? {
            named.push(d);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_names_a_major_version_or_nothing_known() {
        for (v, want) in [
            ("12.21.0", Some(12)),
            ("10.33.0+sha512.abc", Some(10)),
            ("^10", Some(10)),
            ("~9.1", Some(9)),
            ("10.x", Some(10)),
            ("1.22.22", Some(1)),
            ("12.0.0-rc.1", Some(12)),
            ("http://127.0.0.1/evil.tgz", None),
            ("./pnpm", None),
            (">=9", None),
            ("*", None),
            ("9 || 10", None),
            ("", None),
        ] {
            assert_eq!(major(v), want, "{v}");
        }
        assert_eq!(split_spec("pnpm@10.0.0"), ("pnpm", "10.0.0"));
        assert_eq!(split_spec("@scope/x@1"), ("@scope/x", "1"));
        assert_eq!(split_spec("yarn"), ("yarn", ""));
    }
}
