//! What a prefix rule never writes, whatever its program's model allows: outside the
//! session's folder, the folder itself, inside a version control's folder or a folder git
//! takes for a repository, a `.cargo` folder, the user's own configuration, a shell's start
//! file, a file from which a tool picks the program it runs, a file with other names.
//!
//! Invariant: a write a prefix rule allows is checked here, resolved (`super::named`), and
//! a refusal is asked, never allowed.

use std::path::Path;

/// The files a shell reads when it starts, in the home folder: never written under a
/// prefix rule (`sort -o ~/.profile x` runs `x` at the next `bash -lc`).
const SHELL_START: &[&str] = &[
    ".profile",
    ".bash_profile",
    ".bash_login",
    ".bashrc",
    ".bash_logout",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".inputrc",
    ".envrc",
    // Debian's `.bashrc` sources it.
    ".bash_aliases",
];

/// The version controls' folders (`go build` and `go list` run `hg`, `svn`, `bzr` or
/// `fossil` to stamp the build, which reads `.hg/hgrc`'s hooks); lower case, compared in
/// either case.
const VCS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    ".fslckout",
    "_fossil_",
    ".jj",
    "_darcs",
];

/// Files from which a program that looks read-only picks the program it runs, in any folder
/// of the session: rustup's toolchain file (`path = "/x"` makes `cargo tree` run
/// `/x/bin/cargo`), npm's and yarn's settings (`script-shell`), the version managers'
/// files. Never written under a prefix rule; `.cargo/config(.toml)` neither
/// ([`prefix_write_refused`]).
const TOOL_CONFIG: &[&str] = &[
    "rust-toolchain",
    "rust-toolchain.toml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".tool-versions",
    ".mise.toml",
    "mise.toml",
    ".mise.local.toml",
    "mise.local.toml",
    ".rtx.toml",
    // pnpm runs it at every install; yarn's Plug'n'Play loaders run with node. pnpm 10
    // takes `pnpmfile` and `scriptShell` from its workspace file too (a fifty-ninth review).
    ".pnpmfile.cjs",
    "pnpm-workspace.yaml",
    ".pnpmfile.mjs",
    ".pnp.cjs",
    ".pnp.loader.mjs",
    // Corepack takes its registry, its keys and whether a URL may name the package manager
    // from it (a sixty-sixth review).
    ".corepack.env",
    // bazelisk downloads and runs the bazel they name; VS Code runs a dev container's
    // `initializeCommand` on the host from this file as from `.devcontainer/`.
    ".bazeliskrc",
    ".bazelversion",
    ".devcontainer.json",
    // bun's `preload`; pre-commit's list of hooks (lefthook's: [`by_pattern`]).
    "bunfig.toml",
    ".pre-commit-config.yaml",
    ".python-version",
    ".node-version",
    ".nvmrc",
    ".ruby-version",
    "uv.toml",
    // Sourced by a shell that enters the folder, as direnv's `.envrc`: rvm's, zsh-autoenv's.
    ".rvmrc",
    ".autoenv.zsh",
    ".autoenv_leave.zsh",
    // Searchers' own files, read with no word saying so: ack's (`--files-from`), ugrep's
    // (`filter=` runs a program), pt's and sift's.
    ".ackrc",
    "_ackrc",
    ".ugrep",
    ".ptconfig.toml",
    ".sift.conf",
    // Files an interpreter or a debugger runs when it starts in the folder: R's, irb's and
    // pry's, pdb's (`!` lines are Python), bazel's (`--run_under`), gdb's and lldb's, vim's
    // and neovim's `exrc`.
    ".rprofile",
    ".irbrc",
    "_irbrc",
    "irb.rc",
    ".pryrc",
    ".pdbrc",
    ".bazelrc",
    ".gdbinit",
    ".lldbinit",
    ".exrc",
    ".vimrc",
    ".nvimrc",
    ".nvim.lua",
];

/// Names of files that run programs from one of several names, in no list:
/// `(stem, endings)`: a name is one when it begins with the stem and ends with one of the
/// endings. mise's files of an environment (`mise.production.toml`, `.mise.local.toml`),
/// rtx's (its old name), lefthook's in every format and its local ones.
const PATTERNS: &[(&str, &[&str])] = &[
    ("mise.", &[".toml"]),
    (".mise.", &[".toml"]),
    (".rtx.", &[".toml"]),
    ("lefthook.", LEFTHOOK),
    (".lefthook.", LEFTHOOK),
    ("lefthook-local.", LEFTHOOK),
    (".lefthook-local.", LEFTHOOK),
];
const LEFTHOOK: &[&str] = &[".yml", ".yaml", ".toml", ".json", ".jsonc"];

/// Editors' folders of a project: their settings and tasks name the programs the editor
/// (the agent's own client among them) starts: language servers (Zed's `lsp.*.binary`),
/// MCP servers (`.vscode/mcp.json`, `.cursor/mcp.json`), tasks, debuggers, a dev
/// container's commands.
const EDITORS: &[&str] = &[
    ".vscode",
    ".zed",
    ".cursor",
    ".idea",
    ".fleet",
    ".helix",
    ".devcontainer",
];

/// Every name listed as making programs run, lower case: shells' start files, tools'
/// files, version controls' folders, git's own configuration, cargo's and the hook
/// managers' folders.
fn listed_names() -> impl Iterator<Item = &'static str> {
    SHELL_START
        .iter()
        .chain(TOOL_CONFIG)
        .chain(VCS)
        .chain(EDITORS)
        .chain(&[".gitconfig", ".cargo", ".husky", ".mise"])
        .copied()
}

/// Whether `name` (lower case) is one of [`PATTERNS`].
fn by_pattern(name: &str) -> bool {
    PATTERNS.iter().any(|(stem, ends)| {
        name.len() > stem.len() && name.starts_with(stem) && ends.iter().any(|e| name.ends_with(e))
    })
}

/// Why a prefix rule may not allow writing `p` (resolved) from a session in `cwd`: outside
/// the session's folder, the folder itself, inside a `.git` folder, or a shell's start file.
pub fn prefix_write_refused(p: &Path, cwd: &Path) -> Option<String> {
    let Ok(rel) = p.strip_prefix(cwd) else {
        return Some(format!(
            "it writes {}, outside the session's folder",
            p.display()
        ));
    };
    if rel.as_os_str().is_empty() {
        return Some("it writes the session's folder itself".into());
    }
    if let Some(why) = runs_programs(p, rel, cwd) {
        return Some(why);
    }
    // A file of more names than one: a write in place writes them all (`ln .git/config x`
    // then `tee -a x`), and no path tells where the others are.
    use std::os::unix::fs::MetadataExt;
    if std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.nlink() > 1) {
        return Some(format!(
            "it writes {}, a file with other names (a hard link), which may be anywhere",
            p.display()
        ));
    }
    // A folder git takes for a repository by what it holds, whatever its name (`cp -r
    // .git/. x`, then `tee -a x/config`, then `cd x && git status`).
    let mut at = p.parent();
    while let Some(d) = at.filter(|d| d.starts_with(cwd)) {
        if super::gitdir::is_repository(d) {
            return Some(format!(
                "it writes {}, inside {}, which git takes for a repository's own folder",
                p.display(),
                d.display()
            ));
        }
        at = d.parent();
    }
    None
}

/// Why a word of a program no model reads, resolved to `p`, may name a file that makes
/// programs run once written (a word may be a written path: `gcc -o ~/.bashrc`, `iconv -o
/// .ackrc`): one inside the session's folder that [`prefix_write_refused`] refuses by its
/// name or place, or the user's own configuration outside it. A hard link is not counted
/// here (a read of one is common: pnpm's `node_modules`).
pub fn named_runs_programs(p: &Path, cwd: &Path) -> Option<String> {
    match p.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => runs_programs(p, rel, cwd),
        // Outside: the user's own, and by place or name what another repository or the
        // one above the session runs (`../.git/hooks/pre-commit` from a package folder, a
        // parent's `.envrc`).
        _ => super::rc::user_configuration(p, cwd).or_else(|| {
            let by_place = p.components().any(|c| {
                c.as_os_str()
                    .to_str()
                    .is_some_and(|c| VCS.contains(&c.to_ascii_lowercase().as_str()) || c.eq_ignore_ascii_case(".cargo"))
            });
            let by_name = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(runs_by_name);
            (by_place || by_name).then(|| {
                format!(
                    "it may write {}, which makes programs run (a version control's or cargo's folder, a shell's or a tool's file)",
                    p.display()
                )
            })
        }),
    }
}

/// Why a word of a program no model reads that names nothing yet is asked: it begins a
/// name that makes programs run, which the program may finish (`split … .envr` makes
/// `.envrc` with a suffix).
fn begun(w: &str) -> String {
    let shown: String = w.chars().take(200).collect();
    format!(
        "a program no model reads may make a file's name from a word, and {shown:?} begins a name that makes programs run once written (a shell's, a tool's or a version control's)"
    )
}

/// Why a word of a program no model reads, resolved to `p` (there or not), may write a file
/// that makes programs run: one that begins such a name and is not there yet (the program
/// may finish it), one [`named_runs_programs`] refuses, or a program put where it is run by
/// name (`super::on_path`: a `.venv`, a `node_modules/.bin`).
pub fn unmodelled_refused(p: &Path, folders: &[std::path::PathBuf], cwd: &Path) -> Option<String> {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if std::fs::symlink_metadata(p).is_err() && begins_runs_name(name) {
        return Some(begun(name));
    }
    let why =
        named_runs_programs(p, cwd).or_else(|| super::on_path::write_refused(p, folders, cwd))?;
    Some(format!(
        "a program no model reads may write what its words name, and {why}"
    ))
}

/// Whether `name` (one name, in any case) is the beginning of a name [`runs_by_name`]
/// knows, and not the whole of it: a program that makes a name by adding to a word (split's
/// suffixes: `.envr` + `c`) may make it. A name of one dot and one character or more, or of
/// three characters or more.
pub fn begins_runs_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let name = name.as_str();
    let long_enough = if name.starts_with('.') {
        name.len() >= 2 && name != ".."
    } else {
        name.len() >= 3
    };
    long_enough
        && (listed_names().any(|n| n.len() > name.len() && n.starts_with(name))
            || PATTERNS.iter().any(|(stem, _)| {
                (stem.len() > name.len() && stem.starts_with(name))
                    || (name.starts_with(stem) && !by_pattern(name))
            }))
}

/// Whether a file named `name` (one name, in any case) makes programs run once written
/// wherever it is made: a shell's start file, a tool's, git's configuration, a version
/// control's or cargo's folder.
pub fn runs_by_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    listed_names().any(|n| n == name) || by_pattern(&name)
}

/// Why writing `p` (inside the session's folder `cwd`, `rel` beneath it) may make programs
/// run: by its place or its name (see [`prefix_write_refused`]).
fn runs_programs(p: &Path, rel: &Path, cwd: &Path) -> Option<String> {
    // Names compared in either case: a file system that ignores case (macOS's) takes
    // `.GIT/config` for `.git/config`.
    let is =
        |c: &std::ffi::OsStr, name: &str| c.to_str().is_some_and(|c| c.eq_ignore_ascii_case(name));
    // And the other version controls' folders ([`VCS`]).
    if let Some(c) = rel
        .components()
        .find(|c| VCS.iter().any(|v| is(c.as_os_str(), v)))
    {
        return Some(format!(
            "it writes {}, inside a {} folder (its config and hooks run programs)",
            p.display(),
            c.as_os_str().to_string_lossy()
        ));
    }
    // A `.cargo` folder, made whole (`mv cfg .cargo`) or written into: its config names
    // the compiler cargo runs (`build.rustc`) for `cargo metadata` too.
    if rel.components().any(|c| is(c.as_os_str(), ".cargo")) {
        return Some(format!(
            "it writes {}, a .cargo folder (its config names the programs cargo runs)",
            p.display()
        ));
    }
    let name = p
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let name = name.as_str();
    // The user's own configuration that runs programs, where the session is the home
    // folder: git's (`core.fsmonitor`, for every repository), ssh's (`rc`, `config`'s
    // `ProxyCommand`, keys let in), the services and programs started at login.
    for folder in [
        ".config/git",
        ".ssh",
        ".config/systemd",
        ".config/autostart",
    ] {
        if rel.starts_with(folder) {
            return Some(format!(
                "it writes {}, in {folder}, whose files name programs that run",
                p.display()
            ));
        }
    }
    if let Some(why) = super::rc::user_configuration(p, cwd) {
        return Some(why);
    }
    if name == ".gitconfig" {
        return Some(format!(
            "it writes {}, git's own configuration (`core.fsmonitor` runs a program in every repository)",
            p.display()
        ));
    }
    // Folders of files a tool runs: mise's (`[hooks]`, `_.source`), yarn's own releases
    // and plugins (`yarnPath`), in any folder of the session.
    let comps: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_ascii_lowercase())
        .collect();
    let runs_folder = comps
        .iter()
        .any(|c| c == ".mise" || c == ".husky" || EDITORS.contains(&c.as_str()))
        || comps.windows(2).any(|w| {
            let (a, b) = (w[0].as_str(), w[1].as_str());
            matches!(
                (a, b),
                (".config", "mise") | (".yarn", "releases" | "plugins")
            ) || (a == "mise" && b.starts_with("config.") && b.ends_with(".toml"))
        });
    if runs_folder {
        return Some(format!(
            "it writes {}, in a folder whose files a tool runs (mise's, husky's hooks, yarn's releases and plugins, an editor's or a dev container's settings)",
            p.display()
        ));
    }
    if SHELL_START.contains(&name) || rel.starts_with(".config/fish") {
        return Some(format!(
            "it writes {}, a file a shell runs when it starts",
            p.display()
        ));
    }
    if TOOL_CONFIG.contains(&name) || by_pattern(name) {
        return Some(format!(
            "it writes {}, a file from which a tool picks the program it runs",
            p.display()
        ));
    }
    None
}
