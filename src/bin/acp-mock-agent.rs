//! `acp-mock-agent`: a scripted ACP agent for tests, CI, demos and client authors.
//! The behaviour lives in `acp_question_bridge::tools::mock_agent`.

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "acp-mock-agent",
    version,
    about = "A deterministic ACP agent (protocol version 1) on stdio, scripted by prompt words",
    after_help = acp_question_bridge::tools::mock_agent::SCRIPT_HELP
)]
struct Args {}

fn main() -> ExitCode {
    let _ = Args::parse();
    acp_question_bridge::tools::mock_agent::main()
}
