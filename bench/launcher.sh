#!/usr/bin/env bash
# What the npm package costs against the binary run directly (packaging/npm/): start-up time
# and the resident memory of a running bridge's processes. Installs the tarballs offline into
# temporary prefixes three ways: `npm install -g` (its install script puts the native binary
# on the bin), `npm install -g --ignore-scripts` (the bin stays the Node.js shim), and into a
# project, for `npx`. Then:
#   - start-up: RUNS runs (default 50) of `--version` each way, by hyperfine when it is
#     installed (-N, 5 warm-up runs), else a loop; the median and the 90th percentile;
#   - memory: VmRSS of every process of a bridge started from each bin (`--no-control --
#     sleep 60`, stdin held open), the agent left out, one second after it started.
#
#   bench/launcher.sh                # builds the dist profile, packs it (packaging/npm/build.sh)
#   bench/launcher.sh TARBALL_DIR    # the tarballs in TARBALL_DIR instead (an older build's)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-50}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platform=$(node -p '`${process.platform}-${process.arch}`')
if [ $# -ge 1 ]; then
    tarballs=("$1"/*.tgz)
else
    cargo build --profile dist --locked --quiet --bins
    bins="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/dist"
    packaging/npm/build.sh "$work/tarballs" "$platform=$bins" >"$work/made"
    mapfile -t tarballs <"$work/made"
fi
npm_install() {
    npm install --offline --no-audit --no-fund --silent "$@" "${tarballs[@]}" >/dev/null 2>&1
}
npm_install -g --prefix "$work/global"
npm_install -g --ignore-scripts --prefix "$work/shim"
npm_install --prefix "$work/project"
direct="$work/global/lib/node_modules/acp-question-bridge-$platform/bin/acp-question-bridge"
global="$work/global/bin/acp-question-bridge"
shim="$work/shim/bin/acp-question-bridge"
kind() { if [ "$(head -c 2 "$1")" = "#!" ]; then echo "Node.js shim"; else echo "native binary"; fi; }

# Wall time of RUNS runs of a command (run in the current folder), in ms: "median p90".
times() {
    local json="$work/times.json"
    if command -v hyperfine >/dev/null; then
        hyperfine -N --warmup 5 --runs "$runs" --export-json "$json" "$*" >/dev/null 2>&1
        python3 -c '
import json, statistics, sys
v = sorted(t * 1000 for t in json.load(open(sys.argv[1]))["results"][0]["times"])
print(f"{statistics.median(v):.1f} {v[int(len(v) * 0.9) - 1]:.1f}")' "$json"
    else
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
    fi
}

# A process and all its descendants.
tree() {
    echo "$1"
    local c
    for c in $(ps -o pid= --ppid "$1"); do tree "$c"; done
}

# The processes of a bridge started from bin $1, the agent (sleep) left out: "name=KiB ...
# total=KiB".
memory() {
    sleep 60 | "$1" --no-control -- sleep 60 >/dev/null 2>&1 &
    local root=$! pid line="" total=0 n
    for _ in $(seq 200); do
        tree "$root" | xargs -r ps -o comm= -p | grep -qx sleep && break
        sleep 0.05
    done
    sleep 1
    for pid in $(tree "$root"); do
        n=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | awk '{
            sub(".*/", "", $1); print ($2 == "agent-guard" ? "guard" : $1) }') || continue
        [ "$n" = sleep ] && continue
        rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
        line+="$n=${rss} "
        total=$((total + rss))
    done
    kill -TERM "$root" 2>/dev/null || true
    wait "$root" 2>/dev/null || true
    echo "${line}total=${total}"
}

read -r d_med d_p90 < <(times "$direct" --version)
read -r g_med g_p90 < <(times "$global" --version)
read -r s_med s_p90 < <(times "$shim" --version)
read -r n_med n_p90 < <(cd "$work/project" && times npx --offline acp-question-bridge --version)
g_mem=$(memory "$global")
s_mem=$(memory "$shim")

echo "| how | the bin is | \`--version\` median | p90 | a running bridge's processes, VmRSS KiB |"
echo "|---|---|---|---|---|"
echo "| the platform package's binary, directly | native binary | ${d_med} ms | ${d_p90} ms | |"
echo "| \`npm install -g\`: the bin on PATH | $(kind "$global") | ${g_med} ms | ${g_p90} ms | ${g_mem} |"
echo "| \`npm install -g --ignore-scripts\` | $(kind "$shim") | ${s_med} ms | ${s_p90} ms | ${s_mem} |"
echo "| \`npx --offline\` in a project | $(kind "$work/project/node_modules/.bin/acp-question-bridge") | ${n_med} ms | ${n_p90} ms | |"
echo
du -sb "$work/global/lib/node_modules/acp-question-bridge-$platform" | awk '{printf "platform package unpacked: %.1f MB\n", $1 / 1e6}'
ls -l "${tarballs[@]}" | awk '{ if ($5 < 1e6) printf "%s: %.1f kB\n", $NF, $5 / 1e3; else printf "%s: %.1f MB\n", $NF, $5 / 1e6 }'
