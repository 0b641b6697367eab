"""``max_frame_bytes``: what a transport says its sends take, exactly (the worker splits its
batches by it)."""
from __future__ import annotations

import pytest

from squall import TransportError
from squall.testing.contracts.transport import collect
from squall.transports.framing import HEADER


def test_grpc_takes_a_batch_of_max_frame_bytes_and_refuses_one_more() -> None:
    from squall.plugins.transport_grpc import GrpcTransport
    with GrpcTransport({"squall.transport.grpc.max.message.mb": 1}) as transport:
        limit = transport.max_frame_bytes
        assert limit is not None and (1 << 20) - 8192 < limit < 1 << 20
        receiver = transport.bind("limit-topo", 0)
        sender = transport.connect("limit-topo", "127.0.0.1", receiver.port)
        payload = b"x" * (limit - HEADER.size - 8)       # a frame of exactly the limit
        with pytest.raises(TransportError, match=f"over the {limit} bytes"):
            sender.send([(1, payload + b"x")])
        sender.send([(2, payload)])
        assert collect(receiver, 1, timeout=20) == [(2, payload)]


def test_nng_says_what_its_sends_take() -> None:
    from squall.plugins.transport_nng import NngTransport
    from squall.plugins.transport_nng import sender
    assert NngTransport({}).max_frame_bytes == sender.MAX_FRAME < 256 << 20


def test_transports_without_a_limit_say_none() -> None:
    from squall.plugins.transport_zmq import ZmqTransport
    from squall.transports.local import LocalTransport
    assert ZmqTransport({}).max_frame_bytes is None
    assert LocalTransport({}).max_frame_bytes is None
