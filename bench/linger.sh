#!/bin/sh
# What a --linger holder keeps of a session no editor has: the editor leaves, the agent
# then streams N updates of about BYTES bytes into the session, and the holder's memory is
# read before and after (VmRSS, VmHWM), with what `sessions --json` says it kept.
# Usage: bench/linger.sh [N] [BYTES]   (defaults 10000 400; a release build is used)
set -eu
N=${1:-10000}
BYTES=${2:-400}
cd "$(dirname "$0")/.."
cargo build --release --locked --bin acp-question-bridge --bin acp-mock-agent >&2
BIN=$(pwd)/target/release/acp-question-bridge
MOCK=$(pwd)/target/release/acp-mock-agent
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export ACP_QUESTION_BRIDGE_REGISTRY="$WORK/roster"
mkdir -m 700 "$ACP_QUESTION_BRIDGE_REGISTRY"
python3 - "$BIN" "$MOCK" "$N" "$BYTES" "$WORK" <<'PY'
import json, os, signal, subprocess, sys, time, glob
bin_, mock, n, size, work = sys.argv[1:]
front = subprocess.Popen([bin_, "--linger", "10m", "--no-policy", "--", mock],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    start_new_session=True, cwd=work)
def send(m): front.stdin.write((json.dumps(m) + "\n").encode()); front.stdin.flush()
def until(pred):
    for line in front.stdout:
        m = json.loads(line)
        if pred(m): return m
    sys.exit("the front ended")
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
until(lambda m: m.get("id") == 0)
send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": work, "mcpServers": []}})
sid = until(lambda m: m.get("id") == 1)["result"]["sessionId"]
send({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": sid,
    "prompt": [{"type": "text", "text": f"flood {n} {size} 500"}]}})
until(lambda m: "flood: in" in json.dumps(m))
holder = json.load(open(glob.glob(os.path.join(os.environ["ACP_QUESTION_BRIDGE_REGISTRY"], "held", "*.json"))[0]))["pid"]
def mem():
    st = dict(l.split(":", 1) for l in open(f"/proc/{holder}/status"))
    return st["VmRSS"].strip(), st["VmHWM"].strip()
os.killpg(front.pid, signal.SIGKILL)
front.wait()
before = mem()
deadline = time.time() + 120
while True:
    out = subprocess.run([bin_, "sessions", "--json"], capture_output=True, text=True, timeout=60).stdout
    s = json.loads(out)[0]["sessions"][0]
    if s["updatesKept"] + s["updatesDropped"] >= int(n) + 1 or time.time() > deadline:
        break
    time.sleep(0.2)
after = mem()
print(f"{n} updates of ~{size} B with no editor: kept {s['updatesKept']} ({s['bytesKept']} B), "
      f"dropped {s['updatesDropped']}; holder VmRSS/VmHWM before {before[0]}/{before[1]}, after {after[0]}/{after[1]}")
os.kill(holder, signal.SIGTERM)
PY
