"""squall's ZeroMQ transport plugin (``squall.transport: zmq``); needs ``squall[zmq]``."""
from __future__ import annotations

from squall.plugins.transport_zmq.transport import ZmqTransport, generate_keys

__all__ = ["ZmqTransport", "generate_keys"]
