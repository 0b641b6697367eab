"""nng transport: several batches in one nng message, and what a receiver does with them."""
from __future__ import annotations

import logging
import time

import pynng
import pytest

from squall.plugins.transport_nng import NngTransport
from squall.plugins.transport_nng.wire import _DATA, _KIND_DATA, _KIND_MERGED, _MERGED
from squall.errors import TransportError
from squall.transports.framing import encode
from squall.spi.transport import Connection
from squall.testing.contracts.transport import collect, free_port, wait_until

FRAMES = [encode([(i, b"batch %d" % i)]) for i in range(1, 9)]
SESSION = b"S" * 8


def one(seq: int, floor: int = 1) -> bytes:
    return _DATA.pack(_KIND_DATA, SESSION, seq, floor) + FRAMES[seq - 1]


def merged(first: int, count: int, floor: int = 1, session: bytes = SESSION) -> bytes:
    return (_MERGED.pack(_KIND_MERGED, session, first, floor, count)
            + b"".join(FRAMES[first - 1:first - 1 + count]))


def _dial(port: int, messages: list[bytes]) -> None:
    with pynng.Pair1(dial=f"tcp://127.0.0.1:{port}", send_timeout=10000) as sock:
        for message in messages:
            sock.send(message)


def test_merged_batches_are_split_and_those_delivered_already_dropped() -> None:
    with NngTransport({}) as transport:
        receiver = transport.bind("merge-topo", 0)
        _dial(receiver.port, [
            one(1),
            # 1 again (a resend after a reconnection), then 2 and 3, in one message
            merged(1, 3),
            merged(4, 2),
            merged(4, 2),           # all delivered already
            merged(7, 2),           # after a gap: dropped
            one(6),
        ])
        assert collect(receiver, 6) == [(i, b"batch %d" % i) for i in range(1, 7)]
        assert receiver.recv(0.2) == []
        assert receiver.garbage.count == 0


def test_a_new_session_starts_at_its_floor_inside_a_merged_message() -> None:
    """A receiver restarted under a running sender first hears a resend of the sender's
    window: the session starts at the lowest batch not acknowledged yet."""
    with NngTransport({}) as transport:
        receiver = transport.bind("merge-topo", 0)
        _dial(receiver.port, [
            merged(2, 2, floor=1),      # does not start at the floor: dropped
            merged(3, 3, floor=3),
        ])
        assert collect(receiver, 3) == [(i, b"batch %d" % i) for i in range(3, 6)]
        assert receiver.recv(0.2) == []


def test_a_merged_message_that_does_not_split_is_dropped_and_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    with NngTransport({}) as transport, caplog.at_level(logging.WARNING):
        receiver = transport.bind("merge-topo", 0)
        _dial(receiver.port, [
            merged(1, 2)[:-1],                                   # frame cut short
            merged(1, 2) + b"xx",                                # bytes after the frames
            _MERGED.pack(_KIND_MERGED, SESSION, 1, 1, 3) + b"".join(FRAMES[:2]),  # count 3
            merged(1, 1, session=b"T" * 8),
        ])
        assert collect(receiver, 1) == [(1, b"batch 1")]
        assert receiver.garbage.count == 3
        assert any("invalid frame" in r.getMessage() for r in caplog.records)


def test_a_busy_sender_merges_what_queued_up_and_order_holds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from squall.plugins.transport_nng import wire
    counts: list[int] = []
    real = wire._frames

    def counting(buf: object, size: int, count: int) -> object:
        counts.append(count)
        return real(buf, size, count)

    monkeypatch.setattr(wire, "_frames", counting)
    with NngTransport({"squall.transport.nng.send.buffer": 8192}) as transport:
        receiver = transport.bind("merge-topo", 0)
        sender = transport.connect("merge-topo", "127.0.0.1", receiver.port)
        # 4 KB batches: nng's own short queue and the socket buffers fill long before the
        # receiver starts reading, so the rest waits in the window and goes out merged
        sent = [(i % 7, b"%06d" % i + b"p" * 4000) for i in range(4000)]
        for msg in sent:
            sender.send([msg])
        assert collect(receiver, len(sent)) == sent
    assert counts and max(counts) > 1      # some nng messages carried several batches


def test_a_receiver_restarted_under_a_busy_sender_gets_the_rest_in_order() -> None:
    """Batches the first receiver never returned are resent, merged, to the second one on
    the same port; what both returned is everything sent, in order (the only overlap
    allowed: batches delivered just before the first closed whose ack did not get out)."""
    port = free_port()
    with NngTransport({"squall.transport.nng.send.buffer": 8192}) as transport:
        first = transport.bind("merge-topo", port)
        sender = transport.connect("merge-topo", "127.0.0.1", port)
        sent = [(i % 7, b"%06d" % i + b"p" * 2000) for i in range(6000)]
        for msg in sent[:3000]:
            sender.send([msg])
        got_first = collect(first, 500)
        first.close()
        for msg in sent[3000:4000]:
            sender.send([msg])
        second = wait_until(lambda: _bind(transport, port), 10)
        for msg in sent[4000:]:
            sender.send([msg])
        got_second: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 20
        while (not got_second or got_second[-1] != sent[-1]) and time.monotonic() < deadline:
            got_second.extend(second.recv(0.2))
    overlap = len(got_first) + len(got_second) - len(sent)
    assert 0 <= overlap <= len(got_first)
    assert got_first + got_second[overlap:] == sent
    assert got_second[:overlap] == got_first[len(got_first) - overlap:]


def _bind(transport: NngTransport, port: int) -> Connection | None:
    try:
        return transport.bind("merge-topo", port)
    except TransportError:
        return None
