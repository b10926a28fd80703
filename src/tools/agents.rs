//! `acp-question-bridge agents`: the agents of the ACP Registry, each with how it would run
//! here and whether it is ready: its binary in the cache, or the `npx`/`uvx` it needs.

use std::io::Write as _;
use std::process::ExitCode;

use acp_question_bridge::agents::{self, fetch, install};

#[derive(Debug, clap::Args)]
pub struct AgentsArgs {
    /// The registry: a file, or an https:// URL [default: the official ACP Registry]
    #[arg(long, value_name = "FILE|URL")]
    pub agent_registry: Option<String>,
}

/// Runs `agents`.
pub fn main(args: AgentsArgs) -> ExitCode {
    let fail = |msg: &str| acp_question_bridge::logging::fail("acp-question-bridge agents", 2, msg);
    let cache = match agents::cache_dir() {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let source = args
        .agent_registry
        .unwrap_or_else(|| agents::DEFAULT_REGISTRY.to_owned());
    let loaded = match fetch::load(&source, &cache) {
        Ok(l) => l,
        Err(e) => return fail(&e.to_string()),
    };
    let platform = agents::platform();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{} agents in {}{} (this platform: {platform})",
        loaded.registry.agents.len(),
        loaded.source,
        loaded.note.map(|n| format!(", {n}")).unwrap_or_default(),
    );
    let width = loaded
        .registry
        .agents
        .iter()
        .map(|a| a.id.len())
        .max()
        .unwrap_or(0);
    for a in &loaded.registry.agents {
        let d = &a.distribution;
        let status = if d.binary.as_ref().is_some_and(|b| b.contains_key(&platform)) {
            if install::cached(a, &platform, &cache) {
                "binary, cached".to_owned()
            } else {
                "binary, downloaded on first use".to_owned()
            }
        } else if d.npx.is_some() {
            if agents::on_path("npx") {
                "npx"
            } else {
                "npx (not on PATH)"
            }
            .to_owned()
        } else if d.uvx.is_some() {
            if agents::on_path("uvx") {
                "uvx"
            } else {
                "uvx (not on PATH)"
            }
            .to_owned()
        } else {
            format!("not for this platform ({})", a.offers())
        };
        let _ = writeln!(out, "{:width$}  {} {}  [{status}]", a.id, a.name, a.version,);
    }
    let _ = writeln!(
        out,
        "Run one: acp-question-bridge --agent ID [-- EXTRA ARGS]; in a client: acp-question-bridge setup CLIENT -- ... (docs/INSTALL.md)"
    );
    ExitCode::SUCCESS
}
