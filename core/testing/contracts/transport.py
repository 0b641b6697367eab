"""The transport contract suite: what every ``squall.transports`` driver must do.

Use it by subclassing in a pytest module and overriding the ``transport_factory`` fixture::

    from squall.testing.contracts.transport import TransportContract

    class TestMyTransport(TransportContract):
        network = True                       # False skips the raw-TCP garbage check

        @pytest.fixture
        def transport_factory(self):
            return MyTransport               # any callable conf -> Transport

Every check binds on 127.0.0.1 with port 0 (or a port found free) and closes what it opened.
The checks only use the public :class:`~squall.Transport` / :class:`~squall.Connection` API:

* messages on one connection arrive in order and byte-exact, payloads from 0 bytes to 64 MiB;
* 20 senders to one bound port all get through, each in its own order;
* a receiver closed and bound again on the same port: every message sent after the first
  receiver had drained is delivered to the second one or its ``send`` raised TransportError
  (delivered + reported == sent, no duplicates, order kept). Transports that declare
  ``lossless_restart = False`` may lose at most the first few messages written right after
  the receiver died (acker timeouts replay those), never any later one;
* with a small buffer (``squall.transport.send.buffer.messages``) and a peer that is gone or
  never reads, ``send`` returns quickly or raises TransportError, and memory stays bounded
  (the sends run on a thread of their own: one still running after 2 s fails the check
  rather than hanging it); with a buffer of 4 and a peer that reads, batches keep flowing
  (never refused for good, and a send that blocks waiting for room fails the check after
  2 s too: every send of the suite is bounded so, a 64 MiB payload's by 30 s);
* close is idempotent, ``recv`` after close returns ``[]`` promptly (and a blocked ``recv``
  wakes up; one still blocked after 2 s fails the check), ``send`` after close raises
  TransportError;
* a batch that is not ``list[tuple[int, bytes]]`` makes ``send`` raise TransportError, and
  (``network = True``) junk written to the bound port by a raw TCP client does not stop the
  receiver from serving a good peer.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any
from collections.abc import Callable, Iterator

import pytest

from squall.daemon.ports import free_port
from squall.errors import TransportError
from squall.spi.transport import Connection, Message, Transport

__all__ = ["TransportContract", "collect", "free_port", "rss_bytes", "wait_until"]

TOPOLOGY = "contract-topo-1"
MiB = 1 << 20
#: seconds one ``send`` to a slow or gone peer may take (it returns or raises at once), and
#: one ``recv`` on a closed connection; a call still running then fails its check
SEND_LIMIT = 2.0
#: seconds the 3000 sends of the bounded-buffer check may take together
LOOP_LIMIT = 60.0


def wait_until(cond: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01) -> Any:
    """Poll ``cond`` until it returns a truthy value (returned) or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        threading.Event().wait(interval)


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc; 0 where unavailable)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def collect(conn: Connection, count: int, timeout: float = 10.0) -> list[Message]:
    """Receive until ``count`` messages arrived; fails the test after ``timeout`` seconds."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"received {len(got)} of {count} messages within {timeout}s")
        got.extend(conn.recv(min(left, 0.5)))
    return got


def _seq(sender: int, i: int) -> bytes:
    return b"%d:%d" % (sender, i)


class TransportContract:
    """Base class of the transport contract tests; override ``transport_factory``."""

    #: False for in-process transports: no real TCP port to write junk to
    network: bool = True
    host: str = "127.0.0.1"
    #: False for transports without acknowledgements (plain push/pull over TCP) that may lose
    #: the few messages written in the instant a receiver dies, before the sender notices
    lossless_restart: bool = True
    #: conf that makes every send buffer small (the bounded-buffer checks use it)
    bounded_conf: dict[str, Any] = {"squall.transport.send.buffer.messages": 64}

    @pytest.fixture
    def transport_factory(self) -> Callable[[dict[str, Any]], Transport]:
        raise NotImplementedError("override the transport_factory fixture")

    @pytest.fixture
    def network_transport(self) -> bool:
        """Whether the transport under test listens on a real TCP port (default: ``network``)."""
        return self.network

    @pytest.fixture
    def restart_is_lossless(self) -> bool:
        """False if a receiver restart may lose in-flight messages (``lossless_restart``)."""
        return self.lossless_restart

    @pytest.fixture
    def make(self, transport_factory: Callable[[dict[str, Any]], Transport]
             ) -> Iterator[Callable[..., Transport]]:
        made: list[Transport] = []

        def make(conf: dict[str, Any] | None = None) -> Transport:
            transport = transport_factory(dict(conf or {}))
            made.append(transport)
            return transport

        yield make
        for transport in made:
            transport.close()

    # -- ordering and payloads ------------------------------------------------------------

    def test_defaults_and_port(self, make: Callable[..., Transport]) -> None:
        with make({}).bind(TOPOLOGY, 0) as receiver:
            assert isinstance(receiver.port, int) and receiver.port > 0

    def test_order_per_connection(self, make: Callable[..., Transport]) -> None:
        transport = make()
        receiver = transport.bind(TOPOLOGY, 0)
        sender = transport.connect(TOPOLOGY, self.host, receiver.port)
        sent = [(i % 7, _seq(0, i)) for i in range(2000)]
        for start in range(0, len(sent), 10):
            _send(sender, sent[start:start + 10])
        assert collect(receiver, len(sent)) == sent
        assert receiver.recv(0.05) == []

    def test_payload_sizes_byte_exact(self, make: Callable[..., Transport]) -> None:
        transport = make()
        receiver = transport.bind(TOPOLOGY, 0)
        sender = transport.connect(TOPOLOGY, self.host, receiver.port)
        big = os.urandom(MiB) * 64
        batches = [[(1, b"")], [(2, b"x"), (3, b"")], [(4, os.urandom(65537))],
                   [(5, os.urandom(MiB)), (6, b"\x00" * 10)], [(2**31 - 1, big)]]
        for batch in batches:
            _send(sender, batch, limit=30.0)
        got = collect(receiver, sum(map(len, batches)), timeout=30)
        assert [t for t, _ in got] == [t for b in batches for t, _ in b]
        for (_, want), (_, have) in zip([m for b in batches for m in b], got, strict=True):
            assert isinstance(have, bytes) and have == want

    def test_many_senders_one_port(self, make: Callable[..., Transport]) -> None:
        transport = make()
        receiver = transport.bind(TOPOLOGY, 0)
        senders, per = 20, 100
        errors: list[BaseException] = []

        def run(n: int) -> None:
            try:
                conn = make().connect(TOPOLOGY, self.host, receiver.port)
                for i in range(0, per, 5):
                    conn.send([(n, _seq(n, j)) for j in range(i, i + 5)])
            except BaseException as exc:  # reported to the main thread
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(n,), daemon=True)   # one may block
                   for n in range(senders)]
        for t in threads:
            t.start()
        got = collect(receiver, senders * per, timeout=20)
        for t in threads:
            t.join(10)
        assert not errors
        for n in range(senders):
            assert [p for t, p in got if t == n] == [_seq(n, j) for j in range(per)]

    # -- failures ----------------------------------------------------------------------------

    def test_receiver_restarted_mid_stream(self, make: Callable[..., Transport],
                                           network_transport: bool,
                                           restart_is_lossless: bool) -> None:
        transport = make()
        port = free_port() if network_transport else 0
        first = transport.bind(TOPOLOGY, port)
        port = first.port
        sender = make().connect(TOPOLOGY, self.host, port)
        before = [(1, _seq(1, i)) for i in range(50)]
        _send(sender, before)
        assert collect(first, len(before)) == before
        first.close()

        sent: list[Message] = []
        reported: list[Message] = []

        def send(i: int) -> None:
            msg = (1, _seq(2, i))
            try:
                _send(sender, [msg])
                sent.append(msg)
            except TransportError:
                reported.append(msg)

        for i in range(20):              # nobody listens now
            send(i)
        second = wait_until(lambda: _try_bind(transport, port))
        for i in range(20, 60):          # after the restart
            send(i)
        got: list[Message] = []
        deadline = time.monotonic() + 20
        while (not got or got[-1] != sent[-1]) and time.monotonic() < deadline:
            got.extend(second.recv(0.2))
        got.extend(second.recv(0.2))
        if restart_is_lossless:
            assert got == sent and len(got) + len(reported) == 60
        else:   # only messages sent in the instant the receiver died may be missing
            lost = len(sent) - len(got)
            assert got == sent[lost:] and lost <= 5, f"lost {lost}: {got[:3]}..."

    @pytest.mark.parametrize("peer", ["gone", "slow"])
    def test_send_is_bounded_when_peer_slow_or_gone(
            self, make: Callable[..., Transport], peer: str, network_transport: bool) -> None:
        transport = make(self.bounded_conf)
        if peer == "slow":
            port = make(self.bounded_conf).bind(TOPOLOGY, 0).port   # bound, never read
        else:
            port = free_port() if network_transport else 99
        sender = transport.connect(TOPOLOGY, self.host, port)
        payload = os.urandom(64 * 1024)
        start_rss = rss_bytes()
        # the sends run on a thread of their own, watched from here: a send that blocks
        # (the very fault this checks for) fails the test instead of hanging it
        sends = 3000                     # 190 MiB if nothing were bounded
        progress: dict[str, Any] = {"done": 0, "raised": 0, "slowest": 0.0, "since": None}
        failed: list[BaseException] = []

        def send_all() -> None:
            try:
                for i in range(sends):
                    progress["since"] = t0 = time.monotonic()
                    try:
                        sender.send([(i, payload)])
                    except TransportError:
                        progress["raised"] += 1
                    progress["since"] = None
                    progress["slowest"] = max(progress["slowest"], time.monotonic() - t0)
                    progress["done"] = i + 1
            except BaseException as exc:     # reported by the test thread
                failed.append(exc)

        _watch_sends(send_all, progress, sends)
        if failed:
            raise failed[0]
        raised, slowest = progress["raised"], progress["slowest"]
        assert slowest < SEND_LIMIT, (f"send blocked for {slowest:.1f} s: it must raise "
                                      "TransportError when its buffer is full")
        assert raised > 0, "3000 x 64 KiB never hit a bound"
        assert rss_bytes() - start_rss < 150 * MiB
        sender.close()

    def test_small_buffer_keeps_flowing_while_the_receiver_reads(
            self, make: Callable[..., Transport]) -> None:
        """A buffer of 4 batches and a receiver that keeps reading: the sender may be told to
        wait now and then, never for good (whatever the transport keeps for a peer is
        released as the peer takes it, without more traffic to carry the news)."""
        transport = make({"squall.transport.send.buffer.messages": 4})
        receiver = transport.bind(TOPOLOGY, 0)
        sender = transport.connect(TOPOLOGY, self.host, receiver.port)
        got: list[Message] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set() and len(got) < 200:
                got.extend(receiver.recv(0.5))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        sent = [(1, _seq(1, i)) for i in range(200)]
        # the sends run on a thread of their own, watched from here: a send that blocks on the
        # full buffer (a lost wakeup) fails the check instead of hanging it
        progress: dict[str, Any] = {"done": 0, "raised": 0, "slowest": 0.0, "since": None}
        failed: list[BaseException] = []

        def send_all() -> None:
            try:
                for i, msg in enumerate(sent):
                    deadline = time.monotonic() + 10
                    while True:
                        progress["since"] = time.monotonic()
                        try:
                            sender.send([msg])
                            break
                        except TransportError:
                            progress["raised"] += 1
                            assert time.monotonic() < deadline, (
                                f"send still refused after 10 s with {len(got)} of 200 "
                                "received")
                            threading.Event().wait(0.001)
                        finally:
                            progress["since"] = None
                    progress["done"] = i + 1
            except BaseException as exc:     # reported by the test thread
                failed.append(exc)

        try:
            _watch_sends(send_all, progress, len(sent))
            if failed:
                raise failed[0]
            wait_until(lambda: len(got) >= 200)
        finally:
            stop.set()
            reader.join(5)
        assert got == sent

    # -- close -------------------------------------------------------------------------------

    def test_close_semantics(self, make: Callable[..., Transport]) -> None:
        transport = make()
        receiver = transport.bind(TOPOLOGY, 0)
        sender = transport.connect(TOPOLOGY, self.host, receiver.port)
        _send(sender, [(1, b"a")])
        assert collect(receiver, 1) == [(1, b"a")]

        woke: list[list[Message]] = []
        waiter = threading.Thread(target=lambda: woke.append(receiver.recv(None)), daemon=True)
        waiter.start()
        wait_until(lambda: waiter.is_alive())
        receiver.close()
        waiter.join(5)
        assert not waiter.is_alive() and woke == [[]], "close did not wake a blocked recv"
        receiver.close()
        t0 = time.monotonic()
        after_close = _within(SEND_LIMIT, lambda: [receiver.recv(None), receiver.recv(5)],
                              "recv after close blocked for {:.1f} s: it must return [] at "
                              "once")
        assert after_close == [[], []], f"recv after close returned {after_close}"
        assert time.monotonic() - t0 < 1.0

        sender.close()
        sender.close()
        with pytest.raises(TransportError):
            _send(sender, [(1, b"b")])
        transport.close()
        transport.close()

    def test_close_delivers_what_send_accepted(self, make: Callable[..., Transport]) -> None:
        """``close`` right after many sends: every batch ``send`` accepted still reaches a
        receiver that goes on reading (the close's linger), in order."""
        transport = make()
        receiver = transport.bind(TOPOLOGY, 0)
        sender = transport.connect(TOPOLOGY, self.host, receiver.port)
        _send(sender, [(0, b"first")])
        assert collect(receiver, 1) == [(0, b"first")]      # connected
        accepted = []
        for i in range(1, 501):
            try:
                _send(sender, [(i, b"x" * 200)])
            except TransportError:          # a full buffer may refuse: nothing is promised
                break
            accepted.append((i, b"x" * 200))
        closer = threading.Thread(target=sender.close)      # the receiver reads meanwhile
        closer.start()
        try:
            assert collect(receiver, len(accepted)) == accepted
        finally:
            closer.join(10)
        receiver.close()

    def test_recv_timeout(self, make: Callable[..., Transport]) -> None:
        receiver = make().bind(TOPOLOGY, 0)
        t0 = time.monotonic()
        assert receiver.recv(0.1) == []
        assert time.monotonic() - t0 < 2.0
        receiver.close()

    def test_garbage_then_good_peer(self, make: Callable[..., Transport],
                                    network_transport: bool) -> None:
        transport = make()
        receiver = transport.bind(TOPOLOGY, 0)
        bad = make().connect(TOPOLOGY, self.host, receiver.port)
        for batch in ([(1, "text, not bytes")], [("task", b"x")], [(1, None)]):
            with pytest.raises(TransportError):
                _send(bad, batch)  # type: ignore[arg-type]
        if network_transport:
            for junk in (os.urandom(4096), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\xff" * 64):
                with socket.create_connection((self.host, receiver.port), timeout=5) as raw:
                    try:
                        raw.sendall(junk)
                    except OSError:
                        pass        # the receiver may hang up on us first: that is fine
        assert receiver.recv(0.2) == []
        sender = make().connect(TOPOLOGY, self.host, receiver.port)
        _send(sender, [(7, b"after the junk")])
        assert collect(receiver, 1) == [(7, b"after the junk")]


def _watch_sends(send_all: Callable[[], None], progress: dict[str, Any], sends: int) -> None:
    """Run ``send_all`` (``sends`` sends, each noting its start in ``progress["since"]``, and
    the sends done and refused in ``"done"`` and ``"raised"``) on a daemon thread;
    AssertionError as soon as one send has run for :data:`SEND_LIMIT` seconds, or all of them
    for :data:`LOOP_LIMIT`. A blocked send cannot be interrupted: its thread is left behind
    (a daemon, it does not keep the test process alive)."""
    __tracebackhide__ = True
    thread = threading.Thread(target=send_all, name="contract-sends", daemon=True)
    started = time.monotonic()
    thread.start()
    while thread.is_alive():
        thread.join(0.05)
        since, now = progress["since"], time.monotonic()
        if thread.is_alive() and since is not None and now - since >= SEND_LIMIT:
            raise AssertionError(
                f"send blocked for {now - since:.1f} s (send {progress['done'] + 1} of {sends}, "
                f"after {progress['raised']} TransportErrors): it must raise TransportError "
                "when its buffer is full")
        if thread.is_alive() and now - started >= LOOP_LIMIT:
            raise AssertionError(f"{sends} sends took over {LOOP_LIMIT:.0f} s ({progress['done']} "
                                 "done): each must return or raise TransportError at once")


def _send(sender: Connection, batch: list[Message], limit: float = SEND_LIMIT) -> None:
    """``sender.send(batch)`` bounded by :func:`_within`: a send still running after ``limit``
    seconds fails the check (it must return, or raise TransportError for a full buffer)."""
    __tracebackhide__ = True
    _within(limit, lambda: sender.send(batch),
            "send blocked for {:.1f} s: it must return, or raise TransportError when its "
            "buffer is full")


def _within(limit: float, call: Callable[[], Any], message: str) -> Any:
    """``call()`` on a daemon thread: its result (or its exception), or AssertionError with
    ``message`` (formatted with the seconds waited) if it has not returned within ``limit``
    seconds."""
    __tracebackhide__ = True
    result: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:     # reported by the test thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="contract-call", daemon=True)
    t0 = time.monotonic()
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        raise AssertionError(message.format(time.monotonic() - t0))
    if failed:
        raise failed[0]
    return result[0]


def _try_bind(transport: Transport, port: int) -> Connection | None:
    try:
        return transport.bind(TOPOLOGY, port)
    except TransportError:
        return None         # the old listener may still be releasing the port
