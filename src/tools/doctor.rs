//! `acp-question-bridge doctor`: a checklist of what the bridge needs and what it finds
//! here, each line with what to do when it is not right.
//!
//! It reads, never changes: the roster's folder (entries of bridges that are gone are
//! skipped, not removed), the inbox's state folder, PATH, the clients' configurations that
//! `setup` writes. It connects only to what it is checking: the running inbox's remote
//! listener, the NATS server given with `--nats`, the agent registry (nothing kept).
//! Exit code 0 when nothing failed, 1 when a check failed.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use acp_question_bridge::agents;
use acp_question_bridge::inbox;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Also check that this NATS server answers (`nats://HOST:PORT`, `tls://...`).
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// The inbox's state folder [default: as `inbox` uses it].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Also check these policy files, as a bridge given `--policy FILE` reads them.
    #[arg(long, value_name = "FILE")]
    pub policy: Vec<PathBuf>,
    /// Check the agent registry `--agent ID` reads (a file or a URL) [default: the official
    /// ACP Registry, checked when no agent is installed and agents would run by package].
    #[arg(long, value_name = "FILE|URL")]
    pub agent_registry: Option<String>,
}

/// One line of the checklist.
enum Check {
    Ok(String),
    /// Not right: what is wrong, and what to do.
    Fail(String, String),
    /// Nothing to check, or not checked: why, and how to.
    Note(String),
}

/// The agent programs looked for on PATH: the agents the bridge knows, and the launchers
/// registry agents run through.
const PROGRAMS: &[&str] = &[
    "claude-agent-acp",
    "claude-code-acp",
    "codex-acp",
    "gemini",
    "qwen",
    "goose",
    "kimi",
    "opencode",
    "cursor-agent",
    "grok",
    "npx",
    "uvx",
];

/// Runs `doctor`.
pub fn main(args: DoctorArgs) -> ExitCode {
    let mut checks = vec![Check::Ok(format!(
        "acp-question-bridge {} ({}, {})",
        env!("CARGO_PKG_VERSION"),
        std::env::current_exe().map_or_else(|_| "?".into(), |p| p.display().to_string()),
        agents::platform()
    ))];
    let by_package = checks_agent_programs(&mut checks);
    checks.push(agent_registry(args.agent_registry.as_deref(), by_package));
    checks.push(wall());
    checks.push(policy(&args.policy));
    checks.extend(client_configs());
    checks.push(roster_folder());
    checks.push(held_agents());
    let state = inbox::state_dir(args.state_dir);
    checks.extend(inbox_checks(&state));
    checks.push(match &args.nats {
        None => Check::Note(
            "NATS: not checked (give --nats nats://HOST:PORT to check the server your bridges and inbox use)".into(),
        ),
        Some(url) => nats(url),
    });
    let mut out = String::new();
    let mut failed = false;
    for c in &checks {
        match c {
            Check::Ok(what) => writeln!(out, "[ok] {what}"),
            Check::Note(what) => writeln!(out, "[--] {what}"),
            Check::Fail(what, fix) => {
                failed = true;
                writeln!(out, "[!!] {what}\n     fix: {fix}")
            }
        }
        .expect("writing to a String");
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The approval policy's files as a bridge started here reads them (the user's own, and
/// `--policy` files): broken, one says which file and line, and every approval is asked.
fn policy(given: &[PathBuf]) -> Check {
    use acp_question_bridge::policy::{desk, file};
    let files = desk::PolicyFiles {
        given: given.to_vec(),
        user: file::user_file(),
    };
    let status = desk::Desk::new(&files).status(std::env::current_dir().ok().as_deref());
    let shown = |f: &serde_json::Value| f["file"].as_str().unwrap_or("?").to_owned();
    let listed: Vec<String> = status["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(shown)
        .collect();
    match status["broken"].as_str() {
        Some(why) => Check::Fail(
            format!("the approval policy is broken, so a bridge asks every approval: {why}"),
            "fix the file at the line named (`acp-question-bridge policy check` says the same), or move it away".into(),
        ),
        None if listed.is_empty() => Check::Note(
            "approval policy: no file (every approval is asked; docs/POLICY.md)".into(),
        ),
        None => Check::Ok(format!("approval policy: {}", listed.join(", "))),
    }
}

/// Whether the kernel can build the wall around agents here (docs/SECURITY.md, "The agent
/// itself"): the launcher run once, as a bridge does at start.
fn wall() -> Check {
    let Ok(exe) = std::env::current_exe() else {
        return Check::Note("the wall around agents: not checked (this program's path)".into());
    };
    match acp_question_bridge::wall::probe(&exe) {
        Ok(()) => Check::Ok(
            "the wall around agents (--sandbox own-files): the kernel can build it (user namespaces, Landlock)".into(),
        ),
        Err(why) => Check::Fail(
            format!("the wall around agents: the kernel cannot build it here, so agents run without it: {why}"),
            "allow unprivileged user namespaces and Landlock (see the reason), or run with --sandbox off to say so".into(),
        ),
    }
}

/// The agents on PATH, pushed onto `checks`; whether agents would run by package alone
/// (`npx` or `uvx`, and no agent installed).
fn checks_agent_programs(checks: &mut Vec<Check>) -> bool {
    let check = agent_programs();
    let by_package = matches!(&check, Check::Ok(l) if l.contains("can run agents by package"));
    checks.push(check);
    by_package
}

/// Whether the agent registry `--agent ID` reads can be read: checked when given, or when
/// agents would run by package alone (then `--agent` is the way to one).
fn agent_registry(given: Option<&str>, by_package: bool) -> Check {
    if given.is_none() && !by_package {
        return Check::Note(
            "agent registry (--agent ID): not checked (doctor --agent-registry URL|FILE checks it)"
                .into(),
        );
    }
    let source = given.unwrap_or(agents::DEFAULT_REGISTRY);
    let cache = match agents::cache_dir() {
        Ok(c) => c,
        Err(e) => {
            return Check::Fail(
                format!("agent registry: {e}"),
                "set HOME, or ACP_QUESTION_BRIDGE_CACHE".into(),
            )
        }
    };
    match agents::fetch::check(source, &cache) {
        Ok(said) => Check::Ok(format!("agent registry (--agent ID): {said}")),
        Err(why) => Check::Fail(
            format!("agent registry (--agent ID): {why}: --agent cannot start an agent"),
            "connect this machine to the registry, or give it as a file: --agent-registry FILE (a copy of registry.json)".into(),
        ),
    }
}

fn agent_programs() -> Check {
    let found: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| agents::on_path(p))
        .collect();
    let agents_found: Vec<&str> = found
        .iter()
        .copied()
        .filter(|p| !matches!(*p, "npx" | "uvx"))
        .collect();
    if found.is_empty() {
        Check::Fail(
            "agents on PATH: none of the known agent commands, no npx, no uvx".into(),
            "install an agent (e.g. npm install -g @zed-industries/codex-acp), or Node.js for npx, then run it behind the bridge; or run a registry agent: acp-question-bridge agents".into(),
        )
    } else if agents_found.is_empty() {
        Check::Ok(format!(
            "agents on PATH: none installed, but {} can run agents by package (acp-question-bridge --agent ID)",
            found.join(" and ")
        ))
    } else {
        Check::Ok(format!("agents on PATH: {}", found.join(", ")))
    }
}

/// The bridge's entries in the client configurations `setup` writes (Zed's settings,
/// JetBrains' `acp.json`): each one's program there, and an agent after `--` (or `--agent`).
fn client_configs() -> Vec<Check> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let files = [
        ("Zed", super::setup::zed::default_settings().ok()),
        ("JetBrains", home.map(|h| h.join(".jetbrains/acp.json"))),
    ];
    let mut out = Vec::new();
    for (client, file) in files {
        let Some(file) = file else { continue };
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let shown = format!("{client} ({})", file.display());
        let parsed = jsonc_parser::cst::CstRootNode::parse(&text, &Default::default());
        let value = match parsed.map(|r| r.to_serde_value()) {
            Ok(Some(v)) => v,
            Ok(None) => continue,
            Err(e) => {
                out.push(Check::Fail(
                    format!("{shown}: not valid JSON with comments ({e})"),
                    format!("fix the file; {client} cannot read it either"),
                ));
                continue;
            }
        };
        let servers = value["agent_servers"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (name, entry) in servers {
            let command = entry["command"].as_str().unwrap_or_default();
            if !command.ends_with("acp-question-bridge") {
                continue;
            }
            let args: Vec<&str> = entry["args"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            out.push(client_entry(&shown, &name, command, &args));
        }
    }
    out
}

/// One entry of the bridge in a client's configuration.
fn client_entry(shown: &str, name: &str, command: &str, args: &[&str]) -> Check {
    let what = format!("{shown}: agent {name:?}");
    let found = if command.contains('/') {
        Some(PathBuf::from(command)).filter(|p| agents::is_executable(p))
    } else {
        agents::which(command)
    };
    let Some(program) = found else {
        return Check::Fail(
            format!("{what}: {command} is not there, or not executable"),
            format!(
                "acp-question-bridge setup {} --replace --write with this bridge's path",
                shown.split(' ').next().unwrap_or("zed").to_lowercase()
            ),
        );
    };
    let agent = args
        .iter()
        .position(|a| *a == "--")
        .and_then(|i| args.get(i + 1));
    let by_id = args
        .iter()
        .any(|a| *a == "--agent" || a.starts_with("--agent="));
    match (agent, by_id) {
        (Some(a), _) if agents::which(a).is_none() && !Path::new(a).is_file() => Check::Fail(
            format!(
                "{what}: runs {} -- {a}, and {a} is not on PATH",
                program.display()
            ),
            format!("install {a}, or give its full path after --"),
        ),
        (Some(a), _) => Check::Ok(format!("{what}: {} -- {a}", program.display())),
        (None, true) => Check::Ok(format!("{what}: {} with --agent", program.display())),
        (None, false) => Check::Fail(
            format!("{what}: no agent after -- and no --agent"),
            "acp-question-bridge setup writes the entry with its agent: setup zed -- AGENT".into(),
        ),
    }
}

fn roster_folder() -> Check {
    let dir = inbox::roster::dir();
    if !dir.exists() {
        return Check::Note(format!(
            "bridge registry {}: not made yet (the first bridge with its control server makes it)",
            dir.display()
        ));
    }
    if let Err(e) = inbox::roster::ensure_dir(&dir) {
        return Check::Fail(
            format!("bridge registry {}: {e}", dir.display()),
            "it must be a folder of yours that nobody else can enter (mode 0700); remove it and let a bridge make it again".into(),
        );
    }
    let bridges = inbox::roster::live(&dir);
    let mut line = format!(
        "bridge registry {}: {} running bridge{}",
        dir.display(),
        bridges.len(),
        if bridges.len() == 1 { "" } else { "s" }
    );
    for b in bridges.iter().take(10) {
        list_agent(&mut line, "pid", b.pid, &b.agent, &b.cwd);
    }
    Check::Ok(line)
}

/// One more line under a check: `<label> <pid>: <agent> in <folder>`.
fn list_agent(line: &mut String, label: &str, pid: u32, agent: &[String], cwd: &str) {
    let argv: Vec<&str> = agent.iter().map(String::as_str).collect();
    let name = acp_question_bridge::child::agent_name(&argv);
    let _ = write!(line, "\n     - {label} {pid}: {name} in {cwd}");
}

/// The agents `--linger` holders keep for an editor (`sessions` says more).
fn held_agents() -> Check {
    let holders = acp_question_bridge::linger::live(&acp_question_bridge::linger::dir());
    if holders.is_empty() {
        return Check::Note("agents kept by --linger: none".into());
    }
    let mut line = format!(
        "agents kept by --linger: {} (`acp-question-bridge sessions` lists their sessions)",
        holders.len()
    );
    for h in holders.iter().take(10) {
        list_agent(&mut line, "holder pid", h.pid, &h.agent, &h.cwd);
    }
    Check::Ok(line)
}

/// The running inbox, its remote listener, the paired devices, and whether push can work.
fn inbox_checks(state: &std::path::Path) -> Vec<Check> {
    let mut checks = Vec::new();
    let running = inbox_processes();
    checks.push(if running.is_empty() {
        Check::Note(
            "inbox: none running (acp-question-bridge inbox serves one page over every bridge)"
                .into(),
        )
    } else {
        Check::Ok(format!(
            "inbox: running (pid {})",
            running
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    });
    let remote = std::fs::read(state.join("remote.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let base = remote
        .as_ref()
        .and_then(|r| r["base"].as_str())
        .map(str::to_owned);
    match &base {
        None => checks.push(Check::Note(format!(
            "remote listener: none announced in {} (start one for a phone: acp-question-bridge inbox --remote 0.0.0.0:8443)",
            state.display()
        ))),
        Some(base) => checks.push(match reachable(base) {
            Ok(()) => Check::Ok(format!("remote listener: {base} answers")),
            Err(e) => Check::Fail(
                format!("remote listener: {base} is announced but does not answer ({e})"),
                "start the inbox again with --remote, or check that nothing blocks its port".into(),
            ),
        }),
    }
    // Read as it is: `Store::open` would make the folder and set its mode.
    if let Ok(meta) = std::fs::metadata(state) {
        use std::os::unix::fs::PermissionsExt as _;
        if meta.permissions().mode() & 0o077 != 0 {
            checks.push(Check::Fail(
                format!(
                    "the inbox's state folder {} may be entered by others",
                    state.display()
                ),
                format!("chmod 700 {}", state.display()),
            ));
        }
    }
    match inbox::remote::devices::Store::existing(state).devices() {
        Ok(devices) if devices.is_empty() => checks.push(Check::Note(
            "paired devices: none (with the inbox's --remote running: acp-question-bridge inbox pair)".into(),
        )),
        Ok(devices) => checks.push(Check::Ok(format!(
            "paired devices: {}",
            devices
                .iter()
                .map(|d| d.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        Err(e) => checks.push(Check::Fail(
            format!("paired devices: cannot read {} ({e})", state.display()),
            "the state folder must be yours and private (0700)".into(),
        )),
    }
    if let Some(base) = &base {
        checks.push(match trusted(base) {
            Ok(()) => Check::Ok(format!(
                "push: {base} has a certificate browsers trust; Web Push can work"
            )),
            Err(e) => Check::Fail(
                format!("push: {base}'s certificate is not one a phone trusts ({e}); the page works, Web Push and installing it do not"),
                "give the inbox a certificate a phone trusts: --tls-cert/--tls-key from `tailscale cert`; one from mkcert works once its CA is installed on the phone, though this check, which knows only the public roots, still says no".into(),
            ),
        });
    } else {
        checks.push(Check::Note("push: needs a remote listener".into()));
    }
    checks
}

/// The pids of running `acp-question-bridge inbox` processes of this user that read the
/// registry this `doctor` reads (not over NATS, not another folder given by `--registry`
/// or by their environment) (Linux: /proc).
fn inbox_processes() -> Vec<u32> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(read) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let uid = rustix::process::getuid().as_raw();
    let ours = inbox::roster::dir();
    read.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == uid))
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<String> = cmdline
                .split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let is_inbox = args.len() > 1
                && args[0].ends_with("acp-question-bridge")
                && args[1] == "inbox"
                && args
                    .get(2)
                    .is_none_or(|a| !matches!(a.as_str(), "pair" | "devices"));
            is_inbox && reads_registry(*pid, &args, &ours)
        })
        .collect()
}

/// Whether inbox `pid`, run with `args`, reads the registry folder `ours`.
fn reads_registry(pid: u32, args: &[String], ours: &std::path::Path) -> bool {
    if args
        .iter()
        .any(|a| a == "--nats" || a.starts_with("--nats="))
    {
        return false;
    }
    let given = args.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--registry=")
            .map(str::to_owned)
            .or_else(|| {
                (a == "--registry")
                    .then(|| args.get(i + 1).cloned())
                    .flatten()
            })
    });
    let theirs = match given {
        Some(d) => PathBuf::from(d),
        None => {
            // Its environment, as it picked its folder from it.
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let vars: Vec<(String, std::ffi::OsString)> = environ
                .split(|&b| b == 0)
                .filter_map(|kv| {
                    let kv = String::from_utf8_lossy(kv);
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_owned(), std::ffi::OsString::from(v)))
                })
                .collect();
            inbox::roster::dir_in(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
        }
    };
    // A relative one is from where it runs.
    let theirs = PathBuf::from(format!("/proc/{pid}/cwd")).join(theirs);
    let canonical = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canonical(&theirs) == canonical(ours)
}

/// Whether a TCP connection to `base`'s address opens.
fn reachable(base: &str) -> Result<(), String> {
    use std::net::ToSocketAddrs as _;
    let authority = base
        .split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .ok_or("not a URL")?;
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3))
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Whether `base` presents a certificate the public roots trust (the Mozilla list that
/// browsers share): an HTTPS request verified against them, whatever its status. A private
/// CA (mkcert's) installed on the phone is not seen from here: the fix line says so.
fn trusted(base: &str) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    agent.get(base).call().map(drop).map_err(|e| e.to_string())
}

/// Whether the NATS server at `url` answers with its INFO line.
fn nats(url: &str) -> Check {
    use std::io::Read as _;
    use std::net::ToSocketAddrs as _;
    let hostport = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .rsplit('@')
        .next()
        .unwrap_or("")
        .trim_end_matches('/');
    let hostport = if hostport.contains(':') {
        hostport.to_owned()
    } else {
        format!("{hostport}:4222")
    };
    let answer = (|| -> Result<String, String> {
        let addr = hostport
            .to_socket_addrs()
            .map_err(|e| e.to_string())?
            .next()
            .ok_or("no address")?;
        let mut conn = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3))
            .map_err(|e| e.to_string())?;
        conn.set_read_timeout(Some(Duration::from_secs(3)))
            .map_err(|e| e.to_string())?;
        let mut buf = [0u8; 5];
        conn.read_exact(&mut buf).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    })();
    match answer {
        Ok(s) if s.starts_with("INFO") => Check::Ok(format!("NATS: {url} answers")),
        Ok(s) => Check::Fail(
            format!("NATS: {url} answers, but not as a NATS server ({s:?})"),
            "check the address: a NATS server listens on 4222 by default".into(),
        ),
        Err(e) => Check::Fail(
            format!("NATS: {url} does not answer ({e})"),
            "start the server (nats-server -js), or check the address and the network".into(),
        ),
    }
}
