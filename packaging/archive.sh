#!/usr/bin/env bash
# Makes the release archive of one target, the one `cargo binstall` takes (its URL and layout
# are [package.metadata.binstall] in Cargo.toml): acp-question-bridge-v<version>-<target>.tar.gz
# holding a folder of the same name with both binaries (as `cargo install` gives), the license
# files and the README. The binaries are those of the dist profile (`cargo build --profile dist
# --locked --bins`: the release profile, stripped; 16 MB and 1.3 MB instead of 73 and 8).
#
#   packaging/archive.sh BIN_DIR TARGET OUT_DIR      # e.g. target/dist x86_64-unknown-linux-gnu dist
#
# Prints the archive's path, then writes its SHA-256 beside it (<archive>.sha256).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: packaging/archive.sh BIN_DIR TARGET OUT_DIR" >&2; exit 2; }
bins=$1 target=$2 out=$3
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(cd "$root" && cargo pkgid | sed 's/.*[@#]//')
name="acp-question-bridge-v$version-$target"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name" "$out"
for bin in acp-question-bridge acp-mock-agent; do
    [ -x "$bins/$bin" ] || { echo "archive.sh: no executable $bins/$bin" >&2; exit 2; }
    cp "$bins/$bin" "$stage/$name/"
done
cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$root/README.md" "$stage/$name/"
archive="$(cd "$out" && pwd)/$name.tar.gz"
# With GNU tar, owner, group, order and times are fixed: the same binaries make the same
# archive. (macOS's tar has no such options.)
fixed=()
tar --version 2>/dev/null | grep -q 'GNU tar' &&
    fixed=(--sort=name --owner=0 --group=0 --numeric-owner --mtime=@0)
tar ${fixed[@]+"${fixed[@]}"} -C "$stage" -czf "$archive" "$name"
sum=(sha256sum)
command -v sha256sum >/dev/null || sum=(shasum -a 256)
(cd "$(dirname "$archive")" && "${sum[@]}" "$name.tar.gz" >"$name.tar.gz.sha256")
echo "$archive"
