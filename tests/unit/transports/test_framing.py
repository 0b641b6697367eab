"""The shared wire framing: round trips, and every malformed frame is one FrameError."""
from __future__ import annotations

import logging

import pytest

from squall import TransportError
from squall.transports.framing import (
    HEADER,
    SINGLE_HEAD,
    FrameError,
    GarbageLog,
    decode,
    encode,
    frame_length,
    single,
    single_head,
    single_task,
)


@pytest.mark.parametrize("batch", [
    [], [(0, b"")], [(-1, b"x")], [(2**31 - 1, b"a" * 70000), (5, b""), (6, b"\x00\xff")],
    [(i, bytes([i % 256]) * i) for i in range(300)],
])
def test_round_trip(batch: list[tuple[int, bytes]]) -> None:
    frame = encode(batch)
    assert frame_length(frame[:HEADER.size]) == len(frame)
    assert decode(frame) == batch
    assert decode(memoryview(frame)) == batch


@pytest.mark.parametrize("batch", [[(7, b"payload")], [(0, b"")], [(1, b"a"), (2, b"bc")]])
def test_a_transport_header_before_the_frame(batch: list[tuple[int, bytes]]) -> None:
    prefix = b"HDR\x00\x01"
    data = encode(batch, prefix)
    assert data.startswith(prefix) and data[len(prefix):] == encode(batch)
    assert decode(data, len(prefix)) == batch


def test_one_message_fast_paths_agree_with_decode() -> None:
    frame = encode([(42, b"x" * 1000)])
    assert single(frame) == (42, b"x" * 1000) == tuple(decode(frame)[0])
    assert single_task(frame[:SINGLE_HEAD], len(frame)) == 42
    assert single_head(42, 1000) + b"x" * 1000 == frame
    # not a one-message frame, or not a frame at all: None, and decode tells what is wrong
    two = encode([(1, b"a"), (2, b"b")])
    assert single(two) is None and decode(two) == [(1, b"a"), (2, b"b")]
    for junk in (frame[:-1], frame + b"x", b"\x00" * 40, b"", frame[:SINGLE_HEAD]):
        assert single(junk) is None
        with pytest.raises(FrameError):
            decode(junk)
    assert single_task(frame[:SINGLE_HEAD], len(frame) + 1) is None
    with pytest.raises(FrameError):
        single_head(2**40, 1)


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


def test_the_public_names_plugins_use() -> None:
    from squall.transports import framing
    assert {"HEADER", "MAGIC", "SINGLE_HEAD", "FrameError", "GarbageLog", "decode",
            "decode_frames", "encode", "frame_length", "single", "single_head", "single_task",
            "split_frames"} <= set(framing.__all__)
    assert all(hasattr(framing, name) for name in framing.__all__)
