//! The wall around the agent (docs/SECURITY.md, "The agent itself"): the agent and
//! everything it starts run where the bridge's own files cannot be changed or read.
//!
//! The bridge does not start the agent itself: it starts its own binary as a launcher
//! (`acp-question-bridge __wall PLAN -- AGENT...`, [`exec`]), which builds the wall around
//! itself, one thread and nothing else running, then starts the agent in it:
//! - a PID namespace of its own, with its `/proc` ([`init`]): no process of the bridge's is
//!   there to see, and nothing the agent starts outlives the wall;
//! - a user and mount namespace of its own, where the bridge's files are read-only (the
//!   user's config folder: policy, trust list; the folder of each `--policy` file; the
//!   session folder's `.acp-question-bridge`; the real folder of every link in them, and a
//!   file of theirs with other names refused: `linked`), its secrets hidden behind an empty folder or file (the
//!   registry, `held/`, the inbox's state, the token file, the journal, the log, NATS
//!   credentials), and every folder above them a mount point, which no rename can move;
//! - no capability left, none to gain (bounding set cleared, `no_new_privs`, root's
//!   securebits locked), so no mount can be undone, root or not;
//! - a Landlock domain: nothing inside may trace, read the `/proc` files of, or signal a
//!   process outside it (the bridge, the editor, another bridge).
//!
//! The bridge's own variables (`ACP_QUESTION_BRIDGE_*`) are not passed on (`child::spawn`).
//!
//! Invariants:
//! - Fail closed: once the wall is on, an agent the launcher cannot wall in does not
//!   start; the bridge says why and that `--sandbox off` runs it without.
//! - Where the kernel cannot (no user namespaces, no Landlock, not Linux), [`probe`] says so
//!   before the agent starts, with the reason and the fix; the bridge then runs the agent
//!   without the wall and says so once.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[cfg(target_os = "linux")]
pub mod exec;
#[cfg(target_os = "linux")]
mod init;
mod linked;
mod mounts;
mod places;
pub use places::{invoked, state_folders, writable, INVOKED_ENV, SELF_EXE};

/// The first argument that makes the binary the launcher.
pub const LAUNCHER_ARG: &str = "__wall";

/// `--sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Mode {
    /// No wall: the agent can do all the user can, the bridge's files included.
    Off,
    /// The bridge's files cannot be changed, its secrets not read, its process not reached.
    #[default]
    OwnFiles,
    /// `own-files`, and the agent writes only in the session's folder, the temp folders,
    /// its own state folders and `--sandbox-write` paths; the policy's `Read(…)` and
    /// `Edit(…)` denies of a file or a whole folder are kept by the kernel too.
    Workspace,
}

/// What the wall keeps from the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Folders and files the agent may read, never change, replace, rename or remove.
    pub read_only: Vec<PathBuf>,
    /// Folders and files the agent may not read: an empty one stands in their place.
    pub hidden: Vec<PathBuf>,
    /// The links met on the way to those paths (a dotfiles manager's
    /// `~/.config/acp-question-bridge -> ~/dotfiles/acpqb`), each pinned as it is: the agent
    /// cannot point one elsewhere, for the next bridge to follow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<PathBuf>,
    /// The folder the agent starts in (entered again once the wall stands).
    pub cwd: Option<PathBuf>,
    /// With `workspace`: the only folders and files the agent may write (Landlock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writable: Option<Vec<PathBuf>>,
    /// The bridge's shutdown grace, in ms: once the bridge is gone, what is left inside the
    /// wall has had SIGTERM, and is killed this long after ([`init`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_ms: Option<u64>,
}

/// The bridge's files, as the bridge was started.
#[derive(Debug, Clone, Default)]
pub struct Files {
    /// The user's config folder (`policy::file::config_dir`).
    pub config: Option<PathBuf>,
    /// Its default place (`~/.config/acp-question-bridge`), where a bridge of another
    /// environment looks.
    pub default_config: Option<PathBuf>,
    /// `--policy` files.
    pub policies: Vec<PathBuf>,
    /// The cache of the agent registry and the agents it unpacked (`agents::cache_dir`):
    /// what the next `--agent ID` runs.
    pub cache: Option<PathBuf>,
    /// The session's folder.
    pub cwd: Option<PathBuf>,
    /// The bridge's folders of state: the registry, `$XDG_STATE_HOME/acp-question-bridge`,
    /// `$XDG_RUNTIME_DIR/acp-question-bridge`, and the default places of both (where a
    /// bridge or an inbox of another environment keeps them).
    pub state: Vec<PathBuf>,
    /// The bridge's secret files that hold no right: `--journal`, `--log-file`.
    pub secrets: Vec<PathBuf>,
    /// The files that give a right to answer questions, by the flag that names them
    /// (`--control-token-file`, `--nats-creds`): kept only beneath a folder of [`state`],
    /// which every bridge's wall hides, so no agent of another bridge can read them.
    pub keys: Vec<(&'static str, PathBuf)>,
    /// With `workspace`: where the agent may write ([`writable`]).
    pub writable: Option<Vec<PathBuf>>,
    /// With `workspace`: files and folders the policy denies reading, and editing, whole.
    pub deny_read: Vec<PathBuf>,
    pub deny_edit: Vec<PathBuf>,
    /// This program, by the path it was started by ([`invoked`]) and as it runs
    /// (`current_exe`, which the bridge starts the launcher and the notification command
    /// by): the next bridge or front the editor starts runs what is there, outside any
    /// wall.
    pub exe: Vec<PathBuf>,
}

impl Files {
    /// The plan that keeps these from the agent. Folders of the bridge's that are not
    /// there yet are made (0700), so that they can be walled: the user's config folder
    /// (else the agent could write the first policy), the folders of state; a secret file
    /// not there yet is made empty (0600).
    pub fn plan(&self) -> Result<Plan, String> {
        // The launcher enters it again from where it was started: by its whole path.
        let mut plan = Plan {
            cwd: self.cwd.as_ref().map(|c| real(c)).transpose()?,
            ..Plan::default()
        };
        // This environment's config folder, and the default one a bridge of another
        // environment (a flatpak editor's `XDG_CONFIG_HOME`) reads: made if missing, so
        // that the agent cannot write the first policy of either.
        for config in self.config.iter().chain(&self.default_config) {
            let folder = made_folder(config)?;
            self.through_links(&folder, &mut plan)?;
            plan.read_only.push(folder);
        }
        // The agents' cache, read-only: an agent that wrote there (a registry copy, an
        // unpacked binary) would choose what the next `--agent ID` runs.
        // Its tree is the agents' files, large and deep: read-only by its real path, not
        // looked through as a policy folder is.
        if let Some(cache) = &self.cache {
            plan.read_only.push(made_folder(cache)?);
        }
        // The control groups, read-only: their files freeze (`cgroup.freeze`, v1's
        // `freezer.state`) or kill (`cgroup.kill`) every process of a group, the bridge's
        // and the editor's among them, where the user may write them (a delegated subtree,
        // root); no Landlock scope covers that. Each mount beneath, as a read-only bind
        // does not reach the mounts beneath it.
        plan.read_only
            .extend(mounts_beneath(Path::new("/sys/fs/cgroup")));
        // The kernel's settings, read-only as bubblewrap makes them: inside its user
        // namespace a root agent keeps uid 0, and `/proc/sys` checks the writer's uid, not
        // its capabilities (`kernel.core_pattern` names a program the kernel runs outside
        // every namespace, with every capability, at the next crash).
        // So are the kernel's objects in `/sys`, which a root agent may write for the same
        // reason: `uevent_helper` names a program the kernel runs as root, outside;
        // `power/state`, CPUs and drivers are the whole machine's.
        for p in [
            "/proc/sys",
            "/proc/sysrq-trigger",
            "/proc/irq",
            "/proc/bus",
            // Root resets the kernel's profiling buffer by writing it.
            "/proc/profile",
            "/sys",
        ] {
            if Path::new(p).exists() {
                plan.read_only.push(PathBuf::from(p));
            }
        }
        // The kernel's log takes lines from root as the kernel's own (`/dev/kmsg`): not
        // there to write, nor to read.
        if Path::new("/dev/kmsg").exists() {
            plan.hidden.push(PathBuf::from("/dev/kmsg"));
        }
        // A `--policy` file is walled by its folder: a mount over the file itself is lost
        // when something outside replaces it by a rename (an editor's atomic save), and the
        // agent could then write the new file. A file that is not there breaks the policy
        // (every approval is asked): it cannot be walled (docs/SECURITY.md says so).
        for p in self.policies.iter().filter(|p| p.exists()) {
            let file = real(p)?;
            let folder = file.parent().unwrap_or(Path::new("/")).to_path_buf();
            if let Some(why) = self.worked_in(&folder) {
                return Err(format!(
                    "--policy {}: its folder {} is {why}, which the wall cannot make read-only, and a wall over the file alone is lost when an editor saves it by a rename; keep policy files in a folder of their own (the config folder, or a project's .acp-question-bridge)",
                    p.display(),
                    folder.display()
                ));
            }
            self.has_one_name(&file)?;
            plan.read_only.push(folder);
        }
        if let Some(cwd) = &self.cwd {
            let project = cwd.join(".acp-question-bridge");
            if project.exists() {
                let folder = real(&project)?;
                self.through_links(&folder, &mut plan)?;
                plan.read_only.push(folder);
            }
        }
        for d in &self.state {
            plan.hidden.push(made_folder(d)?);
        }
        // A key must lie where every wall hides it, the walls of bridges started before
        // this one included: another bridge's agent would read it anywhere else (a command
        // line, readable by every process of the user, names it).
        for (flag, f) in &self.keys {
            let folder = f
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let hidden =
                real(folder).is_ok_and(|folder| plan.hidden.iter().any(|h| folder.starts_with(h)));
            if !hidden {
                return Err(format!(
                    "{flag} {}: a file that answers questions is kept only where every bridge's wall hides it, as the agent of another bridge could read it elsewhere; put it beneath {}",
                    f.display(),
                    self.state
                        .first()
                        .map(|d| d.display().to_string())
                        .unwrap_or_default()
                ));
            }
        }
        for f in self.secrets.iter().chain(self.keys.iter().map(|(_, f)| f)) {
            // A file with another name, or a link, would leave the secret readable there
            // (a hard link made before the wall; a link to where it would be made).
            if let Ok(m) = std::fs::symlink_metadata(f) {
                use std::os::unix::fs::MetadataExt as _;
                if m.file_type().is_symlink() || m.nlink() > 1 {
                    return Err(format!(
                        "{} is a link, or has other names (hard links), where the agent could read it",
                        f.display()
                    ));
                }
            }
            if !f.exists() {
                crate::private_file::write(f, b"")
                    .map_err(|e| format!("cannot make {}: {e}", f.display()))?;
            }
            plan.hidden.push(real(f)?);
        }
        // The policy's denies, where the kernel can keep them: what is there now, never the
        // session's folder or one above it (that would wall the project itself).
        let keeps = |p: &&PathBuf| {
            p.exists()
                && !self.cwd.as_ref().is_some_and(|c| c.starts_with(p))
                && p.parent().is_some()
        };
        for p in self.deny_read.iter().filter(keeps) {
            plan.hidden.push(real(p)?);
        }
        for p in self.deny_edit.iter().filter(keeps) {
            plan.read_only.push(real(p)?);
        }
        // `/proc/self` stays itself: the agent's own, where the launcher opens it.
        plan.writable = self.writable.as_ref().map(|w| {
            w.iter()
                .filter_map(|p| match p == Path::new("/proc/self") {
                    true => Some(p.clone()),
                    false => p.canonicalize().ok(),
                })
                .collect::<Vec<_>>()
        });
        // This program: not replaced, renamed over or removed (a mount point), by the name
        // it was started by and each link on the way. Written in place it cannot be while
        // it runs (`ETXTBSY`). One built in the session's folder is the agent's to build,
        // unless that folder is the home folder or one above it (`~/.cargo/bin`).
        // Not where the home folder cannot be told, nor for a session at `/`.
        let home = std::env::var_os("HOME").and_then(|h| PathBuf::from(h).canonicalize().ok());
        let own_build = |e: &Path| {
            plan.cwd.as_ref().is_some_and(|c| {
                c.parent().is_some()
                    && e.starts_with(c)
                    && home.as_ref().is_some_and(|h| !h.starts_with(c))
            })
        };
        let exe_named: Vec<&PathBuf> = self
            .exe
            .iter()
            .filter(|e| real(e).is_ok_and(|r| !own_build(&r)))
            .collect();
        let walled: Vec<PathBuf> = exe_named.iter().filter_map(|e| real(e).ok()).collect();
        plan.read_only.extend(walled);
        // The links on the way to each of them, as the bridge and the next one name them.
        let project = self.cwd.as_ref().map(|c| c.join(".acp-question-bridge"));
        let named = self
            .config
            .iter()
            .chain(&self.default_config)
            .chain(project.iter())
            .chain(&self.policies)
            .chain(self.cwd.iter())
            .chain(&self.state)
            .chain(&self.secrets)
            .chain(&self.deny_read)
            .chain(&self.deny_edit)
            .chain(exe_named);
        for p in named {
            links_on_the_way(p, &mut plan.links);
        }
        for v in [&mut plan.read_only, &mut plan.hidden, &mut plan.links] {
            v.sort();
            v.dedup();
        }
        Ok(plan)
    }
}

impl Files {
    /// Why the agent's work needs `folder` writable, if it does: it is the session's folder
    /// or one above it, the home folder or one above it, or a temp folder every program
    /// writes in. Such a folder is never walled whole.
    fn worked_in(&self, folder: &Path) -> Option<&'static str> {
        let canonical = |p: &Path| p.canonicalize().ok();
        if let Some(cwd) = self.cwd.as_deref().and_then(canonical) {
            if cwd.starts_with(folder) {
                return Some("the session's folder, or one above it");
            }
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if let Some(home) = home.as_deref().and_then(canonical) {
            if home.starts_with(folder) {
                return Some("the home folder, or one above it");
            }
        }
        let temp = [std::env::temp_dir(), "/tmp".into(), "/var/tmp".into()];
        if temp
            .iter()
            .filter_map(|t| canonical(t))
            .any(|t| t.starts_with(folder))
        {
            return Some("a temp folder, or one above it");
        }
        None
    }
}

/// Adds to `out` every link the kernel meets resolving `p` (relative: from the current
/// folder), each by the path of the link itself: its folder resolved, its own name kept.
/// At most 40 links, as the kernel follows.
fn links_on_the_way(p: &Path, out: &mut Vec<PathBuf>) {
    use std::path::Component;
    let Ok(whole) = std::path::absolute(p) else {
        return;
    };
    // The components still to walk, first to last (`None`: the root).
    let mut todo: std::collections::VecDeque<Option<std::ffi::OsString>> = whole
        .components()
        .filter_map(|c| match c {
            Component::RootDir => Some(None),
            Component::Normal(n) => Some(Some(n.to_owned())),
            Component::ParentDir => Some(Some("..".into())),
            _ => None,
        })
        .collect();
    let mut at = PathBuf::from("/");
    let mut budget = 40;
    while let Some(c) = todo.pop_front() {
        let Some(name) = c else {
            at = PathBuf::from("/");
            continue;
        };
        if name == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&name);
        let is_link = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            at = next;
            continue;
        }
        let Ok(target) = std::fs::read_link(&next) else {
            return;
        };
        if budget == 0 {
            return;
        }
        budget -= 1;
        out.push(next);
        for c in target.components().rev() {
            match c {
                Component::RootDir => todo.push_front(None),
                Component::Normal(n) => todo.push_front(Some(n.to_owned())),
                Component::ParentDir => todo.push_front(Some("..".into())),
                _ => {}
            }
        }
    }
}

/// The mount points at or beneath `top`, as this process sees them (`/proc/self/mountinfo`;
/// its fifth field, octal escapes undone).
fn mounts_beneath(top: &Path) -> Vec<PathBuf> {
    mounts::mountinfo()
        .into_iter()
        .map(|m| m.at)
        .filter(|p| p.starts_with(top))
        .collect()
}

/// `p` made (0700, with its parents) if it is not there, canonical.
fn made_folder(p: &Path) -> Result<PathBuf, String> {
    if !p.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(p)
            .map_err(|e| format!("cannot make {}: {e}", p.display()))?;
    }
    real(p)
}

/// `p` canonical.
fn real(p: &Path) -> Result<PathBuf, String> {
    p.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", p.display()))
}

use std::os::unix::fs::DirBuilderExt as _;

/// How the bridge starts its agent through the launcher.
#[derive(Debug, Clone)]
pub struct Launch {
    /// This binary.
    pub exe: PathBuf,
    pub plan: Plan,
}

impl Launch {
    /// The launcher's argv, the agent's to follow.
    pub fn prefix(&self) -> Vec<String> {
        vec![
            self.exe.to_string_lossy().into_owned(),
            LAUNCHER_ARG.to_owned(),
            serde_json::to_string(&self.plan).unwrap_or_default(),
            "--".to_owned(),
        ]
    }
}

/// The wall's state, for `doctor` and `bridge.status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// `off`, `own-files`, `workspace`.
    pub mode: &'static str,
    /// Whether the agent runs inside it.
    pub on: bool,
    /// Why not, with what to do, when asked for and not on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

impl State {
    pub fn new(mode: Mode, why_not: Option<String>) -> State {
        State {
            mode: match mode {
                Mode::Off => "off",
                Mode::OwnFiles => "own-files",
                Mode::Workspace => "workspace",
            },
            on: mode != Mode::Off && why_not.is_none(),
            why_not,
        }
    }
}

/// Whether the kernel can build the wall here: `exe` (this binary) run as the launcher
/// with an empty plan, itself (`--version`) as its agent. `Err`: why not, and what to do.
pub fn probe(exe: &Path) -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err(
            "the wall is built for Linux only (on macOS: planned, with Seatbelt, docs/SECURITY.md)"
                .into(),
        );
    }
    let launch = Launch {
        exe: exe.to_path_buf(),
        plan: Plan::default(),
    };
    let argv = [
        launch.prefix(),
        vec![exe.to_string_lossy().into_owned(), "--version".to_owned()],
    ]
    .concat();
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(said
        .lines()
        .last()
        .unwrap_or("the launcher failed")
        .trim_start_matches("acp-question-bridge: ")
        .to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every link the kernel follows on the way is named by its own path, its folder
    /// resolved: a link to a folder with a link in it, a relative link with `..`.
    #[test]
    fn the_links_on_the_way_are_those_the_kernel_follows() {
        let d = std::env::temp_dir().join(format!("acp-qb-wall-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("dotfiles/real/acpqb")).unwrap();
        std::fs::create_dir_all(d.join("home")).unwrap();
        let d = d.canonicalize().unwrap();
        // home/.config -> ../dotfiles/cfg, dotfiles/cfg -> real, real/acp -> acpqb.
        std::os::unix::fs::symlink("../dotfiles/cfg", d.join("home/.config")).unwrap();
        std::os::unix::fs::symlink("real", d.join("dotfiles/cfg")).unwrap();
        std::os::unix::fs::symlink("acpqb", d.join("dotfiles/real/acp")).unwrap();
        let mut out = Vec::new();
        links_on_the_way(&d.join("home/.config/acp/policy.toml"), &mut out);
        assert_eq!(
            out,
            [
                d.join("home/.config"),
                d.join("dotfiles/cfg"),
                d.join("dotfiles/real/acp")
            ]
        );
        let mut none = Vec::new();
        links_on_the_way(&d.join("dotfiles/real/acpqb"), &mut none);
        assert!(none.is_empty(), "{none:?}");
        // A loop ends at the kernel's bound.
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        let mut looped = Vec::new();
        links_on_the_way(&d.join("loop/x"), &mut looped);
        assert_eq!(looped.len(), 40);
        let _ = std::fs::remove_dir_all(&d);
    }
}
