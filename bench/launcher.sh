#!/usr/bin/env bash
# What the npm launcher adds (packaging/npm/): its start-up time and its memory, against the
# binary run directly. Builds the release binaries (what the npm packages
# carry), packs them with packaging/npm/build.sh, installs the tarballs offline into a temporary
# prefix, then:
#   - start-up: RUNS runs (default 50) of `--version` each way, direct, through the
#     launcher (node_modules/.bin, what an editor runs after `npm install -g`), and through
#     `npx --offline`; the median and the 90th percentile wall time;
#   - memory: the launcher's resident set while a bridge runs behind it.
#
#   bench/launcher.sh            # RUNS=50
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-50}"
cargo build --release --locked --quiet --bins
bins="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platform=$(node -p '`${process.platform}-${process.arch}`')
packaging/npm/build.sh "$work/tarballs" "$platform=$bins" >/dev/null
npm install --offline --no-audit --no-fund --silent --prefix "$work/prefix" "$work"/tarballs/*.tgz 2>/dev/null
direct="$bins/acp-question-bridge"
launcher="$work/prefix/node_modules/.bin/acp-question-bridge"

# Wall time of RUNS runs of a command, in ms: "median p90".
times() {
    local t0 t1
    for ((i = 0; i < runs; i++)); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000))
    done | python3 -c '
import statistics, sys
v = sorted(int(x) / 1000 for x in sys.stdin)
print(f"{statistics.median(v):.1f} {v[int(len(v) * 0.9) - 1]:.1f}")'
}

read -r d_med d_p90 < <(times "$direct" --version)
read -r l_med l_p90 < <(times "$launcher" --version)
read -r n_med n_p90 < <(cd "$work/prefix" && times npx --offline acp-question-bridge --version)

# The launcher's memory with a bridge running behind it (stdin held open by sleep).
sleep 30 | "$launcher" --no-control -- sleep 30 >/dev/null 2>&1 &
pipeline=$!
lpid=""
for _ in $(seq 100); do
    lpid=$(pgrep -f "node $launcher" | head -1 || true)
    bpid=$(pgrep -f "^$work/prefix/node_modules/acp-question-bridge-$platform/bin/acp-question-bridge" | head -1 || true)
    [ -n "$lpid" ] && [ -n "$bpid" ] && break
    sleep 0.05
done
sleep 1
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
l_rss=$(rss "$lpid")
b_rss=$(rss "$bpid")
kill -TERM "$lpid" 2>/dev/null || true
pkill -f "sleep 30" 2>/dev/null || true
wait "$pipeline" 2>/dev/null || true

echo "| how | start-up median | p90 |"
echo "|---|---|---|"
echo "| the binary | ${d_med} ms | ${d_p90} ms |"
echo "| the launcher (node_modules/.bin) | ${l_med} ms | ${l_p90} ms |"
echo "| npx --offline | ${n_med} ms | ${n_p90} ms |"
echo
echo "launcher RSS while a bridge runs behind it: $((l_rss / 1024)) MiB (${l_rss} KiB); the bridge: $((b_rss / 1024)) MiB (${b_rss} KiB)"
