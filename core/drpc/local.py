"""``LocalDRPC``: DRPC in one process (LocalCluster, tests).

>>> from squall import LocalDRPC
>>> with LocalDRPC() as drpc:
...     drpc.functions()
[]

``execute`` (any thread) queues a request and blocks until a topology returns its result or
``drpc.request.timeout.secs`` passes (then :class:`squall.errors.DRPCError`). The topology's
DRPC source takes requests with :meth:`LocalDRPC.take` and answers with
:meth:`LocalDRPC.respond` from the worker's loop thread; the instance is found there by its
``service_id`` (the worker runs in this process). Every method is thread-safe.
"""
from __future__ import annotations

import itertools
import threading
import uuid
from collections import deque
from types import TracebackType
from typing import Any

from squall.drpc.names import RULE, function_problem, shown
from squall.errors import DRPCError

_REGISTRY: dict[str, LocalDRPC] = {}
_REGISTRY_LOCK = threading.Lock()


def lookup(service_id: str) -> LocalDRPC | None:
    """The open LocalDRPC with that id, if any."""
    with _REGISTRY_LOCK:
        return _REGISTRY.get(service_id)


class _Pending:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: str | None = None
        self.error: str | None = None


class LocalDRPC:
    """A DRPC service in this process; use it as a context manager (``with LocalDRPC() as
    drpc:``) and pass it to ``new_drpc_stream``."""

    def __init__(self, conf: dict[str, Any] | None = None) -> None:
        from squall import config
        merged = {**config.defaults(), **(conf or {})}
        self.timeout = float(merged.get("drpc.request.timeout.secs") or 600)
        self.service_id = f"local-drpc-{uuid.uuid4().hex}"
        self._lock = threading.Lock()
        self._queues: dict[str, deque[tuple[str, str]]] = {}
        self._pending: dict[str, _Pending] = {}
        self._ids = itertools.count(1)
        self._closed = False
        with _REGISTRY_LOCK:
            _REGISTRY[self.service_id] = self

    def __enter__(self) -> LocalDRPC:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.shutdown()

    def functions(self) -> list[str]:
        """The functions some caller or topology has named, sorted."""
        with self._lock:
            return sorted(self._queues)

    def execute(self, function: str, args: str) -> str:
        """The result of ``function`` applied to ``args``: the JSON of its result rows.
        DRPCError at once for a function name a cluster's DRPC server refuses
        (:mod:`squall.drpc.names`)."""
        if not isinstance(function, str) or not isinstance(args, str):
            raise DRPCError(f"execute takes a function name and an args string, got "
                            f"{function!r}, {args!r}")
        problem = function_problem(function)
        if problem is not None:     # what a cluster's DRPC server refuses
            raise DRPCError(f"bad DRPC function name {shown(function)}: it {problem}; {RULE}")
        pending = _Pending()
        with self._lock:
            if self._closed:
                raise DRPCError("this LocalDRPC is shut down")
            request_id = f"{next(self._ids)}"
            self._pending[request_id] = pending
            self._queues.setdefault(function, deque()).append((request_id, args))
        if not pending.done.wait(self.timeout):
            with self._lock:
                self._pending.pop(request_id, None)
                queue = self._queues.get(function)
                if queue is not None:
                    try:
                        queue.remove((request_id, args))
                    except ValueError:
                        pass
            raise DRPCError(f"DRPC request {function}({args!r}) timed out after "
                            f"{self.timeout:g} s (drpc.request.timeout.secs): is a topology "
                            f"serving {function!r} running?")
        if pending.error is not None:
            raise DRPCError(f"DRPC request {function}({args!r}) failed: {pending.error}")
        if pending.result is None:
            raise DRPCError(f"DRPC request {function}({args!r}): the LocalDRPC shut down")
        return pending.result

    def take(self, function: str) -> tuple[str, str] | None:
        """The oldest waiting request ``(request id, args)`` for ``function``, or ``None``."""
        with self._lock:
            queue = self._queues.setdefault(function, deque())
            while queue:
                request = queue.popleft()
                if request[0] in self._pending:
                    return request
            return None

    def respond(self, request_id: str, result: str) -> None:
        """Answer a request (a second answer to it is ignored)."""
        with self._lock:
            pending = self._pending.pop(request_id, None)
        if pending is not None:
            pending.result = result
            pending.done.set()

    def fail(self, request_id: str, reason: str) -> None:
        """Fail a request: its caller gets a DRPCError saying ``reason`` (ignored once it
        was answered)."""
        with self._lock:
            pending = self._pending.pop(request_id, None)
        if pending is not None:
            pending.error = reason
            pending.done.set()

    def shutdown(self) -> None:
        """Stop: waiting callers get a DRPCError."""
        with _REGISTRY_LOCK:
            _REGISTRY.pop(self.service_id, None)
        with self._lock:
            self._closed = True
            pending, self._pending = list(self._pending.values()), {}
        for p in pending:
            p.done.set()
