"""The nng transport's sending side: a window of unacknowledged batches, handed to nng directly
when the connection is idle and merged by a background thread when it is busy. The protocol is
described in :mod:`.transport`."""
from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque

import pynng

from squall.errors import TransportError
from squall.transports.framing import encode, single_head
from squall.plugins.transport_nng.wire import (
    _ACK,
    _DATA,
    _KIND_ACK,
    _KIND_DATA,
    _KIND_MERGED,
    _MERGED,
    MAX_MESSAGE,
    _send_parts,
)
from squall.spi.transport import Connection, Message

log = logging.getLogger("squall.plugins.transport_nng.transport")   # the transport's log, as before

#: messages nng queues ahead of the connection (the batches ``send`` queues behind them wait
#: in the window and go out merged, so a busy connection makes fewer, larger nng messages)
_NNG_QUEUE = 4
#: at most this many batches, and this many bytes, go out merged in one nng message
_MERGE = 64
_MERGE_BYTES = 256 << 10
#: a payload from this size on (one that would fill a merged message alone) is copied into
#: nng's buffer without being joined to its header first
_SPLIT = _MERGE_BYTES
#: the sender thread's wait for room in nng's queue (ms): then it checks for close and
#: reconnection and waits again
_SEND_WAIT_MS = 100
#: how often ``close`` looks for the acks of what it still holds (s)
_ACK_POLL = 0.002
#: after an unexpected nng error the sender thread tries again this much later (s)
_RETRY = 0.05
#: the largest frame ``send`` accepts (the receiver refuses messages over MAX_MESSAGE): the
#: transport's ``max_frame_bytes``
MAX_FRAME = MAX_MESSAGE - _DATA.size - 64


class NngSender(Connection):
    """A dialing Pair1 socket fed by a background thread from a window of unacknowledged
    batches; ``send`` never blocks."""

    def __init__(self, sock: pynng.Pair1, address: str, port: int, window: int,
                 linger: float = 1.0) -> None:
        self.port = port
        self._linger = linger
        self._sock, self._address = sock, address
        self._limit = window
        self._drain_every = max(1, min(window // 4, 16))
        self._until_drain = self._drain_every
        self._session = os.urandom(8)
        self._seq = 0           # last sequence number given out
        self._acked = 0         # highest sequence number the receiver acknowledged
        #: (seq, frame parts) not acknowledged yet, oldest first; the first ``_sent`` were handed to
        #: nng since the last reconnection, the rest wait for the sender thread
        self._window: deque[tuple[int, tuple[bytes, ...]]] = deque()
        self._sent = 0
        self._connects = 0
        self._rewind = False
        self._busy = False      # the sender thread has batches to hand nng (no need to wake it)
        self._warned = False    # an nng error was logged at WARNING (later ones at DEBUG)
        self._closed = False
        self._closing = False   # close() waits for the window: send refuses, the thread goes on
        self._lock = threading.Lock()
        self._wake = threading.Event()
        sock.add_post_pipe_connect_cb(self._on_connect)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"squall-nng-sender-{address}")
        self._thread.start()

    def send(self, messages: list[Message]) -> None:
        if self._closed or self._closing:
            raise TransportError(f"send on a closed connection to {self._address}")
        one = messages[0] if len(messages) == 1 else None
        if (one.__class__ is tuple and len(one) == 2 and one[1].__class__ is bytes
                and len(one[1]) >= _SPLIT):
            # a large payload goes to nng without being joined to its header here
            parts: tuple[bytes, ...] = (single_head(one[0], len(one[1])), one[1])
        else:
            parts = (encode(messages),)
        size = sum(map(len, parts))
        if size > MAX_FRAME:
            raise TransportError(f"a batch of {size} bytes is over the {MAX_FRAME} bytes nng "
                                 f"carries in one message")
        with self._lock:
            if self._closed or self._closing:
                raise TransportError(f"send on a closed connection to {self._address}")
            window = self._window
            try:
                self._until_drain -= 1
                if self._until_drain <= 0 or len(window) >= self._limit:
                    self._until_drain = self._drain_every
                    self._drain_acks()
                if len(window) >= self._limit:
                    raise TransportError(
                        f"send buffer to {self._address} is full (peer slow or gone)")
                self._seq = seq = self._seq + 1
                window.append((seq, parts))
                if self._busy:              # the sender thread will merge it with the rest
                    return
                if self._sent == len(window) - 1 and len(parts) == 1 and not self._rewind:
                    # nothing else waiting: straight to nng if it has room (no thread hop)
                    try:
                        self._sock.send(_DATA.pack(_KIND_DATA, self._session, seq,
                                                   self._acked + 1) + parts[0], block=False)
                        self._sent += 1
                        return
                    except pynng.NNGException:  # no room (or worse): the thread sees to it
                        pass
                self._busy = True
                self._wake.set()
            except pynng.NNGException as exc:
                raise TransportError(f"nng send to {self._address} failed: {exc}") from exc

    def _drain_acks(self) -> None:
        """Take every ack nng has queued; drop the acknowledged batches from the window."""
        sock, session, acked = self._sock, self._session, self._acked
        while True:
            try:
                data = sock.recv(block=False)
            except pynng.TryAgain:
                break
            except RuntimeError:    # pynng 0.9 fails to unpack an empty message: not ours
                continue
            if len(data) == _ACK.size and data[0] == _KIND_ACK:
                _, to, seq = _ACK.unpack(data)
                if to == session and acked < seq <= self._seq:
                    acked = seq
        if acked > self._acked:
            self._acked = acked
            window, done = self._window, 0
            while window and window[0][0] <= acked:
                window.popleft()
                done += 1
            self._sent = max(0, self._sent - done)

    def _next(self) -> tuple[int, tuple[bytes, ...]] | None:
        """The next nng message to send, as (its first sequence number, its parts): every
        batch waiting in the window up to _MERGE of them and _MERGE_BYTES, or one large one;
        None when nng has them all. Called with the lock held."""
        if self._rewind:            # a new pipe: whatever went to the old one may be lost
            self._rewind = False
            self._drain_acks()
            self._sent = 0
        window, at = self._window, self._sent
        if at >= len(window):
            return None
        seq, parts = window[at]
        session, floor = self._session, self._acked + 1
        if len(parts) == 1:         # small: merge it with the small ones queued behind it
            frames, size = [parts[0]], len(parts[0])
            for i in range(at + 1, min(len(window), at + _MERGE)):
                more = window[i][1]
                if len(more) > 1 or size + len(more[0]) > _MERGE_BYTES:
                    break
                frames.append(more[0])
                size += len(more[0])
            if len(frames) > 1:
                self._sent = at + len(frames)
                return seq, (_MERGED.pack(_KIND_MERGED, session, seq, floor, len(frames)),
                             *frames)
        self._sent = at + 1
        return seq, (_DATA.pack(_KIND_DATA, session, seq, floor), *parts)

    def _on_connect(self, pipe: pynng.Pipe) -> None:
        # nng's thread: only flag and wake. Nothing can be lost before the first pipe.
        self._connects += 1
        if self._connects > 1:
            self._rewind = True
            self._wake.set()

    def _run(self) -> None:
        delay: float | None = None
        while not self._closed:
            self._wake.wait(delay)
            self._wake.clear()
            try:
                delay = self._hand_over()
            except pynng.Closed:
                return

    def _hand_over(self) -> float | None:
        """Hand nng what ``send`` queued, merged, waiting for room in nng's short queue (the
        batches that queue up meanwhile go out together in the next message). Returns None
        once nng has everything (or the connection closed), or how long to wait before
        trying again after an unexpected nng error."""
        sock = self._sock
        while True:
            with self._lock:
                if self._closed:
                    return None
                try:
                    job = self._next()
                except pynng.Closed:
                    raise
                except pynng.NNGException as exc:
                    self._warn("cannot read acks", exc)
                    self._busy = True       # a retry is due: send() need not wake us
                    return _RETRY
                if job is None:
                    self._busy = False
                    return None
            seq, parts = job
            delay = None
            try:
                if len(parts[-1]) >= _SPLIT:        # a payload too large to join
                    _send_parts(sock, parts)
                else:
                    sock.send(b"".join(parts))      # waits for room, up to a timeout
                continue
            except pynng.Timeout:           # nobody listening, or nng's queue still full
                pass
            except pynng.Closed:
                raise
            except pynng.NNGException as exc:
                self._warn("cannot send", exc)
                delay = _RETRY
            with self._lock:                # nng did not take it: hand it over again
                window = self._window
                if window:
                    self._sent = min(self._sent, max(0, seq - window[0][0]))
            if delay is not None:
                return delay

    def _warn(self, what: str, exc: Exception) -> None:
        (log.debug if self._warned else log.warning)(
            "nng sender to %s %s: %s", self._address, what, exc)
        self._warned = True

    def recv(self, timeout: float | None = None) -> list[Message]:
        raise TransportError("a connecting (sending) connection cannot receive")

    def close(self) -> None:
        """Refuse further sends, give the batches not yet acknowledged up to the linger to
        be delivered and acknowledged (the sender thread goes on handing them over), then
        close the socket."""
        with self._lock:
            if self._closed or self._closing:
                return
            self._closing = True
        deadline = time.monotonic() + self._linger
        while threading.current_thread() is not self._thread:
            with self._lock:
                try:
                    self._drain_acks()
                except pynng.NNGException:      # the socket failed: nothing more arrives
                    break
                if not self._window:
                    break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, _ACK_POLL))
        with self._lock:
            self._closed = True
            self._sock.close()
        self._wake.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(5)
