"""The DRPC server's book of requests: per function, the requests waiting to be fetched by a
topology, and every request still waiting for its result.

Thread-safe: callers block in :meth:`RequestBook.execute` on their own threads (one per gRPC or
HTTP request), topologies fetch and answer from others.
"""
from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import deque

from squall.drpc.failures import RequestFailed, ShuttingDown, TimedOut


class _Request:
    __slots__ = ("args", "done", "error", "fetched", "function", "id", "result", "shut")

    def __init__(self, request_id: str, function: str, args: str) -> None:
        self.id = request_id
        self.function = function
        self.args = args
        self.done = threading.Event()
        self.result: str | None = None
        self.error: str | None = None
        self.fetched = False
        self.shut = False       # failed because the server stopped, not by its topology


class RequestBook:
    """Requests by function; ``timeout`` is ``drpc.request.timeout.secs``."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._prefix = uuid.uuid4().hex[:12]       # ids of another server life never match
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._waiting: dict[str, deque[_Request]] = {}
        self._pending: dict[str, _Request] = {}
        self._last_fetch: dict[str, float] = {}
        self._closed = False

    def execute(self, function: str, args: str) -> str:
        """Queue a request and block until its result: TimedOut, RequestFailed (its topology
        failed it) or ShuttingDown (the server stops) if none comes."""
        request = _Request(f"{self._prefix}-{next(self._ids)}", function, args)
        with self._lock:
            if self._closed:
                raise ShuttingDown("the DRPC server is shutting down")
            self._pending[request.id] = request
            self._waiting.setdefault(function, deque()).append(request)
            self._arrived.notify_all()
        answered = request.done.wait(self.timeout)
        with self._lock:
            self._pending.pop(request.id, None)
            if not answered:
                queue = self._waiting.get(function)
                if queue is not None and request in queue:
                    queue.remove(request)
        if not answered:
            served = "" if function in self._last_fetch else (
                f"; no topology has fetched {function!r} requests from this server")
            raise TimedOut(f"DRPC request {function}({args!r}) timed out after "
                            f"{self.timeout:g} s (drpc.request.timeout.secs){served}")
        if request.error is not None:
            failure = ShuttingDown if request.shut else RequestFailed
            raise failure(f"DRPC request {function}({args!r}) failed: {request.error}")
        assert request.result is not None
        return request.result

    def fetch(self, function: str, max_requests: int, wait: float) -> list[tuple[str, str]]:
        """Up to ``max_requests`` waiting requests ``(id, args)`` of ``function``, waiting at
        most ``wait`` seconds for one."""
        deadline = time.monotonic() + max(0.0, wait)
        with self._lock:
            self._last_fetch[function] = time.monotonic()
            queue = self._waiting.setdefault(function, deque())
            while not queue and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0 or not self._arrived.wait(left):
                    break
            out: list[tuple[str, str]] = []
            while queue and len(out) < max(1, max_requests):
                request = queue.popleft()
                request.fetched = True
                out.append((request.id, request.args))
            return out

    def result(self, request_id: str, result: str) -> bool:
        """Answer a request; ``False`` when it is unknown (timed out, or answered already)."""
        with self._lock:
            request = self._pending.pop(request_id, None)
        if request is None:
            return False
        request.result = result
        request.done.set()
        return True

    def fail(self, request_id: str, reason: str) -> bool:
        with self._lock:
            request = self._pending.pop(request_id, None)
        if request is None:
            return False
        request.error = reason
        request.done.set()
        return True

    def functions(self) -> list[dict[str, object]]:
        """Every function a caller or topology has named: ``function``, ``waiting`` (not
        fetched yet), ``in_flight`` (fetched, no result yet), ``last_fetch_secs_ago`` (-1:
        no topology fetched it yet), sorted by name."""
        now = time.monotonic()
        with self._lock:
            names = set(self._waiting) | set(self._last_fetch)
            out: list[dict[str, object]] = []
            for name in sorted(names):
                in_flight = sum(1 for r in self._pending.values()
                                if r.function == name and r.fetched)
                last = self._last_fetch.get(name)
                out.append({"function": name, "waiting": len(self._waiting.get(name, ())),
                            "in_flight": in_flight,
                            "last_fetch_secs_ago": -1.0 if last is None else now - last})
            return out

    def close(self) -> None:
        """Fail every waiting caller and wake every fetcher."""
        with self._lock:
            self._closed = True
            pending, self._pending = list(self._pending.values()), {}
            self._arrived.notify_all()
        for request in pending:
            request.shut = True
            request.error = "the DRPC server shut down"
            request.done.set()
