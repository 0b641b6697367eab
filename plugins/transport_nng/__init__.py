"""squall's nng transport plugin (``squall.transport: nng``); needs ``squall[nng]``.

The package opens without importing pynng: :mod:`.hooks` (its config keys, loaded by every
process through ``squall.plugins``) stays light, and :class:`NngTransport` loads from
:mod:`.transport` on first use (``squall.transports`` names ``nng`` here).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from squall.plugins.transport_nng.transport import NngTransport

__all__ = ["NngTransport"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.transport"), name)
    globals()[name] = value
    return value
