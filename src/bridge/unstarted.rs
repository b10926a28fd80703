//! An agent that cannot be started (not found: 127; not executable: 126): the client is
//! not left waiting. Each request it sends before its input ends, or for
//! [`WAIT_FOR_REQUESTS`] after its last one, gets one JSON-RPC error saying why, with the
//! exit code the bridge then exits with; notifications get nothing.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::jsonrpc::{self, code};

/// How long the client is given for a (next) request once the agent failed to start.
const WAIT_FOR_REQUESTS: Duration = Duration::from_secs(5);
/// The most read from the client meanwhile.
const MAX_READ: u64 = 4 << 20;

/// Answers the client's requests (read from `input`, answered on `output`) with why the
/// agent could not be started (`why`, exit code `exit`).
pub(super) async fn refuse<R, W>(input: R, mut output: W, why: &str, exit: i32)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(tokio::io::AsyncReadExt::take(input, MAX_READ));
    let mut line = Vec::new();
    loop {
        line.clear();
        let read =
            tokio::time::timeout(WAIT_FOR_REQUESTS, lines.read_until(b'\n', &mut line)).await;
        let Ok(Ok(n)) = read else { return };
        if n == 0 {
            return;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) else {
            continue;
        };
        let id = crate::envelope::RequestId::from_json(&id.to_string());
        let reply = jsonrpc::error(
            Some(&id),
            code::INTERNAL_ERROR,
            &format!("the agent could not be started, so {method} cannot be answered: {why}"),
            Some(json!({ "exitCode": exit })),
        );
        let sent = async {
            output.write_all(&reply).await?;
            output.write_all(b"\n").await?;
            output.flush().await
        };
        if sent.await.is_err() {
            return;
        }
    }
}
