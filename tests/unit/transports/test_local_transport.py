"""LocalTransport specifics beyond the contract: buffering before bind, shared registry."""
from __future__ import annotations

import pytest

from squall import TransportError
from squall.transports.local import LocalTransport

LIMIT = {"squall.transport.send.buffer.messages": 10}


def test_sends_before_bind_are_delivered_at_bind() -> None:
    with LocalTransport(LIMIT) as transport:
        sender = transport.connect("t-early", "ignored", 7001)
        sender.send([(1, b"a"), (2, b"b")])
        sender.send([(3, b"c")])
        receiver = transport.bind("t-early", 7001)
        assert receiver.recv(1) == [(1, b"a"), (2, b"b"), (3, b"c")]


def test_pending_buffer_and_inbox_are_bounded() -> None:
    with LocalTransport(LIMIT) as transport:
        sender = transport.connect("t-bound", "h", 7002)
        sender.send([(1, b"x")] * 10)
        with pytest.raises(TransportError, match="limit 10"):
            sender.send([(1, b"y")])
        receiver = transport.bind("t-bound", 7002)
        with pytest.raises(TransportError, match="queue full"):
            sender.send([(1, b"z")])
        assert len(receiver.recv(1)) == 10
        sender.send([(1, b"z")])                      # room again once drained
        assert receiver.recv(1) == [(1, b"z")]


def test_ports_are_per_topology_and_exclusive() -> None:
    with LocalTransport() as a, LocalTransport() as b:
        first = a.bind("t-one", 0)
        with pytest.raises(TransportError, match="already bound"):
            b.bind("t-one", first.port)
        other = b.bind("t-two", first.port)           # another topology: its own port space
        b.connect("t-two", "h", first.port).send([(5, b"two")])
        assert other.recv(1) == [(5, b"two")] and first.recv(0.01) == []
