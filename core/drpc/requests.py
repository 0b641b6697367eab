"""The DRPC server's book of requests: per function, the requests waiting to be fetched by a
topology, and every request still waiting for its result.

A request's life: ``execute`` queues it (waiting); a topology's ``fetch`` hands it to that
topology's holder under a lease of ``lease`` seconds (fetched); the holder's ``renew`` starts
the lease again and says which requests it has started in a batch; ``result`` or ``fail``
answers it. A holder that will not start a request gives it back with ``requeue`` (first in
its function's queue again, for any topology). A lease that runs out (the holder's worker died,
or lost this server) is ended by ``expire``: a request not started yet is queued again, one
started fails with that reason (its batch may have run part of the way: another try is the
caller's call). A caller that gives up (``abandon``) frees its request at once.

Nothing stays once a request is answered, fails, times out or is abandoned: a function's queue
goes with its last request, so names callers make up (any HTTP client can) cost nothing
afterwards. Beyond its requests the book keeps when a topology last fetched each function: for
:data:`FETCH_MEMORY_SECS`, and for the :data:`MAX_FETCHED_FUNCTIONS` names fetched last.

Thread-safe: callers block in :meth:`RequestBook.execute` on their own threads (one per gRPC or
HTTP request), topologies fetch and answer from others, the server's lease thread calls
:meth:`RequestBook.expire`.
"""
from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any

from squall.drpc.failures import RequestFailed, ShuttingDown, TimedOut

#: ``drpc.fetch.lease.secs`` when unset
DEFAULT_LEASE = 10.0
#: what one request adds to a Fetch reply besides its args (its id and the framing)
_FRAMING = 64
#: a caller's deadline bounds its wait with this much to spare: the end of its call (which
#: frees the request at once) comes first, and the caller's own error says it timed out
CALLER_GRACE = 1.0
#: how long the book remembers a topology's last fetch of a function
FETCH_MEMORY_SECS = 3600.0
#: the most functions whose last fetch the book remembers (the least recently fetched go first)
MAX_FETCHED_FUNCTIONS = 1024


class _Request:
    __slots__ = ("args", "done", "error", "fetched", "function", "holder", "id", "lease",
                 "result", "shut", "size", "started")

    def __init__(self, request_id: str, function: str, args: str) -> None:
        self.id = request_id
        self.function = function
        self.args = args
        self.size = len(args.encode("utf-8", "surrogatepass"))
        self.done = threading.Event()
        self.result: str | None = None
        self.error: str | None = None
        self.fetched = False
        self.holder = ""         # who fetched it
        self.lease = 0.0         # time.monotonic() its holder's lease ends at
        self.started = False     # its holder said it runs in a batch
        self.shut = False        # failed because the server stopped, not by its topology


class RequestBook:
    """Requests by function; ``timeout`` is ``drpc.request.timeout.secs``, ``lease``
    ``drpc.fetch.lease.secs``."""

    def __init__(self, timeout: float, lease: float = DEFAULT_LEASE) -> None:
        self.timeout = timeout
        self.lease = lease
        self._prefix = uuid.uuid4().hex[:12]       # ids of another server life never match
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        #: per function, its requests not fetched yet (no entry: none)
        self._waiting: dict[str, deque[_Request]] = {}
        self._pending: dict[str, _Request] = {}
        #: when a topology last fetched each function, least recent first (``_fetched``)
        self._last_fetch: OrderedDict[str, float] = OrderedDict()
        self._closed = False

    def execute(self, function: str, args: str, timeout: float | None = None,
                on_end: Callable[[Callable[[], None]], Any] | None = None) -> str:
        """Queue a request and block until its result: TimedOut, RequestFailed (its topology
        failed it) or ShuttingDown (the server stops) if none comes.

        ``timeout``: what is left of the caller's own deadline (the wait is the shorter of it,
        plus :data:`CALLER_GRACE`, and the book's). ``on_end(callback)`` registers
        ``callback`` to run when the caller's call ends (gRPC's ``context.add_callback``;
        ``False`` back: it ended already): a caller that gives up frees its request and this
        thread at once."""
        request = _Request(f"{self._prefix}-{next(self._ids)}", function, args)
        wait = (self.timeout if timeout is None
                else max(0.0, min(self.timeout, timeout + CALLER_GRACE)))
        with self._lock:
            if self._closed:
                raise ShuttingDown("the DRPC server is shutting down")
            self._pending[request.id] = request
            self._waiting.setdefault(function, deque()).append(request)
            self._arrived.notify_all()
        if on_end is not None and on_end(lambda: self.abandon(request.id)) is False:
            self.abandon(request.id)
        answered = request.done.wait(wait)
        if not answered:
            with self._lock:
                self._forget(request)
                fetched = function in self._last_fetch
            served = "" if fetched else (
                f"; no topology has fetched {function!r} requests from this server")
            why = ("drpc.request.timeout.secs" if wait >= self.timeout
                   else "the caller's deadline")
            raise TimedOut(f"DRPC request {function}({args!r}) timed out after "
                           f"{wait:g} s ({why}){served}")
        if request.error is not None:
            failure = ShuttingDown if request.shut else RequestFailed
            raise failure(f"DRPC request {function}({args!r}) failed: {request.error}")
        assert request.result is not None
        return request.result

    def fetch(self, function: str, max_requests: int, wait: float, holder: str = "",
              max_bytes: int | None = None) -> list[tuple[str, str]]:
        """Up to ``max_requests`` waiting requests ``(id, args)`` of ``function`` (their args
        at most ``max_bytes`` together, but always one), waiting at most ``wait`` seconds for
        one; ``holder`` has them under a lease from now."""
        deadline = time.monotonic() + max(0.0, wait)
        with self._lock:
            self._fetched(function)
            while function not in self._waiting and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0 or not self._arrived.wait(left):
                    break
            queue = self._waiting.get(function, deque())
            out: list[tuple[str, str]] = []
            budget = max_bytes
            lease = time.monotonic() + self.lease
            while queue and len(out) < max(1, max_requests):
                request = queue[0]
                if budget is not None and out and request.size + _FRAMING > budget:
                    break
                queue.popleft()
                request.fetched, request.holder, request.lease = True, holder, lease
                request.started = False
                if budget is not None:
                    budget -= request.size + _FRAMING
                out.append((request.id, request.args))
            if not queue:
                self._waiting.pop(function, None)
            return out

    def result(self, request_id: str, result: str) -> bool:
        """Answer a request; ``False`` when it is unknown (timed out, or answered already)."""
        with self._lock:
            request = self._pending.get(request_id)
            if request is None:
                return False
            self._forget(request)
        request.result = result
        request.done.set()
        return True

    def fail(self, request_id: str, reason: str) -> bool:
        """Fail a request: its caller's error says ``reason``; ``False`` when it is unknown."""
        with self._lock:
            request = self._pending.get(request_id)
            if request is None:
                return False
            self._forget(request)
        request.error = reason
        request.done.set()
        return True

    def abandon(self, request_id: str) -> None:
        """The caller gave up: forget the request and wake its ``execute``."""
        with self._lock:
            request = self._pending.get(request_id)
            if request is None:
                return
            self._forget(request)
        request.error = "its caller gave up"
        request.done.set()

    def renew(self, holder: str, ids: Iterable[str], started: Iterable[str]) -> int:
        """``holder`` still has ``ids`` (not started) and ``started`` (in a batch): their
        leases start again. The number of them this book still waits for."""
        lease = time.monotonic() + self.lease
        n = 0
        with self._lock:
            for ids_of, is_started in ((ids, False), (started, True)):
                for request_id in ids_of:
                    request = self._pending.get(request_id)
                    if request is None or not request.fetched or request.holder != holder:
                        continue
                    request.lease = lease
                    request.started = request.started or is_started
                    n += 1
        return n

    def requeue(self, holder: str, ids: Iterable[str]) -> int:
        """``holder`` gives ``ids`` back: each goes first in its function's queue again (in
        the order given). The number given back."""
        with self._lock:
            back = [r for r in (self._pending.get(i) for i in ids)
                    if r is not None and r.fetched and r.holder == holder]
            self._queue_first(back)
        return len(back)

    def expire(self, now: float | None = None) -> tuple[int, int]:
        """End the leases run out at ``now`` (``time.monotonic()``): a request not started is
        queued again, one started fails. How many were ``(queued again, failed)``."""
        now = time.monotonic() if now is None else now
        with self._lock:
            out = [r for r in self._pending.values() if r.fetched and r.lease < now]
            back = [r for r in out if not r.started]
            self._queue_first(back)
            failed = [r for r in out if r.started]
            for request in failed:
                self._forget(request)
        for request in failed:
            request.error = (f"the topology that started it stopped answering for it (no word "
                             f"for {self.lease:g} s, drpc.fetch.lease.secs: its worker died or "
                             f"lost this server)")
            request.done.set()
        return len(back), len(failed)

    def _queue_first(self, requests: list[_Request]) -> None:
        """(lock held) Put fetched ``requests`` first in their queues, in their order."""
        for request in reversed(requests):
            request.fetched, request.holder, request.started = False, "", False
            self._waiting.setdefault(request.function, deque()).appendleft(request)
        if requests:
            self._arrived.notify_all()

    def _forget(self, request: _Request) -> None:
        """(lock held) Drop ``request``: not pending any more, not queued (its function's
        queue goes with its last request)."""
        self._pending.pop(request.id, None)
        if not request.fetched:
            queue = self._waiting.get(request.function)
            if queue is not None and request in queue:
                queue.remove(request)
                if not queue:
                    del self._waiting[request.function]

    def _fetched(self, function: str) -> None:
        """(lock held) A topology fetches ``function`` now: remember when, last in order."""
        now = time.monotonic()
        self._last_fetch[function] = now
        self._last_fetch.move_to_end(function)
        self._prune_fetches(now)

    def _prune_fetches(self, now: float) -> None:
        """(lock held) Forget fetches older than :data:`FETCH_MEMORY_SECS` and beyond the
        :data:`MAX_FETCHED_FUNCTIONS` last: the least recent, at the front of the map."""
        fetches = self._last_fetch
        while fetches and (len(fetches) > MAX_FETCHED_FUNCTIONS
                           or now - next(iter(fetches.values())) > FETCH_MEMORY_SECS):
            fetches.popitem(last=False)

    def functions(self) -> list[dict[str, object]]:
        """The functions with requests waiting or in flight, and those a topology fetched
        lately (within :data:`FETCH_MEMORY_SECS`; the :data:`MAX_FETCHED_FUNCTIONS` last):
        ``function``, ``waiting`` (not fetched yet), ``in_flight`` (fetched, no result
        yet), ``last_fetch_secs_ago`` (-1: no topology fetched it lately), sorted by name."""
        now = time.monotonic()
        with self._lock:
            self._prune_fetches(now)
            in_flight: dict[str, int] = {}
            for request in self._pending.values():
                if request.fetched:
                    in_flight[request.function] = in_flight.get(request.function, 0) + 1
            names = set(self._waiting) | set(in_flight) | set(self._last_fetch)
            out: list[dict[str, object]] = []
            for name in sorted(names):
                last = self._last_fetch.get(name)
                out.append({"function": name, "waiting": len(self._waiting.get(name, ())),
                            "in_flight": in_flight.get(name, 0),
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
