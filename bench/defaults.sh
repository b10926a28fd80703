#!/usr/bin/env bash
# What the defaults cost: the control server (on by default since issue 25) against
# --no-control. For each, N fresh bridges around the mock agent (release build): the time from
# spawn to the `initialize` response, and the bridge's RSS once a session is open. Interleaved
# runs, medians and ranges. Usage: bench/defaults.sh [N]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-30}
cargo build --release --locked -q --bins
reg=$(mktemp -d); chmod 700 "$reg"
trap 'rm -rf "$reg"' EXIT
ACP_QUESTION_BRIDGE_REGISTRY=$reg python3 - "$n" <<'PY'
import json, os, statistics, subprocess, sys, time
n = int(sys.argv[1])
bridge, mock = "target/release/acp-question-bridge", "target/release/acp-mock-agent"
def one(args):
    t0 = time.perf_counter()
    p = subprocess.Popen([bridge, *args, "--", mock], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    def call(i, m, params):
        p.stdin.write((json.dumps({"jsonrpc":"2.0","id":i,"method":m,"params":params})+"\n").encode()); p.stdin.flush()
        while True:
            msg = json.loads(p.stdout.readline())
            if msg.get("id") == i: return msg
    call(0, "initialize", {"protocolVersion":1,"clientCapabilities":{}})
    ready = time.perf_counter() - t0
    call(1, "session/new", {"cwd":"/tmp","mcpServers":[]})
    time.sleep(0.2)  # let the control server's tasks settle
    rss = next(int(l.split()[1]) for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS:"))
    p.stdin.close(); p.wait(timeout=30)
    return ready * 1000, rss / 1024
res = {"default (control server)": [], "--no-control": []}
for _ in range(n):
    for name, args in (("default (control server)", []), ("--no-control", ["--no-control"])):
        res[name].append(one(args))
print(f"{'bridge':26} {'initialize answered, ms (median, min-max)':44} RSS with a session, MiB (median, min-max)")
for name, runs in res.items():
    t = [r[0] for r in runs]; m = [r[1] for r in runs]
    print(f"{name:26} {statistics.median(t):6.2f} ({min(t):.2f}-{max(t):.2f}){'':22} {statistics.median(m):5.2f} ({min(m):.2f}-{max(m):.2f})")
PY
