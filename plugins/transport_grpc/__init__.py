"""squall's gRPC transport plugin (``squall.transport: grpc``); needs ``squall[grpc]``."""
from __future__ import annotations

from squall.plugins.transport_grpc.transport import GrpcTransport

__all__ = ["GrpcTransport"]
