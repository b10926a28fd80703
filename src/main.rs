//! The `acp-question-bridge` binary: parses the command line and runs the bridge.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use acp_question_bridge::cli::{BridgeArgs, ClientDialect};
use acp_question_bridge::{bridge, child, control, logging, notify, router::RouterConfig};
use tools::{demo, mock_agent};

/// The subcommands other than the bridge itself (the demo, the mock agent, the `questions`
/// and `inbox` command lines, ...): built into this binary (the mock agent also into
/// `acp-mock-agent`), not part of the library.
mod tools;

#[derive(Debug, Parser)]
#[command(
    name = "acp-question-bridge",
    version,
    about = "An ACP stdio proxy that lets coding agents ask their user structured questions in any IDE",
    override_usage = "acp-question-bridge [OPTIONS] -- <AGENT> [ARGS]...\n       acp-question-bridge <COMMAND>",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    bridge: BridgeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Play an IDE in the terminal: run the bridge around the built-in mock agent, which
    /// asks a question; show it, read the answer, print the agent's reply.
    Demo(tools::demo::DemoArgs),
    /// Talk to a running bridge's control server (or an inbox): list, answer, reject or
    /// watch questions.
    Questions(tools::questions::QuestionsArgs),
    /// The sessions that bridges started with --linger keep for an editor that left: list
    /// them (agent, folder, client, pending questions, linger left), or stop one.
    Sessions(tools::sessions::SessionsArgs),
    /// One Questions page and control API over every bridge this user runs here (the
    /// bridges started with --control list themselves in a per-user registry).
    Inbox(Box<tools::inbox::InboxArgs>),
    /// Print the configuration that puts the bridge in front of an agent in a client (Zed,
    /// JetBrains, codecompanion.nvim, agentic.nvim, avante.nvim, acpx, Toad), or write it
    /// into Zed's settings.
    Setup(tools::setup::SetupArgs),
    /// A checklist of what the bridge needs and finds here (agents on PATH, running bridges,
    /// the inbox, its remote listener, paired devices, push, NATS), with what to do.
    Doctor(tools::doctor::DoctorArgs),
    /// The approval policy's files: check them, list their rules, explain which rule
    /// decides a tool call, trust a project folder.
    Policy(tools::policy::PolicyArgs),
    /// List the agents of the ACP Registry that `--agent ID` runs, and which are ready here.
    Agents(tools::agents::AgentsArgs),
    /// Run the built-in mock ACP agent on this process's stdio (same as `acp-mock-agent`).
    #[command(name = "mock-agent", hide = true)]
    MockAgent,
    /// Internal: started by the bridge; ends the agent's process group (id `pgid`) when
    /// the bridge dies (see `child::guard`).
    #[command(name = "agent-guard", hide = true)]
    AgentGuard { pgid: u32, grace_ms: u64 },
}

/// The command that runs agent `id` of the registry (`--agent`), `extra` arguments added.
fn registry_agent(
    id: &str,
    registry: Option<&str>,
    extra: &[String],
) -> Result<acp_question_bridge::agents::Launch, acp_question_bridge::agents::AgentsError> {
    use acp_question_bridge::agents;
    let cache = agents::cache_dir()?;
    let source = registry.unwrap_or(agents::DEFAULT_REGISTRY);
    let loaded = agents::fetch::load(source, &cache)?;
    if let Some(note) = &loaded.note {
        tracing::info!(registry = %loaded.source, "the registry was {note}");
    }
    let agent = loaded.registry.agent(id, &loaded.source)?;
    let launch = agent.launch(&cache, extra)?;
    tracing::info!(agent = id, version = %agent.version, kind = launch.kind, "running the registry's agent");
    Ok(launch)
}

/// The wall the agent runs inside (`--sandbox`), if it does: `Err` when it should and the
/// bridge's files cannot be walled. Where the kernel cannot build it, the agent runs
/// without, and the bridge says so once, with why and what to do. `agent_name` picks a
/// `workspace` agent's own state folders.
fn wall_for(
    args: &acp_question_bridge::cli::BridgeArgs,
    agent_name: &str,
) -> Result<
    (
        Option<acp_question_bridge::wall::Launch>,
        acp_question_bridge::wall::State,
    ),
    String,
> {
    use acp_question_bridge::wall;
    if args.sandbox == wall::Mode::Off {
        return Ok((None, wall::State::new(args.sandbox, None)));
    }
    // The running image itself, never a path the agent could have renamed something over:
    // the launcher starts the agent and every notification command.
    let exe = std::path::PathBuf::from(wall::SELF_EXE);
    if let Err(why) = wall::probe(&exe) {
        // Out of namespaces or memory is not a kernel that cannot: something (the agent of
        // another bridge?) used them up, and the agent must not run without its wall.
        if ["ENOSPC", "EAGAIN", "ENOMEM", "EUSERS"]
            .iter()
            .any(|e| why.contains(e))
        {
            return Err(format!(
                "cannot build the wall around the agent: {why} (the user's namespaces are used up; end what holds them, or run with --sandbox off)"
            ));
        }
        tracing::warn!("the agent runs without the wall around it (--sandbox own-files): {why}");
        return Ok((None, wall::State::new(args.sandbox, Some(why))));
    }
    let cwd = args.cwd.clone().or_else(|| std::env::current_dir().ok());
    let workspace = args.sandbox == wall::Mode::Workspace;
    let (deny_read, deny_edit) = if workspace {
        policy_denies(args, cwd.as_deref())
    } else {
        Default::default()
    };
    let files = wall::Files {
        writable: workspace
            .then(|| wall::writable(cwd.as_deref(), agent_name, &args.sandbox_write)),
        deny_read,
        deny_edit,
        config: acp_question_bridge::policy::file::config_dir(),
        cache: acp_question_bridge::agents::cache_dir().ok(),
        default_config: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| std::path::PathBuf::from(h).join(".config/acp-question-bridge")),
        policies: args.policy.clone(),
        cwd,
        state: wall::state_folders(),
        secrets: [&args.journal, &args.log_file]
            .into_iter()
            .flatten()
            .cloned()
            .collect(),
        keys: [
            ("--control-token-file", &args.control_token_file),
            ("--nats-creds", &args.nats_creds),
        ]
        .into_iter()
        .filter_map(|(flag, p)| p.clone().map(|p| (flag, p)))
        .collect(),
        exe: wall::invoked()
            .into_iter()
            .chain(std::env::current_exe().ok())
            .collect(),
    };
    let mut plan = files
        .plan()
        .map_err(|e| format!("cannot wall the agent in: {e} (`--sandbox off` runs it without)"))?;
    plan.grace_ms = Some(args.shutdown_grace.as_millis() as u64);
    Ok((
        Some(wall::Launch { exe, plan }),
        wall::State::new(args.sandbox, None),
    ))
}

/// The files and whole folders the policy denies reading, and editing (`Read(~/.ssh/**)`,
/// `Edit(.env)`), as the session in `cwd` sees them: what the kernel can keep from the agent.
fn policy_denies(
    args: &acp_question_bridge::cli::BridgeArgs,
    cwd: Option<&std::path::Path>,
) -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
    use acp_question_bridge::policy::{file, Decision};
    let (mut read, mut edit) = (Vec::new(), Vec::new());
    if args.no_policy {
        return (read, edit);
    }
    let sources = file::Sources {
        given: args.policy.clone(),
        user: file::user_file(),
        project: cwd.map(std::path::Path::to_path_buf),
    };
    let (policy, _) = file::load(&sources);
    for (_, rule) in policy.rules() {
        let Some(globs) = &rule.paths else { continue };
        if rule.decision != Decision::Deny || rule.command.is_some() {
            continue;
        }
        for start in globs.starts.iter().filter(|s| s.whole || !s.wild) {
            let p = match (start.absolute, cwd) {
                (true, _) => start.literal.clone(),
                (false, Some(c)) => c.join(&start.literal),
                (false, None) => continue,
            };
            if rule.kind.iter().any(|k| k == "read") {
                read.push(p);
            } else if rule.kind.iter().any(|k| k == "edit") {
                edit.push(p);
            }
        }
    }
    (read, edit)
}

/// A one-line, user-facing error on stderr (stdout is protocol only).
fn fail(code: u8, msg: &str) -> ExitCode {
    acp_question_bridge::logging::fail("acp-question-bridge", code, msg)
}

/// A command line's error, with how to name an agent when a word that is no option came
/// where none was expected (`acp-question-bridge npx @zed-industries/codex-acp`: the agent's
/// command goes after `--`).
fn e_with_dash_hint(e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let word = match (e.kind(), e.get(ContextKind::InvalidArg)) {
        (ErrorKind::UnknownArgument, Some(ContextValue::String(w))) if !w.starts_with('-') => {
            w.clone()
        }
        _ => return e,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let at = args.iter().position(|a| *a == word).unwrap_or(args.len());
    let (before, after) = args.split_at(at);
    let shown = |w: &[String]| {
        w.iter()
            .map(|a| shlex::try_quote(a).map_or(a.clone(), |q| q.into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut line = vec!["acp-question-bridge".to_owned()];
    if !before.is_empty() {
        line.push(shown(before));
    }
    line.push("--".to_owned());
    line.push(shown(after));
    let mut e = e;
    e.insert(
        ContextKind::Suggested,
        ContextValue::StyledStrs(vec![format!(
            "the agent's command goes after `--`: {}",
            line.join(" ")
        )
        .into()]),
    );
    e
}

/// glibc malloc tunables for the bridge's buffers (their measured effect is in
/// `bench/results.md`, "Figures moved from code comments").
///
/// - One arena for all threads. The bridge's buffers are allocated on one thread and freed
///   on another (reader, writer, the blocking pool; tasks move between workers), and glibc keeps
///   what is freed in the arena that made it: with an arena per thread, each kept its own
///   share of freed long-line buffers and the peak RSS swung from run to run.
/// - Fixed mmap and trim thresholds. By default glibc moves both as big blocks come and go,
///   so a stream of long lines kept giving heap back to the kernel and faulting it in
///   again, zeroed, a page at a time. Blocks under 32 MiB (glibc's own ceiling for the
///   moving threshold) come from the heap, and up to 16 MiB of free heap is kept for the
///   next long line instead of being trimmed.
///
/// The project denies `unsafe`; these FFI calls are the one exception.
#[allow(unsafe_code)]
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes malloc tunables; it is called before any other thread
    // of this process exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 16 << 20);
    }
}

fn main() -> ExitCode {
    // The launcher of the wall around the agent: before anything else, on this one thread.
    #[cfg(target_os = "linux")]
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        if args
            .first()
            .is_some_and(|a| a == acp_question_bridge::wall::LAUNCHER_ARG)
        {
            return acp_question_bridge::wall::exec::main(&args[1..]);
        }
    }
    tune_malloc();
    let cli = Cli::try_parse().unwrap_or_else(|e| e_with_dash_hint(e).exit());
    match cli.command {
        Some(Command::MockAgent) => return mock_agent::main(),
        Some(Command::Demo(args)) => return demo::main(args),
        Some(Command::Setup(args)) => return tools::setup::main(args),
        Some(Command::Agents(args)) => return tools::agents::main(args),
        Some(Command::Doctor(args)) => return tools::doctor::main(args),
        Some(Command::Policy(args)) => return tools::policy::main(args),
        Some(Command::Questions(args)) => return tools::questions::main(args),
        Some(Command::Sessions(args)) => return tools::sessions::main(args),
        Some(Command::Inbox(args)) => return tools::inbox::main(*args),
        Some(Command::AgentGuard { pgid, grace_ms }) => {
            child::guard::watch(pgid, std::time::Duration::from_millis(grace_ms));
            return ExitCode::SUCCESS;
        }
        None => {}
    }
    let mut args = cli.bridge;
    if args.agent.is_empty() && args.agent_id.is_none() {
        return fail(
            2,
            "no agent command given; usage: acp-question-bridge [OPTIONS] -- <AGENT> [ARGS]..., or --agent <ID> for an agent of the ACP Registry",
        );
    }
    if args.agent_registry.is_some() && args.agent_id.is_none() {
        return fail(2, "--agent-registry goes with --agent ID");
    }
    if let (Some(id), Some(first)) = (&args.agent_id, args.agent.first()) {
        // What follows `--` is added to the registry agent's own arguments; a program there
        // is a command line meant instead of --agent, which would run as an argument.
        if !first.starts_with('-') {
            return fail(
                2,
                &format!(
                    "--agent {id} runs the registry's command for {id}; what follows `--` is added to its arguments and must start with an option (-...), not {first:?}. To run a command of your own, drop --agent: acp-question-bridge -- {first} ..."
                ),
            );
        }
    }
    // Kept to the end of `main`: the log's last lines are written then.
    let _log = match logging::init(&args.log_level, args.log_format, args.log_file.as_deref()) {
        Ok(guard) => guard,
        Err(e) => return fail(2, &format!("cannot open log file: {e}")),
    };
    let mut agent_env = Vec::new();
    if let Some(id) = &args.agent_id {
        match registry_agent(id, args.agent_registry.as_deref(), &args.agent) {
            Ok(launch) => {
                args.agent = launch.argv;
                agent_env = launch.env;
            }
            Err(e) => return fail(2, &e.to_string()),
        }
    }
    if args.no_control && args.client_dialect == ClientDialect::Control {
        return fail(
            2,
            "--client-dialect control needs the control server (drop --no-control)",
        );
    }
    // The control server runs unless --no-control: every question then has somewhere to
    // wait, and every bridge is in the user's inbox.
    let control_addr = match (args.no_control, &args.control) {
        (true, _) => None,
        (false, Some(addr)) => Some(addr.as_str()),
        (false, None) => Some("127.0.0.1:0"),
    };
    let control = match control_addr {
        None => None,
        Some(addr) => {
            let addr = match control::parse_addr(addr, args.control_allow_remote) {
                Ok(a) => a,
                Err(e) => return fail(2, &e.to_string()),
            };
            let implicit = args.control.is_none();
            let token = match std::env::var(control::TOKEN_ENV) {
                Ok(t) if !t.trim().is_empty() => Some(t.trim().to_owned()),
                _ => match control::random_token() {
                    Ok(t) => Some(t),
                    Err(e) if !implicit => return fail(1, &e.to_string()),
                    Err(e) => {
                        tracing::warn!(error = %e, "no control server (cannot make its token); questions no client can show cannot wait");
                        None
                    }
                },
            };
            token.map(|token| control::ControlConfig {
                addr,
                allow_remote: args.control_allow_remote,
                token,
                token_file: args.control_token_file.clone(),
                token_hint: acp_question_bridge::control::BRIDGE_TOKEN_HINT,
                implicit,
            })
        }
    };
    let on_question = match args.on_question.as_deref().map(notify::parse_command) {
        None => None,
        Some(Ok(argv)) => Some(argv),
        Some(Err(e)) => return fail(2, &e),
    };
    let no_forms = args.no_opt_in.iter().any(|o| o == "form");
    if no_forms && args.advertise_elicitation {
        return fail(
            2,
            "--advertise-elicitation and --no-opt-in form contradict each other",
        );
    }
    if let Err(e) = acp_question_bridge::inbox::nats::check_prefix(&args.nats_prefix) {
        return fail(2, &e);
    }
    // A list that cannot be used is said now, never a bridge that is silently local only.
    if let Some(Err(e)) = args
        .nats
        .as_deref()
        .map(acp_question_bridge::inbox::nats::parse_servers)
    {
        return fail(2, &e);
    }
    let agent_name = acp_question_bridge::child::agent_name(
        &args.agent.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let (linger, hold_socket) = (args.linger, args.hold_socket.take());
    if let (Some(_), None) = (linger, &hold_socket) {
        // The front: the editor's process; the agent is held by a holder it finds or starts.
        let argv: Vec<String> = std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let code = acp_question_bridge::linger::front::run(&argv);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let hold = match (linger, hold_socket) {
        (Some(linger), Some(socket)) => {
            let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
            let (Some(token), Some(key)) = (
                var(acp_question_bridge::linger::TOKEN_ENV),
                var(acp_question_bridge::linger::KEY_ENV),
            ) else {
                return fail(2, "--hold-socket is started by a --linger front only");
            };
            // Not the agent's to see (still one thread: nothing reads the environment).
            std::env::remove_var(acp_question_bridge::linger::TOKEN_ENV);
            std::env::remove_var(acp_question_bridge::linger::KEY_ENV);
            Some(acp_question_bridge::linger::holder::HoldConfig {
                socket,
                token,
                key,
                linger,
            })
        }
        _ => None,
    };
    let holding = hold.is_some();
    let (wall, wall_state) = match wall_for(&args, &agent_name) {
        Ok(w) => w,
        Err(e) => return fail(1, &e),
    };
    let walled = wall.is_some();
    if walled {
        // The bridge reads its files by the paths the wall keeps, links resolved once: a
        // link on the way (a dotfiles manager's) the agent replaced is never followed.
        if let Some(real) =
            acp_question_bridge::policy::file::config_dir().and_then(|c| c.canonicalize().ok())
        {
            acp_question_bridge::policy::file::fix_config_dir(real);
        }
        for p in &mut args.policy {
            if let Ok(real) = p.canonicalize() {
                *p = real;
            }
        }
    }
    let config = bridge::Config {
        wall,
        wall_state,
        hold,
        control,
        journal: args.journal,
        on_question,
        on_question_token: args.on_question_token,
        ring: args.ring.config(),
        register: !args.no_register,
        nats: args
            .nats
            .map(|url| acp_question_bridge::inbox::nats::NatsConfig {
                url,
                creds: args.nats_creds,
                prefix: args.nats_prefix.clone(),
                replicas: args.nats_replicas.map(usize::from),
            }),
        agent: args.agent,
        agent_env,
        cwd: args.cwd.clone(),
        max_line_bytes: args.max_line_bytes,
        shutdown_grace: args.shutdown_grace,
        router: RouterConfig {
            question_timeout: args.question_timeout,
            max_pending_per_session: args.max_pending_per_session as usize,
            max_in_flight: args.max_in_flight as usize,
            client_dialect: args.client_dialect.forced(),
            advertise_elicitation: !no_forms,
            force_forms: args.advertise_elicitation,
            opt_ins: acp_question_bridge::questions::sources::VENDORS
                .iter()
                .filter_map(|v| v.opt_in.as_ref().map(|o| o.name))
                .filter(|name| !args.no_opt_in.iter().any(|o| o == name))
                .collect(),
            permission_prompts: args.permission_prompts,
            client_cancel_requests: args.client_cancel_requests,
            policy: (!args.no_policy).then(|| acp_question_bridge::router::PolicyFiles {
                given: args.policy.clone(),
                user: acp_question_bridge::policy::file::user_file(),
            }),
            agent: agent_name,
            cwd: args.cwd.clone().or_else(|| std::env::current_dir().ok()),
            walled,
            ..RouterConfig::default()
        },
    };
    let runtime = match acp_question_bridge::cli::bridge_runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(1, &format!("cannot start runtime: {e}")),
    };
    let run = async move {
        if holding {
            bridge::run_held(config).await
        } else {
            bridge::run(config).await
        }
    };
    let result = match runtime.block_on(async { tokio::spawn(run).await }) {
        Ok(result) => result,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    // The stdin reader may sit in a blocking read forever: do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            if holding {
                // The front that started us is not our parent: it reads our code here.
                use std::io::Write;
                let _ = writeln!(std::io::stdout(), "exit {}", e.exit_code());
            }
            fail(u8::try_from(e.exit_code()).unwrap_or(1), &e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        <Cli as clap::CommandFactory>::command().debug_assert();
    }
}
