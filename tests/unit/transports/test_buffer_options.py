"""squall.transport.send.buffer.messages reaches every transport in a full configuration (the
defaults of every plugin merged in), and a transport's own key beats it."""
from __future__ import annotations

from typing import Any

import pytest

from squall import config


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
