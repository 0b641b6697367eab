"""The gRPC transport (entry point ``grpc``), defined by ``transport.proto`` next to this file.

* ``bind`` starts a gRPC server on ``<bind.host>:<port>`` serving ``Transfer.Stream`` (a
  bidirectional call: ``Batch`` messages in, each holding one or more frames of
  :mod:`squall.transports.framing`, and ``Ack`` messages out). Each inbound stream runs in a
  server thread that appends the frames to a bounded inbox; when the inbox is full that
  thread waits, so HTTP/2 flow control slows the sender down rather than memory growing.
  Batches are acknowledged once ``recv`` delivered them: one cumulative ack per sender
  covers every batch delivered until the stream was idle for 2 ms (or 32 ``recv`` calls).
  A batch resent after a broken stream that the receiver already holds is dropped (and
  acknowledged at once if it was delivered).
* ``connect`` opens a channel and ONE stream per connection, fed by a background thread.
  ``send`` only encodes and adds the batch to the connection's window of unacknowledged
  batches (``squall.transport.send.buffer.messages`` batches, default 10000); it raises
  :class:`~squall.errors.TransportError` when the window is full (peer slow or gone) or the
  connection is closed. The batches that queue up while the stream is busy go out together
  in one gRPC message (up to 64 of them, 4 MiB), to a receiver whose stream headers say it
  splits them (``squall-merges: 1``); any other gets one batch per message. A batch leaves
  the window when the receiver acknowledges it. A broken stream is reopened (the channel
  redials within 50 ms .. 1 s) and starts by sending the whole window again, oldest first;
  the receiver drops what it already holds, so a receiver restart loses nothing that
  ``send`` accepted. The one way to see a batch twice: a receiver delivered it and died
  before its ack reached the sender (``close`` waits briefly for the acks of what ``recv``
  returned to go out).
* ``recv`` waits on a condition variable (the GIL is released) and returns every queued
  message. Invalid frames are logged once per peer and dropped.

Options (``squall.transport.grpc.*``): ``bind.host`` (127.0.0.1; 0.0.0.0 or an interface's
address to take tuples from other machines), ``max.message.mb`` (256, at most 2047: gRPC
counts a message's size in a C int; a worker sends a batch that would not fit as several, and
fails a tuple that alone would not), ``linger.ms`` (1000, at least 0: how long
``close`` waits for the window to be acknowledged), ``tls.enabled`` (false), ``tls.cert.file``
+ ``tls.key.file`` (PEM, needed to bind), ``tls.ca.file`` (PEM root for connecting) and
``tls.server.name`` (the name checked in the server certificate, ``localhost`` by default;
an empty string checks the host dialed, IP addresses included).

``squall.transport.tls: true`` (API.md section 14) makes it mutual authentication by the
cluster's CA: the files default to the cluster's credentials (the generated ones a worker
got, else ``squall.tls.ca`` / ``.cert`` / ``.key``:
:func:`squall.security.transport_creds.transport_file`). TLS authenticates the receiver (a
sender checks its certificate against that CA); the sender authenticates in each stream
(:mod:`.membership`): the receiver's headers carry a random challenge and the stream must open
with the sender's certificate chain and its key's signature of the challenge. grpc decides a
TLS client certificate out of Python's sight, so this is what lets the receiver say whom it
refused: a stream without a valid proof (another CA's certificate, none at all) is ended
before any of its batches reaches the inbox, and ``grpc receiver on port P refused a peer at
<host>: ...`` is logged once per peer address.

Threading: every method of a connection may be called from any thread; ``close`` wakes a
waiting ``recv`` at once.
"""
from __future__ import annotations

import collections
import logging
import os
import queue
import threading
from concurrent import futures
from typing import Any
from collections.abc import Iterator, Mapping

import grpc

from squall.errors import ConfigError, TransportError
from squall.plugins.transport_grpc._proto import transport_pb2 as pb
from squall.plugins.transport_grpc._proto import transport_pb2_grpc as pb_grpc
from squall.plugins.transport_grpc.hooks import check_options, max_message_bytes
from squall.plugins.transport_grpc.membership import CHALLENGE_KEY, MembershipCheck, StreamProof
from squall.security.peer_proof import Prover, Verifier
from squall.security.transport_creds import transport_file
from squall.transports.closing import close_all
from squall.transports.framing import FrameError, GarbageLog, decode_frames, encode, split_frames
from squall.spi.transport import Connection, Message, Transport

__all__ = ["GrpcTransport"]

log = logging.getLogger(__name__)
_CLOSE_GRACE = 0.2
_END = object()
_ACK = object()
_ACK_NOW = object()
#: a stream acknowledges what recv delivered once it owes this many recv calls' worth, or
#: when nothing else happened for _ACK_DELAY seconds
_ACK_EVERY = 32
_ACK_DELAY = 0.002
#: a receiver forgets the sessions of ended streams once it knows more than this many
_SESSIONS = 1024
#: at most this many queued batches go as one gRPC message
_MERGE = 64
#: bytes a stream message needs beyond its frame (session, sequence, protobuf framing)
_FRAME_ROOM = 4096
#: header a receiver sends when its stream starts: it splits merged messages (Batch.count)
_MERGES_KEY = "squall-merges"
#: how long a sender the receiver refused waits before it opens another stream (seconds)
_REFUSED_RETRY = 1.0
_BACKOFF = {"grpc.initial_reconnect_backoff_ms": 50, "grpc.min_reconnect_backoff_ms": 50,
            "grpc.max_reconnect_backoff_ms": 1000}


class _Session:
    """What a receiver knows of one sender session: the highest batch it holds (in its inbox
    or delivered), the highest ``recv`` delivered, and the stream that answers for it now."""

    __slots__ = ("held", "delivered", "stream")

    def __init__(self, stream: queue.SimpleQueue[Any]) -> None:
        self.held = self.delivered = 0
        #: None once that stream ended (until the sender's next stream takes the session up)
        self.stream: queue.SimpleQueue[Any] | None = stream


class GrpcReceiver(Connection, pb_grpc.TransferServicer):
    """A bound gRPC server; its inbox holds at most ``limit`` undecoded batches. With
    ``members`` (``squall.transport.tls``) a stream's batches are taken only after its sender
    proved it is one of the cluster's."""

    def __init__(self, limit: int, members: MembershipCheck | None = None) -> None:
        self.port = 0
        self.members = members
        self.server: grpc.Server | None = None
        self._limit = limit
        #: (frame, peer, session id, seq) in arrival order
        self._frames: collections.deque[tuple[bytes, str, bytes, int]] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._sessions: dict[bytes, _Session] = {}
        self._prune_at = _SESSIONS
        self.garbage = GarbageLog(log, "grpc receiver")

    def Stream(self, request_iterator: Iterator[pb.Batch],
               context: grpc.ServicerContext) -> Iterator[pb.Ack]:
        """One inbound stream: a reader thread moves its batches into the inbox; this server
        thread writes the acknowledgements of what ``recv`` delivered.

        ``recv`` puts an ``_ACK`` in ``events`` when it delivered batches of a session this
        stream answers for; acks owed wait up to ``_ACK_DELAY`` for more deliveries, so one
        cumulative ack covers many batches."""
        members = self.members
        challenge = members.challenge() if members is not None else None
        context.send_initial_metadata(                          # see GrpcSender._run
            ((_MERGES_KEY, "1"),) if challenge is None
            else ((_MERGES_KEY, "1"), (CHALLENGE_KEY, challenge.hex())))
        if (members is not None and challenge is not None
                and not members.admit(request_iterator, context, challenge)):
            if self._closed:
                context.abort(grpc.StatusCode.UNAVAILABLE, "receiver closed")
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          "not a worker of this cluster (squall.transport.tls)")
        peer, cond, frames, sessions = context.peer(), self._cond, self._frames, self._sessions
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        mine: dict[bytes, _Session] = {}       # sessions heard on this stream (under cond)

        def read() -> None:
            try:
                for batch in request_iterator:
                    sid, last, count = batch.session, batch.seq, batch.count or 1
                    if count == 1:
                        parts = [(batch.frame, last)]
                    else:
                        try:
                            parts = list(zip(split_frames(batch.frame, count),
                                             range(last - count + 1, last + 1), strict=True))
                        except FrameError as exc:
                            self.garbage.dropped(peer, exc)
                            continue
                    with cond:
                        state = None
                        if last:                   # seq 0: not numbered, never acknowledged
                            state = sessions.get(sid)
                            if state is None:
                                if len(sessions) >= self._prune_at:
                                    self._prune()
                                state = sessions[sid] = _Session(events)
                            state.stream = events  # acks for this session go out here now
                            mine[sid] = state
                        for frame, seq in parts:
                            if state is not None and seq <= state.held:
                                # a resend of what this receiver holds: what was delivered
                                # is acknowledged at once, the rest when recv takes it
                                events.put(_ACK_NOW)
                                continue
                            while len(frames) >= self._limit and not self._closed:
                                cond.wait(0.5)
                            if self._closed:
                                return
                            if state is not None:
                                state.held = seq
                            frames.append((frame, peer, sid, seq))
                        cond.notify()
            except Exception:  # the call ended (cancelled, peer gone): so does the stream
                pass
            finally:
                events.put(_END)

        threading.Thread(target=read, name="squall-grpc-recv-read", daemon=True).start()
        try:
            yield from self._acks(events, mine, context)
        finally:       # this stream answers for its sessions no more
            with cond:
                for state in mine.values():
                    if state.stream is events:
                        state.stream = None

    def _acks(self, events: queue.SimpleQueue[Any], mine: dict[bytes, _Session],
              context: grpc.ServicerContext) -> Iterator[pb.Ack]:
        """The acknowledgements one stream writes, until its reader ends."""
        cond = self._cond
        acked: dict[bytes, int] = {}           # what this stream acknowledged, per session
        owed = 0                               # recv calls since the last acknowledgement
        while True:
            try:
                event = events.get(timeout=_ACK_DELAY) if owed else events.get()
            except queue.Empty:
                event = _ACK_NOW
            if event is _END:
                if self._closed:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "receiver closed")
                return
            if event is _ACK:
                owed += 1
                if owed < _ACK_EVERY:
                    continue
            owed = 0
            with cond:
                due = [(sid, state.delivered) for sid, state in mine.items()
                       if state.delivered > acked.get(sid, 0)]
            for sid, seq in due:
                acked[sid] = seq
                yield pb.Ack(seq=seq)

    @property
    def known_sessions(self) -> int:
        """How many sender sessions this receiver remembers (for monitoring and tests)."""
        with self._cond:
            return len(self._sessions)

    def _prune(self) -> None:
        """Forget the sessions no stream answers for that hold nothing undelivered (their
        sender is gone, or comes back as a new session); called with the lock held."""
        sessions = self._sessions
        for sid in [sid for sid, state in sessions.items()
                    if state.stream is None and state.held == state.delivered]:
            del sessions[sid]
        self._prune_at = max(_SESSIONS, 2 * len(sessions))

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
            # what is delivered now is acknowledged by the stream that answers for it
            streams = set()
            sessions = self._sessions
            for _, _, sid, seq in taken:
                if seq:
                    state = sessions[sid]
                    if seq > state.delivered:
                        state.delivered = seq
                        if state.stream is not None:
                            streams.add(state.stream)
        for stream in streams:
            stream.put(_ACK)
        return decode_frames([(frame, peer) for frame, peer, _, _ in taken], self.garbage)

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._frames.clear()
            self._cond.notify_all()
        if self.server is not None:
            # a short grace lets acks already written reach their senders, so they do not
            # send batches this receiver delivered to whoever binds the port next
            self.server.stop(grace=_CLOSE_GRACE).wait(5)


class GrpcSender(Connection):
    """One channel and one stream to a receiver, fed by a background thread from the window
    of unacknowledged batches."""

    def __init__(self, channel: grpc.Channel, address: str, port: int, limit: int,
                 linger: float, merge_bytes: int = 4 << 20,
                 prover: Prover | None = None, max_frame: int = 256 << 20) -> None:
        self.port = port
        #: the largest frame the stream can carry (``max.message.mb``, less room for the
        #: message around it): a larger one would break the stream at every try
        self._max_frame = max_frame - _FRAME_ROOM
        self._prover = prover
        self._refused = False   # a receiver refused this sender (logged once at WARNING)
        self._channel, self._address, self._linger = channel, address, linger
        self._limit = limit
        self._merge_bytes = merge_bytes
        self._peer_merges = False
        self._session = os.urandom(8)
        self._window: collections.deque[tuple[int, bytes]] = collections.deque()
        self._next_seq = 1
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._done = False                 # the stream may end once the window is empty
        self._stub = pb_grpc.TransferStub(channel)
        self._thread = threading.Thread(target=self._run, name=f"squall-grpc-send-{address}",
                                        daemon=True)
        self._thread.start()

    def send(self, messages: list[Message]) -> None:
        if self._closed.is_set():
            raise TransportError(f"send on a closed connection to {self._address}")
        frame = encode(messages)
        if len(frame) > self._max_frame:
            raise TransportError(
                f"a batch of {len(frame)} bytes to {self._address} is over the "
                f"{self._max_frame} bytes squall.transport.grpc.max.message.mb allows")
        with self._cond:
            if len(self._window) >= self._limit:
                raise TransportError(
                    f"send window to {self._address} is full (peer slow or gone)")
            self._window.append((self._next_seq, frame))
            self._next_seq += 1
            self._cond.notify_all()

    def _batches(self, proof: StreamProof | None) -> Iterator[pb.Batch]:
        """One stream's requests: the proof of membership its receiver asked for (if any),
        the window from its oldest batch on, then what comes."""
        if proof is not None:
            first = proof.message()
            if first is not None:
                yield first
        cond, window, session = self._cond, self._window, self._session
        with cond:
            cursor = window[0][0] if window else self._next_seq
        while True:
            with cond:
                while True:
                    if window and cursor < window[0][0]:
                        cursor = window[0][0]           # acknowledged meanwhile
                    at = cursor - window[0][0] if window else 0
                    if window and at < len(window):
                        # everything that queued up while the stream was busy goes as one
                        # message (up to _MERGE frames, _MERGE_BYTES bytes)
                        seq, frame = window[at]
                        merged, size = [frame], len(frame)
                        upto = min(len(window), at + _MERGE) if self._peer_merges else 0
                        for more in range(at + 1, upto):
                            seq2, frame2 = window[more]
                            if size + len(frame2) > self._merge_bytes:
                                break
                            merged.append(frame2)
                            seq, size = seq2, size + len(frame2)
                        break
                    if self._done and not window:
                        return
                    cond.wait(0.2)
            cursor = seq + 1
            if len(merged) == 1:
                yield pb.Batch(frame=frame, session=session, seq=seq)
            else:
                yield pb.Batch(frame=b"".join(merged), session=session, seq=seq,
                               count=len(merged))

    def _acked(self, seq: int) -> None:
        with self._cond:
            window = self._window
            while window and window[0][0] <= seq:
                window.popleft()
            if not window:
                self._cond.notify_all()

    def _run(self) -> None:
        """Sender thread: keep one stream open while the connection lives."""
        while True:
            with self._cond:
                if self._done and not self._window:
                    return
            try:
                self._peer_merges = False     # until this stream's receiver says it splits
                proof = StreamProof(self._prover) if self._prover is not None else None
                call = self._stub.Stream(self._batches(proof), wait_for_ready=True)
                # the receiver's headers (sent as its stream starts) say whether it splits
                # merged messages (one that does not still gets every batch on its own) and
                # what to prove first (squall.transport.tls)
                headers: dict[str, Any] = {}
                try:
                    headers = dict(call.initial_metadata() or ())
                finally:
                    if proof is not None:
                        proof.headers(headers)
                self._peer_merges = headers.get(_MERGES_KEY) == "1"
                for ack in call:
                    self._acked(ack.seq)
            except grpc.RpcError as exc:
                code = exc.code()
                if self._closed.is_set() and code == grpc.StatusCode.CANCELLED:
                    return
                if code == grpc.StatusCode.UNAUTHENTICATED:
                    # the receiver does not take this worker for one of its cluster's
                    # (squall.transport.tls): say so once, and try again slowly
                    (log.debug if self._refused else log.warning)(
                        "grpc receiver %s refused this worker (%s); retrying every %g s",
                        self._address, exc.details(), _REFUSED_RETRY)
                    self._refused = True
                    self._closed.wait(_REFUSED_RETRY)
                    continue
                log.debug("grpc stream to %s broke (%s); reopening", self._address, code)
                self._closed.wait(0.05)
            except ValueError:        # channel closed under us during shutdown
                return

    def recv(self, timeout: float | None = None) -> list[Message]:
        raise TransportError("a connecting (sending) connection cannot receive")

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        with self._cond:
            self._done = True
            pending = bool(self._window)
            self._cond.notify_all()
        # unacknowledged batches get a short linger to reach the peer; with none, the stream
        # ends at once (waiting on a departed peer would only delay the caller)
        if pending:
            self._thread.join(self._linger)
        self._channel.close()


class GrpcTransport(Transport):
    """gRPC client-streaming transport; see the module docstring for options and threading."""

    name = "grpc"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        check_options(self.conf)
        self.limit = int(self.conf.get("squall.transport.send.buffer.messages") or 10000)
        self.bind_host = str(self.option("bind.host", "127.0.0.1"))
        size = max_message_bytes(self.conf)
        self.max_message = size
        #: what a sender's ``send`` takes (see GrpcSender): a worker splits larger batches
        self.max_frame_bytes = size - _FRAME_ROOM
        self.options = [("grpc.max_send_message_length", size),
                        ("grpc.max_receive_message_length", size)]
        self.mutual = bool(self.conf.get("squall.transport.tls"))
        self.tls = self.mutual or bool(self.option("tls.enabled", False))
        self.linger = float(self.option("linger.ms", 1000)) / 1000
        self._conns: list[Connection] = []
        self._lock = threading.Lock()
        self._provers: dict[tuple[bytes, bytes], Prover] = {}

    def _prover(self, cert: bytes, key: bytes) -> Prover:
        """The membership prover of these credentials (parsed once per transport)."""
        with self._lock:
            prover = self._provers.get((cert, key))
            if prover is None:
                prover = self._provers[(cert, key)] = Prover(
                    cert, key, "squall.transport.grpc.tls.cert.file / .key.file")
            return prover

    def _read(self, key: str) -> bytes:
        path = self.option(key, None)
        if not path and self.mutual:    # tls.cert.file -> the cluster's cert
            path = transport_file(self.conf, key.split(".")[1])
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
        # with squall.transport.tls, TLS authenticates this receiver to its senders and the
        # senders prove their membership in each stream (see .membership)
        address = f"{self.bind_host}:{port}"
        members = (MembershipCheck(Verifier(self._read("tls.ca.file")),
                                   f"grpc receiver on {address}") if self.mutual else None)
        receiver = GrpcReceiver(max(1, self.limit), members)
        creds = (grpc.ssl_server_credentials(
            [(self._read("tls.key.file"), self._read("tls.cert.file"))]) if self.tls else None)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=256,
                                                        thread_name_prefix="squall-grpc-recv"),
                             options=[*self.options, ("grpc.so_reuseport", 0)])
        pb_grpc.add_TransferServicer_to_server(receiver, server)
        try:
            bound = (server.add_secure_port(address, creds) if creds is not None
                     else server.add_insecure_port(address))
        except RuntimeError as exc:
            raise TransportError(f"grpc cannot listen on {address}: {exc}") from exc
        if not bound:
            raise TransportError(f"grpc cannot listen on {address}")
        receiver.server, receiver.port = server, bound
        receiver.garbage.where = f"grpc receiver on port {bound}"
        if members is not None:
            members.refusals.where = receiver.garbage.where
        server.start()
        return self._track(receiver)

    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        address = f"{host}:{port}"
        options: list[tuple[str, Any]] = [*self.options, *_BACKOFF.items()]
        prover = None
        if self.tls:
            own = ((self._read("tls.key.file"), self._read("tls.cert.file")) if self.mutual
                   else (None, None))
            if own[1] is not None:
                prover = self._prover(own[1], own[0])
            creds = grpc.ssl_channel_credentials(root_certificates=self._read("tls.ca.file"),
                                                 private_key=own[0], certificate_chain=own[1])
            name = self.option("tls.server.name", None)
            if name:
                options.append(("grpc.ssl_target_name_override", str(name)))
            channel = grpc.secure_channel(address, creds, options=options)
        else:
            channel = grpc.insecure_channel(address, options=options)
        return self._track(GrpcSender(channel, address, port, max(1, self.limit), self.linger,
                                      min(4 << 20, self.max_message // 2), prover,
                                      self.max_message))

    def close(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        close_all(conns)
