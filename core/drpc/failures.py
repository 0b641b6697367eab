"""Why a DRPC call was not answered, as :class:`~squall.errors.DRPCError` subclasses: the
server raises the one that says why, and each front answers it with its own status (the
table in :mod:`.fronts`), so a status never depends on the words of a message (which quote
the caller's args and the topology's error). A caller catches ``DRPCError`` as before.
"""
from __future__ import annotations

from squall.errors import DRPCError


class BadCall(DRPCError):
    """The caller's call cannot be served as given (a bad function name, args not a
    string, an unknown operation): HTTP 400, gRPC INVALID_ARGUMENT."""


class Busy(DRPCError):
    """``drpc.worker.threads`` callers wait already: HTTP 503, gRPC RESOURCE_EXHAUSTED
    (another server may take it)."""


class ShuttingDown(DRPCError):
    """The server is stopping: HTTP 503, gRPC UNAVAILABLE."""


class TimedOut(DRPCError):
    """No result within ``drpc.request.timeout.secs``: HTTP 504, gRPC DEADLINE_EXCEEDED."""


class RequestFailed(DRPCError):
    """The topology failed the request (its batch failed): HTTP 500, gRPC INTERNAL."""
