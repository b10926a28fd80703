//! The call an ACP tool call describes, as the policy reads it: its title and kind, the
//! command in its `rawInput`, and the paths it names.

use std::path::{Path, PathBuf};

use super::{command, Call};

impl Call {
    /// The call an ACP tool call (`toolCall` of `session/request_permission`) describes: its
    /// title and kind, the command in its `rawInput` ([`command::from_raw_input`]), and the
    /// paths of its `locations` and of its `rawInput` (`file_path`, `path`, `filePath`,
    /// `filepath`, `notebook_path`, `paths`; the files of a Codex patch's `changes` and
    /// where each moves; the folder of Claude's Glob's absolute `pattern`). A Codex
    /// approval that may write and gives no `changes` leaves unsaid where a file moves
    /// ([`Call::unsaid`]).
    pub fn from_tool_call(tool_call: &serde_json::Value, agent: &str, cwd: &Path) -> Call {
        let raw = &tool_call["rawInput"];
        let mut paths: Vec<PathBuf> = tool_call["locations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l["path"].as_str())
            .map(PathBuf::from)
            .collect();
        for key in ["file_path", "path", "filePath", "filepath", "notebook_path"] {
            if let Some(p) = raw[key].as_str() {
                paths.push(PathBuf::from(p));
            }
        }
        // Codex's patch: each file it changes (the keys of `changes`), and where one moves
        // (`move_path`, also inside a change tagged by its type: `{"update": {...}}`).
        let changes = raw["changes"].as_object();
        for (file, change) in changes.into_iter().flatten() {
            paths.push(PathBuf::from(file));
            let nested = change.as_object().into_iter().flat_map(|c| c.values());
            for to in std::iter::once(change).chain(nested) {
                if let Some(to) = to["move_path"].as_str() {
                    paths.push(PathBuf::from(to));
                }
            }
        }
        // codex-acp's approval of a patch gives only the files it changes (`locations`), not
        // where one moves (`*** Move to:`): what it writes is not all said (a twentieth
        // review moved `src/a.rs` to `~/.bashrc` under `Edit(./**)`).
        let codex = agent.to_ascii_lowercase().contains("codex");
        let writes = !matches!(
            tool_call["kind"].as_str(),
            Some("read" | "search" | "fetch" | "think" | "execute")
        );
        let mut unsaid = (codex && writes && changes.is_none()).then(|| {
            "a Codex patch's approval names the files it changes, not where one moves".to_owned()
        });
        paths.extend(
            raw["paths"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str())
                .map(PathBuf::from),
        );
        let tool = tool_call["name"]
            .as_str()
            .or_else(|| tool_call["_meta"]["claudeCode"]["toolName"].as_str())
            .map(str::to_owned);
        // Claude's Glob searches from an absolute pattern's own folder, whatever `path` says
        // (`/home/u/.ssh/*` lists `~/.ssh`): the folder before its first glob character.
        // (claude-agent-acp's approvals name no tool: any search's absolute pattern counts.)
        let glob = match tool.as_deref() {
            Some(t) => t == "Glob",
            None => tool_call["kind"] == "search",
        };
        // A relative pattern that climbs (`../home/u/.ssh/*`) searches above `path` the
        // same way: its folder, from `path`, is decided; a `..` after a glob character
        // leaves where it searches unsaid.
        if let (true, Some(pattern)) = (glob, raw["pattern"].as_str()) {
            let fixed = pattern
                .split(['*', '?', '[', '{'])
                .next()
                .unwrap_or(pattern);
            let folder = match fixed.rsplit_once('/') {
                Some(("", _)) => "/",
                Some((folder, _)) => folder,
                None => fixed,
            };
            let climbs = |p: &str| p.split('/').any(|c| c == "..");
            if pattern.starts_with(['/', '~']) {
                paths.push(PathBuf::from(folder));
            } else if climbs(folder) {
                let base = raw["path"].as_str().map_or(cwd, Path::new);
                paths.push(base.join(folder));
            }
            if climbs(&pattern[fixed.len()..]) {
                unsaid.get_or_insert_with(|| {
                    "the search's pattern climbs (`..`) after a glob character: where it searches cannot be told".into()
                });
            }
        }
        paths.sort();
        paths.dedup();
        Call {
            agent: agent.to_owned(),
            tool,
            url: raw["url"].as_str().map(str::to_owned),
            program: None,
            kind: tool_call["kind"].as_str().map(str::to_owned),
            title: tool_call["title"].as_str().unwrap_or_default().to_owned(),
            command: command::from_raw_input(raw),
            paths,
            cwd: cwd.to_owned(),
            shell: Default::default(),
            unsaid,
        }
    }
}

/// `p` without the whitespace at its start and end (JavaScript's `trim`: Unicode white
/// space and U+FEFF), as Claude Code opens a tool's path; `None` when there is none.
pub(super) fn trimmed(p: &Path) -> Option<PathBuf> {
    let text = p.to_str()?;
    let t = text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    (t != text && !t.is_empty()).then(|| PathBuf::from(t))
}

/// The host of an `http(s)` URL, lower case, without port or credentials; `Err` for a URL
/// that parsers could read differently (a backslash, whitespace, a control character), or
/// that is not `http(s)`.
pub(super) fn host_of(url: &str) -> Result<String, ()> {
    if url
        .chars()
        .any(|c| c == '\\' || c.is_whitespace() || c.is_control())
    {
        return Err(());
    }
    let (scheme, rest) = url.split_once("://").ok_or(())?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(());
    }
    let authority = rest.split(['/', '?', '#']).next().ok_or(())?;
    let host = authority.rsplit('@').next().ok_or(())?;
    let host = if host.starts_with('[') {
        host.split(']').next().ok_or(())?.trim_start_matches('[')
    } else {
        host.split(':').next().ok_or(())?
    };
    // A percent-escape or a non-ASCII character (a fullwidth letter, an ideographic full
    // stop) is read as another host by URL parsers that decode and normalise it
    // (`evil%2ecom`, `ｅvil.com` are evil.com to Node's): never allowed by a domain.
    if host.is_empty() || !host.is_ascii() || host.contains('%') {
        return Err(());
    }
    Ok(host.trim_end_matches('.').to_ascii_lowercase())
}
