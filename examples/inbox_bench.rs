//! The inbox's benchmarks (`bench/inbox.sh`, recorded in `bench/results-inbox.md`):
//!
//! - `list [BRIDGES] [PER]` (100 x 100): BRIDGES bridges, each around an agent holding PER
//!   pending questions (`bench ask PER 1 hold`, `--client-dialect control`), and one inbox,
//!   first over the registry, then over NATS JetStream: the time of `questions.list` on the
//!   inbox (over HTTP, as the CLI calls it: answered, sent and parsed) and the inbox's memory;
//! - `latency [ROUNDS]` (1,000): one bridge whose agent asks one question at a time
//!   (`bench ask-timed`), and an inbox: from the agent's request to the question in the inbox's
//!   `questions.subscribe`, and from `questions.answer` on the inbox to the answer on the
//!   agent's stdin; over the registry and over NATS.
//!
//! It starts `nats-server -js` itself on a free loopback port with a temporary store
//! (`$NATS_SERVER`, else on PATH or in /usr/sbin). Times between processes are read off one
//! clock (Unix time in ns); everything runs on loopback.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use jsonrpsee::core::client::{ClientT, SubscriptionClientT};
use jsonrpsee::rpc_params;
use jsonrpsee_http_client::{HeaderMap, HeaderValue, HttpClient, HttpClientBuilder};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

/// How long anything may take before the benchmark gives up.
const PATIENCE: Duration = Duration::from_secs(180);

fn sibling(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    exe.parent().expect("examples dir").join(name)
}

/// The bridge binary: `$BRIDGE_BIN`, or the one built beside this example.
fn bridge_bin() -> PathBuf {
    std::env::var_os("BRIDGE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().expect("current exe");
            let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
            dir.join("acp-question-bridge")
        })
}

fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn out(s: String) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{s}");
    let _ = o.flush();
}

fn note(s: &str) {
    let _ = writeln!(std::io::stderr(), "inbox_bench: {s}");
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("acp-qb-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// (VmRSS, VmHWM) of a process, in KiB.
fn rss(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |k: &str| {
        s.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// A running nats-server with JetStream; killed when dropped.
struct Nats {
    _child: Child,
    url: String,
}

impl Nats {
    async fn start(store: &Path) -> Nats {
        let bin = std::env::var_os("NATS_SERVER")
            .map(PathBuf::from)
            .or_else(|| {
                ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
                    .iter()
                    .map(PathBuf::from)
                    .find(|p| p.exists())
            })
            .unwrap_or_else(|| PathBuf::from("nats-server"));
        let mut child = Command::new(bin)
            .args(["-js", "-a", "127.0.0.1", "-p", "-1", "-sd"])
            .arg(store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("nats-server (install Debian's nats-server package, or set NATS_SERVER)");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let port: u16 = tokio::time::timeout(PATIENCE, async {
            let mut port = None;
            while let Ok(Some(l)) = lines.next_line().await {
                if let Some(rest) = l.split("Listening for client connections on ").nth(1) {
                    port = rest.rsplit(':').next().and_then(|p| p.trim().parse().ok());
                }
                if l.contains("Server is ready") {
                    return port.expect("a port before ready");
                }
            }
            panic!("nats-server stopped before it was ready");
        })
        .await
        .expect("nats-server is ready");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Nats {
            _child: child,
            url: format!("nats://127.0.0.1:{port}"),
        }
    }
}

/// A bridge with `--client-dialect control` around one of the bench agents. Its client (us)
/// sends `initialize` when told to and stays until dropped.
struct Bridge {
    _child: Child,
    stdin: ChildStdin,
}

impl Bridge {
    fn spawn(registry: &Path, nats: Option<&str>, agent: &[String]) -> Bridge {
        let mut cmd = Command::new(bridge_bin());
        cmd.args([
            "--log-level",
            "error",
            "--shutdown-grace",
            "100ms",
            "--max-pending-per-session",
            "10000",
            "--client-dialect",
            "control",
            "--control",
            "127.0.0.1:0",
        ]);
        if let Some(url) = nats {
            cmd.args(["--nats", url]);
        }
        let mut child = cmd
            .arg("--")
            .args(agent)
            .env("ACP_QUESTION_BRIDGE_REGISTRY", registry)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the bridge");
        let stdin = child.stdin.take().expect("stdin");
        Bridge {
            _child: child,
            stdin,
        }
    }

    async fn initialize(&mut self) {
        self.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}\n")
            .await
            .expect("write initialize");
        self.stdin.flush().await.expect("flush");
    }
}

/// A running inbox: its pid, HTTP base URL and token.
struct Inbox {
    child: Child,
    base: String,
    token: String,
}

impl Inbox {
    async fn start(registry: &Path, nats: Option<&str>) -> Inbox {
        let mut cmd = Command::new(bridge_bin());
        cmd.args(["inbox", "--registry"]).arg(registry);
        if let Some(url) = nats {
            cmd.args(["--nats", url]);
        }
        // Its stderr is not a terminal, so it prints no token: the bench gives it one.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let token = format!("inbox-bench-{}-{nanos}", std::process::id());
        let mut child = cmd
            .env("RUST_LOG", "warn")
            .env("ACP_QUESTION_BRIDGE_TOKEN", &token)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the inbox");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let page = tokio::time::timeout(PATIENCE, async {
            while let Ok(Some(l)) = lines.next_line().await {
                if let Some(page) = l.strip_prefix("acp-question-bridge: questions page: ") {
                    return page.to_owned();
                }
            }
            panic!("the inbox stopped before it printed its page");
        })
        .await
        .expect("the inbox starts");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let base = page.split(' ').next().unwrap_or_default();
        Inbox {
            child,
            base: base.to_owned(),
            token: token.to_owned(),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("the inbox runs")
    }

    fn http(&self) -> HttpClient {
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {}", self.token)).expect("header"),
        );
        HttpClientBuilder::default()
            .set_headers(h)
            .max_response_size(u32::MAX)
            .request_timeout(PATIENCE)
            .build(&self.base)
            .expect("http client")
    }

    /// `questions.list` over a plain HTTP/1.1 connection: the time until the whole response
    /// is read (what the inbox takes to answer and send it), and its size.
    async fn list_raw(&self) -> (Duration, usize) {
        use tokio::io::AsyncReadExt;
        let addr = self
            .base
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"questions.list"}"#;
        let req = format!(
            "POST / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.token,
            body.len()
        );
        let t = Instant::now();
        let mut conn = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        conn.write_all(req.as_bytes()).await.expect("send");
        let mut resp = Vec::new();
        conn.read_to_end(&mut resp).await.expect("read");
        let took = t.elapsed();
        assert!(
            resp.starts_with(b"HTTP/1.1 200"),
            "questions.list over HTTP failed"
        );
        (took, resp.len())
    }

    async fn list(&self, c: &HttpClient) -> Vec<Value> {
        c.request("questions.list", rpc_params![])
            .await
            .expect("questions.list")
    }

    /// Waits until the inbox lists `n` questions (polled: this is setup, not measured).
    async fn until_listed(&self, c: &HttpClient, n: usize) {
        let start = Instant::now();
        loop {
            let got = self.list(c).await.len();
            if got == n {
                return;
            }
            if start.elapsed() > PATIENCE {
                panic!("the inbox lists {got} questions, not {n}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn until_bridges(&self, c: &HttpClient, n: usize) {
        let start = Instant::now();
        loop {
            let b: Vec<Value> = c
                .request("bridges.list", rpc_params![])
                .await
                .expect("bridges.list");
            if b.iter().filter(|b| b["status"] == "connected").count() == n {
                return;
            }
            if start.elapsed() > PATIENCE {
                panic!("the inbox has {} bridges, not {n}", b.len());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn percentile<T: Copy>(sorted: &[T], p: f64) -> T {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// BRIDGES x PER pending questions, one inbox: `questions.list` time and the inbox's memory.
async fn list(bridges: usize, per: usize, nats: Option<&str>) {
    let scale = if nats.is_some() { "NATS" } else { "registry" };
    let dir = temp_dir(&format!("list-{scale}"));
    let registry = dir.join("registry");
    let agent = [
        sibling("bench").to_string_lossy().into_owned(),
        "ask".to_owned(),
        per.to_string(),
        "1".to_owned(),
        "hold".to_owned(),
    ];
    // The inbox first: its memory before any bridge is the baseline.
    let inbox = Inbox::start(&registry, nats).await;
    let c = inbox.http();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base = rss(inbox.pid()).0;
    let mut all = Vec::with_capacity(bridges);
    for _ in 0..bridges {
        let mut b = Bridge::spawn(&registry, nats, &agent);
        b.initialize().await;
        all.push(b);
    }
    let total = bridges * per;
    let t = Instant::now();
    inbox.until_listed(&c, total).await;
    note(&format!(
        "{scale}: {total} questions listed {:.1} s after the first bridge started",
        t.elapsed().as_secs_f64()
    ));
    let mut times = Vec::new();
    let mut raw = Vec::new();
    let mut bytes = 0;
    for _ in 0..20 {
        let t = Instant::now();
        let l = inbox.list(&c).await;
        times.push(t.elapsed());
        assert_eq!(l.len(), total, "every question listed");
        let (took, n) = inbox.list_raw().await;
        raw.push(took);
        bytes = n;
    }
    times.sort();
    raw.sort();
    let (now, peak) = rss(inbox.pid());
    out(format!(
        "list {scale}: {bridges} bridges x {per} = {total} questions ({:.1} MiB of JSON): questions.list answered and read p50 {} (min {}, max {}); with the client's parse into values p50 {}, min {}, max {}; inbox RSS {} (baseline {}, peak {}), {:.0} B per question",
        bytes as f64 / (1 << 20) as f64,
        ms(percentile(&raw, 0.5)),
        ms(raw[0]),
        ms(raw[raw.len() - 1]),
        ms(percentile(&times, 0.5)),
        ms(times[0]),
        ms(times[times.len() - 1]),
        mib(now),
        mib(base),
        mib(peak),
        (now.saturating_sub(base) * 1024) as f64 / total as f64
    ));
    drop(all);
    drop(inbox);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// One agent asking ROUNDS questions one at a time; the inbox answers each from its
/// subscription.
async fn latency(rounds: usize, nats: Option<&str>) {
    let scale = if nats.is_some() { "NATS" } else { "registry" };
    let dir = temp_dir(&format!("latency-{scale}"));
    let registry = dir.join("registry");
    let times_file = dir.join("answered.txt");
    let warmup = rounds / 10;
    let total = rounds + warmup;
    let agent = [
        sibling("bench").to_string_lossy().into_owned(),
        "ask-timed".to_owned(),
        total.to_string(),
        times_file.to_string_lossy().into_owned(),
    ];
    let inbox = Inbox::start(&registry, nats).await;
    let c = inbox.http();
    let mut bridge = Bridge::spawn(&registry, nats, &agent);
    inbox.until_bridges(&c, 1).await;
    let ws = acp_question_bridge::control::client::ws_client(
        &inbox.base.replacen("http://", "ws://", 1),
        &inbox.token,
    )
    .await
    .expect("a WebSocket to the inbox");
    let mut sub = ws
        .subscribe::<Value, _>(
            "questions.subscribe",
            rpc_params![],
            "questions.unsubscribe",
        )
        .await
        .expect("questions.subscribe");
    bridge.initialize().await;
    let mut seen = Vec::with_capacity(total);
    let mut answered_at = Vec::with_capacity(total);
    while seen.len() < total {
        let ev = tokio::time::timeout(PATIENCE, sub.next())
            .await
            .expect("an event in time")
            .expect("the subscription is open")
            .expect("an event");
        let now = unix_ns();
        if ev["event"] != "requested" {
            continue;
        }
        let q = &ev["question"];
        let text = q.to_string();
        let sent: u128 = text
            .split("bench-t=")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|d| d.parse().ok())
            .expect("the agent's send time in the prompt");
        seen.push(now.saturating_sub(sent));
        let params = json!({
            "sessionId": q["sessionId"],
            "questionId": q["questionId"],
            "answers": [["option-a"]],
        });
        let mut p = jsonrpsee::core::params::ObjectParams::new();
        for (k, v) in params.as_object().expect("object") {
            p.insert(k, v.clone()).expect("param");
        }
        answered_at.push(unix_ns());
        let r: Value = ws
            .request("questions.answer", p)
            .await
            .expect("questions.answer");
        assert_eq!(r["status"], "answered", "{r}");
    }
    // The agent writes when each answer reached it.
    let start = Instant::now();
    let received: Vec<u128> = loop {
        let s = std::fs::read_to_string(&times_file).unwrap_or_default();
        let v: Vec<u128> = s
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
            .collect();
        if v.len() == total {
            break v;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the agent got {} answers",
            v.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut to_inbox: Vec<u128> = seen[warmup..].to_vec();
    let mut to_agent: Vec<u128> = received[warmup..]
        .iter()
        .zip(&answered_at[warmup..])
        .map(|(r, a)| r.saturating_sub(*a))
        .collect();
    to_inbox.sort_unstable();
    to_agent.sort_unstable();
    let f = |ns: u128| format!("{:.2} ms", ns as f64 / 1e6);
    out(format!(
        "latency {scale} ({rounds} rounds): agent -> inbox subscription p50 {}, p99 {}; questions.answer on the inbox -> agent stdin p50 {}, p99 {}",
        f(percentile(&to_inbox, 0.5)),
        f(percentile(&to_inbox, 0.99)),
        f(percentile(&to_agent, 0.5)),
        f(percentile(&to_agent, 0.99)),
    ));
    drop(sub);
    drop(ws);
    drop(bridge);
    drop(inbox);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
    let num = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let only = std::env::var("INBOX_BENCH_ONLY").unwrap_or_default();
    let store = temp_dir("nats");
    let nats = if only == "registry" {
        None
    } else {
        Some(Nats::start(&store).await)
    };
    let nats_url = nats.as_ref().map(|n| n.url.clone());
    let scales: Vec<Option<&str>> = match only.as_str() {
        "registry" => vec![None],
        "nats" => vec![nats_url.as_deref()],
        _ => vec![None, nats_url.as_deref()],
    };
    match arg(0) {
        "list" => {
            for s in scales {
                list(num(1, 100), num(2, 100), s).await;
            }
        }
        "latency" => {
            for s in scales {
                latency(num(1, 1_000), s).await;
            }
        }
        _ => {
            note("usage: inbox_bench list [BRIDGES] [PER] | latency [ROUNDS]  ($INBOX_BENCH_ONLY=registry|nats)");
            std::process::exit(2);
        }
    }
    drop(nats);
    let _ = std::fs::remove_dir_all(&store);
}
