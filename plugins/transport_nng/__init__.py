"""squall's nng transport plugin (``squall.transport: nng``); needs ``squall[nng]``."""
from __future__ import annotations

from squall.plugins.transport_nng.transport import NngTransport

__all__ = ["NngTransport"]
