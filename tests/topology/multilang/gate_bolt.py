"""A bolt speaking the multi-lang protocol by hand that answers its handshake only once
``N`` subprocesses of it have started: ``gate_bolt.py MARKERS N`` leaves a file named by its
pid in the folder MARKERS, then waits (up to 60 s) until N files are there. Then it acks every
tuple, and answers heartbeats with ``sync``."""
import os
import sys
import time

from raw_protocol import read, send

markers, n = sys.argv[1], int(sys.argv[2])
handshake = read()
open(os.path.join(markers, str(os.getpid())), "w").close()
deadline = time.monotonic() + 60
while len(os.listdir(markers)) < n:
    if time.monotonic() > deadline:
        sys.exit(f"only {len(os.listdir(markers))} of {n} subprocesses started")
    time.sleep(0.01)
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
while True:
    tup = read()
    if tup.get("stream") == "__heartbeat":
        send({"command": "sync"})
    else:
        send({"command": "ack", "id": tup["id"]})
