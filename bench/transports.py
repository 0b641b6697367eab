"""Transport throughput over loopback, next to the raw library measured the same way.

Run: ``.venv/bin/python -m bench.transports [--seconds S]``.

For each transport and batch size (1, 100, 1000 messages of 50-byte payloads) one sender thread
calls ``send`` as fast as it can (retrying when the bounded buffer reports TransportError) and
one receiver thread calls ``recv`` until every message arrived; the figure is messages (and
payload MB) per second from the first send to the last receive. The "raw" rows do the same with
the bare library and no squall framing: one pyzmq PUSH/PULL message, one pynng Push0/Pull0
message or one gRPC client-stream message per batch holding the payloads joined together.
"""
from __future__ import annotations

import argparse
import threading
import time
from concurrent import futures
from collections.abc import Callable

from squall.errors import TransportError

PAYLOAD = b"p" * 50
BATCHES = (1, 100, 1000)
CONF = {"squall.transport.send.buffer.messages": 2000, "squall.transport.zmq.hwm": 2000,
        "squall.transport.nng.send.buffer": 2000}

Sender = Callable[[list[tuple[int, bytes]]], None]


def _measure(send: Sender, receive: Callable[[], int], batch: int, seconds: float) -> float:
    """Messages per second for about ``seconds`` of sending ``batch``-sized batches."""
    rounds = max(20, int(seconds * {1: 20000, 100: 1500, 1000: 200}[batch]))
    total = rounds * batch
    messages = [(i, PAYLOAD) for i in range(batch)]
    done = threading.Event()
    got = [0]

    def receiver() -> None:
        while got[0] < total:
            got[0] += receive()
        done.set()

    thread = threading.Thread(target=receiver, daemon=True)
    thread.start()
    start = time.perf_counter()
    for _ in range(rounds):
        while True:
            try:
                send(messages)
                break
            except TransportError:
                time.sleep(0.0005)        # buffer full: let the receiver catch up
    if not done.wait(120):
        raise RuntimeError(f"only {got[0]} of {total} messages arrived")
    return total / (time.perf_counter() - start)


def squall_case(name: str) -> Callable[[int, float], float]:
    from squall import drivers

    def run(batch: int, seconds: float) -> float:
        transport = drivers.load("squall.transports", name)(CONF)
        try:
            receiver = transport.bind("bench", 0)
            sender = transport.connect("bench", "127.0.0.1", receiver.port)
            return _measure(sender.send, lambda: len(receiver.recv(0.5)), batch, seconds)
        finally:
            transport.close()
    return run


def raw_zmq(batch: int, seconds: float) -> float:
    import zmq
    ctx = zmq.Context()
    pull, push = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    pull.rcvhwm = push.sndhwm = 2000
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    push.connect(f"tcp://127.0.0.1:{port}")
    poller = zmq.Poller()
    poller.register(pull, zmq.POLLIN)

    def send(messages: list[tuple[int, bytes]]) -> None:
        try:
            push.send(b"".join([p for _, p in messages]), zmq.NOBLOCK)
        except zmq.Again as exc:
            raise TransportError("full") from exc

    def receive() -> int:
        n = 0
        if poller.poll(500):
            while True:
                try:
                    n += len(pull.recv(zmq.NOBLOCK)) // len(PAYLOAD)
                except zmq.Again:
                    return n
        return n
    try:
        return _measure(send, receive, batch, seconds)
    finally:
        push.close(0)
        pull.close(0)
        ctx.term()


def raw_nng(batch: int, seconds: float) -> float:
    import pynng
    pull = pynng.Pull0(listen="tcp://127.0.0.1:0", recv_timeout=500, recv_max_size=0)
    port = int(str(pull.listeners[0].local_address).rsplit(":", 1)[1])
    push = pynng.Push0(dial=f"tcp://127.0.0.1:{port}", send_buffer_size=2000)

    def send(messages: list[tuple[int, bytes]]) -> None:
        try:
            push.send(b"".join([p for _, p in messages]), block=False)
        except pynng.TryAgain as exc:
            raise TransportError("full") from exc

    def receive() -> int:
        try:
            n = len(pull.recv()) // len(PAYLOAD)
            while True:
                n += len(pull.recv(block=False)) // len(PAYLOAD)
        except (pynng.Timeout, pynng.TryAgain):
            return n if "n" in locals() else 0
    try:
        return _measure(send, receive, batch, seconds)
    finally:
        push.close()
        pull.close()


def raw_grpc(batch: int, seconds: float) -> float:
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

    def send(messages: list[tuple[int, bytes]]) -> None:
        try:
            outbox.put_nowait(b"".join([p for _, p in messages]))
        except queue.Full as exc:
            raise TransportError("full") from exc

    def receive() -> int:
        try:
            n = len(inbox.get(timeout=0.5)) // len(PAYLOAD)
            while True:
                n += len(inbox.get_nowait()) // len(PAYLOAD)
        except queue.Empty:
            return n if "n" in locals() else 0
    try:
        return _measure(send, receive, batch, seconds)
    finally:
        outbox.put(None)
        call.join(5)
        channel.close()
        server.stop(0)


CASES: list[tuple[str, Callable[[int, float], float], Callable[[int, float], float] | None]] = [
    ("local", squall_case("local"), None),
    ("zmq", squall_case("zmq"), raw_zmq),
    ("nng", squall_case("nng"), raw_nng),
    ("grpc", squall_case("grpc"), raw_grpc),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="rough time per case")
    args = parser.parse_args()
    print(f"{'transport':<10}{'batch':>6}{'msgs/s':>12}{'MB/s':>8}"
          f"{'raw msgs/s':>12}{'raw MB/s':>9}{'ratio':>7}")
    for name, case, raw in CASES:
        for batch in BATCHES:
            rate = case(batch, args.seconds)
            line = f"{name:<10}{batch:>6}{rate:>12,.0f}{rate * len(PAYLOAD) / 1e6:>8.1f}"
            if raw is not None:
                raw_rate = raw(batch, args.seconds)
                line += (f"{raw_rate:>12,.0f}{raw_rate * len(PAYLOAD) / 1e6:>9.1f}"
                         f"{rate / raw_rate:>7.0%}")
            print(line, flush=True)


if __name__ == "__main__":
    main()
