"""The gRPC transport (entry point ``grpc``), defined by ``transport.proto`` next to this file.

* ``bind`` starts a gRPC server on ``127.0.0.1:<port>`` serving ``Transfer.Stream`` (a
  client-streaming call of ``Batch`` messages, each holding one frame of
  :mod:`squall.runtime.framing`). Each inbound stream runs in a server thread that appends the
  frames to a bounded inbox; when it is full that thread waits, so HTTP/2 flow control slows
  the sender down rather than memory growing.
* ``connect`` opens a channel and ONE stream per connection, fed by a background thread from
  a bounded queue (``squall.transport.send.buffer.messages`` batches, default 10000). ``send``
  only encodes and queues: it raises :class:`~squall.errors.TransportError` when the queue is
  full (peer slow or gone) or the connection is closed. A broken stream is reopened (the
  channel redials within 50 ms .. 1 s); the batch in flight when a receiver dies may be lost.
* ``recv`` waits on a condition variable (the GIL is released) and returns every queued
  message. Invalid frames are logged once per peer and dropped.

Options (``squall.transport.grpc.*``): ``max.message.mb`` (256), ``tls.enabled`` (false),
``tls.cert.file`` + ``tls.key.file`` (PEM, needed to bind), ``tls.ca.file`` (PEM root for
connecting) and ``tls.server.name`` (override of the name checked in the server certificate;
by default the host dialed, IP addresses included).

Threading: every method of a connection may be called from any thread; ``close`` wakes a
waiting ``recv`` at once.
"""
from __future__ import annotations

import collections
import logging
import queue
import threading
from concurrent import futures
from typing import Any
from collections.abc import Iterator, Mapping

import grpc

from squall.errors import ConfigError, TransportError
from squall.plugins.transport_grpc._proto import transport_pb2 as pb
from squall.plugins.transport_grpc._proto import transport_pb2_grpc as pb_grpc
from squall.runtime.framing import GarbageLog, decode_frames, encode
from squall.spi.transport import Connection, Message, Transport

__all__ = ["GrpcTransport"]

log = logging.getLogger(__name__)
_STOP = object()
_BACKOFF = {"grpc.initial_reconnect_backoff_ms": 50, "grpc.min_reconnect_backoff_ms": 50,
            "grpc.max_reconnect_backoff_ms": 1000}


class GrpcReceiver(Connection, pb_grpc.TransferServicer):
    """A bound gRPC server; its inbox holds at most ``limit`` undecoded batches."""

    def __init__(self, limit: int) -> None:
        self.port = 0
        self.server: grpc.Server | None = None
        self._limit = limit
        self._frames: collections.deque[tuple[bytes, str]] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self.garbage = GarbageLog(log, "grpc receiver")

    def Stream(self, request_iterator: Iterator[pb.Batch],
               context: grpc.ServicerContext) -> pb.Summary:
        """Server thread, one per inbound stream: move frames into the inbox."""
        peer, count, cond, frames = context.peer(), 0, self._cond, self._frames
        for batch in request_iterator:
            with cond:
                while len(frames) >= self._limit and not self._closed:
                    cond.wait(0.5)
                if self._closed:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "receiver closed")
                frames.append((batch.frame, peer))
                cond.notify()
            count += 1
        return pb.Summary(batches=count)

    def send(self, messages: list[Message]) -> None:
        raise TransportError("a bound (receiving) connection cannot send")

    def recv(self, timeout: float | None = None) -> list[Message]:
        with self._cond:
            if not self._frames and not self._closed:
                self._cond.wait_for(lambda: self._frames or self._closed, timeout)
            if self._closed or not self._frames:
                return []
            taken = list(self._frames)
            self._frames.clear()
            self._cond.notify_all()      # wake stream threads waiting for room
        return decode_frames(taken, self.garbage)

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._frames.clear()
            self._cond.notify_all()
        if self.server is not None:
            self.server.stop(grace=0).wait(5)


class GrpcSender(Connection):
    """One channel and one stream to a receiver, fed by a background thread."""

    def __init__(self, channel: grpc.Channel, address: str, port: int, limit: int,
                 linger: float) -> None:
        self.port = port
        self._channel, self._address, self._linger = channel, address, linger
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=limit)
        self._closed = threading.Event()
        self._stub = pb_grpc.TransferStub(channel)
        self._thread = threading.Thread(target=self._run, name=f"squall-grpc-send-{address}",
                                        daemon=True)
        self._thread.start()

    def send(self, messages: list[Message]) -> None:
        if self._closed.is_set():
            raise TransportError(f"send on a closed connection to {self._address}")
        frame = encode(messages)
        try:
            self._queue.put_nowait(frame)
        except queue.Full as exc:
            raise TransportError(
                f"send queue to {self._address} is full (peer slow or gone)") from exc

    def _batches(self) -> Iterator[pb.Batch]:
        get, closed = self._queue.get, self._closed
        while True:
            try:
                frame = get(timeout=0.2)
            except queue.Empty:
                if closed.is_set():
                    return
                continue
            if frame is _STOP:
                return
            yield pb.Batch(frame=frame)

    def _run(self) -> None:
        """Sender thread: keep one stream open while the connection lives."""
        while not self._closed.is_set() or not self._queue.empty():
            try:
                self._stub.Stream(self._batches(), wait_for_ready=True)
            except grpc.RpcError as exc:
                if self._closed.is_set() and exc.code() == grpc.StatusCode.CANCELLED:
                    return
                log.debug("grpc stream to %s broke (%s); reopening", self._address, exc.code())
                self._closed.wait(0.05)
            except ValueError:        # channel closed under us during shutdown
                return

    def recv(self, timeout: float | None = None) -> list[Message]:
        raise TransportError("a connecting (sending) connection cannot receive")

    def close(self) -> None:
        if self._closed.is_set():
            return
        pending = not self._queue.empty()
        self._closed.set()
        try:
            self._queue.put_nowait(_STOP)
        except queue.Full:
            pass
        # queued batches get a short linger to flush; an idle stream just ends
        self._thread.join(self._linger if pending else 0.2)
        self._channel.close()


class GrpcTransport(Transport):
    """gRPC client-streaming transport; see the module docstring for options and threading."""

    name = "grpc"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        self.limit = int(self.conf.get("squall.transport.send.buffer.messages") or 10000)
        size = int(float(self.option("max.message.mb", 256)) * (1 << 20))
        self.options = [("grpc.max_send_message_length", size),
                        ("grpc.max_receive_message_length", size)]
        self.tls = bool(self.option("tls.enabled", False))
        self.linger = float(self.option("linger.ms", 1000)) / 1000
        self._conns: list[Connection] = []
        self._lock = threading.Lock()

    def _read(self, key: str) -> bytes:
        path = self.option(key, None)
        if not path:
            raise ConfigError(f"squall.transport.grpc.{key} is required when "
                              "squall.transport.grpc.tls.enabled is true")
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise ConfigError(f"squall.transport.grpc.{key}: cannot read {path}: {exc}") from exc

    def _track(self, conn: Connection) -> Connection:
        with self._lock:
            self._conns.append(conn)
        return conn

    def bind(self, topology_id: str, port: int) -> Connection:
        receiver = GrpcReceiver(max(1, self.limit))
        creds = (grpc.ssl_server_credentials([(self._read("tls.key.file"),
                                               self._read("tls.cert.file"))])
                 if self.tls else None)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=256,
                                                        thread_name_prefix="squall-grpc-recv"),
                             options=[*self.options, ("grpc.so_reuseport", 0)])
        pb_grpc.add_TransferServicer_to_server(receiver, server)
        address = f"127.0.0.1:{port}"
        try:
            bound = (server.add_secure_port(address, creds) if creds is not None
                     else server.add_insecure_port(address))
        except RuntimeError as exc:
            raise TransportError(f"grpc cannot listen on {address}: {exc}") from exc
        if not bound:
            raise TransportError(f"grpc cannot listen on {address}")
        receiver.server, receiver.port = server, bound
        receiver.garbage.where = f"grpc receiver on port {bound}"
        server.start()
        return self._track(receiver)

    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        address = f"{host}:{port}"
        options: list[tuple[str, Any]] = [*self.options, *_BACKOFF.items()]
        if self.tls:
            creds = grpc.ssl_channel_credentials(root_certificates=self._read("tls.ca.file"))
            name = self.option("tls.server.name", None)
            if name:
                options.append(("grpc.ssl_target_name_override", str(name)))
            channel = grpc.secure_channel(address, creds, options=options)
        else:
            channel = grpc.insecure_channel(address, options=options)
        return self._track(GrpcSender(channel, address, port, max(1, self.limit), self.linger))

    def close(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
