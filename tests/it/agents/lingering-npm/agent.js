#!/usr/bin/env node
// A test agent (tests/it/wrappers.rs): reads its stdin to the end and keeps running (an agent
// that ignores stdin EOF); on SIGTERM it notes "term" (on SIGINT "int"), takes 100 ms to
// stop ($AGENT_STOP_MS if set: a session file flushed, MCP servers stopped) and notes
// "clean" as its very last act. Notes go to the file named by $AGENT_REPORT, one
// "<word> <pid>" a line.
"use strict";
const fs = require("fs");
const note = (word) => fs.appendFileSync(process.env.AGENT_REPORT, `${word} ${process.pid}\n`);
const stopMs = Number(process.env.AGENT_STOP_MS || 100);
let stopping = false;
const stop = (word) => {
  note(word);
  if (stopping) return;
  stopping = true;
  setTimeout(() => {
    note("clean");
    process.exit(0);
  }, stopMs);
};
process.on("SIGTERM", () => stop("term"));
process.on("SIGINT", () => stop("int"));
process.stdin.resume();
setInterval(() => {}, 1 << 30);
note("ready");
