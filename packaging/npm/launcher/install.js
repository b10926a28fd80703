// The package's postinstall, as esbuild's: puts this platform's native binary where the
// `acp-question-bridge` bin points (bin/acp-question-bridge, a Node.js shim as packed), so
// that `acp-question-bridge` on PATH, in node_modules/.bin and under npx is the native
// process: no Node.js started first (70-140 ms) and none waiting beside the bridge for its
// whole life (41.6 MiB). A copy of the platform package's binary (never a hard link: the
// bridge walls its program by the name it is started by, and a second name would stay
// writable to the agent), put in place by one rename: the bin is the shim or the binary,
// never half of either.
//
// Anything that does not fit leaves the shim, which runs the same binary, and never fails
// the install:
// - install scripts off (`--ignore-scripts`): this does not run;
// - a package manager other than npm: pnpm writes its .bin entries as shell scripts that run
//   `node FILE` when FILE began with `#!/usr/bin/env node` as it linked them, which may be
//   before this runs; Yarn's PnP runs bins through its own loader; so only npm's symlinked
//   bins (npm_config_user_agent `npm/...`) get the binary;
// - no platform package (another platform, `--omit=optional`): the shim says what to do;
// - a binary that does not run here, or answers `--version` with another version.
"use strict";

const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const { findBinary } = require("./launch.js");

function keepShim(why) {
  process.stderr.write(`acp-question-bridge: keeping the Node.js launcher: ${why}\n`);
}

function main() {
  const agent = process.env.npm_config_user_agent || "";
  if (!agent.startsWith("npm/")) {
    return keepShim(`installed by ${agent.split(" ")[0] || "an unknown package manager"}, not npm`);
  }
  const found = findBinary();
  if (found.error) return keepShim(found.error);

  const { version } = require("./package.json");
  let said;
  try {
    said = execFileSync(found.path, ["--version"], { encoding: "utf8", timeout: 10000 }).trim();
  } catch (e) {
    return keepShim(`${found.path} --version failed: ${e.message}`);
  }
  if (said !== `acp-question-bridge ${version}`) {
    return keepShim(`${found.path} --version said "${said}", not acp-question-bridge ${version}`);
  }

  const bin = path.join(__dirname, "bin", "acp-question-bridge");
  const tmp = path.join(__dirname, "bin", ".acp-question-bridge.native");
  try {
    fs.rmSync(tmp, { force: true });
    // A copy, never a hard link: the bridge walls its program by the name it is started
    // by, and a second name would stay writable to the agent (docs/SECURITY.md).
    fs.copyFileSync(found.path, tmp);
    fs.chmodSync(tmp, 0o755);
    fs.renameSync(tmp, bin);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    return keepShim(`cannot put ${found.path} in place of ${bin}: ${e.message}`);
  }
}

main();
