"""The transport contract suite catches a send or recv that blocks, and fails it within its
limit instead of hanging (a plugin author's CI may have no pytest-timeout)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from squall import TransportError
from squall.spi.transport import Connection, Message, Transport
from squall.testing.contracts.transport import SEND_LIMIT, TransportContract
from squall.transports.local import LocalReceiver, LocalSender, LocalTransport

#: how long the broken connections below block before giving up: past the contract's limit,
#: so a check that waited for them would see the call return (and fail late, or not at all)
BLOCK = SEND_LIMIT + 2.0


class BlockingSender(LocalSender):
    """Blocks (as ``queue.Queue.put`` does) where it should raise TransportError for a full
    buffer; gives up after BLOCK seconds, and refuses every later send at once."""

    blocked = False

    def send(self, messages: list[Message]) -> None:
        try:
            super().send(messages)
        except TransportError:
            if self.blocked:
                raise
            self.blocked = True
            threading.Event().wait(BLOCK)


class RecvBlocksAfterClose(LocalReceiver):
    """``recv`` on a closed connection blocks for BLOCK seconds before it returns []."""

    def recv(self, timeout: float | None = None) -> list[Message]:
        if self._inbox.closed:
            threading.Event().wait(BLOCK)
            return []
        return super().recv(timeout)


class BrokenTransport(LocalTransport):
    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        return BlockingSender((topology_id, int(port)), self.limit)

    def bind(self, topology_id: str, port: int) -> Connection:
        receiver = super().bind(topology_id, port)
        assert isinstance(receiver, LocalReceiver)
        return RecvBlocksAfterClose(receiver._key, receiver._inbox)


@pytest.fixture
def make() -> Iterator[Callable[[type[Transport]], Callable[..., Transport]]]:
    made: list[Transport] = []

    def for_class(cls: type[Transport]) -> Callable[..., Transport]:
        def make(conf: dict[str, Any] | None = None) -> Transport:
            made.append(cls(dict(conf or {})))
            return made[-1]
        return make

    yield for_class
    for transport in made:
        transport.close()


def test_a_send_that_blocks_fails_the_bounded_check_within_its_limit(make: Any) -> None:
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match=r"send blocked for 2\.\d s \(send \d+ of 3000, "
                       r"after 0 TransportErrors\): it must raise TransportError when its "
                       r"buffer is full"):
        TransportContract().test_send_is_bounded_when_peer_slow_or_gone(
            make(BrokenTransport), "gone", False)
    assert time.monotonic() - t0 < BLOCK, "the check waited for the blocked send to return"


def test_a_recv_that_blocks_after_close_fails_the_close_check_within_its_limit(
        make: Any) -> None:
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match=r"recv after close blocked for 2\.\d s: it must "
                                             r"return \[\] at once"):
        TransportContract().test_close_semantics(make(BrokenTransport))
    assert time.monotonic() - t0 < BLOCK, "the check waited for the blocked recv to return"


@pytest.mark.parametrize("peer", ["gone", "slow"])
def test_the_local_transport_passes_both_checks(make: Any, peer: str) -> None:
    TransportContract().test_send_is_bounded_when_peer_slow_or_gone(
        make(LocalTransport), peer, False)
    TransportContract().test_close_semantics(make(LocalTransport))


class LostWakeupSender(LocalSender):
    """Waits for room once four batches are out, for a wakeup the receiver never gives (the
    lost-wakeup bug): blocks BLOCK seconds, then refuses."""

    sent = 0

    def send(self, messages: list[Message]) -> None:
        if self.sent >= 4:
            threading.Event().wait(BLOCK)
            raise TransportError("gave up waiting for room")
        super().send(messages)
        self.sent += 1


class LostWakeupTransport(LocalTransport):
    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        return LostWakeupSender((topology_id, int(port)), self.limit)


def test_a_send_waiting_for_a_lost_wakeup_fails_the_small_buffer_check_within_its_limit(
        make: Any) -> None:
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match=r"send blocked for 2\.\d s \(send 5 of 200, "
                                             r"after 0 TransportErrors\)"):
        TransportContract().test_small_buffer_keeps_flowing_while_the_receiver_reads(
            make(LostWakeupTransport))
    assert time.monotonic() - t0 < BLOCK, "the check waited for the blocked send to return"


def test_the_local_transport_passes_the_small_buffer_check(make: Any) -> None:
    TransportContract().test_small_buffer_keeps_flowing_while_the_receiver_reads(
        make(LocalTransport))
