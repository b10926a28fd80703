#!/usr/bin/env bash
# The session flood (issue 25): 64 MiB of small `session/update` notifications in one
# prompt turn, timed at a Python client, direct, through a `cat`, through the bridge and
# through sacp-conductor, interleaved round by round (bench/flood.py). Twice: the agent writing the
# whole flood at once, and writing one message per write (as agents that flush each
# message do).
#
#   bench/flood.sh [ROUNDS] [MIB]
#
# The conductor is `sacp-conductor` on PATH, or $SACP_CONDUCTOR; without it, its row is left
# out (install it with `cargo install sacp-conductor`). Run it on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-9}
mib=${2:-64}
cargo build --release --locked --bin acp-question-bridge >&2
bridge="$PWD/target/release/acp-question-bridge"
# `cat` relays the agent's stdout (its stdin comes from the client directly): what any
# process in the middle costs, the measure the bridge's own time is read against.
stacks=("direct={agent}" "cat=bash -c 'exec {agent-line} | cat'" "bridge=$bridge --no-control -- {agent}")
conductor=${SACP_CONDUCTOR:-$(command -v sacp-conductor || true)}
if [ -n "$conductor" ]; then
  stacks+=("sacp-conductor=$conductor agent {agent-line}")
else
  echo "flood.sh: no sacp-conductor (set SACP_CONDUCTOR or cargo install sacp-conductor); its row is left out" >&2
fi
echo "commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
for writes in buffer line; do
  python3 bench/flood.py bench --rounds "$rounds" --mib "$mib" --writes "$writes" "${stacks[@]}"
  echo
done
