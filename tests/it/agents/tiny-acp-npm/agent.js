#!/usr/bin/env node
// A tiny ACP agent for tests (tests/it/registry_agents.rs), as an npm package: it answers
// initialize and session/new, and for each prompt asks the client one tool approval
// (session/request_permission), then says which option came back and ends the turn.
"use strict";
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
let prompt = null;
let buf = "";
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line.trim()) handle(JSON.parse(line));
  }
});
function handle(m) {
  if (m.method === "initialize") {
    send({ id: m.id, result: { protocolVersion: 1, agentCapabilities: {}, authMethods: [],
      agentInfo: { name: "tiny-acp-agent", version: "1.0.0" } } });
  } else if (m.method === "session/new") {
    send({ id: m.id, result: { sessionId: "tiny-1" } });
  } else if (m.method === "session/prompt") {
    prompt = m;
    send({ id: "ask-1", method: "session/request_permission", params: {
      sessionId: m.params.sessionId,
      toolCall: { toolCallId: "tool-1", title: "Run the tiny tool", kind: "execute" },
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ] } });
  } else if (m.id === "ask-1" && prompt) {
    const outcome = m.result && m.result.outcome;
    const chosen = outcome && outcome.optionId ? outcome.optionId : JSON.stringify(outcome);
    send({ method: "session/update", params: { sessionId: prompt.params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `tiny got: ${chosen}` } } } });
    send({ id: prompt.id, result: { stopReason: "end_turn" } });
    prompt = null;
  } else if (m.id !== undefined && m.method) {
    send({ id: m.id, error: { code: -32601, message: "method not found" } });
  }
}
process.stdin.on("end", () => process.exit(0));
