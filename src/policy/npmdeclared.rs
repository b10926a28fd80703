//! What a project's files declare that makes npm, pnpm or yarn run or read more than the
//! workspace: the package manager `package.json` pins (corepack, and pnpm itself, run the
//! version it names), and dependencies on folders (`file:`, `link:`, a path) in the
//! manifests and lockfiles. A leaf: it uses nothing of the policy but its bounded file
//! reader, through `npmbins::manifest`.
//!
//! A sixty-sixth review, with real pnpm 12, corepack and npm 11: `"packageManager":
//! "pnpm@http://…/evil.tgz"` made an allowed `pnpm ls` run the program it named; a pin to
//! pnpm 10 read a patch under a `Read` deny through package.json's `pnpm` field, which pnpm
//! 12 no longer reads; `"sec": "file:secrets"` ran `secrets/`'s scripts under that deny, and
//! `file:../outside` ran a project outside the workspace.

use std::path::{Path, PathBuf};

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

/// A pin `NAME@VERSION` (a hash may follow the version after `+`).
fn split_spec(p: &str) -> (&str, &str) {
    match p.get(1..).and_then(|r| r.find('@')) {
        Some(at) => (&p[..at + 1], &p[at + 2..]),
        None => (p, ""),
    }
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

/// The keys of a `package.json` whose values are dependency specs, at any depth (npm's
/// `overrides` nest; yarn's `resolutions`; pnpm's own settings of older pnpm).
const DEPENDENCY_KEYS: &[&str] = &[
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
    "overrides",
    "resolutions",
    "pnpm",
];

/// A folder a dependency spec names, read from folder `base`: `file:`, `link:`, `portal:`,
/// a path, a tarball on disk, or (yarn 1 takes a range that is no semver range for a
/// folder where `RANGE/package.json` is) a name of a folder there. `Err` for one that
/// cannot be placed (a `git+file:` repository, a Windows drive, a yarn `patch:`).
fn spec_folder(spec: &str, base: &Path) -> Result<Option<PathBuf>, String> {
    // An alias: `npm:name@spec`.
    let spec = match spec.strip_prefix("npm:") {
        Some(alias) => split_spec(alias).1,
        None => spec,
    };
    let refused = || {
        Err(format!(
            "the dependency `{spec}` names a place the policy cannot tell"
        ))
    };
    if spec.contains("file:/") || spec.starts_with("git+file:") || spec.starts_with("patch:") {
        return refused();
    }
    if spec.len() > 1 && spec.as_bytes()[1] == b':' && spec.as_bytes()[0].is_ascii_alphabetic() {
        return refused();
    }
    if spec.starts_with('~') {
        return refused();
    }
    let protocol = ["file:", "link:", "portal:", "exec:"]
        .iter()
        .find_map(|p| spec.strip_prefix(p));
    let path = protocol
        .or_else(|| {
            spec.strip_prefix("workspace:")
                .filter(|r| written_as_path(r))
        })
        .or_else(|| written_as_path(spec).then_some(spec));
    if let Some(p) = path {
        return Ok(Some(base.join(p)));
    }
    // A tarball on disk, or a folder of that name here.
    let tarball = [".tgz", ".tar", ".tar.gz"]
        .iter()
        .any(|t| spec.ends_with(t))
        && !spec.contains("://");
    let there = lexical(&base.join(spec)).symlink_metadata().is_ok();
    if tarball || (!spec.is_empty() && there) {
        return Ok(Some(base.join(spec)));
    }
    Ok(None)
}

/// A spec written as a path: `.`, `..`, `./x`, `/x`, `\x`.
fn written_as_path(s: &str) -> bool {
    s.starts_with(['.', '/', '\\'])
}

/// The folders the projects' manifests (each project's `package.json`) and the top's
/// lockfiles name as dependencies, that are not projects of the workspace: each inside the
/// top, for the policy to read as the install does (their scripts run and their files are
/// copied); `Err` when one is outside the top, or cannot be told.
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
    }
    workspace_specs(top, &mut named)?;
    lockfiles(top, &mut named)?;
    let top_c = top
        .canonicalize()
        .map_err(|e| format!("the workspace's top {}: {e}", top.display()))?;
    let own: Vec<PathBuf> = projects
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    let mut out: Vec<PathBuf> = Vec::new();
    while let Some(d) = named.pop() {
        // The managers resolve `..` in the words first (Node's `path.resolve`:
        // `file:secrets/none/..` is `secrets`), then the system follows the links.
        let c = lexical(&d)
            .canonicalize()
            .map_err(|e| format!("the dependency {} cannot be placed ({e})", d.display()))?;
        if own.contains(&c) || out.contains(&c) {
            continue;
        }
        if !c.starts_with(&top_c) {
            return Err(format!(
                "a dependency on {}, outside the workspace {}: the install runs its scripts",
                d.display(),
                top.display()
            ));
        }
        if out.len() >= MAX_LOCAL {
            return Err(format!(
                "more than {MAX_LOCAL} dependencies on folders of the workspace"
            ));
        }
        // A folder's own dependencies are installed with it (`file:../../secrets` in
        // `vendor/a/package.json` ran too).
        if c.is_dir() {
            declared_in(&c, INSTALLED_KEYS, &mut named)?;
        }
        out.push(c);
    }
    Ok(out)
}

/// Dependencies on folders a workspace's projects may name, with theirs, per command.
const MAX_LOCAL: usize = 256;

/// The keys of a dependency's `package.json` an install of it reads.
const INSTALLED_KEYS: &[&str] = &["dependencies", "optionalDependencies", "peerDependencies"];

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

/// `p` with `.` and `..` taken away by its words, as Node's `path.resolve` does and git
/// cleans a pathspec.
pub(super) fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
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

/// The folders the top's lockfiles link or copy: npm's `package-lock.json` and
/// `npm-shrinkwrap.json` (a package that is not under `node_modules`, a link's `resolved`,
/// a `file:`), pnpm's `pnpm-lock.yaml` (an importer's `link:`, each relative to it; a
/// `file:` or a `directory` anywhere else is asked) and yarn's `yarn.lock` (a `file:`,
/// `link:` or `portal:` is asked): what the lockfile says is installed, whatever the
/// manifests say.
fn lockfiles(top: &Path, named: &mut Vec<PathBuf>) -> Result<(), String> {
    for lock in ["package-lock.json", "npm-shrinkwrap.json"] {
        let f = top.join(lock);
        if f.symlink_metadata().is_err() {
            continue;
        }
        let v = super::npmbins::manifest(&f)
            .ok_or_else(|| format!("{} cannot be read as JSON", f.display()))?;
        let Some(packages) = v.get("packages").and_then(|p| p.as_object()) else {
            continue;
        };
        for (key, entry) in packages {
            if !key.is_empty()
                && !key.starts_with("node_modules/")
                && !key.contains("/node_modules/")
            {
                named.push(top.join(key));
            }
            if let Some(r) = entry.get("resolved").and_then(|r| r.as_str()) {
                if entry.get("link").is_some_and(|l| l == true) {
                    named.push(top.join(r));
                } else if let Some(d) = r.strip_prefix("file:") {
                    named.push(top.join(d));
                }
            }
        }
    }
    let f = top.join("pnpm-lock.yaml");
    if f.symlink_metadata().is_ok() {
        pnpm_lock(&f, top, named)?;
    }
    let f = top.join("yarn.lock");
    if f.symlink_metadata().is_ok() && holds(&f, &["file:", "link:", "portal:"]) {
        return Err(format!(
            "{} installs a dependency from a folder or a file on disk",
            f.display()
        ));
    }
    Ok(())
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

/// The documents of YAML file `f` (a byte order mark passed over).
pub(super) fn yaml(f: &Path) -> Result<Vec<yaml_rust2::Yaml>, String> {
    let why = |what: &str| format!("{}: {what}", f.display());
    let bytes = super::file::bounded::read_file(f).map_err(|e| why(&e.to_string()))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| why("not UTF-8"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| why(&format!("not read as YAML ({e})")))
}

/// [`lockfiles`] for `pnpm-lock.yaml`.
fn pnpm_lock(f: &Path, top: &Path, named: &mut Vec<PathBuf>) -> Result<(), String> {
    use yaml_rust2::Yaml;
    let why = |what: &str| format!("{}: {what}", f.display());
    for doc in &yaml(f)? {
        let Yaml::Hash(map) = doc else { continue };
        for (k, v) in map {
            if k.as_str() == Some("importers") {
                let Yaml::Hash(importers) = v else {
                    return Err(why("`importers` is not a mapping"));
                };
                for (imp, deps) in importers {
                    let imp = imp
                        .as_str()
                        .ok_or_else(|| why("an importer that is not a name"))?;
                    let base = top.join(imp);
                    let mut bad = None;
                    each_text(deps, &mut |key, s| {
                        if let Some(rest) = s.strip_prefix("link:") {
                            named.push(base.join(rest));
                        } else if s.contains("file:") || key == Some("directory") {
                            bad = Some(s.to_owned());
                        }
                    });
                    if let Some(s) = bad {
                        return Err(why(&format!("it installs `{s}` from disk")));
                    }
                }
            } else {
                let mut bad = None;
                each_text(v, &mut |key, s| {
                    if s.contains("file:") || s.contains("link:") || key == Some("directory") {
                        bad = Some(s.to_owned());
                    }
                });
                if let Some(s) = bad {
                    return Err(why(&format!("it installs `{s}` from disk")));
                }
            }
        }
    }
    Ok(())
}

/// Each text in `y` (keys too), with the key it is the value of.
fn each_text(y: &yaml_rust2::Yaml, f: &mut dyn FnMut(Option<&str>, &str)) {
    use yaml_rust2::Yaml;
    match y {
        Yaml::String(s) => f(None, s),
        Yaml::Array(a) => a.iter().for_each(|x| each_text(x, f)),
        Yaml::Hash(m) => {
            for (k, v) in m {
                if let Yaml::String(ks) = k {
                    f(None, ks);
                }
                match v {
                    Yaml::String(s) => f(k.as_str(), s),
                    other => each_text(other, f),
                }
            }
        }
        _ => {}
    }
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

    #[test]
    fn a_dependency_names_a_folder_as_the_managers_place_it() {
        let base = std::env::temp_dir().join(format!("aqb-declared-{}", std::process::id()));
        std::fs::create_dir_all(base.join("latest")).unwrap();
        for (spec, want) in [
            ("file:secrets", Some("secrets")),
            ("file:../o", Some("../o")),
            ("link:x", Some("x")),
            ("portal:x", Some("x")),
            ("./x", Some("./x")),
            ("../x", Some("../x")),
            ("/abs", Some("/abs")),
            ("workspace:../x", Some("../x")),
            ("npm:a@file:x", Some("x")),
            ("vendor/a.tgz", Some("vendor/a.tgz")),
            ("latest", Some("latest")),
            ("^1.0.0", None),
            ("next", None),
            ("workspace:*", None),
            ("github:a/b", None),
            ("https://example.com/a.tgz", None),
            ("npm:a@^1", None),
        ] {
            let got = spec_folder(spec, &base).unwrap();
            assert_eq!(got, want.map(|w| base.join(w)), "{spec}");
        }
        for spec in [
            "~/x",
            "file:///x",
            "file:/x",
            "git+file:///x",
            "C:\\x",
            "patch:a@1#p",
        ] {
            assert!(spec_folder(spec, &base).is_err(), "{spec}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}
