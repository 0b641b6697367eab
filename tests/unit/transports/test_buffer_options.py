"""squall.transport.send.buffer.messages reaches every transport in a full configuration (the
defaults of every plugin merged in), and a transport's own key beats it."""
from __future__ import annotations

from typing import Any

import pytest

from squall import config
from squall.errors import ConfigError


def _transports() -> list[tuple[str, Any, str, int]]:
    from squall.plugins.transport_nng.transport import NngTransport
    from squall.plugins.transport_zmq.transport import ZmqTransport
    return [("zmq", ZmqTransport, "hwm", 10000), ("nng", NngTransport, "send_buffer", 1024)]


@pytest.mark.parametrize("name, cls, attr, own_default", _transports())
def test_the_generic_buffer_key_counts_unless_the_transports_own_is_set(
        name: str, cls: Any, attr: str, own_default: int) -> None:
    full = config.defaults()
    assert getattr(cls(full), attr) == own_default
    generic = {**full, "squall.transport.send.buffer.messages": 50}
    assert getattr(cls(generic), attr) == 50
    own = "hwm" if name == "zmq" else "send.buffer"
    assert getattr(cls({**generic, f"squall.transport.{name}.{own}": 70}), attr) == 70


def test_zmq_hwm_0_is_zmqs_no_limit_not_the_default() -> None:
    from squall.plugins.transport_zmq.transport import ZmqTransport
    full = {**config.defaults(), "squall.transport.send.buffer.messages": 50}
    with ZmqTransport({**full, "squall.transport.zmq.hwm": 0}) as transport:
        assert transport.hwm == 0
        receiver = transport.bind("t-1", 0)
        sender = transport.connect("t-1", "127.0.0.1", receiver.port)
        try:
            sender.send([(1, b"x")])
            assert receiver.recv(timeout=5) == [(1, b"x")]
        finally:
            sender.close()
            receiver.close()


@pytest.mark.parametrize("name, cls, key, value", [
    ("zmq", "ZmqTransport", "linger.ms", -5), ("zmq", "ZmqTransport", "hwm", -3),
    ("nng", "NngTransport", "send.buffer", 0), ("nng", "NngTransport", "linger.ms", -1),
    ("grpc", "GrpcTransport", "linger.ms", -1)])
def test_a_transport_built_with_a_bad_option_names_the_key(name: str, cls: str, key: str,
                                                           value: int) -> None:
    # a worker builds its transport from a validated conf; built any other way, the value is
    # still refused by name rather than as the library's "Invalid argument" at bind
    module = pytest.importorskip(f"squall.plugins.transport_{name}.transport")
    with pytest.raises(ConfigError, match=f"'squall.transport.{name}.{key}' must be"):
        getattr(module, cls)({f"squall.transport.{name}.{key}": value})
