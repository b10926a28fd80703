"""A test agent (tests/it/wrappers.rs): reads its stdin to the end and keeps running (an agent
that ignores stdin EOF); on SIGTERM it notes "term", takes 100 ms to stop and notes "clean"
as its very last act. Notes go to the file named by $AGENT_REPORT, one "<word> <pid>" a line.
"""
import os
import signal
import sys
import time


def note(word):
    with open(os.environ["AGENT_REPORT"], "a") as f:
        f.write(f"{word} {os.getpid()}\n")


def on_term(*_):
    note("term")
    time.sleep(0.1)
    note("clean")
    os._exit(0)


def main():
    signal.signal(signal.SIGTERM, on_term)
    note("ready")
    sys.stdin.buffer.read()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
