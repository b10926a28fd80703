#!/usr/bin/env bash
# Soak test: mixed traffic with questions, answers, cancels and agent restarts through the
# release binaries for SOAK_SECS seconds (default 600), driven by examples/soak.rs.
#
#   bench/soak.sh                 # 10 minutes
#   SOAK_SECS=60 bench/soak.sh    # a quick one
#
# Prints messages, questions resolved, lost (must be 0), restarts, and the long-lived
# bridge's RSS after a warm-up and at the end (growth must stay within 10%). Exits non-zero
# when any of that fails. Not part of `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bins --example soak
echo "soak: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet -- src 2>/dev/null || echo ' + uncommitted changes in src/'), ${SOAK_SECS:-600} s"
exec target/release/examples/soak
