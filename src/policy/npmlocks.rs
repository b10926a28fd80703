//! Where a dependency spec or a lockfile of npm, pnpm or yarn places a package: a version
//! or a remote address (nothing on disk), a folder (`file:`, `link:`, a path), or a place the
//! policy cannot tell (a repository or a drive on disk). A leaf: it uses nothing of the
//! policy but its bounded file reader, through `npmbins::manifest`.

use std::path::{Path, PathBuf};

/// A pin `NAME@VERSION` (a hash may follow the version after `+`).
pub(super) fn split_spec(p: &str) -> (&str, &str) {
    match p.get(1..).and_then(|r| r.find('@')) {
        Some(at) => (&p[..at + 1], &p[at + 2..]),
        None => (p, ""),
    }
}

/// The keys of a `package.json` whose values are dependency specs, at any depth (npm's
/// `overrides` nest; yarn's `resolutions`; pnpm's own settings of older pnpm).
pub(super) const DEPENDENCY_KEYS: &[&str] = &[
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
pub(super) fn spec_folder(spec: &str, base: &Path) -> Result<Option<PathBuf>, String> {
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
pub(super) fn written_as_path(s: &str) -> bool {
    s.starts_with(['.', '/', '\\'])
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

/// The folders the lockfiles in folder `top` link or copy: npm's `package-lock.json` and
/// `npm-shrinkwrap.json` (a package that is not under `node_modules`, a link's `resolved`,
/// and every `resolved`, `version` and dependency spec at any depth), pnpm's
/// `pnpm-lock.yaml` and yarn's `yarn.lock` (each spec, `resolved`, `repo` and `directory`
/// in them): what the lockfile says is installed, whatever the manifests say. A value that
/// is no version, no remote address and no folder inside (a tarball or a repository on
/// disk, `../outside`) is refused by [`spec_folder`] or where the folder is placed.
pub(super) fn lockfiles(top: &Path, named: &mut Vec<PathBuf>) -> Result<(), String> {
    for lock in ["package-lock.json", "npm-shrinkwrap.json"] {
        let f = top.join(lock);
        if f.symlink_metadata().is_err() {
            continue;
        }
        let v = super::npmbins::manifest(&f)
            .ok_or_else(|| format!("{} cannot be read as JSON", f.display()))?;
        if let Some(packages) = v.get("packages").and_then(|p| p.as_object()) {
            for (key, entry) in packages {
                if !key.is_empty()
                    && !key.starts_with("node_modules/")
                    && !key.contains("/node_modules/")
                {
                    named.push(top.join(key));
                }
                if entry.get("link").is_some_and(|l| l == true) {
                    if let Some(r) = entry.get("resolved").and_then(|r| r.as_str()) {
                        named.push(top.join(r));
                    }
                }
            }
        }
        npm_lock_specs(&v, false, &mut |s| {
            if let Some(d) = spec_folder(s, top)? {
                named.push(d);
            }
            Ok(())
        })
        .map_err(|e| format!("{}: {e}", f.display()))?;
    }
    let f = top.join("pnpm-lock.yaml");
    if f.symlink_metadata().is_ok() {
        pnpm_lock(&f, top, named)?;
    }
    let f = top.join("yarn.lock");
    if f.symlink_metadata().is_ok() {
        yarn_lock(&f, top, named)?;
    }
    Ok(())
}

/// Each text of npm lockfile `v` that names where a package comes from: a `resolved`, a
/// `version` (npm's first lockfiles wrote `file:` there), and every text in a dependency
/// map (`dependencies`, `requires`, ...), at any depth. A link's `resolved` is its
/// folder, taken by [`lockfiles`].
pub(super) fn npm_lock_specs(
    v: &serde_json::Value,
    in_deps: bool,
    each: &mut dyn FnMut(&str) -> Result<(), String>,
) -> Result<(), String> {
    match v {
        serde_json::Value::String(s) if in_deps => each(s),
        serde_json::Value::Array(a) => a.iter().try_for_each(|x| npm_lock_specs(x, in_deps, each)),
        serde_json::Value::Object(m) => {
            let link = m.get("link").is_some_and(|l| l == true);
            for (k, x) in m {
                let deps = in_deps || DEPENDENCY_KEYS.contains(&k.as_str()) || k == "requires";
                match x {
                    serde_json::Value::String(_) if k == "resolved" && link => {}
                    serde_json::Value::String(s) if deps || k == "resolved" || k == "version" => {
                        each(s)?
                    }
                    other => npm_lock_specs(other, deps, each)?,
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// [`lockfiles`] for yarn 1's `yarn.lock`: each spec of an entry's names
/// (`"foo@file:vendor/foo", foo@^1`), each `resolved`, and each spec of its dependencies,
/// from the lockfile's folder (yarn 1 took `resolved "../outside/foo.tgz"` for a tarball).
pub(super) fn yarn_lock(f: &Path, top: &Path, named: &mut Vec<PathBuf>) -> Result<(), String> {
    let bytes = super::file::bounded::read_file(f).map_err(|e| format!("{}: {e}", f.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", f.display()))?;
    let unquote = |w: &str| w.trim().trim_matches('"').to_owned();
    let mut specs = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if !line.starts_with([' ', '\t']) {
            // An entry's names: `name@spec` each, separated by commas, ending with `:`.
            for item in trimmed.trim_end_matches(':').split(", ") {
                let item = unquote(item);
                specs.push(split_spec(&item).1.to_owned());
            }
        } else if let Some((key, value)) = trimmed.split_once(char::is_whitespace) {
            if !value.trim().is_empty() && key != "integrity" {
                specs.push(unquote(value));
            }
        }
    }
    for s in specs {
        // A `resolved` address carries its hash after `#`.
        let s = if s.contains("://") {
            &s
        } else {
            s.split('#').next().unwrap_or(&s)
        };
        if let Some(d) = spec_folder(s, top).map_err(|e| format!("{}: {e}", f.display()))? {
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
pub(super) fn pnpm_lock(f: &Path, top: &Path, named: &mut Vec<PathBuf>) -> Result<(), String> {
    use yaml_rust2::Yaml;
    let why = |what: &str| format!("{}: {what}", f.display());
    for doc in &yaml(f)? {
        let Yaml::Hash(map) = doc else { continue };
        for (k, v) in map {
            let importers = match (k.as_str(), v) {
                (Some("importers"), Yaml::Hash(importers)) => importers
                    .iter()
                    .map(|(imp, deps)| {
                        let imp = imp
                            .as_str()
                            .ok_or_else(|| why("an importer that is not a name"))?;
                        Ok((Some(top.join(imp)), deps))
                    })
                    .collect::<Result<Vec<_>, String>>()?,
                (Some("importers"), _) => return Err(why("`importers` is not a mapping")),
                _ => vec![(None, v)],
            };
            for (importer, deps) in importers {
                let mut bad = None;
                each_text(deps, &mut |key, s| {
                    if let Some(b) = pnpm_place(importer.as_deref(), top, key, s, named) {
                        bad = Some(b);
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

/// Where text `s` of a pnpm lockfile (the value of `key`, in `importer`'s dependencies or
/// elsewhere) places a package, added to `named`: an importer's `link:` and `specifier`
/// from the importer, a `file:` and a `directory` from the lockfile's folder (pnpm writes
/// `version: file:vendor/foo` and `directory: vendor/foo` there, whatever the importer).
/// The text itself when it cannot be placed: a `link:` elsewhere, a repository or a tarball
/// on disk.
fn pnpm_place(
    importer: Option<&Path>,
    top: &Path,
    key: Option<&str>,
    s: &str,
    named: &mut Vec<PathBuf>,
) -> Option<String> {
    if off_disk(key, s) {
        return Some(s.to_owned());
    }
    if key == Some("directory") {
        named.push(top.join(s));
        return None;
    }
    if let Some(base) = importer {
        if key == Some("specifier") {
            match spec_folder(s, base) {
                Ok(Some(d)) => named.push(d),
                Ok(None) => {}
                Err(_) => return Some(s.to_owned()),
            }
            return None;
        }
        if let Some(rest) = s.strip_prefix("link:") {
            named.push(base.join(rest));
            return None;
        }
    }
    if s.contains("link:") {
        return Some(s.to_owned());
    }
    for after in s.split("file:").skip(1) {
        named.push(top.join(after.split(['(', ')']).next().unwrap_or_default()));
    }
    None
}

/// Whether a pnpm lockfile's `repo` or `tarball` value `s` (under `key`) may be a place on
/// disk: pnpm cloned `repo: /tmp/outside/repo` and ran its scripts (a sixty-eighth review).
pub(super) fn off_disk(key: Option<&str>, s: &str) -> bool {
    matches!(key, Some("repo" | "tarball"))
        && !(s.contains("://") && !s.contains("file:") || s.starts_with("git@"))
}

/// Each text in `y` (keys too), with the key it is the value of.
pub(super) fn each_text(y: &yaml_rust2::Yaml, f: &mut dyn FnMut(Option<&str>, &str)) {
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
