#!/usr/bin/env bash
# The inbox's benchmarks (issue 17): questions.list over 100 bridges x 100 pending questions
# through the registry and through NATS JetStream, with the inbox's memory; latency over the
# inbox (agent -> inbox subscription, inbox questions.answer -> agent stdin); and the relay
# figures with --control and --nats on while the NATS server is stopped, paired with plain
# runs. Needs Debian's nats-server (or $NATS_SERVER). Heavy: run it alone on the machine.
#   bench/inbox.sh [BRIDGES] [PER] [ROUNDS]     (100 100 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins --examples
bridges=${1:-100}
per=${2:-100}
rounds=${3:-1000}
b=target/release/examples/bench
ib=target/release/examples/inbox_bench
reg=$(mktemp -d)
trap 'rm -rf "$reg"' EXIT
echo "- date: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, nats-server $( (${NATS_SERVER:-nats-server} --version 2>/dev/null || /usr/sbin/nats-server --version) | awk '{print $2}')"
echo "- command: bench/inbox.sh $*"
echo
echo '```'
"$ib" list "$bridges" "$per"
"$ib" latency "$rounds"
# The relay with --control and --nats on, the NATS server stopped (nothing listens on port 9),
# interleaved with the plain bridge: three pairs per workload, each the best of 3 runs.
for kind in "small 67108864" "mixed 268435456"; do
  for round in 1 2 3; do
    printf 'plain,       round %s: ' "$round"
    BENCH_BRIDGE_ARGS="" "$b" relay $kind 3
    printf 'nats stopped, round %s: ' "$round"
    ACP_QUESTION_BRIDGE_REGISTRY="$reg" \
      BENCH_BRIDGE_ARGS="--control 127.0.0.1:0 --nats nats://127.0.0.1:9" "$b" relay $kind 3
  done
done
echo '```'
