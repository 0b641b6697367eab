"""A bolt speaking the multi-lang protocol by hand (no library), for protocol tests.

For each tuple ``[x]``: emits ``[x]`` anchored on the default stream *without*
``need_task_ids`` (so the worker answers the task ids, which it reads), then emits
``[x, ids]`` on stream ``ids`` with ``"need_task_ids": false``; updates metric ``seen``;
``x == "bad"``: sends ``error`` and fails the tuple; ``x == "nope"``: emits on an undeclared
stream first, once waiting for the task ids (the worker answers ``[]``) and once with
``"need_task_ids": false``; ``x == "odd"``: first sends, in one write, a ``log`` whose level
is a list and an emit whose ``anchors`` is not a list (the worker reports it and answers
``[]``); otherwise acks. Heartbeats get ``sync``. Each tuple
also goes to the highest ``sink`` task on the direct stream ``pick`` (``"task"``), which, as
in Storm, is not answered: task ids nobody waits for are reported as an ``error``.
"""
import json
import os
import sys

from raw_protocol import read, send

out = sys.stdout


def task_ids(pending):
    while True:
        message = read()
        if isinstance(message, list):
            return message
        pending.append(message)


handshake = read()
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
send({"command": "log", "msg": "raw bolt of task {}".format(handshake["context"]["taskid"]),
      "level": 3})
pending = []
while True:
    tup = pending.pop(0) if pending else read()
    if isinstance(tup, list):
        send({"command": "error", "msg": f"task ids nobody asked for: {tup}"})
        continue
    if tup.get("stream") == "__heartbeat":
        send({"command": "sync"})
        continue
    x = tup["tuple"][0]
    if x == "odd":
        out.write(json.dumps({"command": "log", "msg": "odd level", "level": [1]}) + "\nend\n")
        out.write(json.dumps({"command": "emit", "anchors": 5, "tuple": [x]}) + "\nend\n")
        out.flush()
        assert task_ids(pending) == []
    if x == "nope":
        send({"command": "emit", "stream": "nope", "tuple": [x]})
        assert task_ids(pending) == []
        send({"command": "emit", "stream": "nope", "tuple": [x], "need_task_ids": False})
    send({"command": "emit", "anchors": [tup["id"]], "tuple": [x]})
    ids = task_ids(pending)
    send({"command": "emit", "stream": "ids", "anchors": [tup["id"]],
          "tuple": [x, json.dumps(ids)], "need_task_ids": False})
    sinks = [int(t) for t, c in handshake["context"]["task->component"].items() if c == "sink"]
    send({"command": "emit", "stream": "pick", "anchors": [tup["id"]], "tuple": [x],
          "task": max(sinks)})
    send({"command": "metrics", "name": "seen", "params": 1})
    if x == "bad":
        send({"command": "error", "msg": "bad value"})
        send({"command": "fail", "id": tup["id"]})
    else:
        send({"command": "ack", "id": tup["id"]})
