//! `acp-question-bridge policy check|list|explain|trust`: the approval policy's files, as the
//! bridge would load them (docs/POLICY.md).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use acp_question_bridge::policy::{command, file, Call};

#[derive(Debug, clap::Args)]
pub struct PolicyArgs {
    /// A policy file to load before the user's own (as the bridge's --policy).
    #[arg(long, value_name = "FILE", global = true)]
    pub policy: Vec<PathBuf>,
    /// The project folder whose .acp-question-bridge/policy.toml is the project tier
    /// [default: the current folder].
    #[arg(long, value_name = "DIR", global = true)]
    pub cwd: Option<PathBuf>,
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum PolicyCommand {
    /// Load every file in force (and FILEs) and say whether each is valid: syntax, rules,
    /// and their match/not_match examples. Exit 1 when one is not.
    Check {
        /// More files to check.
        files: Vec<PathBuf>,
    },
    /// Every rule in force, highest tier first, with its file and line.
    List,
    /// Which rule decides a tool call, and why.
    Explain {
        /// The command of an `execute` tool call.
        #[arg(long, conflicts_with = "json")]
        command: Option<String>,
        /// The ACP tool call as JSON (`toolCall` of a session/request_permission).
        #[arg(long, value_name = "JSON")]
        json: Option<String>,
        /// The tool call's kind (with --command) [default: execute].
        #[arg(long)]
        kind: Option<String>,
        /// The agent's name or command.
        #[arg(long, default_value = "agent")]
        agent: String,
        /// A path the tool call touches (with --command; repeatable).
        #[arg(long = "path", value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Trust folder DIR: the allow rules of its project policy count from now on.
    Trust { dir: PathBuf },
}

/// Runs `policy`.
pub fn main(args: PolicyArgs) -> ExitCode {
    let fail = |code: u8, msg: &str| {
        acp_question_bridge::logging::fail("acp-question-bridge policy", code, msg)
    };
    let cwd = match args.cwd.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(c) => c,
        Err(e) => return fail(2, &format!("the current folder: {e}")),
    };
    let mut given = args.policy.clone();
    if let PolicyCommand::Check { files } = &args.command {
        given.extend(files.iter().cloned());
    }
    let sources = file::Sources::defaults(given, Some(cwd.clone()));
    let mut out = std::io::stdout().lock();
    match args.command {
        PolicyCommand::Trust { dir } => {
            match file::trust(&dir) {
                Ok(d) => {
                    let _ = writeln!(out, "trusted {}: the allow rules of its .acp-question-bridge/policy.toml now count", d.display());
                    ExitCode::SUCCESS
                }
                Err(e) => fail(2, &e),
            }
        }
        PolicyCommand::Check { .. } => {
            let p = file::load(&sources);
            let files = files_in_force(&sources);
            if files.is_empty() {
                let _ = writeln!(
                    out,
                    "no policy file: every approval is asked (docs/POLICY.md)"
                );
            }
            for f in &files {
                let _ = writeln!(out, "{}", f.display());
            }
            match p.broken {
                Some(why) => {
                    let _ = writeln!(
                        out,
                        "broken: every approval is asked until this is fixed: {why}"
                    );
                    ExitCode::from(1)
                }
                None => {
                    let _ = writeln!(out, "ok: {} rules", p.rules().count());
                    ExitCode::SUCCESS
                }
            }
        }
        PolicyCommand::List => {
            let p = file::load(&sources);
            if let Some(why) = &p.broken {
                let _ = writeln!(out, "broken (every approval is asked): {why}");
            }
            for (tier, r) in p.rules() {
                let mut what = Vec::new();
                if !r.kind.is_empty() {
                    what.push(format!("kind={}", r.kind.join("|")));
                }
                if let Some(c) = &r.command {
                    what.push(format!(
                        "command={}",
                        c.iter()
                            .map(|alts| alts.join("|"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ));
                }
                if r.paths.is_some() {
                    what.push("paths".into());
                }
                if r.agent.is_some() {
                    what.push("agent".into());
                }
                if r.title.is_some() {
                    what.push("title".into());
                }
                let _ = writeln!(
                    out,
                    "{tier:7} {:5} {:20} {}:{}  {}",
                    r.decision.as_str(),
                    r.id,
                    r.file.display(),
                    r.line,
                    what.join(" ")
                );
            }
            ExitCode::SUCCESS
        }
        PolicyCommand::Explain {
            command: cmd,
            json,
            kind,
            agent,
            paths,
        } => {
            let call = match (cmd, json) {
                (Some(c), _) => Call {
                    agent,
                    program: None,
                    kind: Some(kind.unwrap_or_else(|| "execute".into())),
                    title: c.clone(),
                    command: Some(command::parse(&c)),
                    paths,
                    cwd: cwd.clone(),
                },
                (None, Some(j)) => match serde_json::from_str::<serde_json::Value>(&j) {
                    Ok(v) => Call::from_tool_call(&v, &agent, &cwd),
                    Err(e) => return fail(2, &format!("--json: {e}")),
                },
                (None, None) => return fail(2, "give --command or --json"),
            };
            let p = file::load(&sources);
            let v = p.decide(&call);
            let _ = writeln!(out, "{}: {}", v.decision.as_str(), v.why);
            if let Some(r) = &v.rule {
                let _ = writeln!(out, "rule {} at {}:{}", r.id, r.file.display(), r.line);
                if let Some(j) = &r.justification {
                    let _ = writeln!(out, "justification: {j}");
                }
            }
            if let Some(c) = &call.command {
                let _ = writeln!(out, "command read as: {}", c.text());
            }
            ExitCode::SUCCESS
        }
    }
}

/// The policy files that exist, in the order they are loaded.
fn files_in_force(s: &file::Sources) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = s.given.clone();
    all.extend(s.user.iter().cloned());
    all.extend(s.project.iter().map(|d| file::project_file(d)));
    all.into_iter().filter(|f| f.exists()).collect()
}
