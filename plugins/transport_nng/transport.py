"""The nng transport (entry point ``nng``), on pynng's Push0/Pull0 sockets.

* ``bind`` listens with a Pull0 socket on ``tcp://127.0.0.1:<port>`` (``tls+tcp://`` with TLS).
* ``connect`` dials with a Push0 socket asynchronously; nng redials by itself (50 ms .. 1 s).
* One ``send`` = one nng message holding one frame of :mod:`squall.runtime.framing`, sent
  non-blocking; when the socket's buffer of ``send.buffer`` batches is full (peer slow or gone)
  it raises :class:`~squall.errors.TransportError`.
* ``recv`` blocks inside nng (the GIL is released) and returns everything already queued.
  Invalid frames are logged (once per receiver: Pull0 does not say which peer sent a message)
  and dropped. Messages up to 256 MiB are accepted.

Options (``squall.transport.nng.*``): ``send.buffer`` (batches; defaults to
``squall.transport.send.buffer.messages`` when that is set, else 1024; nng caps it at 8192),
``tls.enabled`` (false), ``tls.cert.file`` + ``tls.key.file`` (PEM, needed to bind),
``tls.ca.file`` (PEM the server certificate must chain to, needed to connect) and
``tls.server.name`` (the name checked in the server certificate; default ``localhost``: nng's
mbedTLS checks DNS names, not IP addresses).

Threading: nng sockets are thread-safe; ``close`` from another thread wakes a waiting ``recv``.
"""
from __future__ import annotations

import logging
import threading
from typing import Any
from collections.abc import Mapping

import pynng

from squall.errors import ConfigError, TransportError
from squall.runtime.framing import GarbageLog, decode_frames, encode
from squall.spi.transport import Connection, Message, Transport

__all__ = ["NngTransport"]

log = logging.getLogger(__name__)
MAX_MESSAGE = 256 << 20
_NNG_MAX_BUFFER = 8192


class NngReceiver(Connection):
    """A listening Pull0 socket. ``recv`` from one thread; ``close`` from any thread."""

    def __init__(self, sock: pynng.Pull0, port: int) -> None:
        self.port = port
        self._sock = sock
        self._timeout_ms: int | None = None
        self._closed = False
        self.garbage = GarbageLog(log, f"nng receiver on port {port}")

    def send(self, messages: list[Message]) -> None:
        raise TransportError("a bound (receiving) connection cannot send")

    def recv(self, timeout: float | None = None) -> list[Message]:
        if self._closed:
            return []
        sock = self._sock
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        try:
            if ms != self._timeout_ms:
                sock.recv_timeout = self._timeout_ms = ms
            frames = [_recv(sock, True)]
            while True:
                try:
                    frames.append(_recv(sock, False))
                except pynng.TryAgain:
                    break
        except (pynng.Timeout, pynng.TryAgain, pynng.Closed):
            return []
        except pynng.NNGException as exc:
            if self._closed:
                return []
            raise TransportError(f"nng receive failed on port {self.port}: {exc}") from exc
        return decode_frames(((frame, None) for frame in frames), self.garbage)

    def close(self) -> None:
        self._closed = True
        self._sock.close()


def _recv(sock: pynng.Pull0, block: bool) -> bytes:
    try:
        return bytes(sock.recv(block=block))
    except RuntimeError:        # pynng 0.9 fails to unpack an empty message: not ours anyway
        return b""


class NngSender(Connection):
    """A dialing Push0 socket; ``send`` never blocks."""

    def __init__(self, sock: pynng.Push0, address: str, port: int) -> None:
        self.port = port
        self._sock, self._address = sock, address
        self._closed = False

    def send(self, messages: list[Message]) -> None:
        if self._closed:
            raise TransportError(f"send on a closed connection to {self._address}")
        frame = encode(messages)
        try:
            self._sock.send(frame, block=False)
        except pynng.TryAgain as exc:
            raise TransportError(
                f"send buffer to {self._address} is full (peer slow or gone)") from exc
        except pynng.NNGException as exc:
            raise TransportError(f"nng send to {self._address} failed: {exc}") from exc

    def recv(self, timeout: float | None = None) -> list[Message]:
        raise TransportError("a connecting (sending) connection cannot receive")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._sock.close()


class NngTransport(Transport):
    """nng Push0/Pull0 transport; see the module docstring for options and threading."""

    name = "nng"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        generic = self.conf.get("squall.transport.send.buffer.messages")
        buffer = int(self.option("send.buffer", None) or generic or 1024)
        self.send_buffer = max(1, min(buffer, _NNG_MAX_BUFFER))
        self.tls = bool(self.option("tls.enabled", False))
        self.scheme = "tls+tcp" if self.tls else "tcp"
        self._conns: list[Connection] = []
        self._lock = threading.Lock()

    def _read(self, key: str) -> str:
        path = self.option(key, None)
        if not path:
            raise ConfigError(f"squall.transport.nng.{key} is required when "
                              "squall.transport.nng.tls.enabled is true")
        try:
            with open(path, encoding="ascii") as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"squall.transport.nng.{key}: cannot read {path}: {exc}") from exc

    def _tls_config(self, server: bool) -> pynng.TLSConfig:
        try:
            if server:
                return pynng.TLSConfig(pynng.TLSConfig.MODE_SERVER,
                                       own_cert_string=self._read("tls.cert.file"),
                                       own_key_string=self._read("tls.key.file"))
            return pynng.TLSConfig(pynng.TLSConfig.MODE_CLIENT,
                                   server_name=str(self.option("tls.server.name", "localhost")),
                                   ca_string=self._read("tls.ca.file"))
        except pynng.NNGException as exc:
            raise ConfigError(f"nng TLS configuration rejected: {exc}") from exc

    def _track(self, conn: Connection) -> Connection:
        with self._lock:
            self._conns.append(conn)
        return conn

    def bind(self, topology_id: str, port: int) -> Connection:
        sock = pynng.Pull0(recv_max_size=MAX_MESSAGE)
        try:
            if self.tls:
                sock.tls_config = self._tls_config(server=True)
            listener = sock.listen(f"{self.scheme}://127.0.0.1:{port}")
        except ConfigError:
            sock.close()
            raise
        except pynng.NNGException as exc:
            sock.close()
            raise TransportError(f"nng cannot listen on 127.0.0.1:{port}: {exc}") from exc
        # InAddr.port is wrong for tls+tcp listeners in pynng 0.9; the text form is right
        bound = int(str(listener.local_address).rsplit(":", 1)[1])
        return self._track(NngReceiver(sock, bound))

    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        sock = pynng.Push0(send_buffer_size=self.send_buffer, reconnect_time_min=50,
                           reconnect_time_max=1000)
        address = f"{self.scheme}://{host}:{port}"
        try:
            if self.tls:
                sock.tls_config = self._tls_config(server=False)
            sock.dial(address, block=False)
        except ConfigError:
            sock.close()
            raise
        except pynng.NNGException as exc:
            sock.close()
            raise TransportError(f"nng cannot dial {address}: {exc}") from exc
        return self._track(NngSender(sock, address, port))

    def close(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
