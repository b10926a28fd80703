//! Configuration files that change what a program or an agent does, which no word of a
//! command or field of a tool call shows. The agents' own folders
//! ([`agent_settings`]) are the policy's files too. And programs that read a configuration
//! file of their own from the user's folders, with options no word of the command shows:
//! curl's `.curlrc` (`output = "…"`, `url = "file:///…/.ssh/id_rsa"`), wget's `.wgetrc`
//! (`output_document`, `use_askpass`), and searchers' (ack's `.ackrc` in the folder or
//! above: `--files-from`; ugrep's `.ugrep`, which `ug` reads: `filter=` runs a program).
//! While such a file exists, an allowed command of one is asked: an earlier allowed
//! `curl -o ~/.curlrc URL` would otherwise make the next `curl URL` write the policy's own
//! file, or print what a `Read` deny forbids (a fifteenth hostile review). And the user's
//! own configuration ([`user_configuration`]), which no prefix rule writes.
//!
//! Invariant: only ever turns an allow into an ask.

use std::path::{Path, PathBuf};

/// The environment a lookup reads (the bridge's, which its agent inherits).
pub(super) use super::args::Env;

/// Why `words` (one part of a command, run in any of `folders`) may read options from a
/// file no word names.
pub(super) fn refused(words: &[String], folders: &[PathBuf]) -> Option<String> {
    refused_in(words, folders, &|k| std::env::var_os(k))
}

/// [`refused`], with the environment `env`.
pub(super) fn refused_in(words: &[String], folders: &[PathBuf], env: Env<'_>) -> Option<String> {
    let program = super::args::base(words.first()?);
    let (home, config) = home_and_config(env);
    // Searchers' files, in the folder they run in (ack: and every folder above it) or the
    // user's: ack's `--files-from` (a list of files to read), ugrep's `filter=` (a program
    // run per file).
    let here = |names: &[&str], above: bool| -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = folders
            .iter()
            .flat_map(|f| f.ancestors().take(if above { usize::MAX } else { 1 }))
            .map(Path::to_path_buf)
            .collect();
        dirs.extend(home.clone());
        dirs.iter()
            .flat_map(|d| names.iter().map(move |n| d.join(n)))
            .collect()
    };
    let files = match program {
        // `-q` (`--disable`) as the first argument: curl reads no `.curlrc`.
        "curl" if matches!(words.get(1).map(String::as_str), Some("-q" | "--disable")) => {
            return None
        }
        "curl" => curlrc(env),
        // Only first: after `--` it is a name, and after `-O` that option's value.
        "wget" | "wget2" if words.get(1).is_some_and(|w| w == "--no-config") => return None,
        "wget" | "wget2" => wgetrc(env),
        "ack" | "ack-grep" if words.get(1).is_some_and(|w| w == "--noenv") => return None,
        "ack" | "ack-grep" => {
            let mut files = here(&[".ackrc", "_ackrc"], true);
            files.extend(env("ACKRC").map(PathBuf::from));
            files.push(PathBuf::from("/etc/ackrc"));
            files
        }
        // `ug` is `ugrep --config`: it reads `.ugrep` with no word saying so.
        "ug" => here(&[".ugrep"], false),
        "pt" => here(&[".ptconfig.toml"], false),
        "sift" => here(&[".sift.conf"], false),
        "rga" => config
            .map(|c| c.join("ripgrep-all/config.jsonc"))
            .into_iter()
            .collect(),
        // Universal Ctags reads every `*.ctags` of these folders (`-f ~/.bashrc`); cscope
        // the list of files it indexes and prints.
        "ctags" => here(&[".ctags.d", "ctags.d"], false),
        "cscope" => here(&["cscope.files"], false),
        // Dot-commands run before any other (`-safe` is not said to cover them).
        "sqlite3" => home
            .iter()
            .map(|h| h.join(".sqliterc"))
            .chain(config.iter().map(|c| c.join("sqlite3/sqliterc")))
            .collect(),
        _ => return None,
    };
    let found = files.into_iter().find(|f| f.exists())?;
    Some(format!(
        "`{program}` reads {}, whose options no word of the command shows (give `-q` first to curl, `--no-config` first to wget, `--noenv` first to ack, or remove the file)",
        found.display()
    ))
}

fn env_dir(env: Env<'_>, name: &str) -> Option<PathBuf> {
    env(name).map(PathBuf::from).filter(|p| p.is_absolute())
}

/// The user's home folder and configuration folder (`$XDG_CONFIG_HOME`, else
/// `~/.config`), as `env` says.
pub(super) fn home_and_config(env: Env<'_>) -> (Option<PathBuf>, Option<PathBuf>) {
    let home = env_dir(env, "HOME");
    let config =
        env_dir(env, "XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    (home, config)
}

/// Where curl looks for its `.curlrc` (curl's `tool_findfile`: `$CURL_HOME`,
/// `$XDG_CONFIG_HOME`, `$HOME`, each as `.curlrc` and as `_curlrc`).
fn curlrc(env: Env<'_>) -> Vec<PathBuf> {
    let (home, config) = home_and_config(env);
    [env_dir(env, "CURL_HOME"), config, home]
        .into_iter()
        .flatten()
        .flat_map(|d| [d.join(".curlrc"), d.join("_curlrc"), d.join("curlrc")])
        .collect()
}

/// Where wget looks for the user's file (`$WGETRC`, else `~/.wgetrc`), and wget2's
/// (`$XDG_CONFIG_HOME/wget/wgetrc`).
fn wgetrc(env: Env<'_>) -> Vec<PathBuf> {
    let (home, config) = home_and_config(env);
    let mut files: Vec<PathBuf> = env("WGETRC").map(PathBuf::from).into_iter().collect();
    files.extend(home.map(|h| h.join(".wgetrc")));
    files.extend(config.map(|c| c.join("wget/wgetrc")));
    files
}

/// The agents' own folders, in a project or the home folder: what is in them decides what
/// the agent runs without asking the bridge at all: a settings file's `permissions.allow`,
/// a hook or an MCP server (a twentieth review: `Write .claude/settings.local.json`), a
/// command's, a skill's or a subagent's `allowed-tools` (a twenty-third). Everything in
/// them, and each folder itself (moved or replaced whole), is the policy's too.
/// Other agents' and their editors' folders too: their settings name the MCP servers and
/// hooks they start (Qwen Code's, OpenCode's, Kiro's, Amazon Q's, Roo's, Windsurf's,
/// Continue's, Cline's).
const AGENT_FOLDERS: &[&str] = &[
    ".claude",
    ".gemini",
    ".codex",
    ".qwen",
    ".opencode",
    ".kiro",
    ".amazonq",
    ".roo",
    ".windsurf",
    ".continue",
    ".cline",
];

/// Agents' files of a project that name programs they run: MCP servers (`.mcp.json`,
/// OpenCode's and Crush's settings), aider's settings (`lint-cmd`, `test-cmd`); a VS Code
/// workspace (`*.code-workspace`: its settings, tasks and launch) is matched by its ending.
const AGENT_FILES: &[&str] = &[
    ".mcp.json",
    "opencode.json",
    "opencode.jsonc",
    "crush.json",
    ".crush.json",
    ".aider.conf.yml",
];

/// Why `p` is in an agent's own folder ([`AGENT_FOLDERS`]) or is `.mcp.json` (said of
/// `shown`: the whole path `p` is part of).
pub(super) fn agent_settings(p: &Path, shown: &Path) -> Option<String> {
    // In either case: a file system that ignores case (macOS's, a casefolded ext4 folder)
    // opens `.CLAUDE/Settings.json` as `.claude/settings.json`.
    let lower = PathBuf::from(p.to_string_lossy().to_lowercase());
    let mcp = lower
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| AGENT_FILES.contains(&n) || n.ends_with(".code-workspace"));
    let folder = lower
        .components()
        .find_map(|c| AGENT_FOLDERS.iter().find(|f| c.as_os_str() == **f).copied());
    if mcp {
        return Some(format!(
            "{} names an agent's own MCP servers or commands, or an editor's tasks (programs they run without asking)",
            shown.display()
        ));
    }
    folder.map(|f| {
        format!(
            "{} is in {f}, an agent's own settings, commands and skills (what it runs without asking)",
            shown.display()
        )
    })
}

/// Why `p` (resolved) is the user's own configuration or one of their programs, wherever
/// the session is: a hidden file or folder of the home folder, anything in the
/// configuration folder (`$XDG_CONFIG_HOME`). (A folder of `PATH` is `super::on_path`'s.) What reads
/// them and what they start is open-ended: toolchains (`.rustup/settings.toml` makes
/// `cargo tree` run another cargo), interpreters (`.pyenv/version`, a `.pth` in
/// `.local/lib`), login files (`.xsessionrc`, `.pam_environment`), programs' settings that
/// name a program (`.kube/config`, `.aws/config`, `.gnupg`, `.vimrc`). So none is named:
/// all are refused.
/// A session whose folder is itself inside one (a Codex worktree in
/// `~/.codex/worktrees`, `~/.config/nvim`) writes its own files as any project does.
pub(super) fn user_configuration(p: &Path, cwd: &Path) -> Option<String> {
    let (home, config) = home_and_config(&|k| std::env::var_os(k));
    let as_opened = |d: PathBuf| std::fs::canonicalize(&d).unwrap_or(d);
    let (home, config) = (home.map(as_opened), config.map(as_opened));
    let holds_home = home.as_ref().is_some_and(|h| h.starts_with(cwd));
    if !holds_home && p.starts_with(cwd) {
        return None;
    }
    if let Some(home) = home {
        // And `~/bin`, which Debian's and Ubuntu's `~/.profile` put on `PATH` once it
        // exists: Codex runs each command with `bash -lc` (a twenty-sixth review).
        let first = p
            .strip_prefix(&home)
            .ok()
            .and_then(|r| r.components().next());
        let bytes = first.map(|c| c.as_os_str().as_encoded_bytes());
        if bytes.is_some_and(|b| b.starts_with(b".") || b == b"bin") {
            return Some(format!(
                "it writes {}, a hidden file or folder of the home folder, or its bin (the user's own configuration and programs)",
                p.display()
            ));
        }
    }
    if let Some(config) = config {
        if p.starts_with(&config) {
            return Some(format!(
                "it writes {}, in the user's configuration folder {}",
                p.display(),
                config.display()
            ));
        }
    }
    None
}
