//! Real NATS servers for the tests: Debian's `nats-server` (2.9) with JetStream, one alone
//! or three in a cluster on loopback, each with a temporary store (installed with apt-get
//! when missing and running as root, as CI does; otherwise the test fails and says what to
//! install: it is never skipped).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::{install, WAIT};

/// The nats-server binary: $NATS_SERVER, else Debian's, installed if missing (once per
/// machine, under the test install lock).
pub async fn nats_binary() -> PathBuf {
    if let Ok(p) = std::env::var("NATS_SERVER") {
        return PathBuf::from(p);
    }
    install::debian_program(
        "nats-server",
        &["/usr/sbin/nats-server", "/usr/bin/nats-server"],
    )
    .await
}

/// A running nats-server with JetStream; killed when dropped.
pub struct Nats {
    child: Option<Child>,
    pub port: u16,
    store: PathBuf,
    /// Its arguments besides the port and the store (a cluster node's name and routes).
    extra: Vec<String>,
    /// Every line it logged since it last started.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Nats {
    /// One server alone, on `port` (or a free one).
    pub async fn start(store: &Path, port: Option<u16>) -> Nats {
        Nats::start_with(store, port, Vec::new()).await
    }

    async fn start_with(store: &Path, port: Option<u16>, extra: Vec<String>) -> Nats {
        let bin = nats_binary().await;
        let port_arg = port.map_or("-1".to_owned(), |p| p.to_string());
        let mut child = Command::new(bin)
            .args(["-js", "-a", "127.0.0.1", "-p", &port_arg, "-sd"])
            .arg(store)
            .args(&extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn nats-server");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(Vec::new()));
        let port = tokio::time::timeout(WAIT, async {
            let mut port = None;
            while let Ok(Some(l)) = lines.next_line().await {
                if let Some(rest) = l.split("Listening for client connections on ").nth(1) {
                    port = rest.rsplit(':').next().and_then(|p| p.trim().parse().ok());
                }
                let ready = l.contains("Server is ready");
                log.lock().unwrap().push(l);
                if ready {
                    return port.expect("a port before ready");
                }
            }
            panic!("nats-server stopped before it was ready");
        })
        .await
        .expect("nats-server is ready in time");
        let keep = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                keep.lock().unwrap().push(l);
            }
        });
        Nats {
            child: Some(child),
            port,
            store: store.to_owned(),
            extra,
            log,
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub async fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
        }
    }

    /// Starts it again on the same port, with the same store and arguments.
    pub async fn restart(&mut self) {
        self.kill().await;
        let again =
            Nats::start_with(&self.store.clone(), Some(self.port), self.extra.clone()).await;
        *self = again;
    }

    /// Whether it logged a line with `what` since it last started.
    pub fn logged(&self, what: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(what))
    }
}

/// Free loopback ports, all held at once while they are picked.
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// Three nats-servers in one JetStream cluster on loopback (`n0`, `n1`, `n2`).
pub struct Cluster {
    pub nodes: Vec<Nats>,
}

impl Cluster {
    /// Starts the three and waits until they have elected their metadata leader.
    pub async fn start(dir: &Path) -> Cluster {
        let ports = free_ports(6);
        let routes = ports[3..]
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut nodes = Vec::new();
        for i in 0..3 {
            let extra = vec![
                "-n".to_owned(),
                format!("n{i}"),
                "--cluster_name".to_owned(),
                "acpqb-test".to_owned(),
                "--cluster".to_owned(),
                format!("nats://127.0.0.1:{}", ports[3 + i]),
                "--routes".to_owned(),
                routes.clone(),
            ];
            let store = dir.join(format!("n{i}"));
            nodes.push(Nats::start_with(&store, Some(ports[i]), extra).await);
        }
        let c = Cluster { nodes };
        c.until_leader().await;
        c
    }

    /// Waits until a node of those running says it knows the metadata leader.
    pub async fn until_leader(&self) {
        tokio::time::timeout(WAIT, async {
            while !self
                .nodes
                .iter()
                .filter(|n| n.child.is_some())
                .any(|n| n.logged("metadata leader"))
            {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the cluster elects its metadata leader in time");
    }

    /// Every node's URL, as `--nats` takes them.
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(Nats::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The node named `name` (`n0`..`n2`).
    pub fn node(&mut self, name: &str) -> &mut Nats {
        let i: usize = name.trim_start_matches('n').parse().expect("a node name");
        &mut self.nodes[i]
    }
}
