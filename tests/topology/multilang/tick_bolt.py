"""A bolt speaking the multi-lang protocol by hand (no library), for the tick test: each
tick tuple's ``comp``, ``stream``, ``task`` and ``tuple`` as it came on the wire are emitted
as one JSON string (unanchored, no task ids asked); other tuples are acked, heartbeats get
``sync``."""
import json
import os

from raw_protocol import read, send

handshake = read()
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
while True:
    tup = read()
    if isinstance(tup, list):
        continue
    if tup.get("stream") == "__heartbeat":
        send({"command": "sync"})
        continue
    if tup.get("stream") == "__tick":
        seen = {k: tup[k] for k in ("comp", "stream", "task", "tuple")}
        send({"command": "emit", "tuple": [json.dumps(seen)], "need_task_ids": False})
    send({"command": "ack", "id": tup["id"]})
