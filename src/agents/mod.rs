//! Agents by their id in the ACP Registry (`--agent ID`, `acp-question-bridge agents`): the
//! registry read ([`fetch`]), an agent's distribution for this platform picked, and the
//! command that runs it made: `npx` and `uvx` packages as the registry gives them, `binary`
//! archives downloaded once, checked and unpacked into a cache ([`install`]).
//!
//! Invariants:
//! - Bad input is an [`AgentsError`] with what to do, never a guess: an unknown id, no
//!   distribution for this platform, an unreadable registry (exit 2 in the CLI).
//! - Nothing is run that was not checked: an archive's SHA-256 where the registry gives one,
//!   the command inside the unpacked folder, a download complete before it is unpacked, and
//!   only a complete unpacked folder is ever used ([`install`]).
//! - The registry cannot change how the agent's programs are found or loaded: the variables
//!   [`env_allowed`] refuses are dropped, with a warning.
//! - `npx` gets `--yes`: its "Ok to proceed?" prompt would read the ACP stream.

pub mod fetch;
pub mod install;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// The official registry, read by Zed and JetBrains.
pub const DEFAULT_REGISTRY: &str =
    "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/// Why an agent cannot be run (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    #[error("cannot read the agent registry {source_name}: {reason}")]
    Registry { source_name: String, reason: String },
    #[error("no agent {id:?} in the registry {registry}; `acp-question-bridge agents` lists them")]
    Unknown { id: String, registry: String },
    #[error("agent {id:?} has no distribution for this platform ({platform}): it offers {offers}")]
    NoDistribution {
        id: String,
        platform: String,
        offers: String,
    },
    #[error("cannot install agent {id:?}: {reason}")]
    Install { id: String, reason: String },
}

/// `registry.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Registry {
    #[serde(default)]
    pub version: String,
    pub agents: Vec<Agent>,
}

/// One agent of the registry.
#[derive(Debug, Clone, Deserialize)]
pub struct Agent {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub distribution: Distribution,
}

/// How an agent is distributed: any of the three.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Distribution {
    pub npx: Option<Package>,
    pub uvx: Option<Package>,
    /// By platform (`linux-x86_64`, `darwin-aarch64`, ...).
    pub binary: Option<BTreeMap<String, Binary>>,
}

/// An `npx` or `uvx` package.
#[derive(Debug, Clone, Deserialize)]
pub struct Package {
    pub package: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The program to run from the package, when it is not the package's own.
    pub cmd: Option<String>,
}

/// A `binary` archive for one platform.
#[derive(Debug, Clone, Deserialize)]
pub struct Binary {
    pub archive: String,
    pub cmd: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub sha256: Option<String>,
}

/// What runs the agent: its argv and the variables added to its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// `npx`, `uvx` or `binary`, for the log.
    pub kind: &'static str,
}

/// This machine's platform as the registry names it.
pub fn platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("{os}-{}", std::env::consts::ARCH)
}

/// Whether the registry may set variable `name` for the agent. It may not set what decides
/// which programs, libraries, packages or certificates are used, where traffic goes, or
/// where the tools keep their state (the names the registry's own checks refuse, the
/// dynamic loaders', the language runtimes' and package managers'). Compared without case:
/// npm, for one, reads `npm_config_*` in any case.
pub fn env_allowed(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "PATH",
        "HOME",
        "SHELL",
        "ENV",
        "BASH_ENV",
        "IFS",
        "TMPDIR",
        "USER",
        "LOGNAME",
        "GCONV_PATH",
        "JAVA_TOOL_OPTIONS",
        "RUBYOPT",
        "RUBYLIB",
        "PERL5OPT",
        "PERL5LIB",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "LOCALDOMAIN",
        "HOSTALIASES",
        "RES_OPTIONS",
    ];
    const PREFIXES: &[&str] = &[
        "LD_",
        "DYLD_",
        "NODE_",
        "NPM_",
        "YARN_",
        "PNPM_",
        "BUN_",
        "DENO_",
        "UV_",
        "PYTHON",
        "PIP_",
        "GIT_",
        "XDG_",
        "CARGO_",
        "RUSTC",
        "GEM_",
        "BUNDLE_",
        "GOPATH",
        "GOFLAGS",
        "ACP_QUESTION_BRIDGE",
    ];
    let upper = name.to_ascii_uppercase();
    !name.is_empty()
        && !EXACT.contains(&upper.as_str())
        && !PREFIXES.iter().any(|p| upper.starts_with(p))
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The allowed part of a registry `env`; what is dropped is logged.
fn env_of(id: &str, env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    env.iter()
        .filter(|(k, _)| {
            let ok = env_allowed(k);
            if !ok {
                tracing::warn!(agent = id, variable = %k, "the registry's environment variable is not passed to the agent");
            }
            ok
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl Registry {
    /// Parses `registry.json`.
    pub fn parse(text: &str, source_name: &str) -> Result<Registry, AgentsError> {
        serde_json::from_str(text).map_err(|e| AgentsError::Registry {
            source_name: source_name.to_owned(),
            reason: format!("not a registry ({e})"),
        })
    }

    pub fn agent(&self, id: &str, registry: &str) -> Result<&Agent, AgentsError> {
        self.agents
            .iter()
            .find(|a| a.id == id)
            .ok_or_else(|| AgentsError::Unknown {
                id: id.to_owned(),
                registry: registry.to_owned(),
            })
    }
}

/// Whether `program` is on PATH.
pub fn on_path(program: &str) -> bool {
    which(program).is_some()
}

/// Where `program` is found on PATH: the first executable file of that name.
pub fn which(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

/// Whether `p` is a file someone may execute.
pub fn is_executable(p: &std::path::Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| {
        m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
    })
}

impl Agent {
    /// The distributions this agent offers, for messages.
    pub fn offers(&self) -> String {
        let mut kinds = Vec::new();
        if self.distribution.npx.is_some() {
            kinds.push("npx".to_owned());
        }
        if self.distribution.uvx.is_some() {
            kinds.push("uvx".to_owned());
        }
        if let Some(b) = &self.distribution.binary {
            kinds.push(format!(
                "binary for {}",
                b.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        if kinds.is_empty() {
            "nothing".to_owned()
        } else {
            kinds.join("; ")
        }
    }

    /// The command that runs this agent here, with `extra` arguments after the registry's:
    /// its binary for this platform (installed into `cache` if need be), else its npx
    /// package if `npx` is on PATH, else its uvx package if `uvx` is.
    pub fn launch(&self, cache: &std::path::Path, extra: &[String]) -> Result<Launch, AgentsError> {
        let platform = platform();
        if let Some(bin) = self
            .distribution
            .binary
            .as_ref()
            .and_then(|b| b.get(&platform))
        {
            let program = install::binary(self, &platform, bin, cache)?;
            let mut argv = vec![program.to_string_lossy().into_owned()];
            argv.extend(bin.args.iter().cloned());
            argv.extend(extra.iter().cloned());
            return Ok(Launch {
                argv,
                env: env_of(&self.id, &bin.env),
                kind: "binary",
            });
        }
        for (kind, pkg) in [
            ("npx", self.distribution.npx.as_ref()),
            ("uvx", self.distribution.uvx.as_ref()),
        ] {
            let Some(pkg) = pkg else { continue };
            if !on_path(kind) {
                tracing::warn!(agent = %self.id, "{kind} is not on PATH; cannot run the agent's {kind} package");
                continue;
            }
            let mut argv = vec![kind.to_owned()];
            match (kind, &pkg.cmd) {
                ("npx", None) => argv.extend(["--yes".to_owned(), pkg.package.clone()]),
                ("npx", Some(cmd)) => argv.extend([
                    "--yes".to_owned(),
                    "--package".to_owned(),
                    pkg.package.clone(),
                    cmd.clone(),
                ]),
                (_, None) => argv.push(pkg.package.clone()),
                (_, Some(cmd)) => {
                    argv.extend(["--from".to_owned(), pkg.package.clone(), cmd.clone()])
                }
            }
            argv.extend(pkg.args.iter().cloned());
            argv.extend(extra.iter().cloned());
            return Ok(Launch {
                argv,
                env: env_of(&self.id, &pkg.env),
                kind,
            });
        }
        Err(AgentsError::NoDistribution {
            id: self.id.clone(),
            platform,
            offers: format!(
                "{}{}",
                self.offers(),
                if self.distribution.npx.is_some() || self.distribution.uvx.is_some() {
                    " (install Node.js for npx, or uv for uvx)"
                } else {
                    ""
                }
            ),
        })
    }
}

/// The cache folder: `$ACP_QUESTION_BRIDGE_CACHE`, else `$XDG_CACHE_HOME/acp-question-bridge`,
/// else `~/.cache/acp-question-bridge`.
pub fn cache_dir() -> Result<PathBuf, AgentsError> {
    let from = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = from("ACP_QUESTION_BRIDGE_CACHE") {
        return Ok(dir);
    }
    if let Some(dir) = from("XDG_CACHE_HOME") {
        return Ok(dir.join("acp-question-bridge"));
    }
    from("HOME")
        .map(|h| h.join(".cache/acp-question-bridge"))
        .ok_or_else(|| AgentsError::Registry {
            source_name: "cache".into(),
            reason: "no HOME, XDG_CACHE_HOME or ACP_QUESTION_BRIDGE_CACHE for the cache".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REGISTRY: &str = r#"{"version":"1.0.0","agents":[
      {"id":"codex-acp","name":"Codex","version":"1.4.0","description":"d",
       "distribution":{"npx":{"package":"@agentclientprotocol/codex-acp@1.4.0"}}},
      {"id":"fast-agent","name":"fast","version":"0.10.1","description":"d",
       "distribution":{"uvx":{"package":"fast-agent-acp==0.10.1","args":["-x"],
         "env":{"FAST_AGENT_MODEL":"codexplan","PATH":"/evil","LD_PRELOAD":"/evil.so"}}}},
      {"id":"win-only","name":"w","version":"1.0.0","description":"d",
       "distribution":{"binary":{"windows-x86_64":{"archive":"https://x/a.zip","cmd":"./a.exe"}}}}
    ],"extensions":[]}"#;

    #[test]
    fn a_registry_parses_and_unknown_ids_say_so() {
        let r = Registry::parse(REGISTRY, "test").unwrap();
        assert_eq!(r.agents.len(), 3);
        let err = r.agent("nope", "test").unwrap_err().to_string();
        assert!(err.contains("no agent \"nope\""), "{err}");
        assert!(Registry::parse("{", "x").is_err());
    }

    #[test]
    fn no_distribution_for_this_platform_is_an_error_that_says_what_there_is() {
        let r = Registry::parse(REGISTRY, "test").unwrap();
        let err = r
            .agent("win-only", "test")
            .unwrap()
            .launch(std::path::Path::new("/nonexistent"), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("binary for windows-x86_64"), "{err}");
        assert!(err.contains(&platform()), "{err}");
    }

    #[test]
    fn the_registry_cannot_set_what_finds_or_loads_programs() {
        let r = Registry::parse(REGISTRY, "test").unwrap();
        let env = env_of(
            "fast-agent",
            &r.agent("fast-agent", "t")
                .unwrap()
                .distribution
                .uvx
                .as_ref()
                .unwrap()
                .env,
        );
        assert_eq!(
            env,
            [("FAST_AGENT_MODEL".to_owned(), "codexplan".to_owned())]
        );
        for bad in [
            "PATH",
            "LD_PRELOAD",
            "DYLD_INSERT_LIBRARIES",
            "NODE_OPTIONS",
            "PYTHONPATH",
            "A B",
            "",
            "Npm_config_registry",
            "npm_config_registry",
            "path",
            "https_proxy",
            "GCONV_PATH",
            "Ssl_Cert_File",
            "bun_install_registry",
        ] {
            assert!(!env_allowed(bad), "{bad}");
        }
    }
}
