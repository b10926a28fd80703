//! What moved the agent's shell before a call (docs/POLICY.md, "A shell that keeps its
//! folder"): Claude Code's Bash keeps its folder between calls, so after an allowed
//! `cd sub && ls` its next command runs in `sub`. The router keeps, per session, the
//! commands that may have moved it ([`Shell`]); a call is decided in every folder they may
//! have left the shell in (`decide::shell_folders`), and asked when that cannot be told.

use std::path::{Path, PathBuf};

/// The commands run before a call in its session whose `cd` may have left the agent's
/// shell in another folder than the session's: Claude Code's Bash keeps its folder between
/// calls, so after `cd sub && ls` its next command runs in `sub`. The policy decides a call
/// in every folder they may have left the shell in ([`super::Policy::decide`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shell {
    /// Oldest first.
    pub moved_by: Vec<String>,
    /// More moved it than were kept: where it is cannot be told.
    pub lost: bool,
}

/// Whether a tool of this name runs its commands in a shell that keeps its folder between
/// calls: Claude Code's Bash.
pub fn keeps_its_folder(tool: Option<&str>) -> bool {
    tool == Some("Bash")
}

/// Whether a tool of this name takes a relative path from the folder Claude Code's Bash
/// last moved to: its file tools (a twenty-first review: after `cd .claude && ls`, a Write
/// of `settings.local.json` wrote `.claude/settings.local.json`).
fn follows_its_shell(tool: Option<&str>) -> bool {
    matches!(
        tool,
        Some("Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "Glob" | "Grep" | "LS")
    )
}

/// Whether a call of `tool` from `agent` is decided with what moved the agent's shell:
/// Claude's Bash and file tools, and any call of Claude's that names no tool
/// (claude-agent-acp's approvals carry the tool's name only in its announcements).
pub fn with_its_shell(tool: Option<&str>, agent: &str) -> bool {
    keeps_its_folder(tool)
        || follows_its_shell(tool)
        || (tool.is_none() && agent.to_ascii_lowercase().contains("claude"))
}

/// The paths a file tool call's relative `paths` may name from the other folders its
/// agent's shell may be in ([`follows_its_shell`]); `Err` when where that is cannot be told.
pub(super) fn relative_elsewhere(call: &super::Call) -> Result<Vec<std::path::PathBuf>, String> {
    let relative: Vec<_> = call
        .paths
        .iter()
        .take(super::guard::MAX_PATHS)
        .filter(|p| p.is_relative())
        .collect();
    if call.command.is_some() || relative.is_empty() || call.shell == Shell::default() {
        return Ok(Vec::new());
    }
    let folders = super::decide::shell_folders(call)?;
    Ok(folders
        .iter()
        .filter(|f| **f != call.cwd)
        .flat_map(|f| relative.iter().map(move |p| f.join(p)))
        .collect())
}

/// Why the parts after `words`, a move a rule allows (`Bash(cd:*)`) that cannot be followed
/// (`cd` out of the session, `pushd`), cannot be decided where they run: a rule allows the
/// move, not what comes after it elsewhere (a twenty-second review: `cd .git && sort -o
/// config x` under `Bash(cd:*)`). `None`: `words` moves no shell.
pub(super) fn unfollowed(words: &[String]) -> Option<String> {
    let program = super::args::base(words.first()?);
    moves_a_shell(program).then(|| {
        format!(
            "`{}` moves the shell where the parts after it cannot be followed",
            words.join(" ").escape_debug()
        )
    })
}

/// Whether `command` may move a shell (`cd`, `pushd`, `popd`, or a builtin that runs other
/// words as a command, `eval`, `source`, `.`, `exec`, `builtin`, `command`, among its
/// words, quotes and escapes aside, or an expansion that could spell one): a cheap test
/// that keeps every command that does, and some that do not.
pub fn may_move_a_shell(command: &str) -> bool {
    let bare: String = command
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    command.contains(['$', '`'])
        || bare
            .split(|c: char| c.is_whitespace() || ";&|(){}`$<>".contains(c))
            .any(moves_a_shell)
}

/// Whether a command named `program` moves the shell it runs in, or may (a builtin that runs
/// other words as a command): `cd`, `pushd`, `popd`, `eval`, `source`, `.`, `exec`,
/// `builtin`, `command`.
pub fn moves_a_shell(program: &str) -> bool {
    matches!(
        program,
        "cd" | "pushd" | "popd" | "eval" | "source" | "." | "exec" | "builtin" | "command"
    )
}

/// Whether `dir`, written in a `cd` run in `from`, passes through a symbolic link.
pub(super) fn through_a_link(from: &std::path::Path, dir: &str) -> bool {
    use std::path::Component;
    let mut at = if dir.starts_with('/') {
        std::path::PathBuf::from("/")
    } else {
        from.to_path_buf()
    };
    for c in std::path::Path::new(dir).components() {
        match c {
            Component::Normal(n) => {
                at.push(n);
                if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                    return true;
                }
            }
            Component::ParentDir => {
                at.pop();
            }
            _ => {}
        }
    }
    false
}

/// The folder of `cd DIR` or `cd -- DIR`, the only forms of `cd` followed.
pub fn cd_operand(words: &[String]) -> Option<&str> {
    match words {
        [cd, dir] if cd == "cd" => Some(dir),
        [cd, dashes, dir] if cd == "cd" && dashes == "--" => Some(dir),
        _ => None,
    }
}

/// The folders `cd DIR` moves to from each of `folders`, when it is a move into an existing
/// folder inside the session's folder `session` from every one of them (no option, no
/// `$CDPATH` that could find another, no `-`): such a part needs no rule, and the parts
/// after it are decided there too.
pub fn cd_inside(words: &[String], folders: &[PathBuf], session: &Path) -> Option<Vec<PathBuf>> {
    let dir = cd_operand(words)?;
    // After `--` too, bash and dash take a lone `-` for `$OLDPWD`.
    if dir.is_empty() || dir.starts_with(['-', '~', '+']) {
        return None;
    }
    let cdpath = std::env::var_os("CDPATH").is_some_and(|c| !c.is_empty());
    let first = dir.split('/').next().unwrap_or("");
    if cdpath && !dir.starts_with('/') && !matches!(first, "." | "..") {
        return None;
    }
    let mut to = Vec::new();
    for f in folders {
        // bash keeps `$PWD` as written, so a later `cd ..` leaves a link's folder by its
        // name, not by where it leads (`cd l && cd ../proj/sub` landed in neither place the
        // folders followed, a fifty-eighth review): a move through a link is not followed.
        if through_a_link(f, dir) {
            return None;
        }
        let r = super::path::resolve(Path::new(dir), f)?;
        if !r.is_dir || !r.path.starts_with(session) {
            return None;
        }
        // bash's `cd` takes `..` off the written path first (`cd l/..` with `l` a link
        // stays here): a move that lands elsewhere so is not this one.
        let mut logical = PathBuf::new();
        for c in f.join(dir).components() {
            match c {
                std::path::Component::ParentDir => {
                    logical.pop();
                }
                std::path::Component::CurDir => {}
                other => logical.push(other),
            }
        }
        if logical.canonicalize().ok()? != r.path {
            return None;
        }
        to.push(r.path);
    }
    Some(to)
}

/// Where the parts of one command run, as its `&&`, `||`, `;` and `|` lead the shell: each
/// folder it may be in with the status the last part run there left, for every way the
/// parts before may have gone. A part after `&&` runs only where the one before succeeded,
/// so after `cd sub && cd ..` the `cd ..` runs in `sub` alone, and one after `;` wherever
/// the shell may be (a `cd` may fail and leave it where it was).
#[derive(Debug, Clone)]
pub struct Flow {
    states: Vec<(PathBuf, bool)>,
    /// The operator after the part last stepped over.
    op: Option<&'static str>,
}

impl Flow {
    /// The flow of a command that starts in any of `folders`.
    pub fn new(folders: &[PathBuf]) -> Flow {
        Flow {
            states: folders.iter().map(|f| (f.clone(), true)).collect(),
            op: None,
        }
    }

    fn runs(&self, ok: bool) -> bool {
        match self.op {
            Some("&&") => ok,
            Some("||") => !ok,
            _ => true,
        }
    }

    /// The folders the next part runs in.
    pub fn folders(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for (f, ok) in &self.states {
            if self.runs(*ok) && !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }

    /// Every folder the shell may be in after the parts stepped over.
    pub fn all(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for (f, _) in &self.states {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }

    /// Steps over a part followed by `op`, run in [`Self::folders`]: a `cd` followed
    /// ([`cd_moves`]) moved the shell from each `(from, to)` of `moves` when it succeeded.
    /// In a pipeline a part runs in a subshell, so a `cd` there may have moved it or not.
    pub fn step(&mut self, op: Option<&'static str>, moves: &[(PathBuf, PathBuf)]) {
        let piped = self.op == Some("|") || op == Some("|");
        let mut next: Vec<(PathBuf, bool)> = Vec::new();
        for (f, ok) in &self.states {
            if !self.runs(*ok) {
                next.push((f.clone(), *ok));
                continue;
            }
            match moves.iter().find(|(from, _)| from == f) {
                Some((_, to)) if !piped => next.extend([(to.clone(), true), (f.clone(), false)]),
                Some((_, to)) => next.extend(
                    [true, false]
                        .into_iter()
                        .flat_map(|s| [(to.clone(), s), (f.clone(), s)]),
                ),
                None => next.extend([(f.clone(), true), (f.clone(), false)]),
            }
        }
        self.states.clear();
        for s in next {
            if !self.states.contains(&s) {
                self.states.push(s);
            }
        }
        self.op = op;
    }
}

/// Where `cd DIR` moves the shell from each of `folders`, as [`cd_inside`] follows it;
/// `None` when it does not follow it from one of them.
pub fn cd_moves(
    words: &[String],
    folders: &[PathBuf],
    session: &Path,
) -> Option<Vec<(PathBuf, PathBuf)>> {
    folders
        .iter()
        .map(|from| {
            let to = cd_inside(words, std::slice::from_ref(from), session)?;
            Some((from.clone(), to.into_iter().next()?))
        })
        .collect()
}
