"""The wire framing of squall's transports: public API for transport plugins.

A transport moves batches of ``(task_id, payload)`` messages (``task_id`` an ``int`` that fits
in 32 signed bits, ``payload`` the serialized tuple as ``bytes``). This module turns one batch
into one frame (one zmq message, one nng message, one gRPC ``Batch.frame``, or one record on a
plain byte stream) and back. The built-in transports and the zmq, nng and grpc plugins all use
it; a plugin transport that uses it too gets a validated, versioned format for free::

    header   16 bytes, little-endian  "<BBHIQ"  (HEADER)
             magic    u8   0xA7       (MAGIC)
             version  u8   1          (VERSION)
             reserved u16  0
             count    u32  number of messages n (at most MAX_MESSAGES)
             length   u64  total frame length in bytes, header included
    task ids n x i32 (little-endian)
    lengths  n x u32 (little-endian)
    payloads the n payloads back to back

Storing ids and lengths as two arrays (instead of interleaving them with the payloads) lets
both ends handle a batch of any size with one ``struct`` call per array plus one slice per
payload. ``length`` in the header lets a stream transport read exactly one frame: read
``HEADER.size`` bytes, call :func:`frame_length`, read the rest. A one-message frame (what
workers send most) starts with :data:`SINGLE_HEAD` fixed-size bytes; :func:`single`,
:func:`single_task` and :func:`single_head` are the fast paths for it, and agree with
:func:`encode` and :func:`decode`.

Contracts shared by every function here:

* pure functions, thread-safe, no I/O (:class:`GarbageLog` only logs);
* anything that is not a valid frame (magic, version, counts, lengths) raises
  :class:`FrameError`, a :class:`~squall.errors.TransportError`, never another exception;
  the ``single*`` fast paths answer ``None`` instead and leave the diagnosis to :func:`decode`;
* a receiving transport does not raise out of ``recv`` for a bad frame: it drops the frame and
  reports it to a :class:`GarbageLog` (once per peer at WARNING), or lets
  :func:`decode_frames` do both.

Everything plugins may use is named in ``__all__``; the rest is private.
"""
from __future__ import annotations

import functools
import logging
import struct
from collections.abc import Iterable
from typing import Any
from itertools import accumulate

from squall.errors import TransportError

__all__ = [
    # the frame format
    "HEADER", "MAGIC", "MAX_MESSAGES", "SINGLE_HEAD", "VERSION",
    # encoding and decoding
    "FrameError", "decode", "encode", "frame_length", "split_frames",
    # the one-message fast paths
    "single", "single_head", "single_task",
    # receivers: invalid frames are logged and skipped
    "GarbageLog", "decode_frames",
]

MAGIC = 0xA7
VERSION = 1
HEADER = struct.Struct("<BBHIQ")
#: a sanity bound on ``count`` so a garbage header cannot make the decoder allocate gigabytes
MAX_MESSAGES = 1 << 24
_ONE = struct.Struct("<BBHIQiI")  # header + a single (task id, length) pair: the batch-of-1 path
_ONE_HEAD = HEADER.pack(MAGIC, VERSION, 0, 1, 0)[:8]     # magic, version, reserved, count 1
_ONE_TAIL = struct.Struct("<QiI").pack                  # length, task id, payload length
_ONE_ALL = struct.Struct("<8sQiI").unpack_from          # the first eight bytes and those three
#: bytes before the payload in a one-message frame
SINGLE_HEAD = _ONE.size


class FrameError(TransportError):
    """Bytes that are not a valid squall frame (wrong magic/version, inconsistent lengths)."""


def encode(messages: list[tuple[int, bytes]], prefix: bytes = b"") -> bytes:
    """Encode a batch into one frame, after ``prefix`` (a transport's own header, joined in
    the same copy; ``decode(result, len(prefix))`` gives the batch back). An empty batch is a
    valid frame of no messages. Raises FrameError for a task id that is not a 32-bit ``int``
    or a payload that is not ``bytes``-like."""
    n = len(messages)
    try:
        if n == 1:
            task, payload = messages[0]
            size = len(payload)
            if prefix:
                return b"".join((prefix, _ONE_HEAD, _ONE_TAIL(SINGLE_HEAD + size, task, size),
                                 payload))
            # two concatenations cost half of one join of a fresh tuple (the payload is
            # copied once either way)
            return _ONE_HEAD + _ONE_TAIL(SINGLE_HEAD + size, task, size) + payload
        task_ids, payloads = zip(*messages, strict=True) if n else ((), ())
        lengths = list(map(len, payloads))
        total = HEADER.size + 8 * n + sum(lengths)
        parts = [prefix, HEADER.pack(MAGIC, VERSION, 0, n, total), _ids(n).pack(*task_ids),
                 _lens(n).pack(*lengths)]
        parts.extend(payloads)
        return b"".join(parts)
    except (struct.error, OverflowError, TypeError, ValueError) as exc:
        raise FrameError(f"cannot frame batch (want [(int, bytes), ...]): {exc}") from exc


def frame_length(header: bytes) -> int:
    """Total frame length (header included) announced by the first :data:`HEADER` bytes of
    ``header`` (for stream transports; more bytes may follow, they are ignored).

    Raises FrameError when ``header`` is short or not a squall header.
    """
    if len(header) < HEADER.size:
        raise FrameError(f"short header ({len(header)} bytes)")
    magic, version, _, count, total = HEADER.unpack_from(header)
    if magic != MAGIC or version != VERSION:
        raise FrameError(f"bad magic/version {magic:#x}/{version}")
    if count > MAX_MESSAGES or total < HEADER.size + 8 * count:
        raise FrameError(f"bad header: count={count} length={total}")
    return int(total)


def single(frame: bytes) -> tuple[int, bytes] | None:
    """The one ``(task_id, payload)`` of a valid one-message frame, else None (then use
    :func:`decode`, which also says what is wrong). The receive fast path."""
    try:
        head, total, task, length = _ONE_ALL(frame)
    except struct.error:        # shorter than a one-message frame's header
        return None
    if head == _ONE_HEAD and total == len(frame) == length + SINGLE_HEAD:
        return task, frame[SINGLE_HEAD:]
    return None


def single_task(head: bytes, size: int) -> int | None:
    """The task id if ``head`` (a frame's first :data:`SINGLE_HEAD` bytes or more) starts a
    valid one-message frame of ``size`` bytes in all; else None. Lets a transport copy only
    the payload out of a frame it holds in its own buffer."""
    try:
        first, total, task, length = _ONE_ALL(head)
    except struct.error:
        return None
    if first == _ONE_HEAD and total == size == length + SINGLE_HEAD:
        return int(task)
    return None


def single_head(task: int, size: int) -> bytes:
    """The :data:`SINGLE_HEAD` bytes that start a one-message frame of a ``size``-byte payload
    (for a transport that sends header and payload without joining them first; the two
    together equal ``encode([(task, payload)])``). Raises FrameError for a task id out of
    range."""
    try:
        return _ONE_HEAD + _ONE_TAIL(SINGLE_HEAD + size, task, size)
    except struct.error as exc:
        raise FrameError(f"cannot frame task id {task!r}: {exc}") from exc


def decode(frame: bytes | bytearray | memoryview, offset: int = 0) -> list[tuple[int, bytes]]:
    """Decode the frame that starts ``offset`` bytes into ``frame`` (and runs to its end) into
    ``[(task_id, payload), ...]`` in the order encoded; payloads are ``bytes`` whatever buffer
    type ``frame`` is. Raises FrameError if the bytes are not exactly one valid frame."""
    buf = frame if frame.__class__ is bytes else bytes(frame)
    size = len(buf) - offset
    task = single_task(buf[offset:offset + SINGLE_HEAD], size)
    if task is not None:        # the common case: one message per frame, as workers send
        return [(task, buf[offset + SINGLE_HEAD:])]
    total = frame_length(buf[offset:offset + HEADER.size])
    if total != size:
        raise FrameError(f"frame length {size} does not match header {total}")
    count = HEADER.unpack_from(buf, offset)[3]
    off = offset + HEADER.size
    tasks = _ids(count).unpack_from(buf, off)
    lengths = _lens(count).unpack_from(buf, off + 4 * count)
    pos = off + 8 * count
    if pos - offset + sum(lengths) != size:
        raise FrameError("payload lengths do not add up to the frame length")
    ends = list(accumulate(lengths, initial=pos))
    return list(zip(tasks, [buf[a:b] for a, b in zip(ends, ends[1:], strict=False)],
                    strict=True))


def split_frames(buf: bytes, count: int) -> list[bytes]:
    """The ``count`` frames stored back to back in ``buf``; FrameError unless they fill it
    exactly."""
    frames, pos, size = [], 0, len(buf)
    for _ in range(count):
        total = frame_length(buf[pos:pos + HEADER.size])
        if pos + total > size:
            raise FrameError(f"frame of {total} bytes runs past the end ({size - pos} left)")
        frames.append(buf[pos:pos + total])
        pos += total
    if pos != size:
        raise FrameError(f"{size - pos} bytes after {count} frames")
    return frames


def decode_frames(frames: Iterable[tuple[bytes, Any]], garbage: GarbageLog
                  ) -> list[tuple[int, bytes]]:
    """Decode ``(frame, peer)`` pairs into one message list, in order; each invalid frame is
    reported to ``garbage.dropped(peer, error)`` and skipped, so a bad frame never raises."""
    out: list[tuple[int, bytes]] = []
    for frame, peer in frames:
        try:
            batch = decode(frame)
        except FrameError as exc:
            garbage.dropped(peer, exc)
            continue
        if out:
            out.extend(batch)
        else:
            out = batch
    return out


@functools.lru_cache(maxsize=256)
def _ids(n: int) -> struct.Struct:
    return struct.Struct(f"<{n}i")


@functools.lru_cache(maxsize=256)
def _lens(n: int) -> struct.Struct:
    return struct.Struct(f"<{n}I")


class GarbageLog:
    """Logs a dropped invalid frame once per peer (a WARNING line), later ones at DEBUG.

    Receivers call :meth:`dropped` from their receive thread; ``count`` is the running total.
    """

    def __init__(self, logger: logging.Logger, where: str) -> None:
        """Log through ``logger``; ``where`` (e.g. ``"zmq receiver on port 6700"``) starts
        every line."""
        self.logger, self.where = logger, where
        self.count = 0
        self._peers: set[str] = set()

    def dropped(self, peer: str | None, error: Exception) -> None:
        """Count one dropped frame from ``peer`` (None: unknown) and log ``error``: at WARNING
        the first time for a peer, at DEBUG afterwards (and for every peer beyond the first
        thousand, so the set of peers stays bounded)."""
        self.count += 1
        peer = peer or "unknown peer"
        if peer in self._peers or len(self._peers) > 1000:
            self.logger.debug("%s: dropped another invalid frame from %s: %s",
                              self.where, peer, error)
            return
        self._peers.add(peer)
        self.logger.warning("%s: dropped an invalid frame from %s (%s); further ones from this "
                            "peer are logged at DEBUG", self.where, peer, error)
