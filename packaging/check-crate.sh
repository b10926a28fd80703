#!/usr/bin/env bash
# The crate as crates.io gets it: `cargo package --locked`, the .crate unpacked alone in an
# empty folder outside the repository, built there on its own (--locked --offline: the
# dependencies `cargo package` already resolved), and its binary run: `--version` and the
# demo. Fails if anything the build or the demo needs (the page's assets, the schemas) is
# not in the package. Used by .ci/run and by the release workflow before `cargo publish`.
#
#   packaging/check-crate.sh            # a debug build (fast)
#   PROFILE=release packaging/check-crate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${PROFILE:-dev}"
dir_of() { [ "$1" = dev ] && echo debug || echo "$1"; }

cargo package --locked --no-verify --quiet
version=$(cargo pkgid | sed 's/.*[@#]//')
crate="target/package/acp-question-bridge-$version.crate"
[ -f "$crate" ] || { echo "check-crate: no $crate" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$crate" -C "$work"
src="$work/acp-question-bridge-$version"
# The unpacked crate's own target folder, so nothing of the repository's build is used.
(cd "$src" && cargo build --locked --offline --quiet --profile "$profile" --bins)
bin="$src/target/$(dir_of "$profile")/acp-question-bridge"

got=$("$bin" --version)
[ "$got" = "acp-question-bridge $version" ] || { echo "check-crate: --version said: $got" >&2; exit 1; }
out=$(cd "$work" && timeout 120 "$bin" demo --answer option-a 2>&1) || {
    echo "$out" >&2
    echo "check-crate: the demo of the unpacked crate failed" >&2
    exit 1
}
grep -q 'agent: answered: \[\["option-a"\]\]' <<<"$out" || {
    echo "$out" >&2
    echo "check-crate: the demo's agent did not get the answer" >&2
    exit 1
}
echo "check-crate: acp-question-bridge $version packages, builds alone and runs the demo"
