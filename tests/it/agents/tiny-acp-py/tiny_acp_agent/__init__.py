"""A tiny ACP agent for tests (tests/it/registry_agents.rs), as a Python package run by uvx:
it answers initialize and session/new, and for each prompt asks the client one tool
approval (session/request_permission), then says which option came back and ends the turn.
"""
import json
import sys


def send(message):
    message["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    prompt = None
    for line in sys.stdin:
        if not line.strip():
            continue
        m = json.loads(line)
        method = m.get("method")
        if method == "initialize":
            send({"id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {},
                  "authMethods": [], "agentInfo": {"name": "tiny-acp-agent", "version": "1.0.0"}}})
        elif method == "session/new":
            send({"id": m["id"], "result": {"sessionId": "tiny-1"}})
        elif method == "session/prompt":
            prompt = m
            send({"id": "ask-1", "method": "session/request_permission", "params": {
                "sessionId": m["params"]["sessionId"],
                "toolCall": {"toolCallId": "tool-1", "title": "Run the tiny tool", "kind": "execute"},
                "options": [
                    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                ]}})
        elif m.get("id") == "ask-1" and prompt is not None:
            outcome = (m.get("result") or {}).get("outcome") or {}
            chosen = outcome.get("optionId") or json.dumps(outcome)
            send({"method": "session/update", "params": {"sessionId": prompt["params"]["sessionId"],
                  "update": {"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": f"tiny got: {chosen}"}}}})
            send({"id": prompt["id"], "result": {"stopReason": "end_turn"}})
            prompt = None
        elif "id" in m and method:
            send({"id": m["id"], "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
