//! The call an ACP tool call describes, as the policy reads it: its title and kind, the
//! command in its `rawInput`, and the paths it names.

use std::path::{Path, PathBuf};

use super::{command, Call};

impl Call {
    /// The call an ACP tool call (`toolCall` of `session/request_permission`) describes: its
    /// title and kind, the command in its `rawInput` ([`command::from_raw_input`]), and the
    /// paths of its `locations` and of its `rawInput` (`file_path`, `path`, `filePath`,
    /// `filepath`, `notebook_path`, `paths`; the files of a Codex patch's `changes` and
    /// where each moves).
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
        // (`move_path`): `locations` names only the destination of a move, whose source the
        // patch reads and removes.
        if let Some(changes) = raw["changes"].as_object() {
            for (file, change) in changes {
                paths.push(PathBuf::from(file));
                if let Some(to) = change["move_path"].as_str() {
                    paths.push(PathBuf::from(to));
                }
            }
        }
        paths.extend(
            raw["paths"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str())
                .map(PathBuf::from),
        );
        paths.sort();
        paths.dedup();
        let tool = tool_call["name"]
            .as_str()
            .or_else(|| tool_call["_meta"]["claudeCode"]["toolName"].as_str())
            .map(str::to_owned);
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
        }
    }
}
