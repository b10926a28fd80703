//! `acp-question-bridge setup CLIENT -- AGENT...`: prints the exact configuration that puts
//! the bridge in front of an agent, in the format of each client people run
//! (docs/CLIENT-SETUP.md), and with `--write` adds it to Zed's settings file ([`zed`]).
//!
//! Invariants:
//! - Every snippet runs the same argv: the bridge's command, `--`, the agent's command; only
//!   the syntax around it differs (JSON, Lua, a command string).
//! - Strings are escaped by the format's own rules (JSON by serde_json, Lua by [`lua_str`],
//!   command strings by POSIX shell quoting), so no agent argument can break out of its
//!   string.
//! - The bridge's command is this binary's absolute path unless `--command` says otherwise:
//!   editors start agents with their own PATH, often without `~/.cargo/bin` or npm's bin.

pub(crate) mod zed;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{json, Value};

/// The clients `setup` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Zed: an `agent_servers` entry for settings.json (`--write` adds it there).
    Zed,
    /// JetBrains IDEs (AI Assistant): an `agent_servers` entry for ~/.jetbrains/acp.json.
    Jetbrains,
    /// codecompanion.nvim: an ACP adapter, made the chat's default.
    Codecompanion,
    /// agentic.nvim: a provider (a lazy.nvim spec).
    Agentic,
    /// avante.nvim: an ACP provider.
    Avante,
    /// acpx: the `--agent` command, and an alias for ~/.acpx/config.json.
    Acpx,
    /// Toad: the `toad acp` command line.
    Toad,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  acp-question-bridge setup zed -- npx @zed-industries/codex-acp
  acp-question-bridge setup zed --write -- npx @zed-industries/codex-acp
  acp-question-bridge setup agentic --name Claude -- npx -y @agentclientprotocol/claude-agent-acp
  acp-question-bridge setup acpx -- gemini --acp
  acp-question-bridge setup zed --agent codex-acp")]
pub struct SetupArgs {
    /// The client to configure.
    #[arg(value_enum)]
    pub client: Client,
    /// The agent's name in the client (default: the agent's program, or the package a
    /// launcher such as npx runs).
    #[arg(long)]
    pub name: Option<String>,
    /// The bridge's command in the configuration (default: this binary's absolute path;
    /// `acp-question-bridge` relies on the client's PATH).
    #[arg(long, value_name = "PATH")]
    pub command: Option<String>,
    /// Zed only: add the entry to Zed's settings file instead of printing it. Comments and
    /// layout are kept, a backup is written first, and an agent of the same name is never
    /// replaced without --replace.
    #[arg(long)]
    pub write: bool,
    /// With --write: the settings file [default: $XDG_CONFIG_HOME/zed/settings.json, or
    /// ~/.config/zed/settings.json].
    #[arg(long, value_name = "FILE", requires = "write")]
    pub settings: Option<PathBuf>,
    /// With --write: replace an agent of the same name (the backup keeps the old one).
    #[arg(long, requires = "write")]
    pub replace: bool,
    /// An agent of the ACP Registry, by its id, instead of a command after `--` (the bridge
    /// runs it with `--agent ID`; `acp-question-bridge agents` lists them).
    #[arg(long = "agent", value_name = "ID", conflicts_with = "agent")]
    pub agent_id: Option<String>,
    /// With --agent: the registry the bridge reads (a file or an https:// URL).
    #[arg(long, value_name = "FILE|URL", requires = "agent_id")]
    pub agent_registry: Option<String>,
    /// The bridge keeps the agent for DURATION when the editor goes (`--linger`,
    /// docs/GUIDE.md): the configuration runs the bridge with `--linger DURATION`.
    #[arg(long, value_name = "DURATION", value_parser = acp_question_bridge::cli::parse_duration)]
    pub linger: Option<std::time::Duration>,
    /// The agent's command and its arguments, after `--`.
    #[arg(
        last = true,
        required_unless_present = "agent_id",
        value_name = "AGENT"
    )]
    pub agent: Vec<String>,
}

/// What `setup` puts in a configuration: a name, and the command line that runs the bridge
/// in front of the agent.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub command: String,
    /// The bridge's arguments: `--` and the agent's command, or `--agent ID`.
    pub args: Vec<String>,
}

impl Entry {
    fn new(args: &SetupArgs) -> Result<Self, String> {
        let command = match &args.command {
            Some(c) if c.is_empty() => return Err("--command is empty".into()),
            Some(c) => c.clone(),
            None => std::env::current_exe()
                .map_err(|e| format!("cannot find this binary's path ({e}); give --command"))?
                .to_string_lossy()
                .into_owned(),
        };
        let argv: Vec<&str> = args.agent.iter().map(String::as_str).collect();
        let agent = match &args.agent_id {
            Some(id) => id.clone(),
            None => acp_question_bridge::child::agent_name(&argv),
        };
        let name = match &args.name {
            Some(n) if n.trim().is_empty() => return Err("--name is empty".into()),
            Some(n) => n.clone(),
            None => format!("{agent} (question bridge)"),
        };
        let mut bridge_args = Vec::new();
        if let Some(linger) = args.linger {
            // As the user wrote it would be nicer; whole seconds say the same.
            bridge_args.extend(["--linger".to_owned(), format!("{}s", linger.as_secs())]);
        }
        if let Some(id) = &args.agent_id {
            bridge_args.extend(["--agent".to_owned(), id.clone()]);
            if let Some(r) = &args.agent_registry {
                // A file named relative to here: the editor starts the bridge elsewhere.
                let r = if r.contains("://") {
                    r.clone()
                } else {
                    std::path::absolute(r)
                        .map_err(|e| format!("--agent-registry {r}: {e}"))?
                        .to_string_lossy()
                        .into_owned()
                };
                bridge_args.extend(["--agent-registry".to_owned(), r]);
            }
        } else {
            bridge_args.push("--".to_owned());
            bridge_args.extend(args.agent.iter().cloned());
        }
        Ok(Entry {
            name,
            command,
            args: bridge_args,
        })
    }

    /// The whole command line as one string, quoted for a POSIX shell (acpx splits it the
    /// same way; Toad runs it with the shell).
    pub fn command_line(&self) -> String {
        let words =
            std::iter::once(self.command.as_str()).chain(self.args.iter().map(String::as_str));
        shlex::try_join(words).unwrap_or_else(|_| {
            // A word with a NUL byte cannot be quoted; it cannot be an argument either.
            String::new()
        })
    }
}

/// The snippet for `client`.
pub fn snippet(client: Client, e: &Entry) -> String {
    let lua_list = |items: &[String]| {
        let quoted: Vec<String> = items.iter().map(|s| lua_str(s)).collect();
        format!("{{ {} }}", quoted.join(", "))
    };
    let json_pretty = |v: &Value| serde_json::to_string_pretty(v).expect("JSON serializes");
    match client {
        Client::Zed => format!(
            "// In Zed's settings.json (zed: open settings), merged into the top-level object:\n{}\n",
            json_pretty(&json!({"agent_servers": {&e.name: zed::entry(e)}}))
        ),
        Client::Jetbrains => format!(
            "// In ~/.jetbrains/acp.json (the AI Chat tool window, the ⋮ menu in its upper-right corner: Add Custom Agent), merged into the top-level object:\n{}\n",
            json_pretty(&json!({"agent_servers": {&e.name: {"command": e.command, "args": e.args, "env": {}}}}))
        ),
        Client::Codecompanion => {
            let argv: Vec<String> = std::iter::once(e.command.clone())
                .chain(e.args.iter().cloned())
                .collect();
            format!(
                r#"-- codecompanion.nvim: an ACP adapter running the agent behind the bridge, the chat's default.
require("codecompanion").setup({{
  adapters = {{
    acp = {{
      question_bridge = function()
        local helpers = require("codecompanion.adapters.acp.helpers")
        return {{
          name = "question_bridge",
          formatted_name = {name},
          type = "acp",
          roles = {{ llm = "assistant", user = "user" }},
          commands = {{ default = {argv} }},
          defaults = {{ mcpServers = {{}}, timeout = 20000 }},
          parameters = {{
            protocolVersion = 1,
            clientCapabilities = {{ fs = {{ readTextFile = true, writeTextFile = true }} }},
            clientInfo = {{ name = "CodeCompanion.nvim", version = "1.0.0" }},
          }},
          handlers = {{
            setup = function(self) return true end,
            auth = function(self) return true end,
            form_messages = function(self, messages, capabilities)
              return helpers.form_messages(self, messages, capabilities)
            end,
            on_exit = function(self, code) end,
          }},
        }}
      end,
    }},
  }},
  interactions = {{ chat = {{ adapter = "question_bridge" }} }},
}})
"#,
                name = lua_str(&e.name),
                argv = lua_list(&argv),
            )
        }
        Client::Agentic => format!(
            r#"-- agentic.nvim (lazy.nvim spec). It starts the agent with only PATH and `env`: the bridge
-- needs HOME for its state.
return {{
  "carlos-algms/agentic.nvim",
  opts = {{
    provider = "question-bridge",
    acp_providers = {{
      ["question-bridge"] = {{
        name = {name},
        command = {command},
        args = {args},
        env = {{ HOME = os.getenv("HOME") }},
      }},
    }},
  }},
}}
"#,
            name = lua_str(&e.name),
            command = lua_str(&e.command),
            args = lua_list(&e.args),
        ),
        Client::Avante => format!(
            r#"-- avante.nvim. It starts the agent with only PATH and `env`: the bridge needs HOME for its state.
require("avante").setup({{
  provider = "question-bridge",
  acp_providers = {{
    ["question-bridge"] = {{
      command = {command},
      args = {args},
      env = {{ HOME = os.getenv("HOME") }},
    }},
  }},
}})
"#,
            command = lua_str(&e.command),
            args = lua_list(&e.args),
        ),
        Client::Acpx => {
            let line = e.command_line();
            format!(
                "# acpx: once,\nacpx --agent {q} exec 'your request'\n\
                 # or as an alias in ~/.acpx/config.json (then: acpx question-bridge sessions new):\n{alias}\n",
                q = shlex::try_quote(&line).map(|c| c.into_owned()).unwrap_or_default(),
                alias = json_pretty(&json!({"agents": {"question-bridge": {"command": line}}})),
            )
        }
        Client::Toad => format!(
            "# Toad: the agent behind the bridge, in the current project\ntoad acp {} . -t {}\n",
            shlex::try_quote(&e.command_line())
                .map(|c| c.into_owned())
                .unwrap_or_default(),
            shlex::try_quote(&e.name)
                .map(|c| c.into_owned())
                .unwrap_or_default(),
        ),
    }
}

/// `s` as a Lua string literal: double quotes, with `\`, `"`, control bytes and every
/// non-ASCII byte escaped (`\ddd`), so the literal holds exactly `s`'s bytes.
pub fn lua_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &b in s.as_bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
    out
}

/// Runs `setup`.
pub fn main(args: SetupArgs) -> ExitCode {
    let fail = |code: u8, msg: &str| {
        acp_question_bridge::logging::fail("acp-question-bridge setup", code, msg)
    };
    if args.write && args.client != Client::Zed {
        return fail(
            2,
            "--write is for zed only; the other clients' snippets are printed to paste",
        );
    }
    let entry = match Entry::new(&args) {
        Ok(e) => e,
        Err(msg) => return fail(2, &msg),
    };
    if entry.command_line().is_empty() {
        return fail(2, "a command word holds a NUL byte");
    }
    if let Some(id) = &args.agent_id {
        if let Err(e) = check_agent_id(id, args.agent_registry.as_deref()) {
            return fail(2, &e);
        }
    } else if let Some(warning) = agent_path_warning(&args.agent) {
        acp_question_bridge::logging::say("acp-question-bridge setup", &warning);
    }
    if args.command.is_none() && entry.command.contains("/_npx/") {
        acp_question_bridge::logging::say(
            "acp-question-bridge setup",
            "this binary runs from npx's cache, which npm may clear: install it (npm install -g acp-question-bridge, or cargo install) and run setup from there, or give --command acp-question-bridge",
        );
    }
    if args.write {
        return match zed::write(&entry, args.settings.as_deref(), args.replace) {
            Ok(report) => {
                let _ = writeln!(std::io::stdout().lock(), "{report}");
                ExitCode::SUCCESS
            }
            Err(msg) => fail(2, &msg),
        };
    }
    let _ = std::io::stdout()
        .lock()
        .write_all(snippet(args.client, &entry).as_bytes());
    ExitCode::SUCCESS
}

/// `--agent ID` names an agent of the registry: an unknown id is an error, as the bridge
/// would refuse it. A registry that cannot be read here (offline) is said, not an error: the
/// editor's bridge reads it when it starts.
fn check_agent_id(id: &str, registry: Option<&str>) -> Result<(), String> {
    use acp_question_bridge::agents::{self, fetch, AgentsError};
    let source = registry.unwrap_or(agents::DEFAULT_REGISTRY);
    let loaded = agents::cache_dir().and_then(|cache| fetch::load(source, &cache));
    match loaded {
        Ok(l) => l
            .registry
            .agent(id, &l.source)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err(e @ AgentsError::Registry { .. }) if registry.is_none() => {
            acp_question_bridge::logging::say(
                "acp-question-bridge setup",
                &format!("cannot check that agent {id:?} exists: {e}"),
            );
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// A warning when the agent's program will not be found where the editor starts it: a bare
/// name not on this PATH, or found only in a folder of the user's own (`~/.cargo/bin`, npm's
/// or nvm's bin), which editors started from the desktop often lack on their PATH.
fn agent_path_warning(agent: &[String]) -> Option<String> {
    use acp_question_bridge::agents::{is_executable, which};
    let program = agent.first()?;
    if program.contains('/') {
        let p = std::path::Path::new(program);
        return (!is_executable(p)).then(|| {
            if p.exists() {
                format!("{program} is not an executable file (chmod +x {program})")
            } else {
                format!("{program} does not exist")
            }
        });
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match which(program) {
        None => Some(format!(
            "the agent {program:?} is not on PATH (PATH={}), so the editor will not find it either: install it, or give its full path after `--`",
            std::env::var("PATH").unwrap_or_default()
        )),
        Some(p) if home.as_ref().is_some_and(|h| p.starts_with(h)) => Some(format!(
            "the agent {program:?} is {}, in a folder of your own that an editor started from the desktop may not have on its PATH; if the editor cannot start it, give that full path after `--`",
            p.display()
        )),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(agent: &[&str]) -> Entry {
        let mut args = vec!["--".to_owned()];
        args.extend(agent.iter().map(|s| s.to_string()));
        Entry {
            name: "Codex (question bridge)".into(),
            command: "/opt/bin/acp-question-bridge".into(),
            args,
        }
    }

    #[test]
    fn linger_goes_before_the_agent() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            setup: SetupArgs,
        }
        let cli = <Cli as clap::Parser>::try_parse_from([
            "setup",
            "zed",
            "--linger",
            "2h",
            "--command",
            "/b",
            "--",
            "codex-acp",
        ])
        .expect("parses");
        let e = Entry::new(&cli.setup).expect("an entry");
        assert_eq!(e.args, ["--linger", "7200s", "--", "codex-acp"]);
    }

    #[test]
    fn lua_strings_hold_any_bytes() {
        assert_eq!(lua_str(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(lua_str("x\ny"), r#""x\ny""#);
        assert_eq!(lua_str("é"), r#""\195\169""#);
        assert_eq!(lua_str("]]--"), r#""]]--""#);
    }

    #[test]
    fn command_lines_are_quoted_for_the_shell() {
        let e = entry(&["npx", "agent with space", "it's"]);
        assert_eq!(
            e.command_line(),
            r#"/opt/bin/acp-question-bridge -- npx 'agent with space' "it's""#
        );
        assert_eq!(
            shlex::split(&e.command_line()).unwrap(),
            [
                "/opt/bin/acp-question-bridge",
                "--",
                "npx",
                "agent with space",
                "it's"
            ]
        );
    }

    #[test]
    fn the_zed_snippet_is_the_entry() {
        let s = snippet(Client::Zed, &entry(&["codex-acp"]));
        let json: Value = serde_json::from_str(s.split_once('\n').unwrap().1).unwrap();
        assert_eq!(
            json,
            json!({"agent_servers": {"Codex (question bridge)": {
                "type": "custom",
                "command": "/opt/bin/acp-question-bridge",
                "args": ["--", "codex-acp"],
                "env": {}
            }}})
        );
    }
}
