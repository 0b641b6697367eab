"""squall's ZeroMQ transport plugin (``squall.transport: zmq``); needs ``squall[zmq]``.

The package opens without importing zmq: :mod:`.hooks` (its config keys, loaded by every
process through ``squall.plugins``) stays light, and :class:`ZmqTransport` and
:func:`generate_keys` load from :mod:`.transport` on first use (``squall.transports`` names
``zmq`` here).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from squall.plugins.transport_zmq.transport import ZmqTransport, generate_keys

__all__ = ["ZmqTransport", "generate_keys"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.transport"), name)
    globals()[name] = value
    return value
