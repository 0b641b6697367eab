"""The zmq transport's CPU per batch on each side, with the other end in another process.

Run: ``.venv/bin/python -m bench.transport_sides [--batches N] [--tuples T] [--runs R]``.

``bench.transports`` runs sender and receiver as two threads of one process, so each end's
Python work also slows the other through the GIL. Here one side runs in this process and the
other is bare pyzmq in a child process, and the figures are CPU microseconds per batch:

* send: this process's CPU (the calling thread and zmq's I/O thread) per ``send`` of one
  serialized batch of ``T`` word-count tuples, the transport's ``Connection.send`` against a
  bare ``PUSH.send`` of the same blob;
* receive: the receiving thread's CPU per batch, the transport's ``Connection.recv`` against a
  bare poll-then-drain loop that takes everything queued, plus batches per ``recv`` call.

Rows alternate transport / raw, ``--runs`` times each; medians are printed.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import zmq

from bench.transports import tuple_blob
from squall import drivers
from squall.errors import TransportError
from squall.transports.framing import encode

HWM = 2000
PULL_CHILD = """
import sys, zmq
ctx = zmq.Context(); s = ctx.socket(zmq.PULL); s.rcvhwm = int(sys.argv[2])
print(s.bind_to_random_port('tcp://127.0.0.1'), flush=True)
for _ in range(int(sys.argv[1])):
    s.recv(copy=False)
"""
PUSH_CHILD = """
import sys, zmq
ctx = zmq.Context(); s = ctx.socket(zmq.PUSH); s.sndhwm = int(sys.argv[4])
s.connect('tcp://127.0.0.1:' + sys.argv[1])
frame = open(sys.argv[2], 'rb').read()
for _ in range(int(sys.argv[3])):
    s.send(frame)
s.close(linger=-1); ctx.term()
"""


def send_side(raw: bool, blob: bytes, batches: int) -> float:
    """CPU microseconds per send."""
    child = subprocess.Popen([sys.executable, "-c", PULL_CHILD, str(batches + 1), str(HWM)],
                             stdout=subprocess.PIPE, text=True)
    port = int(child.stdout.readline())        # type: ignore[union-attr]
    messages = [(0, blob)]
    transport = None
    if raw:
        ctx = zmq.Context()
        push = ctx.socket(zmq.PUSH)
        push.sndhwm = HWM
        push.connect(f"tcp://127.0.0.1:{port}")

        def send(_: list[tuple[int, bytes]]) -> None:
            try:
                push.send(blob, zmq.NOBLOCK)
            except zmq.Again as exc:
                raise TransportError("full") from exc
    else:
        transport = drivers.load("squall.transports", "zmq")({"squall.transport.zmq.hwm": HWM})
        send = transport.connect("bench", "127.0.0.1", port).send
    try:
        _retry(send, messages)
        cpu, sent = time.process_time(), 0
        while sent < batches:
            _retry(send, messages)
            sent += 1
        cpu = time.process_time() - cpu
        child.wait(120)
        return cpu / batches * 1e6
    finally:
        _release(push if raw else None, transport)


def _release(sock: zmq.Socket | None, transport: Any) -> None:
    """Close a bare socket and its context, or a transport."""
    if sock is not None:
        sock.close(0)
        sock.context.term()
    if transport is not None:
        transport.close()


def _retry(send: Callable[[list[tuple[int, bytes]]], None],
           messages: list[tuple[int, bytes]]) -> None:
    while True:
        try:
            send(messages)
            return
        except TransportError:
            time.sleep(0.0002)      # buffer full: let the receiving process catch up


def receive_side(raw: bool, blob: bytes, batches: int, tmp: str) -> tuple[float, float]:
    """Receiving thread's CPU microseconds per batch, and batches per recv call."""
    transport = None
    if raw:
        ctx = zmq.Context()
        pull = ctx.socket(zmq.PULL)
        pull.rcvhwm = HWM
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        poller = zmq.Poller()
        poller.register(pull, zmq.POLLIN)

        def recv(timeout: float) -> list[bytes]:
            got: list[bytes] = []
            if poller.poll(int(timeout * 1000)):
                while True:
                    try:
                        got.append(pull.recv(zmq.NOBLOCK))
                    except zmq.Again:
                        break
            return got
        frame = blob
    else:
        transport = drivers.load("squall.transports", "zmq")({"squall.transport.zmq.hwm": HWM})
        conn = transport.bind("bench", 0)
        port, recv, frame = conn.port, conn.recv, encode([(0, blob)])
    with open(tmp, "wb") as f:
        f.write(frame)
    child = subprocess.Popen([sys.executable, "-c", PUSH_CHILD, str(port), tmp, str(batches),
                              str(HWM)])
    try:
        got, calls = len(recv(30)), 1
        cpu = time.thread_time()
        while got < batches:
            got += len(recv(5))
            calls += 1
        cpu = time.thread_time() - cpu
        child.wait(120)
        return cpu / batches * 1e6, batches / calls
    finally:
        _release(pull if raw else None, transport)


def main() -> None:
    import tempfile
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=200_000, help="batches per run")
    parser.add_argument("--tuples", type=int, default=100, help="tuples per batch")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    blob = tuple_blob(args.tuples)
    print(f"zmq, batches of {args.tuples} tuples ({len(blob)} bytes), {args.batches:,} per run, "
          f"{args.runs} runs, CPU µs per batch (medians)")
    sends: dict[bool, list[float]] = {False: [], True: []}
    recvs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for raw in (False, True):
                sends[raw].append(send_side(raw, blob, args.batches))
                recvs[raw].append(receive_side(raw, blob, args.batches, f"{tmp}/frame"))
    for raw, name in ((False, "transport"), (True, "raw")):
        send = statistics.median(sends[raw])
        recv = statistics.median(r[0] for r in recvs[raw])
        per_call = statistics.median(r[1] for r in recvs[raw])
        print(f"  {name:<10} send {send:6.2f}   receive {recv:6.2f}   "
              f"({per_call:,.0f} batches per recv)")


if __name__ == "__main__":
    main()
