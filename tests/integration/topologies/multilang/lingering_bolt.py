"""A bolt speaking the multi-lang protocol by hand that, as Storm's storm.js does, does not
leave at the end of its stdin (a timer keeps it running): only a signal ends it. Acks what
it gets; its stdin's end, or its stdout's, leaves it sleeping."""
import json
import os
import sys
import time


def linger():
    while True:         # as a Node bolt with a timer does
        time.sleep(1)


def read():
    lines = []
    while True:
        line = sys.stdin.readline()
        if not line:
            linger()
        if line == "end\n":
            return json.loads("".join(lines))
        lines.append(line)


def send(message):
    try:
        sys.stdout.write(json.dumps(message) + "\nend\n")
        sys.stdout.flush()
    except OSError:     # nobody reads its stdout any more
        sys.stdout = open(os.devnull, "w")
        linger()


handshake = read()
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
while True:
    tup = read()
    send({"command": "sync"} if tup.get("stream") == "__heartbeat" else
         {"command": "ack", "id": tup["id"]})
