"""A held session's relay with --linger: a front around the mock agent, `initialize`,
`session/new`, then a prompt `flood N BYTES`, timed from the prompt to its result at the
client. Usage: python3 bench/linger_flood.py BRIDGE_BIN MOCK_BIN N BYTES
"""
import json, os, subprocess, sys, time, tempfile
bin_, mock, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
work = tempfile.mkdtemp()
env = dict(os.environ, ACP_QUESTION_BRIDGE_REGISTRY=os.path.join(work, "r"))
os.mkdir(env["ACP_QUESTION_BRIDGE_REGISTRY"], 0o700)
p = subprocess.Popen([bin_, "--linger", "0s", "--no-policy", "--no-control", "--", mock],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=work, env=env)
def send(m): p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def until_id(i):
    for line in p.stdout:
        if b'"id":%d' % i in line and b'"result"' in line or (b'"id":%d,' % i in line): return
send({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}); until_id(0)
send({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":work,"mcpServers":[]}}); until_id(1)
t = time.perf_counter()
send({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"mock-session-1","prompt":[{"type":"text","text":f"flood {n} {size}"}]}})
lines = 0
for line in p.stdout:
    lines += 1
    if line.startswith(b'{"jsonrpc":"2.0","id":2,'): break
dt = time.perf_counter() - t
p.stdin.close(); p.wait()
print(f"{dt*1000:.0f} ms {lines} lines")
