"""A minimal third-party squall transport: plain TCP sockets and squall's shared framing.

It exists to prove that an outside distribution registered in ``squall.transports`` passes the
same contract suite as the built-in transports. Each ``send`` is queued (bounded) and a sender
thread writes one frame at a time, waiting for a one-byte acknowledgement the receiver writes
before queueing the frame; a frame that was not acknowledged is written again on a new socket,
so a receiver restart loses nothing.
"""
from __future__ import annotations

import collections
import logging
import queue
import socket
import threading
from typing import Any
from collections.abc import Mapping

from squall import Connection, Transport, TransportError
from squall.transports.framing import HEADER, FrameError, decode, encode, frame_length

log = logging.getLogger(__name__)
ACK = b"\x06"
_STOP = object()


def _read_exact(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("peer closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class EchoReceiver(Connection):
    def __init__(self, listener: socket.socket, limit: int) -> None:
        self.port = listener.getsockname()[1]
        self._listener, self._limit = listener, limit
        self._frames: collections.deque[bytes] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._peers: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                peer, _ = self._listener.accept()
            except OSError:
                return
            self._peers.append(peer)
            threading.Thread(target=self._serve, args=(peer,), daemon=True).start()

    def _serve(self, peer: socket.socket) -> None:
        try:
            while True:
                header = _read_exact(peer, HEADER.size)
                frame = header + _read_exact(peer, frame_length(header) - HEADER.size)
                decode(frame)                           # validate before acknowledging
                peer.sendall(ACK)
                with self._cond:
                    while len(self._frames) >= self._limit and not self._closed:
                        self._cond.wait(0.5)
                    if self._closed:
                        return
                    self._frames.append(frame)
                    self._cond.notify()
        except FrameError as exc:
            log.warning("echo transport: dropping a peer that sent garbage: %s", exc)
        except OSError:
            pass
        finally:
            peer.close()

    def send(self, messages: list[tuple[int, bytes]]) -> None:
        raise TransportError("receiving connection")

    def recv(self, timeout: float | None = None) -> list[tuple[int, bytes]]:
        with self._cond:
            self._cond.wait_for(lambda: self._frames or self._closed, timeout)
            if self._closed:
                return []
            frames = list(self._frames)
            self._frames.clear()
            self._cond.notify_all()
        return [m for frame in frames for m in decode(frame)]

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for peer in self._peers:
            try:
                peer.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class EchoSender(Connection):
    def __init__(self, address: tuple[str, int], limit: int) -> None:
        self.port = address[1]
        self._address = address
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=limit)
        self._closed = threading.Event()
        self._sock: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def send(self, messages: list[tuple[int, bytes]]) -> None:
        if self._closed.is_set():
            raise TransportError("closed")
        frame = encode(messages)
        try:
            self._queue.put_nowait(frame)
        except queue.Full as exc:
            raise TransportError(f"send queue to {self._address} is full") from exc

    def _run(self) -> None:
        while True:
            frame = self._queue.get()
            if frame is _STOP:
                return
            while not self._deliver(frame):
                if self._closed.wait(0.05):
                    return

    def _deliver(self, frame: bytes) -> bool:
        try:
            if self._sock is None:
                self._sock = socket.create_connection(self._address, timeout=1)
                self._sock.settimeout(10)
            self._sock.sendall(frame)
            if self._sock.recv(1) == ACK:
                return True
        except OSError:
            pass
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        return False

    def recv(self, timeout: float | None = None) -> list[tuple[int, bytes]]:
        raise TransportError("sending connection")

    def close(self) -> None:
        if self._closed.is_set():
            return
        pending = not self._queue.empty()
        self._closed.set()
        try:
            self._queue.put_nowait(_STOP)
        except queue.Full:
            pass
        self._thread.join(1.0 if pending else 0.2)
        if self._sock is not None:
            self._sock.close()


class EchoTransport(Transport):
    name = "echo"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        self.limit = int(self.conf.get("squall.transport.send.buffer.messages") or 10000)
        self._conns: list[Connection] = []

    def bind(self, topology_id: str, port: int) -> Connection:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("127.0.0.1", port))
            listener.listen(64)
        except OSError as exc:
            listener.close()
            raise TransportError(f"cannot listen on {port}: {exc}") from exc
        conn = EchoReceiver(listener, self.limit)
        self._conns.append(conn)
        return conn

    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        conn = EchoSender((host, port), self.limit)
        self._conns.append(conn)
        return conn

    def close(self) -> None:
        conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
