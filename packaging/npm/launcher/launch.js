// Finds the binary of this platform's package (an optional dependency, installed by npm only
// where its `os`, `cpu` and `libc` fit), for install.js, which puts it in the place of the
// bin, and for the shim (bin/acp-question-bridge), which runs it where that was not done.
//
// What the shim keeps, so that a bridge behind it behaves as the native one:
// - stdin, stdout and stderr are the binary's own (inherited file descriptors): nothing is
//   read, re-framed or buffered here, so the ACP stream is the binary's, byte for byte.
// - Every signal that can be caught is forwarded to the binary, and the binary's exit is
//   passed back: its exit code, or death by the same signal.
// - The bridge runs in a session of its own (`detached`), so a signal sent to the shim's
//   whole process group (Ctrl-C in a terminal, an editor stopping its agent server) reaches
//   it once, forwarded, and not twice: to the bridge a second signal means "SIGKILL the
//   agent now". The mock agent (`acp-question-bridge mock-agent`) stays in the shim's
//   group, like any agent, so that the bridge's signals to its agent's group reach it.
// - A platform with no package is a clear error that names the platform.
"use strict";

const { spawn } = require("node:child_process");
const os = require("node:os");
const path = require("node:path");

// The signals forwarded: all that Node can listen for and a process may want to pass on.
// (SIGKILL and SIGSTOP cannot be caught; the job-control signals stay the shim's.)
const FORWARDED = [
  "SIGINT",
  "SIGTERM",
  "SIGHUP",
  "SIGQUIT",
  "SIGUSR1",
  "SIGUSR2",
  "SIGWINCH",
  "SIGALRM",
];

// The platforms that have a package: `${process.platform}-${process.arch}`.
const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"];

// This platform's binary: `{ path }`, or `{ error }` saying why there is none.
function findBinary() {
  const platform = `${process.platform}-${process.arch}`;
  const pkg = `acp-question-bridge-${platform}`;
  if (!PLATFORMS.includes(platform)) {
    return {
      error:
        `acp-question-bridge: there is no build for this platform (${platform}); ` +
        `builds exist for ${PLATFORMS.join(", ")}. Build it from source: cargo install acp-question-bridge`,
    };
  }
  try {
    const dir = path.dirname(require.resolve(`${pkg}/package.json`));
    return { path: path.join(dir, "bin", "acp-question-bridge") };
  } catch {
    const { version } = require("./package.json");
    return {
      error:
        `acp-question-bridge: the package with the binary for this platform (${platform}), ${pkg}, ` +
        `is not installed. npm installs it as an optional dependency, so it is missing where ` +
        `optional dependencies were left out (--omit=optional, --no-optional) or where ` +
        `acp-question-bridge was installed from its tarball alone. Install it beside it: ` +
        `npm install ${pkg}@${version} (or its tarball, ${pkg}-${version}.tgz).`,
    };
  }
}

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

// A signal sent to the whole process group that `npx` runs in can reach the shim twice
// where npm forwards it to its child as well. The same signal again within this long is
// taken for that echo, and not forwarded a second time: to the bridge a second signal means
// "SIGKILL the agent now".
const ECHO_MS = 250;

// Runs the bridge with this process's arguments and stdio, as described at the top.
function launch() {
  const found = findBinary();
  if (found.error) fail(found.error);
  const args = process.argv.slice(2);
  const child = spawn(found.path, args, {
    stdio: "inherit",
    detached: args[0] !== "mock-agent",
  });
  const forward = {};
  const last = {};
  for (const sig of FORWARDED) {
    forward[sig] = () => {
      const now = Date.now();
      if (last[sig] !== undefined && now - last[sig] < ECHO_MS) return;
      last[sig] = now;
      try {
        child.kill(sig);
      } catch {
        // The binary is gone already; its exit is on its way.
      }
    };
    process.on(sig, forward[sig]);
  }
  child.on("error", (e) => fail(`acp-question-bridge: cannot run ${found.path}: ${e.message}`));
  child.on("exit", (code, signal) => {
    if (signal) {
      // Die of the same signal, so whoever waits for the shim sees what the binary did.
      // With no listener left, Node gives the signal back its default action.
      if (forward[signal]) process.removeListener(signal, forward[signal]);
      process.kill(process.pid, signal);
      // Still here (a signal whose default Node keeps for itself): the shell's convention.
      process.exit(128 + (os.constants.signals[signal] ?? 0));
    }
    process.exit(code ?? 1);
  });
}

module.exports = launch;
module.exports.findBinary = findBinary;
