//! `--agent ID`: agents of an ACP Registry, by id, from a registry served by a loopback HTTP
//! server the test owns. One agent of each distribution kind answers a question through
//! the bridge: an `npx` package (a local tarball of a tiny ACP agent, run by a real npx,
//! offline), a `uvx` package (the same agent as a wheel, run by a real uvx from PyPI's uv,
//! offline) and a `binary` archive holding the mock agent (downloaded once, its SHA-256
//! checked, unpacked into the cache). A corrupt archive is refused and leaves nothing;
//! an unknown id, an agent with nothing for this platform and an unreadable registry are
//! exit 2 with what to do; the registry and the archive are used from the cache once the
//! server is gone; `agents` lists them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use crate::common::*;
use acp_question_bridge::agents::platform;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

const UV: &str = "0.13.8";

/// A loopback HTTP server: path -> body; counts the requests per path. Aborting its task
/// closes its port.
struct Server {
    url: String,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves `files` on `listener`.
    fn serve(listener: tokio::net::TcpListener, files: HashMap<String, Vec<u8>>) -> Server {
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let counted = hits.clone();
        let files = Arc::new(files);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let files = files.clone();
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut req = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => req.extend_from_slice(&buf[..n]),
                        }
                    }
                    let line = String::from_utf8_lossy(&req);
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    *counted.lock().unwrap().entry(path.clone()).or_default() += 1;
                    let (status, body) = match files.get(&path) {
                        Some(b) => ("200 OK", b.clone()),
                        None => ("404 Not Found", b"not here".to_vec()),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(head.as_bytes()).await;
                    let _ = conn.write_all(&body).await;
                });
            }
        });
        Server { url, hits, task }
    }

    fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A .tar.gz holding the mock agent at `mock/acp-mock-agent`.
fn mock_archive(dir: &Path) -> Vec<u8> {
    let stage = dir.join("stage/mock");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(MOCK, stage.join("acp-mock-agent")).unwrap();
    let out = dir.join("mock.tar.gz");
    let ok = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&out)
        .arg("-C")
        .arg(dir.join("stage"))
        .arg("mock")
        .status()
        .unwrap()
        .success();
    assert!(ok, "tar");
    std::fs::read(out).unwrap()
}

fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/agents")
}

/// The whole setting: the server, the registry URL, the cache, and the environment the
/// bridge runs with (npm's and uv's caches, uv on PATH).
struct World {
    dir: PathBuf,
    server: Server,
    registry: String,
    env: Vec<(String, String)>,
}

async fn world() -> World {
    let dir = temp_dir("registry-agents");
    // The npm package of the tiny agent, packed here.
    let npm_out = dir.join("npm");
    std::fs::create_dir_all(&npm_out).unwrap();
    let packed = std::process::Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(&npm_out)
        .arg(agents_dir().join("tiny-acp-npm"))
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(packed.status.success(), "npm pack");
    let tarball = npm_out.join("tiny-acp-agent-1.0.0.tgz");
    // Its wheel, and uv.
    let made = std::process::Command::new("python3")
        .arg(agents_dir().join("make_wheel.py"))
        .arg(agents_dir().join("tiny-acp-py"))
        .arg(&dir)
        .output()
        .unwrap();
    assert!(made.status.success(), "make_wheel.py");
    let wheel = String::from_utf8(made.stdout).unwrap().trim().to_owned();
    let uv = install::pip_package("uv", UV)
        .await
        .unwrap_or_else(|e| panic!("uv {UV} from PyPI: {e}"));

    let mock = mock_archive(&dir);
    let corrupt = b"\x1f\x8b this is not the archive the registry names".to_vec();
    let p = platform();
    let mut files = HashMap::new();
    files.insert("/archives/mock.tar.gz".to_owned(), mock.clone());
    files.insert("/archives/corrupt.tar.gz".to_owned(), corrupt.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let registry = json!({
        "version": "1.0.0",
        "agents": [
            {"id": "tiny-npx", "name": "Tiny (npx)", "version": "1.0.0", "description": "a tiny agent",
             "distribution": {"npx": {"package": format!("file:{}", tarball.display())}}},
            {"id": "tiny-uvx", "name": "Tiny (uvx)", "version": "1.0.0", "description": "a tiny agent",
             "distribution": {"uvx": {"package": wheel, "cmd": "tiny-acp-agent",
                                      "env": {"TINY_SETTING": "1", "LD_PRELOAD": "/nonexistent.so"}}}},
            {"id": "mock-binary", "name": "The mock agent", "version": "0.1.0", "description": "mock",
             "distribution": {"binary": {p.clone(): {
                 "archive": format!("{base}/archives/mock.tar.gz"),
                 "cmd": "./mock/acp-mock-agent",
                 "sha256": sha256_hex(&mock)}}}},
            {"id": "corrupt", "name": "Corrupt", "version": "1.0.0", "description": "bad archive",
             "distribution": {"binary": {p.clone(): {
                 "archive": format!("{base}/archives/corrupt.tar.gz"),
                 "cmd": "./agent",
                 "sha256": sha256_hex(b"what the registry was told")}}}},
            {"id": "corrupt-unsummed", "name": "Corrupt", "version": "1.0.0", "description": "bad archive",
             "distribution": {"binary": {p: {
                 "archive": format!("{base}/archives/corrupt.tar.gz"),
                 "cmd": "./agent"}}}},
            {"id": "elsewhere", "name": "Elsewhere", "version": "1.0.0", "description": "not here",
             "distribution": {"binary": {"windows-x86_64": {"archive": "https://example.invalid/a.zip", "cmd": "./a.exe"}}}}
        ],
        "extensions": []
    });
    files.insert(
        "/registry.json".to_owned(),
        serde_json::to_vec(&registry).unwrap(),
    );
    let server = Server::serve(listener, files);
    let path = format!(
        "{}:{}",
        uv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = vec![
        (
            "ACP_QUESTION_BRIDGE_CACHE".to_owned(),
            dir.join("cache").display().to_string(),
        ),
        (
            "npm_config_cache".to_owned(),
            dir.join("npm-cache").display().to_string(),
        ),
        ("npm_config_offline".to_owned(), "true".to_owned()),
        (
            "UV_CACHE_DIR".to_owned(),
            dir.join("uv-cache").display().to_string(),
        ),
        (
            "UV_TOOL_DIR".to_owned(),
            dir.join("uv-tools").display().to_string(),
        ),
        ("UV_OFFLINE".to_owned(), "1".to_owned()),
        ("UV_PYTHON_DOWNLOADS".to_owned(), "never".to_owned()),
        ("UV_NO_PROGRESS".to_owned(), "1".to_owned()),
        ("PATH".to_owned(), path),
    ];
    World {
        registry: format!("{}/registry.json", server.url),
        dir,
        server,
        env,
    }
}

impl World {
    /// The bridge with `--agent ID`, the test registry, and `extra` after `--`.
    fn bridge(&self, id: &str, extra: &[&str]) -> Bridge {
        let mut cmd = Command::new(BRIDGE);
        cmd.args(["--agent", id, "--agent-registry", &self.registry])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("RUST_LOG", "debug");
        if !extra.is_empty() {
            cmd.arg("--").args(extra);
        }
        Bridge::from_command(cmd)
    }

    /// `acp-question-bridge ARGS` to its end: code, stdout, stderr.
    async fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = tokio::time::timeout(
            WAIT * 3,
            Command::new(BRIDGE)
                .args(args)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .env(REGISTRY_ENV, test_registry())
                .stdin(Stdio::null())
                .output(),
        )
        .await
        .expect("the bridge ran too long")
        .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn cache(&self) -> PathBuf {
        self.dir.join("cache")
    }
}

/// A tool approval of the tiny agent, answered "allow" by the client, reaches the agent.
async fn tiny_agent_gets_its_answer(mut b: Bridge) {
    let init = b.initialize(json!({})).await;
    assert_eq!(
        init["result"]["agentInfo"]["name"], "tiny-acp-agent",
        "{init}"
    );
    // Started by npx or uvx, inside the wall like every agent.
    let agent = crate::common::agent_pid_of(b.pid()).expect("the agent runs");
    crate::common::assert_walled(agent);
    let sid = b.new_session(1).await;
    b.prompt(2, &sid, "go").await;
    let (ask, _) = b
        .recv_until(|m| m["method"] == "session/request_permission")
        .await;
    assert_eq!(ask["params"]["toolCall"]["title"], "Run the tiny tool");
    b.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}))
        .await;
    let (done, before) = b.response(json!(2)).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(chunks(&before).contains("tiny got: allow"), "{before:?}");
    b.close_stdin();
    b.wait().await;
}

/// The mock agent's question, answered by the client, reaches the agent.
async fn mock_agent_gets_its_answer(mut b: Bridge) {
    answer_the_mock_question(&mut b, "option-b").await;
    b.close_stdin();
    assert_eq!(b.wait().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_agents_of_every_kind_answer_and_bad_ones_are_refused() {
    let w = world().await;

    // npx: the tiny agent's tarball, run by a real npx, offline.
    tiny_agent_gets_its_answer(w.bridge("tiny-npx", &[])).await;

    // uvx: the tiny agent's wheel, run by a real uvx; the registry's LD_PRELOAD is dropped.
    let b = w.bridge("tiny-uvx", &[]);
    let stderr = b.stderr.clone();
    tiny_agent_gets_its_answer(b).await;
    let log = stderr.lock().unwrap().clone();
    assert!(
        log.contains("kind=\"uvx\"") || log.contains("kind=uvx"),
        "{log}"
    );
    assert!(log.contains("variable=LD_PRELOAD"), "{log}");

    // binary: downloaded once, checked, unpacked; a second bridge uses the cache. Extra
    // arguments after `--` reach the agent (the mock agent takes none, so none here).
    mock_agent_gets_its_answer(w.bridge("mock-binary", &[])).await;
    assert_eq!(w.server.hits("/archives/mock.tar.gz"), 1);
    mock_agent_gets_its_answer(w.bridge("mock-binary", &[])).await;
    assert_eq!(w.server.hits("/archives/mock.tar.gz"), 1, "downloaded once");
    let installed = w.cache().join("agents/mock-binary/0.1.0").join(platform());
    assert!(installed.join("mock/acp-mock-agent").is_file());
    assert!(std::fs::read_to_string(installed.join(".sha256"))
        .unwrap()
        .contains("mock.tar.gz"));
    // The registry was fetched once: later bridges took it from the cache.
    assert_eq!(w.server.hits("/registry.json"), 1);

    // A corrupt archive: refused by its checksum, or (with none) as not an archive; nothing
    // is left in the cache, no staging folder either.
    let (code, _, err) = w
        .run(&["--agent", "corrupt", "--agent-registry", &w.registry])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("SHA-256") && err.contains("refused"), "{err}");
    let (code, _, err) = w
        .run(&[
            "--agent",
            "corrupt-unsummed",
            "--agent-registry",
            &w.registry,
        ])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a .tar.gz archive"), "{err}");
    for id in ["corrupt", "corrupt-unsummed"] {
        // Not even the empty folders made for it (issue 41).
        let dir = w.cache().join("agents").join(id);
        assert!(!dir.exists(), "{id}: {} left in the cache", dir.display());
    }

    // Bad input: exit 2 and what to do.
    let (code, _, err) = w
        .run(&["--agent", "nope", "--agent-registry", &w.registry])
        .await;
    assert_eq!(code, 2);
    assert!(
        err.contains("no agent \"nope\"") && err.contains("acp-question-bridge agents"),
        "{err}"
    );
    let (code, _, err) = w
        .run(&["--agent", "elsewhere", "--agent-registry", &w.registry])
        .await;
    assert_eq!(code, 2);
    assert!(
        err.contains("no distribution for this platform") && err.contains("windows-x86_64"),
        "{err}"
    );
    let not_json = w.dir.join("not-a-registry.json");
    std::fs::write(&not_json, "{ not json").unwrap();
    let (code, _, err) = w
        .run(&[
            "--agent",
            "x",
            "--agent-registry",
            not_json.to_str().unwrap(),
        ])
        .await;
    assert_eq!(code, 2);
    assert!(err.contains("cannot read the agent registry"), "{err}");
    let missing = format!("{}/no-such-registry.json", w.server.url);
    let (code, _, err) = w.run(&["--agent", "x", "--agent-registry", &missing]).await;
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read the agent registry") && err.contains("404"),
        "{err}"
    );
    let (code, _, err) = w
        .run(&[
            "--agent",
            "x",
            "--agent-registry",
            "http://example.com/registry.json",
        ])
        .await;
    assert_eq!(code, 2);
    assert!(err.contains("only HTTPS"), "{err}");

    // `agents` lists them, the binary one cached.
    let (code, out, err) = w.run(&["agents", "--agent-registry", &w.registry]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("6 agents in"), "{out}");
    let line = |id: &str| {
        out.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line("mock-binary").contains("[binary, cached]"), "{out}");
    assert!(
        line("corrupt ").contains("[binary, downloaded on first use]"),
        "{out}"
    );
    assert!(line("tiny-npx").contains("[npx]"), "{out}");
    assert!(line("elsewhere").contains("not for this platform"), "{out}");

    // Offline: the server gone, the registry (fetched less than an hour ago) and the
    // archive come from the cache.
    let World { server, .. } = &w;
    server.task.abort();
    while !server.task.is_finished() {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    mock_agent_gets_its_answer(w.bridge("mock-binary", &[])).await;

    // An old cached registry is fetched again; the server being gone, the cached copy is
    // used and the log says how old it is.
    let cached = std::fs::read_dir(w.cache().join("registry"))
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "json"))
        .unwrap()
        .path();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&cached)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let b = w.bridge("mock-binary", &[]);
    let stderr = b.stderr.clone();
    mock_agent_gets_its_answer(b).await;
    let log = stderr.lock().unwrap().clone();
    assert!(
        log.contains("cached 3h ago; fetching it again failed"),
        "{log}"
    );
}

#[test]
fn agent_registry_without_agent_is_a_usage_error() {
    let out = std::process::Command::new(BRIDGE)
        .args(["--agent-registry", "x.json", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--agent-registry goes with --agent"));
}

/// Issue 41: `agents` with no network and no cached registry names the URL once, and what to
/// do: the cache folder it looked in, and `--agent-registry FILE`.
#[test]
fn agents_offline_with_no_cache_says_what_to_do() {
    let cache = temp_dir("agents-offline");
    // Nothing listens on port 9 (discard) of this machine: refused at once, as offline.
    let url = "https://127.0.0.1:9/registry.json";
    let out = std::process::Command::new(BRIDGE)
        .args(["agents", "--agent-registry", url])
        .env("ACP_QUESTION_BRIDGE_CACHE", &cache)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches(url).count(), 1, "{err}");
    assert!(err.contains("--agent-registry FILE"), "{err}");
    assert!(err.contains(&cache.display().to_string()), "{err}");
}
