#!/usr/bin/env python3
"""Builds the committed seed corpus of every fuzz target from the transcript fixtures.

    python3 fuzz/make_corpus.py        # rewrites fuzz/corpus/<target>/seed-*

A development tool only (nothing in the test or soak path runs it). Deterministic: the same
fixtures give the same files. Each target gets a few dozen small files:

- envelope: single messages as the bridge and the client wrote them, plus odd envelopes;
- codec:    `[limit][n][n bytes]...` streams of fixture lines with CRLF, BOM and blanks;
- question: `<params>\n<client result>` pairs taken from the question flows, and agent forms;
- router:   byte scripts (see tests/it/router_check/mod.rs `Script::decode`) that replay each
            fixture flow as router steps.
"""
import glob
import hashlib
import json
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
QUESTION = "_sandboxagent/session/request_question"


def load():
    flows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "fixtures", "*.jsonl"))):
        steps = []
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    steps.append(json.loads(line))
        flows.append((os.path.basename(path), steps))
    return flows


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


def write(target, files):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    for old in glob.glob(os.path.join(d, "seed-*")):
        os.remove(old)
    seen = set()
    for data in files:
        h = hashlib.sha1(data).hexdigest()[:16]
        if h in seen:
            continue
        seen.add(h)
        with open(os.path.join(d, "seed-" + h), "wb") as f:
            f.write(data)
    return len(seen)


def envelope(flows):
    msgs = []
    for _, steps in flows:
        for s in steps:
            for k in ("client", "bridge"):
                if k in s:
                    msgs.append(compact(s[k]))
    rnd = random.Random(1)
    picked = rnd.sample(msgs, min(40, len(msgs)))
    picked += [
        b'{"jsonrpc":"2.0","id":1e400,"method":"a","params":{"n":1e400}}',
        b'{"jsonrpc":"2.0","id":"1","id":1,"method":"a"}',
        b'{"jsonrpc":"2\\u002e0","id":1,"method":"a"}',
        b'{"jsonrpc":"2.0","error":{"code":-32601,"message":"x"}}',
        b'[{"jsonrpc":"2.0","method":"x"}]',
        b"\xef\xbb\xbf{}",
        b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        b'{"jsonrpc":"2.0","id":null,"result":null}',
    ]
    return picked


def codec(flows):
    lines = []
    for _, steps in flows:
        for s in steps:
            for k in ("client", "bridge"):
                if k in s:
                    lines.append(compact(s[k]))
    rnd = random.Random(2)
    files = []
    for i in range(30):
        chosen = rnd.sample(lines, 3)
        stream = b""
        for j, l in enumerate(chosen):
            l = l[: rnd.randint(10, 90)]
            if j == 0 and i % 3 == 0:
                l = b"\xef\xbb\xbf" + l
            stream += l + (b"\r\n" if i % 2 else b"\n")
            if i % 5 == 0:
                stream += b"\n  \n"
        if i % 4 == 0:
            stream = stream.rstrip(b"\n")
        out = bytes([rnd.randint(0, 63)])
        pos = 0
        while pos < len(stream):
            n = rnd.randint(1, 40)
            chunk = stream[pos : pos + n]
            out += bytes([len(chunk)]) + chunk
            pos += n
        files.append(out)
    return files


def question(flows):
    files = []
    for _, steps in flows:
        asked = {}
        for s in steps:
            b = s.get("bridge")
            if isinstance(b, dict) and b.get("method") in (QUESTION, "elicitation/create"):
                asked[json.dumps(b.get("id"))] = b.get("params", {})
            c = s.get("client")
            if isinstance(c, dict) and "method" not in c and "id" in c:
                params = asked.get(json.dumps(c["id"]))
                if params is not None:
                    answer = c.get("result", c.get("error"))
                    files.append(compact(params) + b"\n" + compact(answer))
        for p in asked.values():
            files.append(compact(p))
    files += [
        b'{"sessionId":"s","questionId":"q","prompt":"p","options":["a",["b","B"],{"label":"C"}],"timeoutMs":1}\n{"status":"answered","answers":["C"]}',
        b'{"sessionId":"s","questionId":"q","questions":[{"question":"a","options":["x","y"],"multiple":true,"custom":true}]}\n{"action":"accept","content":{"q1":["x"],"q1_other":"z"}}',
        b'{"sessionId":"s","mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string","enum":["r","g"]},"b":{"type":"boolean"},"c":{"type":"integer"},"d":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]}}}}}',
    ]
    return files[:60]


# Op codes of Script::decode (tests/it/router_check/mod.rs).
INIT, ASK, PERM, ELICIT, PLAIN, NOTE, ACANCEL, ARESP, ABAD = range(9)
CREQ, CNOTE, CCANCEL, CANSWER, CBAD, TICK, TICK_DEADLINE = range(9, 16)


def router(flows):
    files = []
    rnd = random.Random(3)
    for name, steps in flows:
        ops = []
        end = 0
        dialect = 0
        for s in steps:
            if "args" in s:
                args = s["args"]
                if "--client-dialect" in args:
                    d = args[args.index("--client-dialect") + 1]
                    dialect = {"extension": 1, "elicitation": 2, "permission": 3}.get(d, 0)
            c = s.get("client")
            b = s.get("bridge")
            if isinstance(c, dict):
                m = c.get("method")
                if m == "initialize":
                    caps = c.get("params", {}).get("clientCapabilities", {})
                    native = "_meta" in caps
                    forms = "elicitation" in caps
                    ops += [INIT, (2 if native else 0) + (1 if forms else 0), 0]
                elif m == "session/cancel":
                    ops += [CCANCEL, 0]
                elif m is not None:
                    ops += [CREQ, 0, rnd.randint(0, 255)]
                elif "error" in c:
                    code = c["error"].get("code")
                    ops += [CANSWER, 0, 5 if code == -32601 else 6]
                else:
                    ops += [CANSWER, 0, rnd.choice([0, 1, 2, 3, 4, 7])]
            if isinstance(b, dict):
                m = b.get("method")
                if m == QUESTION:
                    multi = "questions" in b.get("params", {})
                    t = b.get("params", {}).get("timeoutMs")
                    ops += [ASK, 0, rnd.randint(0, 2), 3 if multi else 0, 2 if t else 0, 0, rnd.randint(0, 255)]
                elif m == "session/request_permission":
                    ops += [PERM, 0, rnd.randint(0, 255)]
                elif m == "elicitation/create":
                    ops += [ELICIT, 0, rnd.randint(0, 1), rnd.randint(0, 255)]
                elif m == "$/cancel_request":
                    ops += [ACANCEL, 0]
                elif m == "session/update":
                    ops += [NOTE]
                elif m is None:
                    ops += [ARESP, 0, 1 if "error" in b else 0]
            if "sleep_ms" in s:
                ops += [TICK, 0xE8, 0x03]
            if "close" in s:
                end = 0
        if "crash" in name:
            end = 1
        flags = dialect | (4 if "advertise" in name else 0) | (8 if "timeout" in name else 0)
        head = [flags]
        if flags & 8:
            head += [0xE8, 0x03]
        files.append(bytes(head + [2, end] + [x & 0xFF for x in ops]))
    for i in range(12):
        files.append(bytes(rnd.randint(0, 255) for _ in range(rnd.randint(20, 200))))
    return files


def main():
    flows = load()
    counts = {
        "envelope": write("envelope", envelope(flows)),
        "codec": write("codec", codec(flows)),
        "question": write("question", question(flows)),
        "router": write("router", router(flows)),
    }
    for t, n in counts.items():
        print(f"{t}: {n} seed files")


if __name__ == "__main__":
    main()
