#!/usr/bin/env bash
# Makes the npm packages of acp-question-bridge with `npm pack`, the way esbuild ships:
#
# - `acp-question-bridge`: its bin `acp-question-bridge` (launcher/bin/), a Node.js shim that
#   its postinstall (launcher/install.js) replaces with this platform's native binary; one
#   optional dependency per platform;
# - `acp-question-bridge-<platform>`: that platform's binary, with `os`, `cpu` (and `libc` on
#   Linux) set so npm installs only the one that fits. One binary: the mock agent is
#   `acp-question-bridge mock-agent` (docs/INSTALL.md, "With npm").
#
#   packaging/npm/build.sh OUT_DIR                       # this machine's platform, from target/dist
#   packaging/npm/build.sh OUT_DIR linux-x64=DIR ...     # each platform's binary from DIR
#
# The binaries are those of the dist profile (`cargo build --profile dist --locked --bins`:
# stripped); a Linux binary with debug info or symbols is refused. Needs node and npm, not
# cargo: the version, description, license and repository are read from Cargo.toml. Every
# platform in PLATFORMS is a dependency of the launcher; only those given here are packed
# (the release workflow gives all of them). Prints the tarballs it made, and on stderr
# their sizes; a command that fails is named, with what it said.
set -euo pipefail
trap 'echo "build.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() { echo "usage: packaging/npm/build.sh OUT_DIR [PLATFORM=BIN_DIR]..." >&2; exit 2; }
[ $# -ge 1 ] || usage
for tool in node npm; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool is not on PATH (Node.js 18 or newer with npm)" >&2; exit 2; }
done
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
    target_dir=${CARGO_TARGET_DIR:-$root/target}
    BINS[$(host_platform)]="$target_dir/dist"
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
    bin="${BINS[$platform]}/acp-question-bridge"
    [ -x "$bin" ] || {
        echo "build.sh: no executable $bin for $platform (cargo build --profile dist --locked --bins first)" >&2
        exit 2
    }
    unstripped=$(node "$here/debug-sections.js" "$bin")
    [ -z "$unstripped" ] || {
        echo "build.sh: $bin has debug info or symbols (${unstripped//$'\n'/ }): build it with --profile dist, which strips" >&2
        exit 2
    }
done

# The crate's metadata, from the [package] table of Cargo.toml (its simple `key = "value"`
# lines; a TOML basic string reads as a JSON string).
field() {
    node -e '
        const toml = require("fs").readFileSync(process.argv[1], "utf8");
        const pkg = toml.split(/^\[package\]$/m)[1]?.split(/^\[/m)[0] ?? "";
        const line = pkg.split("\n").find((l) => l.startsWith(process.argv[2] + " = \""));
        if (!line) { console.error(`build.sh: no ${process.argv[2]} = "..." in [package] of Cargo.toml`); process.exit(1); }
        process.stdout.write(JSON.parse(line.slice(line.indexOf("=") + 1).trim()));
    ' "$root/Cargo.toml" "$1"
}
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

# `npm pack` of folder $1 into $out: prints the tarball's path, and its sizes on stderr. If
# npm fails, everything it said is shown.
pack() {
    if ! (cd "$1" && npm pack --json --pack-destination "$out") >"$stage/pack.out" 2>"$stage/pack.err"; then
        echo "build.sh: \`npm pack --json --pack-destination $out\` of the $(basename "$1") package failed:" >&2
        cat "$stage/pack.out" "$stage/pack.err" >&2
        exit 1
    fi
    node -e '
        const [p] = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const mb = (n) => (n < 1e6 ? (n / 1e3).toFixed(1) + " kB" : (n / 1e6).toFixed(1) + " MB");
        console.error(`build.sh: ${p.filename}: ${mb(p.size)}, unpacked ${mb(p.unpackedSize)}, ${p.entryCount} files`);
        console.log(require("path").join(process.argv[2], p.filename));
    ' "$stage/pack.out" "$out"
}

for platform in "${!BINS[@]}"; do
    dir="$stage/$platform"
    mkdir -p "$dir/bin"
    cp "${BINS[$platform]}/acp-question-bridge" "$dir/bin/"
    chmod 755 "$dir/bin/acp-question-bridge"
    cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$dir/"
    os=${platform%-*}
    cpu=${platform#*-}
    libc=()
    [ "$os" = linux ] && libc=('libc=["glibc"]')
    manifest \
        "name=acp-question-bridge-$platform" \
        "version=$version" \
        "description=The $platform binary of acp-question-bridge (${TARGETS[$platform]}); install acp-question-bridge, which depends on this" \
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
chmod 755 "$dir/bin/acp-question-bridge"
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
    'bin={"acp-question-bridge": "bin/acp-question-bridge"}' \
    'scripts={"postinstall": "node install.js"}' \
    'files=["bin", "launch.js", "install.js", "README.md", "LICENSE-MIT", "LICENSE-APACHE"]' \
    'engines={"node": ">=18"}' \
    "optionalDependencies=$deps" \
    >"$dir/package.json"
pack "$dir"
