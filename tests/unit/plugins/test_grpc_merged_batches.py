"""gRPC transport: several batches in one gRPC message, and what a receiver does with them."""
from __future__ import annotations

import logging

import grpc
import pytest

from squall.plugins.transport_grpc import GrpcTransport
from squall.plugins.transport_grpc._proto import transport_pb2 as pb
from squall.plugins.transport_grpc._proto import transport_pb2_grpc as pb_grpc
from squall.transports.framing import encode
from squall.testing.contracts.transport import collect

FRAMES = [encode([(i, b"batch %d" % i)]) for i in range(1, 6)]
SESSION = b"S" * 8


def _stream(port: int, batches: list[pb.Batch]) -> list[pb.Ack]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return list(pb_grpc.TransferStub(channel).Stream(iter(batches)))


def test_merged_batches_are_split_and_resent_ones_dropped() -> None:
    with GrpcTransport({}) as transport:
        receiver = transport.bind("merge-topo", 0)
        _stream(receiver.port, [
            pb.Batch(frame=FRAMES[0], session=SESSION, seq=1),
            # 1 again (a resend after a broken stream), then 2 and 3, in one message
            pb.Batch(frame=b"".join(FRAMES[0:3]), session=SESSION, seq=3, count=3),
            pb.Batch(frame=b"".join(FRAMES[3:5]), session=SESSION, seq=5, count=2),
        ])
        assert collect(receiver, 5) == [(i, b"batch %d" % i) for i in range(1, 6)]
        assert receiver.recv(0.2) == []


def test_a_merged_batch_that_does_not_split_is_dropped_and_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    with GrpcTransport({}) as transport, caplog.at_level(logging.WARNING):
        receiver = transport.bind("merge-topo", 0)
        _stream(receiver.port, [
            pb.Batch(frame=FRAMES[0], session=SESSION, seq=2, count=2),          # one frame
            pb.Batch(frame=FRAMES[0] + b"xx", session=SESSION, seq=4, count=1 + 1),
            pb.Batch(frame=FRAMES[1], session=b"T" * 8, seq=1),
        ])
        assert collect(receiver, 1) == [(2, b"batch 2")]
        assert receiver.garbage.count == 2
        assert any("invalid frame" in r.getMessage() for r in caplog.records)


def test_a_busy_sender_merges_what_queued_up_and_order_holds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from squall.plugins.transport_grpc import transport as module
    merged: list[int] = []
    real = module.split_frames

    def counting(buf: bytes, count: int) -> list[bytes]:
        merged.append(count)
        return real(buf, count)

    monkeypatch.setattr(module, "split_frames", counting)
    with GrpcTransport({}) as transport:
        receiver = transport.bind("merge-topo", 0)
        sender = transport.connect("merge-topo", "127.0.0.1", receiver.port)
        sent = [(i % 7, b"%d" % i) for i in range(3000)]
        for msg in sent:
            sender.send([msg])
        assert collect(receiver, len(sent)) == sent
    assert merged and max(merged) > 1      # some gRPC messages carried several batches


def test_a_receiver_that_does_not_split_gets_one_batch_per_message() -> None:
    """A receiver whose stream headers do not say it splits merged messages (one from an
    earlier squall) gets every batch in a message of its own, in order."""
    from concurrent import futures

    from squall.transports.framing import decode
    got: list[tuple[int, bytes]] = []

    class Earlier(pb_grpc.TransferServicer):
        def Stream(self, request_iterator, context):  # type: ignore[no-untyped-def]
            for batch in request_iterator:
                got.append((batch.count, batch.frame))
                yield pb.Ack(seq=batch.seq)

    server = grpc.server(futures.ThreadPoolExecutor(4))
    pb_grpc.add_TransferServicer_to_server(Earlier(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with GrpcTransport({}) as transport:
            sender = transport.connect("merge-topo", "127.0.0.1", port)
            sent = [(i % 7, b"%d" % i) for i in range(3000)]
            for msg in sent:
                sender.send([msg])
            from squall.testing import wait_until
            wait_until(lambda: len(got) >= len(sent), 30,
                       message=lambda: f"{len(got)} of {len(sent)} batches arrived")
        assert {count for count, _ in got} <= {0, 1}
        assert [m for _, frame in got for m in decode(frame)] == sent
    finally:
        server.stop(0)


def test_a_batch_over_the_message_limit_is_refused_and_the_stream_goes_on() -> None:
    from squall.errors import TransportError
    with GrpcTransport({"squall.transport.grpc.max.message.mb": 1}) as transport:
        receiver = transport.bind("limit-topo", 0)
        sender = transport.connect("limit-topo", "127.0.0.1", receiver.port)
        sender.send([(1, b"small")])
        with pytest.raises(TransportError, match="is over the 10[0-9]{5} bytes squall."
                                                 "transport.grpc.max.message.mb allows"):
            sender.send([(2, b"x" * (2 << 20))])
        sender.send([(3, b"after")])
        assert collect(receiver, 2) == [(1, b"small"), (3, b"after")]


def test_a_receiver_forgets_the_sessions_of_senders_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    import squall.plugins.transport_grpc.transport as module
    monkeypatch.setattr(module, "_SESSIONS", 8)
    with GrpcTransport({}) as transport:
        receiver = transport.bind("prune-topo", 0)
        for i in range(30):                 # short-lived senders, one session each
            sender = transport.connect("prune-topo", "127.0.0.1", receiver.port)
            sender.send([(i, b"once")])
            assert collect(receiver, 1) == [(i, b"once")]
            sender.close()
        assert receiver.known_sessions <= 16
        # a sender that stays keeps its session: a resend of what it sent is not delivered
        sender = transport.connect("prune-topo", "127.0.0.1", receiver.port)
        sender.send([(99, b"kept")])
        assert collect(receiver, 1) == [(99, b"kept")]
        sender.send([(100, b"next")])
        assert collect(receiver, 1) == [(100, b"next")]
        assert receiver.recv(0.2) == []
