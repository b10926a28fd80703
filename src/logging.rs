//! Logging setup: `tracing` to stderr (or `--log-file`), never to stdout.
//!
//! Owns the subscriber. Invariant: nothing here writes to stdout, which carries protocol
//! only. `RUST_LOG` overrides `--log-level`.

use std::path::Path;

use tracing_subscriber::EnvFilter;

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Installs the global subscriber. Fails only when `--log-file` cannot be opened.
pub fn init(level: &str, format: LogFormat, file: Option<&Path>) -> std::io::Result<()> {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let writer = match file {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::sync::Mutex::new(f))
        }
        None => tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .with_target(false);
    // A second init (tests) is not an error worth failing for.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    Ok(())
}
