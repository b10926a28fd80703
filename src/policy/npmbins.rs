//! What `npx NAME` runs from a folder: the nearest `node_modules/.bin/NAME`, unless a
//! `package.json` on the way up declares a `bin` of that name, which npm runs first. A
//! leaf: it uses nothing of the policy but its bounded file reader.

use std::path::Path;

/// Why `npx NAME` from folder `cwd` may run another program than the project's own NAME:
/// [`npm_bin_above`] is not a file, or [`package_bin_above`].
pub(super) fn refused(cwd: &Path, name: &str) -> Option<String> {
    if !npm_bin_above(cwd, name) {
        return Some(format!(
            "no `node_modules/.bin/{name}` here or above: npm would run a `{name}` from elsewhere"
        ));
    }
    package_bin_above(cwd, name)
}

/// Whether the `node_modules/.bin/NAME` npm runs for `npx NAME` from folder `cwd` is a
/// file: the nearest there is from `cwd` up (a real npm ran a package's subfolder's own
/// before its project's, and the project's from any folder beneath it).
fn npm_bin_above(cwd: &Path, name: &str) -> bool {
    cwd.ancestors()
        .map(|d| d.join("node_modules/.bin").join(name))
        .find(|p| p.symlink_metadata().is_ok())
        .is_some_and(|p| p.is_file())
}

/// Why `npx NAME` from folder `cwd` may run a program of the project's own `package.json`
/// rather than `node_modules/.bin/NAME`: npm runs a `bin` of that name its project folder
/// declares first (a sixty-fourth review: `"bin": {"jest": "evil.js"}` made `npx jest` run
/// `evil.js`). Any `package.json` from `cwd` up whose `bin` may name NAME (a string names
/// the package's own name; `directories.bin` lists a folder), or that cannot be read.
fn package_bin_above(cwd: &Path, name: &str) -> Option<String> {
    for d in cwd.ancestors() {
        let f = d.join("package.json");
        if f.symlink_metadata().is_err() {
            continue;
        }
        let why = |what: &str| {
            Some(format!(
                "{}: {what}, which `npx {name}` may run",
                f.display()
            ))
        };
        let Some(v) = manifest(&f) else {
            return why("it cannot be read as JSON, so whether it declares a `bin` cannot be told");
        };
        // npm names a bin by the last part of its key (or of the package's name), cut at
        // `/`, `\` or `:` (npm-normalize-package-bin).
        let last = |k: &str| k.rsplit(['/', '\\', ':']).next().unwrap_or(k).to_owned();
        let own = v.get("name").and_then(|n| n.as_str()).map(last);
        let named = match v.get("bin") {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::String(_)) => own.is_none_or(|o| o == name),
            Some(serde_json::Value::Object(m)) => m.keys().any(|k| last(k) == name),
            Some(_) => true,
        };
        if named {
            return why(&format!("it declares a `bin` named `{name}`"));
        }
        if v.get("directories").and_then(|x| x.get("bin")).is_some() {
            return why("its `directories.bin` declares a folder of programs");
        }
    }
    None
}

/// A `package.json` as JSON, read with the policy's bounded reader; `None` when it cannot
/// be read or is no JSON. A byte order mark before it is passed over, as the managers do.
pub(super) fn manifest(f: &Path) -> Option<serde_json::Value> {
    let bytes = super::file::bounded::read_file(f).ok()?;
    let json = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&bytes);
    serde_json::from_slice(json).ok()
}
