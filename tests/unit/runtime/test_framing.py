"""The shared wire framing: round trips, and every malformed frame is one FrameError."""
from __future__ import annotations

import logging

import pytest

from squall import TransportError
from squall.runtime.framing import HEADER, FrameError, GarbageLog, decode, encode, frame_length


@pytest.mark.parametrize("batch", [
    [], [(0, b"")], [(-1, b"x")], [(2**31 - 1, b"a" * 70000), (5, b""), (6, b"\x00\xff")],
    [(i, bytes([i % 256]) * i) for i in range(300)],
])
def test_round_trip(batch: list[tuple[int, bytes]]) -> None:
    frame = encode(batch)
    assert frame_length(frame[:HEADER.size]) == len(frame)
    assert decode(frame) == batch
    assert decode(memoryview(frame)) == batch


@pytest.mark.parametrize("bad", [[(1, "text")], [(1, "a"), (2, b"")], [("t", b"")],
                                 [(1, None)], [(2**40, b"")]])
def test_bad_batches_raise_transport_error(bad: list) -> None:
    with pytest.raises(TransportError):
        encode(bad)


@pytest.mark.parametrize("junk", [
    b"", b"\xa7", b"GET / HTTP/1.1\r\n\r\n" * 2, encode([(1, b"ab")])[:-1],
    encode([(1, b"ab"), (2, b"")]) + b"x", b"\xa7\x01\x00\x00\xff\xff\xff\xff" + b"\x00" * 8,
])
def test_junk_is_a_frame_error(junk: bytes) -> None:
    with pytest.raises(FrameError):
        decode(junk)


def test_garbage_log_warns_once_per_peer(caplog: pytest.LogCaptureFixture) -> None:
    log = GarbageLog(logging.getLogger("t"), "receiver")
    with caplog.at_level(logging.WARNING, logger="t"):
        for peer in ("a", "a", "b", "a"):
            log.dropped(peer, FrameError("bad"))
    assert log.count == 4
    assert [r.getMessage().split(" from ")[1].split(" ")[0] for r in caplog.records] == ["a", "b"]
