#!/usr/bin/env python3
"""The session flood: one prompt turn whose agent streams MIB MiB of small
`session/update` notifications, timed at a Python client from its `session/prompt`
to the prompt's response, through each stack given.

  flood.py agent [MIB] [TEXT] [buffer|line]
                                   an ACP agent (v1) that floods on every prompt, in one
                                   write (buffer) or one write per message (line)
  flood.py bench [--rounds N] [--mib M] [--text T] [--writes buffer|line] NAME=COMMAND ...
                                   runs each COMMAND as the client's peer, the stacks
                                   interleaved round by round; in COMMAND, the word
                                   "{agent}" is replaced by the agent's argv, and
                                   "{agent-line}" by its command line as one word

The last column is the CPU time the stack's processes (the agent's included) used during
the turn, from /proc. The agent writes a prebuilt buffer, and the client reads 1 MiB at a time and only counts
lines, so both ends cost as little as Python can: what differs between stacks is the
stack. Every run checks that every line arrived. bench/flood.sh runs it for the bridge,
direct and sacp-conductor.
"""

import json
import os
import shlex
import statistics
import subprocess
import sys
import time

SESSION = "flood-session-1"


def line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def flood_lines(mib, text):
    one = line(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": SESSION,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                },
            },
        }
    )
    count = (mib << 20) // len(one)
    return one * count, count


def agent(mib, text, per_line=False):
    blob, count = flood_lines(mib, text)
    size = len(blob) // count
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        msg = json.loads(raw)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "authMethods": [],
            }
        elif method == "session/new":
            result = {"sessionId": SESSION}
        elif method == "session/prompt":
            if per_line:
                # One write per message, as agents that flush each one do.
                fd = out.fileno()
                view = memoryview(blob)
                for at in range(0, len(blob), size):
                    os.write(fd, view[at : at + size])
            else:
                out.write(blob)
            result = {"stopReason": "end_turn"}
        else:
            out.write(line({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not found"}}))
            out.flush()
            continue
        out.write(line({"jsonrpc": "2.0", "id": mid, "result": result}))
        out.flush()


class Peer:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.fd = self.proc.stdout.fileno()
        self.buf = b""

    def send(self, obj):
        self.proc.stdin.write(line(obj))
        self.proc.stdin.flush()

    def reply(self, mid):
        """The response to `mid` (the lines before it are skipped)."""
        while True:
            nl = self.buf.find(b"\n")
            if nl < 0:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    raise RuntimeError("peer closed its stdout")
                self.buf += chunk
                continue
            raw, self.buf = self.buf[:nl], self.buf[nl + 1 :]
            msg = json.loads(raw)
            if msg.get("id") == mid and "method" not in msg:
                return msg

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def tree_cpu(pid):
    """CPU seconds (user + system) used so far by `pid` and its living descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / tick


def one_run(argv, expected_lines):
    peer = Peer(argv)
    try:
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "flood.py", "version": "1"}},
            }
        )
        peer.reply(1)
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}})
        sid = peer.reply(2)["result"]["sessionId"]
        marker = b'"stopReason"'
        cpu0 = tree_cpu(peer.proc.pid)
        start = time.perf_counter()
        peer.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "flood"}]}})
        lines = 0
        tail = peer.buf
        peer.buf = b""
        while True:
            if marker in tail:
                break
            chunk = os.read(peer.fd, 1 << 20)
            if not chunk:
                raise RuntimeError("peer closed its stdout during the flood")
            lines += chunk.count(b"\n")
            # The marker may straddle two reads: keep the last partial line.
            tail = tail[-64:] + chunk if marker not in chunk else chunk
        elapsed = time.perf_counter() - start
        cpu = tree_cpu(peer.proc.pid) - cpu0
        # The response's own line, and perhaps lines after it, were counted too.
        if lines < expected_lines:
            raise RuntimeError(f"{lines} lines arrived, {expected_lines} expected")
        return elapsed, cpu
    finally:
        peer.close()


def bench(args):
    rounds, mib, text, writes = 7, 64, "x" * 24, "buffer"
    stacks = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--rounds":
            rounds, i = int(args[i + 1]), i + 2
        elif a == "--mib":
            mib, i = int(args[i + 1]), i + 2
        elif a == "--writes":
            writes, i = args[i + 1], i + 2
        elif a == "--text":
            text, i = args[i + 1], i + 2
        else:
            name, _, cmd = a.partition("=")
            stacks.append((name, cmd))
            i += 1
    if not stacks:
        sys.exit("flood.py bench: give at least one NAME=COMMAND")
    me = shlex.quote(os.path.abspath(__file__))
    agent_cmd = f"{shlex.quote(sys.executable)} {me} agent {mib} {shlex.quote(text)} {writes}"
    _, expected = flood_lines(mib, text)
    times = {name: [] for name, _ in stacks}
    cpus = {name: [] for name, _ in stacks}
    for r in range(rounds):
        for name, cmd in stacks:
            argv = []
            for word in shlex.split(cmd):
                if word == "{agent}":
                    argv += shlex.split(agent_cmd)
                else:
                    argv.append(word.replace("{agent-line}", agent_cmd))
            elapsed, cpu = one_run(argv, expected)
            times[name].append(elapsed)
            cpus[name].append(cpu)
        print(f"round {r + 1}: " + ", ".join(f"{n} {times[n][-1]:.3f} s" for n, _ in stacks), file=sys.stderr)
    first = stacks[0][0]
    print(f"{expected} session/update lines, {mib} MiB, written as one {writes if writes == 'buffer' else 'write per line'}, {rounds} rounds interleaved")
    print("| stack | median | min | max | median / direct | CPU of the stack (median) |")
    print("|---|---|---|---|---|---|")
    base = statistics.median(times["direct"]) if "direct" in times else statistics.median(times[first])
    for name, _ in stacks:
        t = times[name]
        med = statistics.median(t)
        print(f"| {name} | {med:.3f} s | {min(t):.3f} s | {max(t):.3f} s | {med / base:.2f}x | {statistics.median(cpus[name]):.3f} s |")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "agent":
        mib = int(sys.argv[2]) if len(sys.argv) > 2 else 64
        text = sys.argv[3] if len(sys.argv) > 3 else "x" * 24
        agent(mib, text, len(sys.argv) > 4 and sys.argv[4] == "line")
    elif len(sys.argv) >= 2 and sys.argv[1] == "bench":
        bench(sys.argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
