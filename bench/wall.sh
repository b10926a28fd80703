#!/usr/bin/env bash
# What the wall around the agent costs its start (docs/SECURITY.md, "The agent itself"),
# paired, in one run, on the dist build:
#   - exec:   `/bin/true` run directly, against the launcher walling it in with the plan a
#             bridge makes (the config folder read-only, the registry, the state folders and
#             a token file hidden: about a dozen mounts), then `execve` of `/bin/true`;
#   - bridge: a whole bridge run (`--no-control -- /bin/true`: start, probe, agent, exit)
#             with `--sandbox off` against `--sandbox own-files`.
# RUNS runs each (default 200), the median and the 90th percentile in ms, by a loop of
# fork and exec timed with the monotonic clock (no hyperfine needed). Nothing of the relay
# changes: the launcher is gone once the agent runs.
#
#   bench/wall.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-200}"
cargo build --profile dist --locked --quiet --bins
bin="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/dist/acp-question-bridge"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/config/acp-question-bridge" "$work/state/acp-question-bridge" "$work/registry" \
    "$work/runtime/acp-question-bridge" "$work/project"
: >"$work/token"
plan=$(printf '{"read_only":["%s"],"hidden":["%s","%s","%s","%s"],"cwd":"%s"}' \
    "$work/config/acp-question-bridge" "$work/registry" "$work/runtime/acp-question-bridge" \
    "$work/state/acp-question-bridge" "$work/token" "$work/project")

python3 - "$runs" "$bin" "$plan" "$work" <<'EOF'
import os, statistics, subprocess, sys, time
runs, bin, plan, work = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
env = dict(os.environ, XDG_CONFIG_HOME=f"{work}/config", XDG_STATE_HOME=f"{work}/state",
           XDG_RUNTIME_DIR=f"{work}/runtime", ACP_QUESTION_BRIDGE_REGISTRY=f"{work}/registry")
def ms(argv):
    for _ in range(5):
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
    v = []
    for _ in range(runs):
        t = time.monotonic_ns()
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        v.append((time.monotonic_ns() - t) / 1e6)
    v.sort()
    return f"{statistics.median(v):6.2f} {v[int(len(v) * 0.9) - 1]:6.2f}"
print("                                  median    p90 (ms)")
print("exec   /bin/true                 ", ms(["/bin/true"]))
print("exec   launcher, then /bin/true  ", ms([bin, "__wall", plan, "--", "/bin/true"]))
print("bridge --sandbox off             ", ms([bin, "--no-control", "--sandbox", "off", "--", "/bin/true"]))
print("bridge --sandbox own-files       ", ms([bin, "--no-control", "--sandbox", "own-files", "--", "/bin/true"]))
EOF
