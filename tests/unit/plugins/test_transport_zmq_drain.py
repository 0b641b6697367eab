"""The zmq receiver hands a backlog back in pieces of bounded size, in order, losing nothing."""
from __future__ import annotations

from squall.plugins.transport_zmq import ZmqTransport
from squall.transports.framing import SINGLE_HEAD


LIMIT = 256 * 1024      # what one recv takes at most (the frame that reaches it included)


def test_a_backlog_comes_back_in_bounded_pieces_in_order() -> None:
    receiving = ZmqTransport({"squall.transport.zmq.hwm": 1000})
    sending = ZmqTransport({"squall.transport.zmq.hwm": 1000})
    payload = b"x" * 20_000
    count = 120                                     # 2.4 MB, about ten pieces
    try:
        rx = receiving.bind("t", 0)
        tx = sending.connect("t", "127.0.0.1", rx.port)
        for i in range(count):
            tx.send([(i, payload)])
        sending.close()             # returns once zmq has flushed every queued batch
        pieces = []
        while sum(map(len, pieces)) < count:
            got = rx.recv(5)
            assert got, "the receiver stopped getting batches before all arrived"
            pieces.append(got)
    finally:
        receiving.close()
    assert [task for piece in pieces for task, _ in piece] == list(range(count))
    assert all(data == payload for piece in pieces for _, data in piece)
    frame = len(payload) + SINGLE_HEAD
    # a piece stops at the first frame that takes it to the limit
    assert max(len(piece) for piece in pieces) <= -(-LIMIT // frame)
    assert len(pieces) >= count * frame // LIMIT
