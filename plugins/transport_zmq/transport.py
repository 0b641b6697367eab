"""The ZeroMQ transport (entry point ``zmq``, the default between workers).

* ``bind`` opens a PULL socket on ``tcp://<bind.host>:<port>`` in a context of its own, so
  ``close`` is synchronous: when it returns the port is released and peers see the hang-up.
* ``connect`` opens a PUSH socket (shared context per transport) to ``tcp://host:port``;
  zmq connects lazily and reconnects by itself, queueing up to ``hwm`` batches meanwhile.
* One ``send`` = one zmq message holding one frame of :mod:`squall.transports.framing`.
  It is non-blocking (``zmq.NOBLOCK``): when ``hwm`` batches are queued for the peer it raises
  :class:`~squall.errors.TransportError` and the worker fails those tuples back.
* ``recv`` waits in ``zmq.Poller.poll`` (the GIL is released) and returns the messages already
  queued, decoded into one list, up to 256 KiB of them (the rest wait for the next ``recv``).
  Invalid frames are dropped; the first is logged as a WARNING line, later ones at DEBUG (zmq
  does not name the sender of a message copied out of it).

Options (``squall.transport.zmq.*``): ``bind.host`` (127.0.0.1), ``hwm`` (defaults to
``squall.transport.send.buffer.messages``, else 10000; batches, both directions; 0 is zmq's
"no limit"), ``linger.ms`` (1000; at least 0), ``curve.enabled`` (false),
``curve.server.secret.key`` / ``curve.server.public.key`` (Z85 text). With CurveZMQ on and
no keys configured, the transport generates a server keypair when it is created: only
connections made through that same transport object can then talk to
its bound ports, so a real cluster must configure the same keys on every worker
(:func:`generate_keys` prints a fresh pair).

``squall.transport.tls: true`` (the cluster's mutual authentication, API.md section 14) turns
CURVE on with the cluster's keypair, derived from the cluster's transport key (the generated
one a worker got, else ``squall.tls.key``; :func:`squall.security.transport_creds.curve_seed`):
every worker is server and client with that one key, and a ZAP handler (:mod:`.zap`) on each
bound socket admits only it, so a peer that merely knows the server's public key cannot send
tuples (refusals logged once per peer).

Threading: zmq sockets are not thread-safe. Use each Connection from one thread at a time; the
only exception is a bound connection's ``close``, which may come from another thread while
``recv`` waits (``recv`` notices within 0.1 s and returns ``[]``).
"""
from __future__ import annotations

import logging
import threading
from typing import Any
from collections.abc import Mapping

import zmq

from squall.errors import ConfigError, TransportError
from squall.transports.framing import FrameError, GarbageLog, decode, encode, single
from squall.spi.transport import Connection, Message, Transport
from squall.plugins.transport_zmq.hooks import check_options
from squall.plugins.transport_zmq.zap import ZapAllowList

__all__ = ["ZmqTransport", "generate_keys"]

log = logging.getLogger(__name__)
_SLICE_MS = 100         # how often a waiting recv checks for a close from another thread
_COPY_THRESHOLD = 64 * 1024
#: one ``recv`` returns once it took this many bytes: the messages a caller gets in one list
#: then stay in the CPU's cache (draining thousands of queued batches at once made each
#: message cost about twice as much to receive)
_DRAIN_BYTES = 256 * 1024


def generate_keys() -> tuple[str, str]:
    """A fresh CurveZMQ keypair as Z85 text: ``(public_key, secret_key)``.

    Put them in ``squall.transport.zmq.curve.server.public.key`` / ``...secret.key`` on every
    worker of the cluster.
    """
    public, secret = zmq.curve_keypair()
    return public.decode("ascii"), secret.decode("ascii")


class ZmqReceiver(Connection):
    """A bound PULL socket. ``recv`` from one thread; ``close`` from any thread."""

    def __init__(self, ctx: zmq.Context, sock: zmq.Socket, port: int,
                 zap: ZapAllowList | None = None) -> None:
        self.port = port
        self._ctx, self._sock, self._zap = ctx, sock, zap
        self._poller = zmq.Poller()
        self._poller.register(sock, zmq.POLLIN)
        self._lock = threading.Lock()
        self._closed = self._receiving = False
        self.garbage = GarbageLog(log, f"zmq receiver on port {port}")

    def send(self, messages: list[Message]) -> None:
        raise TransportError("a bound (receiving) connection cannot send")

    def recv(self, timeout: float | None = None) -> list[Message]:
        with self._lock:
            if self._closed:
                return []
            self._receiving = True
        try:
            return self._recv(timeout)
        finally:
            with self._lock:
                self._receiving = False
                if self._closed:
                    self._release()

    def _recv(self, timeout: float | None) -> list[Message]:
        left_ms = None if timeout is None else max(0, int(timeout * 1000))
        while not self._closed:
            wait = _SLICE_MS if left_ms is None else min(_SLICE_MS, left_ms)
            if self._poller.poll(wait):
                return self._drain()
            if left_ms is not None:
                left_ms -= wait
                if left_ms <= 0:
                    return []
        return []

    def _drain(self) -> list[Message]:
        out: list[Message] = []
        recv, append = self._sock.recv, out.append
        left = _DRAIN_BYTES
        while left > 0:
            try:
                # copy=True: a bytes object straight away, a third of the cost of a zmq.Frame
                # (which could name the sending peer, but only an invalid frame would need that)
                frame = recv(zmq.NOBLOCK)
            except zmq.Again:
                return out
            except zmq.ZMQError as exc:
                raise TransportError(f"zmq receive failed on port {self.port}: {exc}") from exc
            left -= len(frame)
            one = single(frame)
            if one is not None:
                append(one)
                continue
            try:
                out.extend(decode(frame))
            except FrameError as exc:
                self.garbage.dropped(None, exc)
        return out

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self._receiving:
                self._release()

    def _release(self) -> None:
        if not self._sock.closed:
            self._sock.close(linger=0)
            if self._zap is not None:
                self._zap.stop()
            self._ctx.term()


class ZmqSender(Connection):
    """A connected PUSH socket. Use from one thread at a time."""

    def __init__(self, sock: zmq.Socket, address: str, port: int) -> None:
        self.port = port
        self._sock, self._address = sock, address
        self._send = sock.send

    def send(self, messages: list[Message]) -> None:
        frame = encode(messages)
        try:
            self._send(frame, zmq.NOBLOCK, len(frame) < _COPY_THRESHOLD)
        except zmq.Again as exc:
            raise TransportError(
                f"send buffer to {self._address} is full (hwm reached: peer slow or gone)"
            ) from exc
        except zmq.ZMQError as exc:
            if self._sock.closed:       # checked here, not before every send
                raise TransportError(f"send on a closed connection to {self._address}") from exc
            raise TransportError(f"zmq send to {self._address} failed: {exc}") from exc

    def recv(self, timeout: float | None = None) -> list[Message]:
        raise TransportError("a connecting (sending) connection cannot receive")

    def close(self) -> None:
        if not self._sock.closed:
            self._sock.close()          # keeps the socket's linger to flush what is queued


class ZmqTransport(Transport):
    """ZeroMQ PUSH/PULL transport; see the module docstring for options and threading."""

    name = "zmq"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        check_options(self.conf)    # a bad value named here, not as zmq's EINVAL at bind
        self.bind_host = str(self.option("bind.host", "127.0.0.1"))
        generic = self.conf.get("squall.transport.send.buffer.messages")
        own = self.option("hwm", None)
        # an hwm of 0 is zmq's "no limit", so only null falls back
        self.hwm = int(own if own is not None else generic or 10000)
        self.linger_ms = int(self.option("linger.ms", 1000))
        self.curve = bool(self.option("curve.enabled", False))
        self.mutual = bool(self.conf.get("squall.transport.tls"))
        self._public = self._secret = b""
        if self.mutual:
            self.curve = True
            self._public, self._secret = self._cluster_keys()
        elif self.curve:
            self._public, self._secret = self._curve_keys()
        self._ctx: zmq.Context | None = None
        self._senders: list[ZmqSender] = []
        self._receivers: list[ZmqReceiver] = []
        self._lock = threading.Lock()

    def _curve_keys(self) -> tuple[bytes, bytes]:
        if not zmq.has("curve"):
            raise ConfigError("squall.transport.zmq.curve.enabled needs libzmq with CURVE")
        secret = self.option("curve.server.secret.key", None)
        public = self.option("curve.server.public.key", None)
        try:
            if secret and not public:
                public = zmq.curve_public(str(secret).encode("ascii")).decode("ascii")
            if not public:
                public, secret = generate_keys()
        except (zmq.ZMQError, ValueError) as exc:
            raise ConfigError(f"bad squall.transport.zmq.curve.server key: {exc}") from exc
        return str(public).encode("ascii"), str(secret or "").encode("ascii")

    def _cluster_keys(self) -> tuple[bytes, bytes]:
        if not zmq.has("curve"):
            raise ConfigError("squall.transport.tls needs libzmq with CURVE for zmq")
        from zmq.utils import z85

        from squall.security.transport_creds import curve_seed
        secret = z85.encode(curve_seed(self.conf))
        return zmq.curve_public(secret), secret

    def _socket(self, ctx: zmq.Context, kind: int) -> zmq.Socket:
        sock = ctx.socket(kind)
        sock.sndhwm = sock.rcvhwm = self.hwm
        sock.linger = self.linger_ms
        return sock

    def bind(self, topology_id: str, port: int) -> Connection:
        if self.curve and not self._secret:
            raise ConfigError("squall.transport.zmq.curve.server.secret.key is needed to bind")
        ctx = zmq.Context(io_threads=1)
        zap = None
        if self.mutual:   # before the socket accepts anyone
            from zmq.utils import z85
            zap = ZapAllowList(ctx, [z85.decode(self._public)], f"zmq receiver on port {port}")
        sock = self._socket(ctx, zmq.PULL)
        if self.curve:
            sock.curve_server = True
            sock.curve_secretkey = self._secret
            if zap is not None:
                sock.zap_domain = b"squall"
        try:
            sock.bind(f"tcp://{self.bind_host}:{port or '*'}")
        except zmq.ZMQError as exc:
            sock.close(linger=0)
            if zap is not None:
                zap.stop()
            ctx.term()
            raise TransportError(f"zmq cannot bind {self.bind_host}:{port}: {exc}") from exc
        endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        receiver = ZmqReceiver(ctx, sock, int(endpoint.rsplit(":", 1)[1]), zap)
        if zap is not None:
            zap.where = f"zmq receiver on port {receiver.port}"
        with self._lock:
            self._receivers.append(receiver)
        return receiver

    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        with self._lock:
            if self._ctx is None:
                self._ctx = zmq.Context(io_threads=1)
            sock = self._socket(self._ctx, zmq.PUSH)
        if self.curve:
            client_public, client_secret = ((self._public, self._secret) if self.mutual
                                            else zmq.curve_keypair())
            sock.curve_serverkey = self._public
            sock.curve_publickey = client_public
            sock.curve_secretkey = client_secret
        address = f"tcp://{host}:{port}"
        try:
            sock.connect(address)
        except zmq.ZMQError as exc:
            sock.close(linger=0)
            raise TransportError(f"zmq cannot connect to {address}: {exc}") from exc
        sender = ZmqSender(sock, address, port)
        with self._lock:
            self._senders.append(sender)
        return sender

    def close(self) -> None:
        with self._lock:
            senders, self._senders = self._senders, []
            receivers, self._receivers = self._receivers, []
            ctx, self._ctx = self._ctx, None
        for receiver in receivers:
            receiver.close()
        for sender in senders:
            sender.close()
        if ctx is not None:
            ctx.term()      # waits at most linger.ms for queued batches to flush
