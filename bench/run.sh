#!/usr/bin/env bash
# The benchmark suite: builds in release mode, runs every workload through the bridge and
# through a `cat` relay (or directly, for latency) in the same run, prints the table and
# writes it to bench/results.md. Heavy: run it alone on the machine.
#   bench/run.sh            full sizes (64 MiB small, 256 MiB mixed, best of 3)
#   bench/run.sh --quick    quarter sizes, one run each
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins --examples
out=bench/results.md
table=$(mktemp)
target/release/examples/bench run "$@" --out "$table"
{
  echo "# Benchmark results"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- command: bench/run.sh $*"
  echo
  cat "$table"
  echo
  echo "Micro-benchmark of the per-line hot path (\`cargo bench --bench classify\`):"
  echo
  echo '```'
  cargo bench --quiet --bench classify 2>/dev/null | sed -n '/classify_line/,$p'
  echo '```'
} > "$out"
rm -f "$table"
echo "written to $out"
