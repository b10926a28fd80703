#!/usr/bin/env python3
"""The inbox across machines under node failures (issue 52): a 3-node JetStream cluster on
loopback (Debian's nats-server, or $NATS_SERVER), BRIDGES bridges around the mock agent
asking tool approvals turn after turn, and one `inbox --nats` answering most of them; a
node SIGKILLed every KILL_EVERY seconds and started again 10 s later, for SOAK_SECS.

  cargo build --release --locked --bins && bench/nats_soak.py      # 10 minutes
  SOAK_SECS=120 KILL_EVERY=30 ACPQB_BIN=target/debug bench/nats_soak.py

Each turn the agent asks one approval. The inbox answers it `allow` (60% of turns), or the
IDE answers `reject`; when the inbox says its answer failed, the IDE answers `reject`.
Checked for every turn: exactly one answer reaches the agent (nothing lost, nothing
twice), and it is the one the side told "answered" gave. An answer the inbox reported as
not sent (`not connected`) that reaches the agent anyway is a failure; one reported as sent
without a reply (the inbox says it was taken before its deadline or never) is counted
apart. Exits non-zero on any failure.
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import queue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("ACPQB_BIN", os.path.join(ROOT, "target/release"))
BRIDGE = os.path.join(BIN, "acp-question-bridge")
MOCK = os.path.join(BIN, "acp-mock-agent")
NATS = os.environ.get("NATS_SERVER", "/usr/sbin/nats-server")
SECS = float(os.environ.get("SOAK_SECS", "600"))
KILL_EVERY = float(os.environ.get("KILL_EVERY", "60"))
BRIDGES = int(os.environ.get("BRIDGES", "3"))
WAIT = 30.0


def free_ports(n):
    held = [socket.socket() for _ in range(n)]
    for s in held:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in held]
    for s in held:
        s.close()
    return ports


class Node:
    def __init__(self, i, port, cport, routes, store):
        self.args = [NATS, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", store,
                     "-n", f"n{i}", "--cluster_name", "soak", "--cluster",
                     f"nats://127.0.0.1:{cport}", "--routes", routes]
        self.url = f"nats://127.0.0.1:{port}"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            if "Server is ready" in line:
                break
        threading.Thread(target=lambda p=self.proc: [None for _ in p.stderr], daemon=True).start()

    def kill(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


class Peer:
    """A process spoken to in JSON lines on stdio (a bridge, as its IDE client)."""

    def __init__(self, argv, env, log):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(log, "wb"), env=env)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.q.put(json.loads(line))
            except ValueError:
                pass
        self.q.put(None)

    def send(self, obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def until(self, pred, timeout=WAIT):
        between, end = [], time.time() + timeout
        while True:
            m = self.q.get(timeout=max(0.01, end - time.time()))
            if m is None:
                raise RuntimeError("the bridge closed its stdout")
            if pred(m):
                return m, between
            between.append(m)


def approval_of(m):
    t = (((m.get("params") or {}).get("update") or {}).get("content") or {}).get("text", "")
    return t if m.get("method") == "session/update" and t.startswith("approve: ") else None


class Inbox:
    def __init__(self, urls, tmp):
        self.token = os.urandom(16).hex()
        env = dict(os.environ, ACP_QUESTION_BRIDGE_TOKEN=self.token)
        self.proc = subprocess.Popen([BRIDGE, "inbox", "--nats", urls, "--registry",
                                      os.path.join(tmp, "none")], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            if line.startswith("acp-question-bridge: questions page: "):
                self.base = line.split(": ", 2)[2].split(" ")[0]
                break
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
        self.lock = threading.Lock()

    def call(self, method, params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        req = urllib.request.Request(self.base, body, {"Content-Type": "application/json",
                                                       "Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=WAIT) as r:
            return json.loads(r.read())


stats = {k: 0 for k in ["turns", "inbox answered", "inbox not sent", "inbox sent, no reply",
                        "inbox: not pending (listed late)",
                        "inbox no reply, taken", "not listed in time", "ide answered",
                        "kills", "failures"]}
failures = []
lock = threading.Lock()


def count(k, n=1):
    with lock:
        stats[k] += n


def fail(why):
    with lock:
        stats["failures"] += 1
        failures.append(why)


def turns(n, bridge, inbox, stop):
    try:
        run_turns(n, bridge, inbox, stop)
    except Exception as e:  # a turn that never ends is a failure too
        fail(f"bridge {n}: {type(e).__name__}: {e}")


def run_turns(n, bridge, inbox, stop):
    bridge.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    bridge.until(lambda m: m.get("id") == 0)
    bridge.send({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                 "params": {"cwd": "/tmp", "mcpServers": []}})
    sid = bridge.until(lambda m: m.get("id") == 1)[0]["result"]["sessionId"]
    pid = bridge.proc.pid
    done_ids = set()  # questions of earlier turns, which the inbox may still list a moment
    rid = 1
    while not stop.is_set():
        rid += 1
        bridge.send({"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "approve"}]}})
        asked, _ = bridge.until(lambda m: m.get("method") == "session/request_permission")
        expect, ambiguous = None, False
        if random.random() < 0.6:
            q, end = None, time.time() + 5
            while q is None and time.time() < end:
                with inbox.lock:
                    listed = inbox.call("questions.list", {}).get("result", [])
                q = next((x for x in listed if x.get("bridge", {}).get("pid") == pid
                          and x.get("questionId") not in done_ids), None)
                if q is None:
                    time.sleep(0.1)
            if q is None:
                count("not listed in time")
            else:
                done_ids.add(q["questionId"])
                r = inbox.call("questions.answer", {
                    "bridge": q["bridge"]["id"], "sessionId": q["sessionId"],
                    "questionId": q["questionId"], "answers": [["allow"]]})
                if (r.get("result") or {}).get("status") == "answered":
                    expect = "allow"
                    count("inbox answered")
                else:
                    msg = (r.get("error") or {}).get("message", "")
                    if "not connected" in msg or "no bridge" in msg:
                        count("inbox not sent")
                    elif "not pending" in msg:
                        count("inbox: not pending (listed late)")
                    else:
                        ambiguous = True
                        count("inbox sent, no reply")
        if expect is None:
            bridge.send({"jsonrpc": "2.0", "id": asked["id"], "result": {
                "outcome": {"outcome": "selected", "optionId": "reject"}}})
            expect = "reject"
            count("ide answered")
        done, between = bridge.until(lambda m: m.get("id") == rid, timeout=60)
        got = [a for a in map(approval_of, between) if a]
        count("turns")
        if len(got) != 1:
            fail(f"bridge {n} turn {rid}: {len(got)} answers reached the agent: {got}")
            continue
        taken = "allow" if '"optionId":"allow"' in got[0] else "reject"
        if taken != expect:
            if ambiguous and taken == "allow":
                count("inbox no reply, taken")
            else:
                fail(f"bridge {n} turn {rid}: the agent got {taken}, the side told it won gave {expect}")


def main():
    tmp = tempfile.mkdtemp(prefix="acpqb-nats-soak-")
    ports = free_ports(6)
    routes = ",".join(f"nats://127.0.0.1:{p}" for p in ports[3:])
    nodes = [Node(i, ports[i], ports[3 + i], routes, os.path.join(tmp, f"n{i}")) for i in range(3)]
    for n in nodes:
        n.start()
    urls = ",".join(n.url for n in nodes)
    time.sleep(2)  # the metadata leader
    env = dict(os.environ, ACP_QUESTION_BRIDGE_REGISTRY=os.path.join(tmp, "registry"))
    bridges = [Peer([BRIDGE, "--control", "127.0.0.1:0", "--nats", urls, "--", MOCK], env,
                    os.path.join(tmp, f"bridge{i}.log")) for i in range(BRIDGES)]
    inbox = Inbox(urls, tmp)
    stop = threading.Event()
    workers = [threading.Thread(target=turns, args=(i, b, inbox, stop), daemon=True)
               for i, b in enumerate(bridges)]
    for w in workers:
        w.start()
    start = time.time()
    print(f"nats soak: {SECS:.0f} s, {BRIDGES} bridges, a node killed every {KILL_EVERY:.0f} s, in {tmp}", flush=True)
    while time.time() - start < SECS:
        time.sleep(min(KILL_EVERY, max(0, SECS - (time.time() - start))))
        if time.time() - start >= SECS:
            break
        victim = random.choice(nodes)
        victim.kill()
        count("kills")
        time.sleep(10)
        victim.start()
        with lock:
            print(f"  {time.time() - start:5.0f} s: killed and restarted {victim.url}; {dict(stats)}", flush=True)
    stop.set()
    for w in workers:
        w.join(timeout=90)
    for b in bridges:
        b.proc.terminate()
    inbox.proc.terminate()
    for n in nodes:
        n.kill()
    print(json.dumps(stats, indent=1))
    for f in failures[:20]:
        print("FAILURE:", f)
    alive = sum(w.is_alive() for w in workers)
    if alive:
        print(f"FAILURE: {alive} bridge(s) stuck in a turn")
    ok = not failures and not alive and stats["turns"] > 0
    print("nats soak ok" if ok else "nats soak FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
