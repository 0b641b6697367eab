"""The multi-lang protocol's framing by hand (no library), for the test subprocesses here:
JSON messages on stdin and stdout, each followed by a line ``end``."""
import json
import sys


def read():
    """The next message from stdin; the process exits at its end."""
    lines = []
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        if line == "end\n":
            return json.loads("".join(lines))
        lines.append(line)


def send(message):
    sys.stdout.write(json.dumps(message) + "\nend\n")
    sys.stdout.flush()
