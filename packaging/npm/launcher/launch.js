// The npm launcher: finds the binary of this platform's package (an optional dependency,
// installed by npm only where its `os`, `cpu` and `libc` fit) and runs it.
//
// - stdin, stdout and stderr are the binary's own (inherited file descriptors): nothing is
//   read, re-framed or buffered here, so the ACP stream is the binary's, byte for byte.
// - Every signal that can be caught is forwarded to the binary, and the binary's exit is
//   passed back: its exit code, or death by the same signal.
// - The bridge runs in a session of its own (`detached`), so a signal sent to the launcher's
//   whole process group (Ctrl-C in a terminal, an editor stopping its agent server) reaches
//   it once, forwarded, and not twice: to the bridge a second signal means "SIGKILL the
//   agent now". The mock agent stays in the launcher's group, like any agent, so that the
//   bridge's signals to its agent's group reach it.
// - A platform with no package is a clear error that names the platform.
"use strict";

const { spawn } = require("node:child_process");
const os = require("node:os");
const path = require("node:path");

// The signals forwarded: all that Node can listen for and a process may want to pass on.
// (SIGKILL and SIGSTOP cannot be caught; the job-control signals stay the launcher's.)
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

function binaryPath(name) {
  const platform = `${process.platform}-${process.arch}`;
  const pkg = `acp-question-bridge-${platform}`;
  if (!PLATFORMS.includes(platform)) {
    fail(
      `acp-question-bridge: there is no build for this platform (${platform}); ` +
        `builds exist for ${PLATFORMS.join(", ")}. Build it from source: cargo install acp-question-bridge`,
    );
  }
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", name);
  } catch {
    fail(
      `acp-question-bridge: the package with the binary for this platform (${platform}), ${pkg}, ` +
        `is not installed. npm installs it as an optional dependency: reinstall without ` +
        `--no-optional / --omit=optional, or install ${pkg} yourself.`,
    );
  }
}

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

// A signal sent to the whole process group that `npx` runs in can reach the launcher twice
// where npm forwards it to its child as well (npm 11 was not seen to). The same signal again
// within this long is taken for that echo, and not forwarded a second time: to the bridge a
// second signal means "SIGKILL the agent now".
const ECHO_MS = 250;

module.exports = function launch(name, { ownSession }) {
  const child = spawn(binaryPath(name), process.argv.slice(2), {
    stdio: "inherit",
    detached: ownSession,
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
  child.on("error", (e) => fail(`acp-question-bridge: cannot run ${name}: ${e.message}`));
  child.on("exit", (code, signal) => {
    if (signal) {
      // Die of the same signal, so whoever waits for the launcher sees what the binary did.
      // With no listener left, Node gives the signal back its default action.
      if (forward[signal]) process.removeListener(signal, forward[signal]);
      process.kill(process.pid, signal);
      // Still here (a signal whose default Node keeps for itself): the shell's convention.
      process.exit(128 + (os.constants.signals[signal] ?? 0));
    }
    process.exit(code ?? 1);
  });
};
