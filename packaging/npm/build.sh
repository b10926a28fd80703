#!/usr/bin/env bash
# Makes the npm packages of acp-question-bridge with `npm pack`, the way ACP agents ship:
#
# - `acp-question-bridge`: a small launcher (launcher/launch.js) whose bins are
#   `acp-question-bridge` and `acp-mock-agent`, with one optional dependency per platform;
# - `acp-question-bridge-<platform>`: that platform's two binaries, with `os`, `cpu` (and
#   `libc` on Linux) set so npm installs only the one that fits.
#
#   packaging/npm/build.sh OUT_DIR                       # this machine's platform, from target/release
#   packaging/npm/build.sh OUT_DIR linux-x64=DIR ...     # each platform's binaries from DIR
#
# The version, description, license and repository come from Cargo.toml. Every platform in
# PLATFORMS is a dependency of the launcher; only those given here are packed (the release
# workflow gives all of them). Prints the tarballs it made.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() { echo "usage: packaging/npm/build.sh OUT_DIR [PLATFORM=BIN_DIR]..." >&2; exit 2; }
[ $# -ge 1 ] || usage
out=$1
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)

# npm platform -> the Rust target the release workflow builds for it.
declare -A TARGETS=(
    [linux-x64]=x86_64-unknown-linux-gnu
    [linux-arm64]=aarch64-unknown-linux-gnu
    [darwin-x64]=x86_64-apple-darwin
    [darwin-arm64]=aarch64-apple-darwin
)

host_platform() {
    local os arch
    case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) os=unknown ;; esac
    case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=unknown ;; esac
    echo "$os-$arch"
}

declare -A BINS=()
if [ $# -eq 0 ]; then
    BINS[$(host_platform)]="$root/target/release"
fi
for arg in "$@"; do
    [[ $arg == *=* ]] || usage
    BINS[${arg%%=*}]=${arg#*=}
done
for platform in "${!BINS[@]}"; do
    [ -n "${TARGETS[$platform]:-}" ] || {
        echo "build.sh: unknown platform $platform (known: ${!TARGETS[*]})" >&2
        exit 2
    }
    for bin in acp-question-bridge acp-mock-agent; do
        [ -x "${BINS[$platform]}/$bin" ] || {
            echo "build.sh: no executable ${BINS[$platform]}/$bin for $platform (cargo build --release first)" >&2
            exit 2
        }
    done
done

# The crate's metadata, read by cargo itself.
meta=$(cd "$root" && cargo metadata --no-deps --format-version 1 --offline)
field() { node -e 'const m=JSON.parse(require("fs").readFileSync(0,"utf8")).packages.find(p=>p.name==="acp-question-bridge"); process.stdout.write(String(m[process.argv[1]]??""))' "$1" <<<"$meta"; }
version=$(field version)
description=$(field description)
license=$(field license)
repository=$(field repository)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# package.json from the arguments (name=value; a value that starts with [ or { is JSON).
manifest() {
    node -e '
        const m = {};
        for (const a of process.argv.slice(1)) {
            const i = a.indexOf("=");
            const k = a.slice(0, i), v = a.slice(i + 1);
            m[k] = /^[\[{]/.test(v) ? JSON.parse(v) : v;
        }
        process.stdout.write(JSON.stringify(m, null, 2) + "\n");
    ' "$@"
}
repo_json=$(node -e 'process.stdout.write(JSON.stringify({type: "git", url: "git+" + process.argv[1] + ".git"}))' "$repository")

pack() {
    (cd "$1" && npm pack --silent --pack-destination "$out" 2>/dev/null) | sed "s|^|$out/|"
}

for platform in "${!BINS[@]}"; do
    dir="$stage/$platform"
    mkdir -p "$dir/bin"
    cp "${BINS[$platform]}/acp-question-bridge" "${BINS[$platform]}/acp-mock-agent" "$dir/bin/"
    chmod 755 "$dir/bin/"*
    cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$dir/"
    os=${platform%-*}
    cpu=${platform#*-}
    libc=()
    [ "$os" = linux ] && libc=('libc=["glibc"]')
    manifest \
        "name=acp-question-bridge-$platform" \
        "version=$version" \
        "description=The $platform binaries of acp-question-bridge (${TARGETS[$platform]}); install acp-question-bridge, which depends on this" \
        "license=$license" \
        "repository=$repo_json" \
        "os=[\"$os\"]" \
        "cpu=[\"$cpu\"]" \
        "${libc[@]}" \
        'files=["bin", "LICENSE-MIT", "LICENSE-APACHE"]' \
        >"$dir/package.json"
    pack "$dir"
done

dir="$stage/launcher"
cp -r "$here/launcher" "$dir"
cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$dir/"
deps=$(node -e '
    const v = process.argv[1], d = {};
    for (const p of process.argv.slice(2)) d["acp-question-bridge-" + p] = v;
    process.stdout.write(JSON.stringify(d));
' "$version" "${!TARGETS[@]}")
manifest \
    "name=acp-question-bridge" \
    "version=$version" \
    "description=$description" \
    "license=$license" \
    "repository=$repo_json" \
    'keywords=["acp", "agent-client-protocol", "ai-agents", "zed", "neovim"]' \
    'bin={"acp-question-bridge": "bin/acp-question-bridge.js", "acp-mock-agent": "bin/acp-mock-agent.js"}' \
    'files=["bin", "launch.js", "README.md", "LICENSE-MIT", "LICENSE-APACHE"]' \
    'engines={"node": ">=18"}' \
    "optionalDependencies=$deps" \
    >"$dir/package.json"
pack "$dir"
