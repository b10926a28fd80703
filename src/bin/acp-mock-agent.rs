//! `acp-mock-agent`: a scripted ACP agent for tests, CI, demos and client authors.
//! The behaviour lives in `src/tools/mock_agent/` (shared with `acp-question-bridge
//! mock-agent`; compiled into both binaries, not the library).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

use std::process::ExitCode;

use clap::Parser;

#[path = "../tools/mock_agent/mod.rs"]
mod mock_agent;
#[path = "../tools/shapes.rs"]
mod shapes;

#[derive(Parser)]
#[command(
    name = "acp-mock-agent",
    version,
    about = "A deterministic ACP agent (protocol version 1) on stdio, scripted by prompt words",
    after_help = mock_agent::SCRIPT_HELP
)]
struct Args {}

fn main() -> ExitCode {
    let _ = Args::parse();
    mock_agent::main()
}
