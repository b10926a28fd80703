//! The projects a package manager (npm, pnpm, yarn) installs or runs from a folder: the
//! workspace's top and every project its `pnpm-workspace.yaml` or `package.json`
//! `workspaces` names, found as the managers find them, and the links in their
//! `node_modules` an install would write through. A leaf: it uses nothing of the policy but
//! its bounded file reader, through `npmbins::manifest`.
//!
//! A sixty-fifth review, with real pnpm 12 and npm 11: an install from a workspace's top ran
//! every project's lifecycle scripts (one under a `Read` deny), a project named `../outside`
//! ran too, a linked `node_modules` of another project was emptied, and a `modulesDir` in the
//! workspace file made `pnpm ci` delete outside the project.

use std::path::{Path, PathBuf};

/// Folders a workspace's patterns are looked for in, per command; past it the command is
/// asked (a workspace that large is decided by the user, not walked).
const MAX_FOLDERS: usize = 4096;

/// Entries of `node_modules` folders looked at per command (a name each, no file read).
const MAX_ENTRIES: usize = 65536;

/// What `pnpm-workspace.yaml` may set besides `packages`: settings that name no place, file
/// or program (dependency versions and which dependencies may build). Any other setting is
/// asked: `modulesDir`, `virtualStoreDir` and `storeDir` place what an install writes and
/// `ci` empties; `pnpmfile`, `scriptShell` run programs.
const PNPM_HARMLESS: &[&str] = &[
    "catalog",
    "catalogs",
    "overrides",
    "packageExtensions",
    "peerDependencyRules",
    // Which dependencies may build: `pnpm approve-builds` writes `allowBuilds` itself.
    "allowBuilds",
    "onlyBuiltDependencies",
    "ignoredBuiltDependencies",
    "neverBuiltDependencies",
    "publicHoistPattern",
    "hoistPattern",
    "shamefullyHoist",
    "savePrefix",
    "saveWorkspaceProtocol",
    "injectWorkspacePackages",
    "dedupePeerDependents",
    "nodeLinker",
    "engineStrict",
    "strictDepBuilds",
    "trustPolicy",
    "catalogMode",
    "ignoreWorkspaceRootCheck",
    "preferFrozenLockfile",
    "verifyDepsBeforeRun",
    "sharedWorkspaceLockfile",
    "supportedArchitectures",
    "minimumReleaseAgeExclude",
    "linkWorkspacePackages",
    "preferWorkspacePackages",
    "autoInstallPeers",
    "strictPeerDependencies",
    "minimumReleaseAge",
];

/// The files of a project an install writes: its manifest and the managers' lockfiles.
const WRITTEN: &[&str] = &[
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
];

/// The files in which a project declares itself (pnpm reads the last two too).
const MANIFESTS: &[&str] = &["package.json", "package.yaml", "package.json5"];

/// A workspace as the package manager finds it from a folder.
#[derive(Debug)]
pub struct Workspace {
    /// The workspace's top (where its file is, or the project's own folder) first, then
    /// every project folder beneath it that its file names.
    pub projects: Vec<PathBuf>,
    /// The folders from where it runs up to the top, or to the nearest `package.json` when
    /// that is above: npm takes the nearest folder with a `node_modules` for the project,
    /// pnpm the nearest with a `package.json`, so an install may write either's.
    pub on_the_way: Vec<PathBuf>,
}

impl Workspace {
    /// Each project's manifest there is: what the manager reads, and whose scripts it runs.
    pub fn manifests(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.projects.iter().flat_map(|p| {
            MANIFESTS
                .iter()
                .map(|m| p.join(m))
                .filter(|f| f.symlink_metadata().is_ok())
        })
    }

    /// Why an install may write, or `ci` empty, outside the workspace: a project's
    /// `node_modules` is a link, or one of its entries an install writes into is (a folder
    /// or file of the manager's own, named with a leading `.`, such as `.pnpm`, `.bin`,
    /// `.modules.yaml`, or a scope's folder `@scope`), or an entry of pnpm's `.pnpm` (its
    /// packages' folders, its `node_modules` of hoisted links). A package's own entry is
    /// replaced, not written through.
    pub fn linked(&self) -> Option<String> {
        let mut left = MAX_ENTRIES;
        for p in self.projects.iter().chain(&self.on_the_way) {
            // npm and yarn write their lockfile, and `add` the manifest, where a link leads
            // (a review: `package-lock.json`, `yarn.lock`, `package.json` outside).
            if let Some(f) = WRITTEN
                .iter()
                .map(|f| p.join(f))
                .find(|f| f.symlink_metadata().is_ok_and(|m| m.is_symlink()))
            {
                return Some(format!(
                    "{} is a link: the install writes where it leads",
                    f.display()
                ));
            }
            let m = p.join("node_modules");
            let Ok(meta) = m.symlink_metadata() else {
                continue;
            };
            if meta.is_symlink() {
                return Some(format!(
                    "{} is a link: the install writes and empties where it leads",
                    m.display()
                ));
            }
            if meta.is_dir() {
                if let Some(why) = linked_in(&m, true, &mut left) {
                    return Some(why);
                }
            }
        }
        None
    }
}

/// A link among the entries of `node_modules` folder `m` an install writes into: one named
/// with a leading `.` or `@`; in pnpm's store of packages, `.pnpm`, any.
fn linked_in(m: &Path, top: bool, left: &mut usize) -> Option<String> {
    let Ok(entries) = std::fs::read_dir(m) else {
        return Some(format!("{} cannot be listed", m.display()));
    };
    for entry in entries {
        let Some(now) = left.checked_sub(1) else {
            return Some(format!(
                "more than {MAX_ENTRIES} entries in the workspace's node_modules folders"
            ));
        };
        *left = now;
        let Ok(entry) = entry else {
            return Some(format!("{} cannot be listed", m.display()));
        };
        let name = entry.file_name();
        let own = !top || name.to_str().is_none_or(|n| n.starts_with(['.', '@']));
        let kind = entry.file_type().ok();
        if own && kind.is_none_or(|t| t.is_symlink()) {
            return Some(format!(
                "{} is a link: the install writes where it leads",
                entry.path().display()
            ));
        }
        if top && name == ".pnpm" && kind.is_some_and(|t| t.is_dir()) {
            if let Some(why) = linked_in(&entry.path(), false, left) {
                return Some(why);
            }
        }
    }
    None
}

/// What a package manager reads beyond its words from folder `cwd` ([`workspace`]'s
/// arguments; `installs` when it installs): each project's manifest of the workspace it
/// works on, then at an install each folder a dependency names, read whole (`true`: its
/// scripts run, its files are copied). `Err` says why that cannot be told, or why the install may
/// write outside (a link on the way).
pub fn read_by(
    cwd: &Path,
    pnpm: bool,
    yarn: bool,
    recursive: bool,
    installs: bool,
) -> Result<Vec<(bool, String)>, String> {
    let ws = workspace(cwd, pnpm, yarn, recursive)?;
    let mut read: Vec<(bool, PathBuf)> = ws.manifests().map(|m| (false, m)).collect();
    if installs {
        if let Some(why) = ws.linked() {
            return Err(why);
        }
        let deps = super::npmdeclared::local_dependencies(&ws.projects, &ws.projects[0])?;
        read.extend(deps.into_iter().map(|d| (true, d)));
    }
    read.into_iter()
        .map(|(whole, p)| match p.into_os_string().into_string() {
            Ok(p) => Ok((whole, p)),
            Err(_) => Err("a project or a dependency not in UTF-8".to_owned()),
        })
        .collect()
}

/// The workspace `pnpm` (else npm or yarn) works on from folder `cwd`; `recursive` when the
/// command names the workspace's projects (`-r`, `--filter`, `--workspaces`). An error says
/// why it cannot be told, so the command is asked.
pub fn workspace(cwd: &Path, pnpm: bool, yarn: bool, recursive: bool) -> Result<Workspace, String> {
    let mut found = Vec::new();
    let (top, patterns) = if pnpm {
        // pnpm: the nearest `pnpm-workspace.yaml` from where it runs up.
        match cwd
            .ancestors()
            .find(|d| d.join("pnpm-workspace.yaml").symlink_metadata().is_ok())
        {
            Some(top) => {
                let file = top.join("pnpm-workspace.yaml");
                let patterns = pnpm_packages(&file)?.into_iter();
                (top.to_path_buf(), patterns.map(|p| (top.to_path_buf(), p)).collect())
            }
            // pnpm 12 takes its project's `package.json`'s `workspaces` for its workspace,
            // and writes them into a `pnpm-workspace.yaml` (a review: a plain `pnpm install`
            // ran `secrets/` and `../outside`); a folder above its project's is not read.
            None if !npm_workspaces(&project_of(cwd), true)?.is_empty() => {
                return Err(
                    "pnpm with no `pnpm-workspace.yaml` takes a `package.json`'s `workspaces` and writes one"
                        .into(),
                )
            }
            None if recursive => {
                return Err(
                    "pnpm with no `pnpm-workspace.yaml` above reads every project beneath where it runs"
                        .into(),
                )
            }
            None => (project_of(cwd), Vec::new()),
        }
    } else {
        // npm and yarn: the nearest `package.json` from where they run up whose
        // `workspaces` names the project (npm runs an install from a project beneath for
        // the whole workspace); taken here as every one that declares `workspaces`, the
        // outermost the top, else the project's own folder.
        let tops = npm_workspaces(cwd, false)?;
        // Each folder that declares `workspaces` is a project too.
        found.extend(tops.iter().map(|(d, _)| d.clone()));
        match tops.last() {
            Some((top, _)) => (
                top.clone(),
                tops.iter()
                    .flat_map(|(d, ps)| ps.iter().map(|p| (d.clone(), p.clone())))
                    .collect(),
            ),
            None => (project_of(cwd), Vec::new()),
        }
    };
    let mut left = MAX_FOLDERS;
    for (base, pattern) in &patterns {
        expand(base, pattern, yarn, &mut found, &mut left)?;
    }
    // The project where it runs is installed, named by the workspace's patterns or not
    // (a sixty-eighth review: `workspaces: ["packages/*"]` above hid `tools/foo`).
    let here = project_of(cwd);
    if here.starts_with(&top) {
        found.push(here);
    }
    let canonical_top = top
        .canonicalize()
        .map_err(|e| format!("the workspace's top {}: {e}", top.display()))?;
    let mut projects = vec![top.clone()];
    let mut seen = std::collections::HashSet::from([top.clone()]);
    for p in found {
        let manifest = MANIFESTS
            .iter()
            .any(|m| p.join(m).symlink_metadata().is_ok());
        if !manifest || !seen.insert(p.clone()) {
            continue;
        }
        match p.canonicalize() {
            Ok(c) if c.starts_with(&canonical_top) => projects.push(p),
            _ => {
                return Err(format!(
                    "the workspace's project {} is not beneath its top {}",
                    p.display(),
                    top.display()
                ))
            }
        }
    }
    let nearest = cwd
        .ancestors()
        .find(|d| d.join("package.json").symlink_metadata().is_ok());
    let limit = match nearest {
        Some(m) if top.starts_with(m) => m,
        _ => &top,
    };
    let on_the_way = cwd
        .ancestors()
        .take_while(|d| d.starts_with(limit))
        .map(Path::to_path_buf)
        .collect();
    Ok(Workspace {
        projects,
        on_the_way,
    })
}

/// The folder npm or pnpm takes for the project from folder `cwd`: the nearest from `cwd`
/// up with a `package.json` or a `node_modules`, else `cwd`.
fn project_of(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| {
            ["package.json", "node_modules"]
                .iter()
                .any(|f| d.join(f).symlink_metadata().is_ok())
        })
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Each folder from `cwd` up (or `cwd` alone, when `here`) whose `package.json` declares
/// `workspaces`, nearest first, with its patterns (an array, or yarn's `{"packages":
/// [...]}`). A `package.json` no JSON reader takes declares nothing (npm passes over it),
/// unless it holds the word `workspaces`, which another reader may see.
fn npm_workspaces(cwd: &Path, here: bool) -> Result<Vec<(PathBuf, Vec<String>)>, String> {
    let mut found = Vec::new();
    for d in cwd.ancestors().take(if here { 1 } else { usize::MAX }) {
        let f = d.join("package.json");
        if f.symlink_metadata().is_err() {
            continue;
        }
        let Some(v) = super::npmbins::manifest(&f) else {
            if super::npmdeclared::mentions(&f, &["workspaces"]) {
                return Err(format!(
                    "{} cannot be read as JSON, so its workspace cannot be told",
                    f.display()
                ));
            }
            continue;
        };
        let Some(w) = v.get("workspaces") else {
            continue;
        };
        let list = match w {
            serde_json::Value::Object(o) => o.get("packages"),
            other => Some(other),
        };
        let patterns = match list {
            None => Vec::new(),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|p| p.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("{}: a workspace that is not a name", f.display()))?,
            Some(_) => return Err(format!("{}: `workspaces` is not a list", f.display())),
        };
        found.push((d.to_path_buf(), patterns));
    }
    Ok(found)
}

/// The `packages` of a `pnpm-workspace.yaml`, while it sets nothing but those and
/// [`PNPM_HARMLESS`] settings.
fn pnpm_packages(file: &Path) -> Result<Vec<String>, String> {
    let why = |what: &str| format!("{}: {what}", file.display());
    let docs = super::npmlocks::yaml(file)?;
    let map = match docs.as_slice() {
        [] | [yaml_rust2::Yaml::Null] => return Ok(Vec::new()),
        [yaml_rust2::Yaml::Hash(map)] => map,
        _ => return Err(why("not one mapping of settings")),
    };
    let mut packages = Vec::new();
    for (k, v) in map {
        match k.as_str() {
            Some("packages") => {
                // `packages:` with no list: the top alone.
                let list = match v {
                    yaml_rust2::Yaml::Array(list) => list.as_slice(),
                    yaml_rust2::Yaml::Null => &[],
                    _ => return Err(why("`packages` is not a list")),
                };
                for p in list {
                    let p = p
                        .as_str()
                        .ok_or_else(|| why("a package that is not a name"))?;
                    packages.push(p.to_owned());
                }
            }
            Some(k) if PNPM_HARMLESS.contains(&k) => {}
            Some(k) => {
                return Err(why(&format!(
                    "it sets `{k}`, which may name a place or a program pnpm uses"
                )))
            }
            None => return Err(why("a setting whose name is not text")),
        }
    }
    Ok(packages)
}

/// Every folder beneath `top` that workspace pattern `pattern` names, as the managers'
/// globs do, never walking `node_modules` (yarn 1 takes one a last `*` names: it leaves
/// out only `PATTERN/node_modules/**`). A pattern that excludes (`!x`) is not applied
/// (more projects only ask more), and one with an even number of `!` includes (npm reads
/// `!!x` as `x`); one above the top, absolute, or written with more than names, `*` and
/// `**` is asked, and so is a link met on the way.
fn expand(
    top: &Path,
    pattern: &str,
    yarn: bool,
    out: &mut Vec<PathBuf>,
    left: &mut usize,
) -> Result<(), String> {
    let bangs = pattern.len() - pattern.trim_start_matches('!').len();
    if bangs % 2 == 1 {
        return Ok(());
    }
    let pattern = &pattern[bangs..];
    let asked = |what: &str| Err(format!("the workspace's pattern `{pattern}` {what}"));
    if pattern.starts_with('/') {
        return asked("names a place outside its top");
    }
    let segs: Vec<&str> = pattern
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if segs.contains(&"..") {
        return asked("names a place outside its top");
    }
    if !segs.iter().all(|s| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@*".contains(c))
    }) {
        return asked("uses glob syntax read only by the package manager's own rules");
    }
    walk(top, &segs, yarn, out, left).or_else(|e| asked(&e))
}

fn walk(
    dir: &Path,
    segs: &[&str],
    yarn: bool,
    out: &mut Vec<PathBuf>,
    left: &mut usize,
) -> Result<(), String> {
    let Some((&first, rest)) = segs.split_first() else {
        out.push(dir.to_path_buf());
        return Ok(());
    };
    let into = |next: &Path, keep: &[&str], out: &mut Vec<PathBuf>, left: &mut usize| match next
        .symlink_metadata()
    {
        Ok(m) if m.is_symlink() && !keep.is_empty() => {
            Err(format!("goes through the link {}", next.display()))
        }
        Ok(m) if m.is_symlink() => walk(next, keep, yarn, out, left),
        Ok(m) if m.is_dir() => walk(next, keep, yarn, out, left),
        _ => Ok(()),
    };
    if !first.contains('*') {
        return into(&dir.join(first), rest, out, left);
    }
    if first == "**" {
        walk(dir, rest, yarn, out, left)?;
    }
    let matcher = globset::GlobBuilder::new(first)
        .literal_separator(true)
        .build()
        .map_err(|e| e.to_string())?
        .compile_matcher();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = entry.file_name();
        let last_star = yarn && first != "**" && rest.is_empty();
        if (name == "node_modules" && !last_star) || entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        *left = left
            .checked_sub(1)
            .ok_or_else(|| format!("reaches more than {MAX_FOLDERS} folders"))?;
        let next = entry.path();
        if first == "**" {
            // Any depth: a link here may lead to projects anywhere.
            if entry.file_type().is_ok_and(|t| t.is_symlink()) && next.is_dir() {
                return Err(format!("goes through the link {}", next.display()));
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&next, segs, yarn, out, left)?;
            }
        } else if matcher.is_match(&name) {
            into(&next, rest, out, left)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("acp-qb-npmwork-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn project(d: &Path) {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("package.json"), "{}").unwrap();
    }

    #[test]
    fn pnpm_finds_the_projects_its_workspace_file_names() {
        let d = scratch("pnpm");
        std::fs::write(
            d.join("pnpm-workspace.yaml"),
            "# the apps\npackages:\n  - 'apps/*'\n  - \"libs/**\"\n  - '!apps/skip'\ncatalog:\n  react: ^19\n",
        )
        .unwrap();
        project(&d.join("apps/web"));
        project(&d.join("apps/skip"));
        project(&d.join("libs/a/b"));
        project(&d.join("libs/node_modules/x"));
        project(&d.join("other"));
        std::fs::create_dir_all(d.join("apps/empty")).unwrap();
        let w = workspace(&d.join("apps/web"), true, false, false).unwrap();
        assert_eq!(w.projects[0], d);
        let mut got: Vec<_> = w
            .projects
            .iter()
            .map(|p| p.strip_prefix(&d).unwrap().to_owned())
            .collect();
        got.sort();
        let want: Vec<PathBuf> = ["", "apps/skip", "apps/web", "libs/a/b"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(got, want);
        assert_eq!(w.manifests().count(), 3, "the top has no package.json");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_workspace_that_reaches_outside_or_sets_a_place_is_not_told() {
        let d = scratch("outside");
        for yaml in [
            "packages: ['../outside']\n",
            "packages: ['/abs/*']\n",
            "packages: ['apps/{a,b}']\n",
            "packages: ['l/*/x']\n",
            "packages: ['apps/*']\nmodulesDir: ../victim\n",
            "packages: ['apps/*']\nvirtualStoreDir: /tmp/x\n",
            "base: &b {storeDir: /x}\n<<: *b\n",
            "packages: ['a']\npackages: ['b']\n",
            "packages: apps/*\n",
            "- a\n",
            "packages: ['a'\n",
        ] {
            std::fs::write(d.join("pnpm-workspace.yaml"), yaml).unwrap();
            std::fs::create_dir_all(d.join("l")).unwrap();
            let _ = std::os::unix::fs::symlink("/", d.join("l/root"));
            assert!(workspace(&d, true, false, false).is_err(), "{yaml}");
        }
        // A project reached through a link, outside the top.
        let out = scratch("outside-target");
        project(&out);
        std::fs::write(d.join("pnpm-workspace.yaml"), "packages: ['p/*']\n").unwrap();
        std::fs::create_dir_all(d.join("p")).unwrap();
        std::os::unix::fs::symlink(&out, d.join("p/evil")).unwrap();
        assert!(workspace(&d, true, false, false).is_err());
        // npm's workspaces, to the letter of the manifest.
        let n = scratch("npm");
        std::fs::write(n.join("package.json"), r#"{"workspaces": ["../x"]}"#).unwrap();
        project(&n.join("a"));
        assert!(workspace(&n.join("a"), false, false, false).is_err());
        std::fs::write(
            n.join("package.json"),
            r#"{"workspaces": {"packages": ["*"]}}"#,
        )
        .unwrap();
        let w = workspace(&n.join("a"), false, false, false).unwrap();
        assert_eq!(w.projects[0], n);
        assert!(w.projects.contains(&n.join("a")));
        // A manifest no JSON reader takes declares nothing, unless it names `workspaces`.
        std::fs::write(n.join("package.json"), r#"{"workspaces": ["*"]"#).unwrap();
        assert!(workspace(&n.join("a"), false, false, false).is_err());
        std::fs::write(n.join("package.json"), "{ broken").unwrap();
        let w = workspace(&n.join("a"), false, false, false).unwrap();
        assert_eq!(w.projects, [n.join("a")]);
        for p in [d, out, n] {
            let _ = std::fs::remove_dir_all(p);
        }
    }

    #[test]
    fn a_link_an_install_writes_through_is_found_in_every_project() {
        let d = scratch("linked");
        std::fs::write(d.join("pnpm-workspace.yaml"), "packages: ['web']\n").unwrap();
        project(&d.join("web"));
        std::fs::create_dir_all(d.join("node_modules/.pnpm/x")).unwrap();
        // A package's own link is what pnpm makes: not asked.
        std::os::unix::fs::symlink(".pnpm/x", d.join("node_modules/x")).unwrap();
        let w = workspace(&d, true, false, false).unwrap();
        assert_eq!(w.linked(), None);
        std::os::unix::fs::symlink("/tmp", d.join("web/node_modules")).unwrap();
        assert!(w.linked().is_some_and(|w| w.contains("web/node_modules")));
        std::fs::remove_file(d.join("web/node_modules")).unwrap();
        std::fs::create_dir_all(d.join("web/node_modules")).unwrap();
        std::os::unix::fs::symlink("/tmp", d.join("web/node_modules/.bin")).unwrap();
        assert!(w.linked().is_some());
        std::fs::remove_file(d.join("web/node_modules/.bin")).unwrap();
        std::fs::remove_dir_all(d.join("node_modules/.pnpm")).unwrap();
        std::os::unix::fs::symlink("/tmp", d.join("node_modules/.pnpm")).unwrap();
        assert!(w.linked().is_some());
        // npm's project is the nearest folder with a `node_modules`, pnpm's the nearest
        // with a `package.json`: from a folder with its own, the project's is written too.
        let n = scratch("linked-between");
        project(&n);
        std::fs::create_dir_all(n.join("sub/node_modules")).unwrap();
        std::os::unix::fs::symlink("/tmp", n.join("node_modules")).unwrap();
        for pnpm in [true, false] {
            let w = workspace(&n.join("sub"), pnpm, false, false).unwrap();
            assert!(w
                .linked()
                .is_some_and(|w| w.contains("node_modules is a link")));
        }
        // From a folder beneath a project, that project's own.
        std::fs::remove_file(n.join("node_modules")).unwrap();
        std::os::unix::fs::symlink("/tmp", n.join("sub/node_modules/.bin")).unwrap();
        let w = workspace(&n.join("sub/src"), false, false, false).unwrap();
        assert!(w.linked().is_some());
        let _ = std::fs::remove_dir_all(&n);
        let _ = std::fs::remove_dir_all(&d);
    }
}
