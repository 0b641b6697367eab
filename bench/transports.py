"""Transport throughput over loopback, next to the raw library measured the same way.

Run: ``.venv/bin/python -m bench.transports [--seconds S] [--form tuples|messages|both]``;
``--latency N`` times N single batches through an idle connection instead.

One sender thread calls ``send`` as fast as it can (retrying when the bounded buffer reports
TransportError) and one receiver thread calls ``recv`` until everything arrived; the figure is
tuples (or messages) and payload MB per second from the first send to the last receive.

Two forms, batch sizes 1, 100 and 1000:

* ``tuples`` (the worker's form, the one the 80 % target is judged on): a worker serializes its
  batch of tuples for one destination worker once and sends it as a single message
  (``conn.send([(0, blob)])``). The blob here is the serialized batch of word-count tuples the
  runtime would build (built once, before timing); the "raw" row moves the same blob, one
  library message per batch, with no squall framing and no acknowledgements: pyzmq PUSH/PULL,
  pynng Pair1 (the socket the nng transport uses), a gRPC bidirectional stream of the
  transport's own ``.proto``. Like ``Connection.recv``, a raw receive hands back what arrived
  as a list of ``bytes`` (until the fifth sitting of 2026-11-23 it dropped each message as soon
  as the library returned it, sparing itself the buffers a caller has to keep). The raw zmq
  receive takes everything queued, the plain loop; since 2026-11-24 the zmq transport stops a
  receive at 256 KiB, and ``--raw-drain-bytes 262144`` makes the raw row do the same.
* ``messages`` (the Connection API per message): a batch of 50-byte payloads each with its own
  task id. Here the raw row joins the payloads into one blob, so it skips the per-message work
  (framing, one bytes object and one tuple per message on receipt): an upper bound, not an
  equivalent workload.
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
from concurrent import futures
from collections.abc import Callable
from typing import NamedTuple

from squall.errors import TransportError

PAYLOAD = b"p" * 50
BATCHES = (1, 100, 1000)
CONF = {"squall.transport.send.buffer.messages": 2000, "squall.transport.zmq.hwm": 2000,
        "squall.transport.nng.send.buffer": 2000}

#: the raw zmq receive stops after this many bytes (``--raw-drain-bytes``; default: it takes
#: everything queued, the plain loop)
RAW_DRAIN_BYTES: int | None = None
Sender = Callable[[list[tuple[int, bytes]]], None]


def tuple_blob(batch: int) -> bytes:
    """The serialized batch of ``batch`` word-count tuples, as a worker sends it."""
    from squall.serializers.msgpack import MsgpackSerializer
    words = "the quick brown fox jumps over the lazy dog again".split()
    entries = [[-7, 3, "default", [words[i % len(words)]], 0, None] for i in range(batch)]
    return MsgpackSerializer({}).dumps(entries)


class Workload:
    """What one ``send`` carries: ``batch`` units as Connection messages and as a raw blob."""

    def __init__(self, form: str, batch: int) -> None:
        self.batch = batch
        if form == "tuples":
            self.blob = tuple_blob(batch)
            self.messages = [(0, self.blob)]
            self.per_message = batch         # one Connection message holds the whole batch
        else:
            self.blob = PAYLOAD * batch
            self.messages = [(i, PAYLOAD) for i in range(batch)]
            self.per_message = 1

    @property
    def unit_bytes(self) -> float:
        return len(self.blob) / self.batch


def _send(send: Sender, messages: list[tuple[int, bytes]]) -> None:
    while True:
        try:
            send(messages)
            return
        except TransportError:
            time.sleep(0.0005)        # buffer full: let the receiver catch up


class Rate(NamedTuple):
    """Units per second of wall time, and per second of this process's CPU time (every thread,
    the libraries' own I/O threads included)."""
    wall: float
    cpu: float


def _measure(send: Sender, receive: Callable[[], int], work: Workload, seconds: float) -> Rate:
    """Units per second for about ``seconds`` of sending ``work``, once one batch went through
    (connection set-up is not timed)."""
    batch, messages = work.batch, work.messages
    _send(send, messages)
    got = 0
    deadline = time.monotonic() + 30
    while got < batch:
        got += receive()
        if time.monotonic() > deadline:
            raise RuntimeError("the first batch did not arrive within 30 s")
    done = threading.Event()
    total: list[int | None] = [None]       # known once the sender stopped
    arrived = [0]

    def receiver() -> None:
        while total[0] is None or arrived[0] < total[0]:
            arrived[0] += receive()
        done.set()

    thread = threading.Thread(target=receiver, daemon=True)
    start, cpu = time.perf_counter(), time.process_time()
    thread.start()
    stop, sent = start + seconds, 0
    while True:
        for _ in range(16):
            _send(send, messages)
        sent += 16
        if time.perf_counter() >= stop:
            break
    total[0] = sent * batch
    if not done.wait(120):
        raise RuntimeError(f"only {arrived[0]} of {total[0]} arrived")
    units = sent * batch
    return Rate(units / (time.perf_counter() - start), units / (time.process_time() - cpu))


def squall_case(name: str) -> Callable[[Workload, float], Rate]:
    from squall import drivers

    def run(work: Workload, seconds: float) -> Rate:
        transport = drivers.load("squall.transports", name)(CONF)
        per = work.per_message
        try:
            receiver = transport.bind("bench", 0)
            sender = transport.connect("bench", "127.0.0.1", receiver.port)
            return _measure(sender.send, lambda: len(receiver.recv(0.5)) * per, work, seconds)
        finally:
            transport.close()
    return run


def latency(name: str, work: Workload, count: int) -> list[float]:
    """Seconds from ``send`` of one batch until ``recv`` returned it, ``count`` times in a
    row, sender and receiver driven by one thread: the time one batch takes through an
    idle connection."""
    from squall import drivers
    transport = drivers.load("squall.transports", name)(CONF)
    try:
        receiver = transport.bind("bench", 0)
        sender = transport.connect("bench", "127.0.0.1", receiver.port)
        times = []
        for i in range(count + 1):          # the first one waits for the connection
            start = time.perf_counter()
            sender.send(work.messages)
            while not receiver.recv(30):
                pass
            if i:
                times.append(time.perf_counter() - start)
        return times
    finally:
        transport.close()


def raw_zmq(work: Workload, seconds: float) -> Rate:
    blob, batch = work.blob, work.batch
    import zmq
    # a context (so an I/O thread) per end, as the transport has and as two workers would
    ctx, ctx2 = zmq.Context(), zmq.Context()
    pull, push = ctx.socket(zmq.PULL), ctx2.socket(zmq.PUSH)
    pull.rcvhwm = push.sndhwm = 2000
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    push.connect(f"tcp://127.0.0.1:{port}")
    poller = zmq.Poller()
    poller.register(pull, zmq.POLLIN)

    def send(_messages: list[tuple[int, bytes]]) -> None:
        try:
            push.send(blob, zmq.NOBLOCK)
        except zmq.Again as exc:
            raise TransportError("full") from exc

    def receive() -> int:
        got: list[bytes] = []       # handed to the caller, as Connection.recv does
        if poller.poll(500):
            recv, keep = pull.recv, got.append
            if RAW_DRAIN_BYTES is None:         # the plain loop
                while True:
                    try:
                        keep(recv(zmq.NOBLOCK))
                    except zmq.Again:
                        break
            else:
                left = RAW_DRAIN_BYTES
                while left > 0:
                    try:
                        frame = recv(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    keep(frame)
                    left -= len(frame)
        return len(got) * batch
    try:
        return _measure(send, receive, work, seconds)
    finally:
        push.close(0)
        pull.close(0)
        ctx.term()
        ctx2.term()


def raw_nng(work: Workload, seconds: float) -> Rate:
    blob, batch = work.blob, work.batch
    import pynng
    # the socket type and queue sizes the nng transport uses (Pair1 moves large messages
    # about twice as fast as Push0/Pull0 here)
    pull = pynng.Pair1(listen="tcp://127.0.0.1:0", recv_timeout=500, recv_max_size=0,
                       polyamorous=True, recv_buffer_size=64)
    port = int(str(pull.listeners[0].local_address).rsplit(":", 1)[1])
    push = pynng.Pair1(dial=f"tcp://127.0.0.1:{port}", send_buffer_size=2000)

    def send(_messages: list[tuple[int, bytes]]) -> None:
        try:
            push.send(blob, block=False)
        except pynng.TryAgain as exc:
            raise TransportError("full") from exc

    def receive() -> int:
        got: list[bytes] = []       # handed to the caller, as Connection.recv does
        try:
            got.append(pull.recv())
            while True:
                got.append(pull.recv(block=False))
        except (pynng.Timeout, pynng.TryAgain):
            return len(got) * batch
    try:
        return _measure(send, receive, work, seconds)
    finally:
        push.close()
        pull.close()


def raw_grpc(work: Workload, seconds: float) -> Rate:
    blob, batch = work.blob, work.batch
    import queue

    import grpc

    from squall.plugins.transport_grpc._proto import transport_pb2 as pb
    from squall.plugins.transport_grpc._proto import transport_pb2_grpc as pb_grpc
    inbox: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    outbox: queue.Queue[bytes | None] = queue.Queue(maxsize=2000)

    class Servicer(pb_grpc.TransferServicer):
        def Stream(self, request_iterator, context):
            for b in request_iterator:   # the raw library: no acknowledgements
                inbox.put(b.frame)
            return iter(())

    server = grpc.server(futures.ThreadPoolExecutor(4))
    pb_grpc.add_TransferServicer_to_server(Servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = pb_grpc.TransferStub(channel)

    def frames():
        while (frame := outbox.get()) is not None:
            yield pb.Batch(frame=frame)
    call = threading.Thread(target=lambda: list(stub.Stream(frames())), daemon=True)
    call.start()

    def send(_messages: list[tuple[int, bytes]]) -> None:
        try:
            outbox.put_nowait(blob)
        except queue.Full as exc:
            raise TransportError("full") from exc

    def receive() -> int:
        got: list[bytes] = []       # handed to the caller, as Connection.recv does
        try:
            got.append(inbox.get(timeout=0.5))
            while True:
                got.append(inbox.get_nowait())
        except queue.Empty:
            return len(got) * batch
    try:
        return _measure(send, receive, work, seconds)
    finally:
        outbox.put(None)
        call.join(5)
        channel.close()
        server.stop(0)


Case = Callable[[Workload, float], Rate]
CASES: list[tuple[str, Case, Case | None]] = [
    ("local", squall_case("local"), None),
    ("zmq", squall_case("zmq"), raw_zmq),
    ("nng", squall_case("nng"), raw_nng),
    ("grpc", squall_case("grpc"), raw_grpc),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="rough time per case")
    parser.add_argument("--form", choices=("tuples", "messages", "both"), default="both")
    parser.add_argument("--runs", type=int, default=1,
                        help="pairs (transport, then raw) per case; medians are printed")
    parser.add_argument("--transports", nargs="+", default=[c[0] for c in CASES])
    parser.add_argument("--batches", nargs="+", type=int, default=list(BATCHES),
                        choices=BATCHES)
    parser.add_argument("--raw-drain-bytes", type=int, default=None,
                        help="raw zmq: end a receive once it took this many bytes, as the zmq "
                             "transport does at 262144 (default: take everything queued)")
    parser.add_argument("--latency", type=int, default=0, metavar="N",
                        help="instead: N sends of one batch, each received before the next, "
                             "and the time each took (p50 / p90 / p99)")
    args = parser.parse_args()
    if args.latency:
        print(f"one batch through an idle connection, {args.latency} times; microseconds")
        print(f"{'transport':<10}{'batch':>6}{'p50':>8}{'p90':>8}{'p99':>8}")
        for name, _, _ in CASES:
            if name in args.transports:
                for batch in args.batches:
                    times = sorted(latency(name, Workload(args.form if args.form != "both"
                                                          else "tuples", batch), args.latency))
                    p50, p90, p99 = (times[int(len(times) * q)] * 1e6 for q in (.5, .9, .99))
                    print(f"{name:<10}{batch:>6}{p50:>8.0f}{p90:>8.0f}{p99:>8.0f}", flush=True)
        return
    global RAW_DRAIN_BYTES
    RAW_DRAIN_BYTES = args.raw_drain_bytes
    forms = ("tuples", "messages") if args.form == "both" else (args.form,)
    for form in forms:
        unit = "tuples" if form == "tuples" else "msgs"
        print(f"\nform: {form}" + (" (one serialized batch per send, as workers send)"
                                   if form == "tuples" else " (one Connection message each)"))
        print(f"{'transport':<10}{'batch':>6}{unit + '/s':>12}{'MB/s':>8}"
              f"{'raw ' + unit + '/s':>14}{'raw MB/s':>9}{'ratio':>7}{'CPU ratio':>10}")
        for name, case, raw in CASES:
            if name not in args.transports:
                continue
            for batch in args.batches:
                work = Workload(form, batch)
                rates, raws, ratios, cpu_ratios = [], [], [], []
                for _ in range(args.runs):
                    mine = case(work, args.seconds)
                    rates.append(mine.wall)
                    if raw is not None:
                        theirs = raw(work, args.seconds)
                        raws.append(theirs.wall)
                        ratios.append(mine.wall / theirs.wall)
                        cpu_ratios.append(mine.cpu / theirs.cpu)
                rate = statistics.median(rates)
                size = work.unit_bytes / 1e6
                line = f"{name:<10}{batch:>6}{rate:>12,.0f}{rate * size:>8.1f}"
                if raws:
                    raw_rate = statistics.median(raws)
                    line += (f"{raw_rate:>14,.0f}{raw_rate * size:>9.1f}"
                             f"{statistics.median(ratios):>7.0%}"
                             f"{statistics.median(cpu_ratios):>10.0%}")
                    if args.runs > 1:
                        line += ("  (" + " ".join(f"{r:.0%}" for r in ratios) + "; CPU "
                                 + " ".join(f"{r:.0%}" for r in cpu_ratios) + ")")
                print(line, flush=True)


if __name__ == "__main__":
    main()
