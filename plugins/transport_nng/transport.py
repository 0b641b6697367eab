"""The nng transport (entry point ``nng``), on pynng's Pair1 sockets with acknowledgements.

* ``bind`` listens with a polyamorous Pair1 socket on ``tcp://<bind.host>:<port>``
  (``tls+tcp://`` with TLS). Only Pair1 peers get in: nng refuses other protocols (Push0...).
* ``connect`` dials with a Pair1 socket asynchronously; nng redials by itself (50 ms .. 1 s).
* Every sending connection is a *session* (8 random bytes) that numbers its batches 1, 2, 3...
  A data message carries one batch: a 25-byte header ``"!B8sQQ"`` (kind ``S``, session,
  sequence number, lowest sequence number not yet acknowledged) then one frame of
  :mod:`squall.transports.framing`; or, merged, several consecutive batches: a 29-byte header
  ``"!B8sQQI"`` (kind ``M``, session, sequence number of the first, lowest not yet
  acknowledged, count) then their frames back to back. A one-message frame (what workers
  send) is copied once on each side: the receiver copies each payload straight out of
  nng's buffer.
* The receiver delivers each session's batches strictly in sequence: the one after the last it
  delivered or, for a session it does not know yet (a new sender, or this receiver was
  restarted), the one whose number is the header's "lowest not yet acknowledged". Anything
  else (a duplicate, or a batch after a gap) is dropped without a word; of a merged message
  it keeps the batches after the last one delivered. It answers every session it delivered
  from with one cumulative ack ``"!B8sQ"`` (kind ``A``, session, highest delivered) on that
  peer's pipe only, at most every 2 ms while batches keep coming, and at the latest 2 ms
  after the last one (a ``recv`` waiting with acks owed sends them then).
* The sender keeps every batch not yet acknowledged, at most ``send.buffer`` of them (the
  window). ``send`` never blocks: it raises :class:`~squall.errors.TransportError` when the
  window is full (peer slow or gone) and then keeps nothing of that batch. When nothing else
  is waiting, ``send`` hands its batch to nng at once if nng's short queue (4 messages) has
  room. Otherwise the batch waits in the window for a background thread per connection,
  which hands nng what queued up merged (up to 64 batches, 256 KiB) as soon as nng takes
  it: a connection busier than nng makes fewer, larger messages. A batch ``send`` accepted
  is delivered once, in order, as soon as a receiver listens on that port again: after
  every reconnection that thread re-sends the whole window in order, and the receiver's
  sequence rule drops the copies it already delivered and anything nng still had queued
  from before the reconnection.
* The one way to see a batch twice: a receiver delivered it and died before its ack reached
  the sender. To make that rare, acks go out within 2 ms of delivery, and a receiver's
  ``close`` sends the acks it owes and waits up to 50 ms so nng can put them on the wire.
* ``recv`` blocks inside nng (the GIL is released) and returns everything already queued (nng
  queues up to 64 messages ahead of it). It reads messages through pynng's cffi layer
  (``pynng._nng``, see :mod:`.wire`) to learn each one's pipe in fewer GIL-releasing calls
  than ``recv_msg``.
  Messages that are not ours are logged (once per peer) and dropped; a bare squall frame from
  a Pair1 peer (first byte ``0xA7``) is delivered as it is, unsequenced and unacknowledged.
  Messages up to 256 MiB are accepted; ``send`` refuses a batch that would not fit
  (``max_frame_bytes``: a worker sends a larger batch as several).

Options (``squall.transport.nng.*``): ``bind.host`` (127.0.0.1; 0.0.0.0 or an interface's
address to take tuples from other machines), ``linger.ms`` (1000: how long ``close`` of a
sending connection waits for what it holds to be acknowledged), ``send.buffer`` (batches, 1
to 8192; defaults to ``squall.transport.send.buffer.messages`` when that is set, capped at
8192, else 1024),
``tls.enabled`` (false), ``tls.cert.file`` + ``tls.key.file`` (PEM, needed to bind),
``tls.ca.file`` (PEM the server certificate must chain to, needed to connect) and
``tls.server.name`` (the name checked in the server certificate; default ``localhost``: nng's
mbedTLS checks DNS names, not IP addresses).

``squall.transport.tls: true`` (API.md section 14) makes it mutual TLS: the files default to
the cluster's credentials (the generated ones a worker got, else ``squall.tls.ca`` / ``.cert``
/ ``.key``: :func:`squall.security.transport_creds.transport_file`), a listener asks every
peer for a client certificate and a dialer presents its own. The listener's
:class:`~.gate.MembershipGate` closes the pipe of a peer whose certificate is missing or not
signed by that CA before nng adds it to the socket, so none of its batches arrives, and logs
``nng receiver on port P refused a peer at <host>: ...`` once per peer address.

Modules: this one holds the receiver and the transport, :mod:`.sender` the sending side,
:mod:`.wire` the headers and the calls into pynng's cffi layer, :mod:`.gate` the admission of
peers under ``squall.transport.tls``.

Threading: nng sockets are thread-safe; ``close`` from another thread wakes a waiting ``recv``.
A sender's window is guarded by a lock shared by ``send`` and its background thread, which
waits for room in nng without holding it; nng's pipe callback only sets a flag and wakes
that thread.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any
from collections.abc import Mapping

import pynng

from squall.errors import ConfigError, TransportError
from squall.security.transport_creds import transport_file
from squall.transports.closing import close_all
from squall.transports.framing import MAGIC, FrameError, GarbageLog, decode
from squall.plugins.transport_nng.gate import MembershipGate
from squall.plugins.transport_nng.hooks import MAX_SEND_BUFFER, check_options
from squall.plugins.transport_nng.sender import _NNG_QUEUE, _SEND_WAIT_MS, MAX_FRAME, NngSender
from squall.plugins.transport_nng.wire import (
    _ACK,
    _DATA,
    _KIND_ACK,
    _KIND_DATA,
    _KIND_MERGED,
    _MERGED,
    MAX_MESSAGE,
    _frames,
    _recv_raw,
    _send_raw,
)
from squall.spi.transport import Connection, Message, Transport

__all__ = ["NngTransport"]

log = logging.getLogger(__name__)
#: acks owed wait this long (ms) for more batches, so one ack covers many
_ACK_DELAY_MS = 2
#: how long a receiver's ``close`` lets nng flush the acks it just sent
_ACK_LINGER = 0.05
#: acks a sender's socket queues before its pipe stops reading (acks are 17 bytes)
_ACK_QUEUE = 1024
#: messages a receiver's socket queues ahead of ``recv`` (more than 1 saves nng a thread hop
#: per message; each may be up to MAX_MESSAGE, so keep it modest)
_RECV_QUEUE = 64
#: a receiver forgets sessions whose peer is gone once it knows more than this many
_SESSIONS = 1024


class NngReceiver(Connection):
    """A listening polyamorous Pair1 socket. ``recv`` from one thread; ``close`` from any."""

    def __init__(self, sock: pynng.Pair1, port: int) -> None:
        self.port = port
        self._sock = sock
        self._timeout_ms: int | None = None
        self._closed = False
        self._last_ack = 0.0
        #: session -> (pipe, highest delivered): acks not sent yet
        self._owed: dict[bytes, tuple[int, int]] = {}
        #: session -> (highest sequence number delivered, id of the pipe it last came on)
        self._sessions: dict[bytes, tuple[int, int]] = {}
        self._prune_at = _SESSIONS
        self._peers: dict[int, str] = {}
        self.garbage = GarbageLog(log, f"nng receiver on port {port}")

    def send(self, messages: list[Message]) -> None:
        raise TransportError("a bound (receiving) connection cannot send")

    def recv(self, timeout: float | None = None) -> list[Message]:
        if self._closed:
            return []
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        try:
            first = None
            if self._owed:
                # acks are owed: wait a moment for more batches before sending them
                brief = _ACK_DELAY_MS if ms < 0 else min(ms, _ACK_DELAY_MS)
                first = self._wait(brief)
                if first is None:
                    self._send_acks()
                    if ms == brief:
                        return []
                    ms = ms - brief if ms > 0 else ms
            if first is None:
                first = self._wait(ms)
                if first is None:
                    return []
            received = [first]
            sock = self._sock
            while True:
                try:
                    received.append(_recv_raw(sock, False))
                except pynng.TryAgain:
                    break
        except (pynng.TryAgain, pynng.Closed):
            return []
        except pynng.NNGException as exc:
            if self._closed:
                return []
            raise TransportError(f"nng receive failed on port {self.port}: {exc}") from exc
        return self._accept(received)

    def _wait(self, ms: int) -> tuple[bytes, int, Any] | None:
        """The next message, waiting up to ``ms`` (-1: for ever); None on timeout."""
        if ms != self._timeout_ms:
            self._sock.recv_timeout = self._timeout_ms = ms
        try:
            return _recv_raw(self._sock, True)
        except (pynng.Timeout, pynng.TryAgain):     # (a zero timeout may say either)
            return None

    def _send_acks(self) -> None:
        """One cumulative ack per session owed one, on the pipe it last came on."""
        owed, self._owed = self._owed, {}
        sock = self._sock
        for session, (pipe, last) in owed.items():
            _send_raw(sock, pipe, _ACK.pack(_KIND_ACK, session, last))
        self._last_ack = time.monotonic()

    def _accept(self, received: list[tuple[bytes, int, Any]]
                ) -> list[Message]:
        """Deliver what is next in each session, ack every session heard from."""
        out: list[Message] = []
        sessions = self._sessions
        acks: dict[bytes, tuple[int, int]] = {}
        for data, pipe, one in received:
            kind = data[0] if data else -1
            if kind == _KIND_DATA and len(data) >= _DATA.size:
                _, session, seq, floor = _DATA.unpack_from(data)
                count = 1
            elif kind == _KIND_MERGED and len(data) >= _MERGED.size:
                _, session, seq, floor, count = _MERGED.unpack_from(data)
            elif kind == MAGIC:             # a bare frame: deliver as it is
                try:
                    out.extend(decode(data))
                except FrameError as exc:
                    self._garbage(pipe, exc)
                continue
            else:
                self._garbage(pipe, FrameError(f"not a squall nng message ({len(data)} bytes)"))
                continue
            state = sessions.get(session)
            last = state[0] if state is not None else 0
            if state is None or floor > last + 1:
                # new to this receiver (or acked elsewhere past what it delivered): the
                # session starts at its first unacknowledged batch; a copy that went out
                # before the sender's reconnection is dropped (it is resent in order)
                if seq != floor or seq < 1:
                    continue
                last = seq - 1
            skip = last + 1 - seq           # batches of this message delivered already
            if 0 <= skip < count:
                try:
                    # (what was not decoded on receipt is decoded here, or says why not)
                    if kind == _KIND_DATA:
                        batch = [one] if one is not None else decode(data, _DATA.size)
                    else:
                        frames = one if one is not None else _frames(data, len(data), count)
                        batch = [m for frame in frames[skip:] for m in frame]
                except FrameError as exc:
                    self._garbage(pipe, exc)
                    continue
                last = seq + count - 1
                if state is None and len(sessions) >= self._prune_at:
                    self._prune()
                sessions[session] = (last, pipe)
                if out:
                    out.extend(batch)
                else:
                    out = batch
            acks[session] = (pipe, last)
        if acks:
            self._owed.update(acks)
            if time.monotonic() - self._last_ack >= _ACK_DELAY_MS / 1000:
                self._send_acks()
        return out

    def _garbage(self, pipe: int, exc: FrameError) -> None:
        peer = self._peers.get(pipe)   # name a peer the same way even once its pipe closed
        if peer is None:
            known = {p.id: p for p in self._sock.pipes}.get(pipe)
            try:
                peer = f"{known.remote_address} (pipe {pipe})" if known else f"pipe {pipe}"
            except pynng.NNGException:
                peer = f"pipe {pipe}"
            if len(self._peers) < 1000:
                self._peers[pipe] = peer
        self.garbage.dropped(peer, exc)

    def _prune(self) -> None:
        """Forget sessions whose pipe is gone (a peer that comes back is a new session)."""
        live = {pipe.id for pipe in self._sock.pipes}
        for session in [s for s, (_, pipe) in self._sessions.items() if pipe not in live]:
            del self._sessions[session]
        self._prune_at = max(_SESSIONS, 2 * len(self._sessions))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._owed:
                try:
                    self._send_acks()
                except pynng.NNGException:
                    pass
            linger = self._last_ack + _ACK_LINGER - time.monotonic()
            if linger > 0:          # let nng put the last acks on the wire
                threading.Event().wait(min(linger, _ACK_LINGER))
        self._sock.close()


class NngTransport(Transport):
    """nng Pair1 transport with acks; see the module docstring for options and threading."""

    name = "nng"
    max_frame_bytes = MAX_FRAME

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        check_options(self.conf)
        own = self.option("send.buffer", None)
        # the generic key is every transport's, so it is capped here, not refused
        generic = self.conf.get("squall.transport.send.buffer.messages")
        self.send_buffer = int(own) if own is not None else \
            max(1, min(int(generic or 1024), MAX_SEND_BUFFER))
        self.mutual = bool(self.conf.get("squall.transport.tls"))
        self.tls = self.mutual or bool(self.option("tls.enabled", False))
        self.scheme = "tls+tcp" if self.tls else "tcp"
        self.bind_host = str(self.option("bind.host", "127.0.0.1"))
        self.linger = float(self.option("linger.ms", 1000)) / 1000
        self._conns: list[Connection] = []
        self._lock = threading.Lock()

    def _read(self, key: str) -> str:
        path = self.option(key, None)
        if not path and self.mutual:    # tls.cert.file -> the cluster's cert
            path = transport_file(self.conf, key.split(".")[1])
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
                if self.mutual:     # checked, and refused when wrong, by MembershipGate
                    return pynng.TLSConfig(pynng.TLSConfig.MODE_SERVER,
                                           own_cert_string=self._read("tls.cert.file"),
                                           own_key_string=self._read("tls.key.file"),
                                           ca_string=self._read("tls.ca.file"),
                                           auth_mode=pynng.TLSConfig.AUTH_MODE_OPTIONAL)
                return pynng.TLSConfig(pynng.TLSConfig.MODE_SERVER,
                                       own_cert_string=self._read("tls.cert.file"),
                                       own_key_string=self._read("tls.key.file"))
            own = ({"own_cert_string": self._read("tls.cert.file"),
                    "own_key_string": self._read("tls.key.file")} if self.mutual else {})
            return pynng.TLSConfig(pynng.TLSConfig.MODE_CLIENT,
                                   server_name=str(self.option("tls.server.name", "localhost")),
                                   ca_string=self._read("tls.ca.file"), **own)
        except pynng.NNGException as exc:
            raise ConfigError(f"nng TLS configuration rejected: {exc}") from exc

    def _track(self, conn: Connection) -> Connection:
        with self._lock:
            self._conns.append(conn)
        return conn

    def bind(self, topology_id: str, port: int) -> Connection:
        sock = pynng.Pair1(polyamorous=True, recv_max_size=MAX_MESSAGE,
                           recv_buffer_size=_RECV_QUEUE, send_buffer_size=_ACK_QUEUE)
        where = f"{self.bind_host}:{port}"
        gate = MembershipGate(f"nng receiver on {where}") if self.mutual else None
        try:
            if self.tls:
                sock.tls_config = self._tls_config(server=True)
            if gate is not None:    # before listening: no pipe may join without its verdict
                sock.add_pre_pipe_connect_cb(gate.admit)
            listener = sock.listen(f"{self.scheme}://{where}")
        except ConfigError:
            sock.close()
            raise
        except pynng.NNGException as exc:
            sock.close()
            raise TransportError(f"nng cannot listen on {where}: {exc}") from exc
        # InAddr.port is wrong for tls+tcp listeners in pynng 0.9; the text form is right
        bound = int(str(listener.local_address).rsplit(":", 1)[1])
        if gate is not None:
            gate.refusals.where = f"nng receiver on port {bound}"
        return self._track(NngReceiver(sock, bound))

    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        sock = pynng.Pair1(send_buffer_size=_NNG_QUEUE, recv_buffer_size=_ACK_QUEUE,
                           send_timeout=_SEND_WAIT_MS, recv_max_size=4096,
                           reconnect_time_min=50, reconnect_time_max=1000)
        address = f"{self.scheme}://{host}:{port}"
        try:
            if self.tls:
                sock.tls_config = self._tls_config(server=False)
        except ConfigError:
            sock.close()
            raise
        sender = NngSender(sock, address, port, self.send_buffer, self.linger)
        try:
            sock.dial(address, block=False)
        except pynng.NNGException as exc:
            sender.close()
            raise TransportError(f"nng cannot dial {address}: {exc}") from exc
        return self._track(sender)

    def close(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        close_all(conns)
