//! The question journal (`--journal <PATH>`): one JSON line per lifecycle event, appended
//! and fsynced, so what was asked and answered (late answers included) survives the bridge.
//!
//! Shape: a dedicated thread owns the file; the bridge's loop hands it events over an
//! unbounded channel (events are per question, not per message, so the channel is bounded
//! by the question rate) and never waits for the disk. Invariant: the file is only ever
//! appended to (`O_APPEND`), each line is written whole and synced before the next.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::events::Event;

/// A handle for appending to the journal.
#[derive(Debug)]
pub struct Journal {
    tx: Option<mpsc::Sender<Value>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Opens `path` for appending (creating it, mode 0600) and starts the writer thread. The
/// first line records the start of this bridge.
pub fn open(path: &Path, agent: &[String]) -> std::io::Result<Journal> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    let (tx, rx) = mpsc::channel::<Value>();
    let path = path.to_path_buf();
    let thread = std::thread::Builder::new()
        .name("journal".into())
        .spawn(move || write_all(file, &path, rx))?;
    let j = Journal {
        tx: Some(tx),
        thread: Some(thread),
    };
    j.record(
        "bridge_started",
        serde_json::json!({ "pid": std::process::id(), "agent": agent }),
    );
    Ok(j)
}

impl Journal {
    /// Appends one event.
    pub fn event(&self, e: &Event) {
        if let Ok(Value::Object(fields)) = serde_json::to_value(e) {
            self.send(fields);
        }
    }

    /// Appends a line `{"ts", "event": name, ...fields}`.
    pub fn record(&self, name: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("event".into(), Value::String(name.into()));
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        self.send(m);
    }

    fn send(&self, fields: Map<String, Value>) {
        let mut line = Map::new();
        line.insert(
            "ts".into(),
            Value::String(humantime::format_rfc3339_millis(SystemTime::now()).to_string()),
        );
        line.extend(fields);
        if let Some(tx) = &self.tx {
            let _ = tx.send(Value::Object(line));
        }
    }

    /// Writes what is queued and waits for the writer (at the bridge's exit).
    pub fn close(mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_all(mut file: File, path: &Path, rx: mpsc::Receiver<Value>) {
    let mut failed = false;
    for v in rx {
        let mut line = v.to_string();
        line.push('\n');
        let r = file
            .write_all(line.as_bytes())
            .and_then(|()| file.sync_data());
        match r {
            Ok(()) => failed = false,
            // Logged once per failure streak; the bridge goes on without the line.
            Err(e) if !failed => {
                failed = true;
                tracing::error!(path = %path.display(), error = %e, "cannot write the journal");
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::By;

    #[test]
    fn appends_and_survives_reopening() {
        let dir = std::env::temp_dir().join(format!("acp-qb-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("j.jsonl");
        let _ = std::fs::remove_file(&path);
        for round in 0..2 {
            let j = open(&path, &["agent".into()]).unwrap();
            j.event(&Event::Resolved {
                session_id: "s".into(),
                question_id: format!("q{round}"),
                by: By::Timeout.into(),
                result: serde_json::json!({"status":"rejected","reason":"timeout"}),
            });
            j.close();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["event"], "bridge_started");
        assert_eq!(lines[1]["questionId"], "q0");
        assert_eq!(lines[3]["questionId"], "q1");
        assert_eq!(lines[3]["by"], "timeout");
        assert!(lines[3]["ts"].as_str().unwrap().ends_with('Z'));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
