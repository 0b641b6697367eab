"""squall's gRPC transport plugin (``squall.transport: grpc``); needs ``squall[grpc]``.

The package opens without importing grpc: :mod:`.hooks` (its config keys, loaded by every
process through ``squall.plugins``) stays light, and :class:`GrpcTransport` loads from
:mod:`.transport` on first use (``squall.transports`` names ``grpc`` here).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from squall.plugins.transport_grpc.transport import GrpcTransport

__all__ = ["GrpcTransport"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.transport"), name)
    globals()[name] = value
    return value
