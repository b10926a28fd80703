//! `setup zed --write`: adds the bridge's entry to Zed's `agent_servers` in its settings file,
//! a JSON-with-comments document the user wrote by hand.
//!
//! Invariants:
//! - What the user wrote stays as it was: comments, order, layout, trailing commas (the
//!   document is edited as a concrete syntax tree, jsonc-parser's `cst`); only the new entry
//!   is added, or with `--replace` the old one's value replaced.
//! - An agent of the same name is never replaced silently: without `--replace` nothing is
//!   written and the error says what to do.
//! - Before the file changes, its old bytes go to a backup that is never overwritten, and
//!   the new file replaces the old one at once (written beside it, then renamed), with the
//!   old file's permissions. A settings file that does not parse is left alone.
//! - The written document is read back, and must hold exactly the new entry.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use jsonc_parser::cst::{CstInputValue, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::{json, Value};

use super::Entry;

/// The entry Zed reads: a custom agent server.
pub fn entry(e: &Entry) -> Value {
    json!({"type": "custom", "command": e.command, "args": e.args, "env": {}})
}

/// Zed's settings file: `$XDG_CONFIG_HOME/zed/settings.json`, else
/// `~/.config/zed/settings.json` (on macOS too).
pub fn default_settings() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("zed/settings.json"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set; give --settings FILE")?;
    Ok(PathBuf::from(home).join(".config/zed/settings.json"))
}

/// Adds `e` to the settings file (`settings`, or Zed's own); returns what was done.
pub fn write(e: &Entry, settings: Option<&Path>, replace: bool) -> Result<String, String> {
    let path = match settings {
        Some(p) => p.to_owned(),
        None => default_settings()?,
    };
    // A settings file that is a link (dotfiles): the file it points to is edited, and the
    // link stays a link.
    let path = match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => path
            .canonicalize()
            .map_err(|err| format!("cannot follow the link {}: {err}", path.display()))?,
        _ => path,
    };
    let old = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    let (text, replaced) = edit(old.as_deref().unwrap_or("{}\n"), e, replace)
        .map_err(|msg| format!("{}: {msg}; nothing written", path.display()))?;
    let backup = match &old {
        Some(old) => Some(backup(&path, old)?),
        None => None,
    };
    replace_file(&path, &text)?;
    let verb = if replaced { "replaced" } else { "added" };
    Ok(match backup {
        Some(b) => format!(
            "{verb} agent {:?} in {} (the file as it was: {})",
            e.name,
            path.display(),
            b.display()
        ),
        None => format!(
            "{verb} agent {:?} in {} (a new file)",
            e.name,
            path.display()
        ),
    })
}

/// The settings document with `e` in its `agent_servers`, and whether an entry of that name
/// was replaced.
pub fn edit(text: &str, e: &Entry, replace: bool) -> Result<(String, bool), String> {
    let root = CstRootNode::parse(text, &ParseOptions::default())
        .map_err(|err| format!("not valid JSON with comments ({err})"))?;
    let top = match root.value() {
        None => root.object_value_or_set(),
        Some(v) => v.as_object().ok_or("the settings are not a JSON object")?,
    };
    let servers = match top.get("agent_servers") {
        None => top.object_value_or_set("agent_servers"),
        Some(prop) => prop
            .object_value()
            .ok_or("\"agent_servers\" is not an object")?,
    };
    let value = input(&entry(e));
    let replaced = match servers.get(&e.name) {
        Some(_) if !replace => {
            return Err(format!(
                "Zed already has an agent named {:?}; choose another with --name, or replace it with --replace",
                e.name
            ))
        }
        Some(prop) => {
            prop.set_value(value);
            true
        }
        None => {
            servers.append(&e.name, value);
            false
        }
    };
    let out = root.to_string();
    // Read back: the document must parse and hold exactly the entry.
    let check = CstRootNode::parse(&out, &ParseOptions::default())
        .ok()
        .and_then(|r| r.to_serde_value());
    if check.as_ref().map(|v| &v["agent_servers"][&e.name]) != Some(&entry(e)) {
        return Err(
            "the edited settings did not read back as written (a bug; please report it)".into(),
        );
    }
    Ok((out, replaced))
}

/// A serde_json value as the CST's input.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// The mode of `path` (a new file: 0600, as settings may hold keys).
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o777)
}

/// Creates `path` (never over an existing file) with `mode` set before a byte is written.
fn create(path: &Path, mode: u32) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    // The umask may have taken bits away: the mode exactly, still empty.
    f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok(f)
}

/// Writes `old` to `<path>.bak-<seconds since the epoch>[-N]`, never over an existing file,
/// with `path`'s mode.
fn backup(path: &Path, old: &str) -> Result<PathBuf, String> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mode = mode_of(path);
    for n in 0..100 {
        let suffix = if n == 0 {
            format!("bak-{secs}")
        } else {
            format!("bak-{secs}-{n}")
        };
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{suffix}"));
        let candidate = PathBuf::from(name);
        match create(&candidate, mode) {
            Ok(mut f) => {
                f.write_all(old.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| format!("cannot write the backup {}: {e}", candidate.display()))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot write the backup {}: {e}",
                    candidate.display()
                ))
            }
        }
    }
    Err(format!(
        "cannot find a free backup name beside {}",
        path.display()
    ))
}

/// Replaces `path` with `text` at once: written beside it (with its mode from the start),
/// synced, renamed over it.
fn replace_file(path: &Path, text: &str) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".acp-question-bridge-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let written = create(&tmp, mode_of(path))
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", tmp.display()));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot replace {}: {e}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> Entry {
        Entry {
            name: name.into(),
            command: "/bin/acp-question-bridge".into(),
            args: vec!["--".into(), "codex-acp".into()],
        }
    }

    const COMMENTED: &str = r#"// Zed settings
{
  // my font
  "buffer_font_size": 15, /* big */
  "agent_servers": {
    // the old one
    "Gemini": { "type": "custom", "command": "gemini", "args": ["--acp"], "env": {} },
  },
  "theme": "One Dark", // trailing
}
"#;

    #[test]
    fn an_entry_is_added_and_everything_else_kept() {
        let (out, replaced) = edit(COMMENTED, &entry("Codex"), false).unwrap();
        assert!(!replaced);
        // Every line of the original is still there, in order.
        let mut rest = out.as_str();
        for line in COMMENTED.lines().filter(|l| !l.trim().is_empty()) {
            let line = line.trim_end();
            let at = rest
                .find(line.trim_start())
                .unwrap_or_else(|| panic!("lost {line:?} in\n{out}"));
            rest = &rest[at + line.trim_start().len()..];
        }
        let v = CstRootNode::parse(&out, &ParseOptions::default())
            .unwrap()
            .to_serde_value()
            .unwrap();
        assert_eq!(v["agent_servers"]["Codex"], entry_value());
        assert_eq!(v["agent_servers"]["Gemini"]["command"], "gemini");
        assert_eq!(v["theme"], "One Dark");
    }

    fn entry_value() -> Value {
        json!({"type": "custom", "command": "/bin/acp-question-bridge", "args": ["--", "codex-acp"], "env": {}})
    }

    #[test]
    fn the_same_name_is_refused_unless_replaced() {
        let err = edit(COMMENTED, &entry("Gemini"), false).unwrap_err();
        assert!(
            err.contains("already has an agent named \"Gemini\""),
            "{err}"
        );
        let (out, replaced) = edit(COMMENTED, &entry("Gemini"), true).unwrap();
        assert!(replaced);
        assert!(out.contains("// the old one"), "{out}");
        let v = CstRootNode::parse(&out, &ParseOptions::default())
            .unwrap()
            .to_serde_value()
            .unwrap();
        assert_eq!(v["agent_servers"]["Gemini"], entry_value());
    }

    #[test]
    fn empty_missing_and_odd_documents() {
        for text in ["", "{}", "// nothing yet\n"] {
            let (out, _) = edit(text, &entry("Codex"), false).unwrap();
            assert!(out.contains("\"Codex\""), "{text:?}: {out}");
        }
        assert!(edit("[1]", &entry("Codex"), false)
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(edit(r#"{"agent_servers": 3}"#, &entry("Codex"), false)
            .unwrap_err()
            .contains("not an object"));
        assert!(edit(r#"{"a": "#, &entry("Codex"), false)
            .unwrap_err()
            .contains("not valid JSON"));
    }
}
