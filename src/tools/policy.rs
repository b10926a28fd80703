//! `acp-question-bridge policy check|list|explain|trust|import`: the approval policy's files,
//! as the bridge would load them (docs/POLICY.md).

use acp_question_bridge::policy::shell::escape;
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
        #[arg(long, value_name = "JSON", conflicts_with = "journal")]
        json: Option<String>,
        /// The journal (--journal of the bridge) to take the tool call from, by the
        /// question id given with --id (the newest with that id).
        #[arg(long, value_name = "FILE", requires = "id", conflicts_with = "command")]
        journal: Option<PathBuf>,
        /// With --journal: the question id of the approval (`permission:3`), as the
        /// journal, `questions list` and the page show it.
        #[arg(long, value_name = "QUESTION_ID", requires = "journal")]
        id: Option<String>,
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
    /// Trust the current content of DIR's .acp-question-bridge/policy.toml: its allow rules
    /// count while the file keeps this content (its SHA-256 is kept with the folder); after
    /// any change they are asked again until it is trusted again.
    Trust { dir: PathBuf },
    /// Convert another tool's permission rules to a policy file (on stdout, or in FILE).
    /// `claude`: the `permissions.allow`, `ask` and `deny` lists of a Claude Code
    /// settings.json, each string kept as `claude = "..."`. A deny or ask rule that cannot be
    /// read exactly is an error (nothing is written); an allow rule that cannot is left out,
    /// and said.
    Import {
        #[arg(value_enum)]
        from: ImportFrom,
        /// The settings file (`~/.claude/settings.json`, `.claude/settings.json`, ...).
        settings: PathBuf,
        /// Write the policy here (it must not exist) instead of stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Where `policy import` reads rules from.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ImportFrom {
    /// Claude Code's settings.json.
    Claude,
}

/// Runs `policy`.
pub fn main(args: PolicyArgs) -> ExitCode {
    let fail = |code: u8, msg: &str| {
        acp_question_bridge::logging::fail("acp-question-bridge policy", code, msg)
    };
    let cwd = match args
        .cwd
        .clone()
        .map_or_else(std::env::current_dir, std::path::absolute)
    {
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
        PolicyCommand::Import {
            from: ImportFrom::Claude,
            settings,
            output,
        } => {
            let text = match import_claude(&settings) {
                Ok((text, skipped)) => {
                    for s in skipped {
                        let _ = writeln!(std::io::stderr(), "acp-question-bridge policy import: left out (an allow rule the bridge cannot read exactly): {s}");
                    }
                    text
                }
                Err(e) => return fail(1, &e),
            };
            match output {
                None => {
                    let _ = out.write_all(text.as_bytes());
                }
                Some(f) => {
                    let created = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&f)
                        .and_then(|mut h| h.write_all(text.as_bytes()));
                    if let Err(e) = created {
                        return fail(1, &format!("{}: {e}", f.display()));
                    }
                    let _ = writeln!(
                        out,
                        "wrote {}; check it with: acp-question-bridge policy check {}",
                        f.display(),
                        f.display()
                    );
                }
            }
            ExitCode::SUCCESS
        }
        PolicyCommand::Trust { dir } => match file::trust(&dir) {
            Ok((d, f, hash, rules)) => {
                let allows: Vec<&str> = rules
                    .iter()
                    .filter(|r| r.decision == acp_question_bridge::policy::Decision::Allow)
                    .map(|r| r.id.as_str())
                    .collect();
                let _ = writeln!(
                    out,
                    "trusted {}: sha256:{hash} of {}",
                    d.display(),
                    f.display()
                );
                let _ = writeln!(
                        out,
                        "its {} allow rules count while the file has this content{}; after a change they are asked until you trust it again",
                        allows.len(),
                        if allows.is_empty() { String::new() } else { format!(" ({})", allows.join(", ")) }
                    );
                ExitCode::SUCCESS
            }
            Err(e) => fail(2, &e),
        },
        PolicyCommand::Check { .. } => {
            let (p, left) = file::load(&sources);
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
            say_left(&mut out, left.as_ref());
            let ignored = matches!(left, Some(file::Left::Ignored { .. }));
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
                    if ignored {
                        // The project's file is broken or clashes: to be fixed, though the
                        // user's rules are in force.
                        ExitCode::from(1)
                    } else {
                        ExitCode::SUCCESS
                    }
                }
            }
        }
        PolicyCommand::List => {
            let (p, left) = file::load(&sources);
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
                if let Some(c) = &r.claude {
                    what.push(format!("claude={c}"));
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
            say_left(&mut out, left.as_ref());
            ExitCode::SUCCESS
        }
        PolicyCommand::Explain {
            command: cmd,
            json,
            journal,
            id,
            kind,
            agent,
            paths,
        } => {
            let json = match (journal, id) {
                (Some(j), Some(id)) => match tool_call_in_journal(&j, &id) {
                    Ok(tc) => Some(tc),
                    Err(e) => return fail(1, &e),
                },
                _ => json,
            };
            let call = match (cmd, json) {
                (Some(c), _) => Call {
                    agent,
                    program: None,
                    tool: None,
                    url: None,
                    kind: Some(kind.unwrap_or_else(|| "execute".into())),
                    title: c.clone(),
                    command: Some(command::parse(&c)),
                    paths,
                    cwd: cwd.clone(),
                    shell: Default::default(),
                    unsaid: None,
                },
                (None, Some(j)) => match serde_json::from_str::<serde_json::Value>(&j) {
                    Ok(v) => Call::from_tool_call(&v, &agent, &cwd),
                    Err(e) => return fail(2, &format!("--json: {e}")),
                },
                (None, None) => return fail(2, "give --command, --json, or --journal with --id"),
            };
            let (p, left) = file::load(&sources);
            let v = p.decide(&call);
            let _ = writeln!(out, "{}: {}", v.decision.as_str(), escape(&v.why));
            if let Some(r) = &v.rule {
                let _ = writeln!(
                    out,
                    "rule {} at {}:{}",
                    escape(&r.id),
                    escape(&r.file.display().to_string()),
                    r.line
                );
                if let Some(j) = &r.justification {
                    let _ = writeln!(out, "justification: {}", escape(j));
                }
            }
            if let Some(c) = &call.command {
                let _ = writeln!(out, "command read as: {}", c.text());
            }
            say_left(&mut out, left.as_ref());
            ExitCode::SUCCESS
        }
    }
}

/// What of the project's file is left out, and why: the whole file (an error or a clash with
/// the user's files), or its allow rules (its content is not the one trusted).
fn say_left(out: &mut impl std::io::Write, left: Option<&file::Left>) {
    match left {
        Some(l @ file::Left::Ignored { .. }) => {
            let _ = writeln!(out, "project file ignored: {}", l.said());
        }
        Some(l @ file::Left::Untrusted { .. }) => {
            let _ = writeln!(out, "project allow rules left out: {}", l.said());
        }
        None => {}
    }
}

/// The tool call of the newest `requested` or `decided` event of question `id` in the
/// journal `path`, as JSON text.
fn tool_call_in_journal(path: &std::path::Path, id: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let found = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| {
            matches!(e["event"].as_str(), Some("requested" | "decided"))
                && e["question"]["questionId"] == id
        });
    let event =
        found.ok_or_else(|| format!("{}: no question {id:?} asked or decided", path.display()))?;
    let tc = &event["question"]["context"]["toolCall"];
    if !tc.is_object() {
        return Err(format!("question {id:?} is not a tool approval"));
    }
    Ok(tc.to_string())
}

/// A policy file of a Claude Code settings file's `permissions` lists, and the allow rules
/// left out.
fn import_claude(settings: &std::path::Path) -> Result<(String, Vec<String>), String> {
    let text =
        std::fs::read_to_string(settings).map_err(|e| format!("{}: {e}", settings.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not JSON: {e}", settings.display()))?;
    let mut out = format!(
        "# Imported from {} by `acp-question-bridge policy import claude`.\n# Deny beats ask beats allow; see docs/POLICY.md.\n",
        settings.display()
    );
    let mut skipped = Vec::new();
    let mut errors = Vec::new();
    for (list, decision) in [("deny", "deny"), ("ask", "ask"), ("allow", "allow")] {
        let items = &v["permissions"][list];
        if items.is_null() {
            continue;
        }
        let Some(items) = items.as_array() else {
            errors.push(format!("permissions.{list} is not a list"));
            continue;
        };
        for (n, item) in items.iter().enumerate() {
            let Some(rule) = item.as_str() else {
                errors.push(format!("permissions.{list}[{n}] is not a string"));
                continue;
            };
            if let Err(e) = acp_question_bridge::policy::claude::read(rule) {
                if decision == "allow" {
                    skipped.push(e);
                } else {
                    errors.push(format!("permissions.{list}[{n}]: {e}"));
                }
                continue;
            }
            let quoted = serde_json::to_string(rule).unwrap_or_default();
            out.push_str(&format!(
                "\n[[rule]]\nid = \"claude-{list}-{}\"\ndecision = \"{decision}\"\nclaude = {quoted}\n",
                n + 1
            ));
        }
    }
    if !errors.is_empty() {
        return Err(format!(
            "{}: nothing written, since a deny or ask rule would be lost: {}",
            settings.display(),
            errors.join("; ")
        ));
    }
    // What is written must load.
    file::parse_rules(&out, std::path::Path::new("imported.toml"))
        .map_err(|e| format!("the imported policy does not load: {e}"))?;
    Ok((out, skipped))
}

/// The policy files that exist, in the order they are loaded.
fn files_in_force(s: &file::Sources) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = s.given.clone();
    all.extend(s.user.iter().cloned());
    all.extend(s.project.iter().map(|d| file::project_file(d)));
    all.into_iter().filter(|f| f.exists()).collect()
}
