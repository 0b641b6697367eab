"""Clients of the DRPC servers listed in ``drpc.servers`` (``host`` entries get
``drpc.port``; ``host:port`` entries keep theirs).

- :class:`DRPCClient`: ``execute(function, args) -> str``, for callers. It tries the servers in
  order until one answers (one that is down, or busy with ``drpc.worker.threads`` callers,
  passes it on to the next); a request that gets no result within the client's
  ``drpc.request.timeout.secs`` (or the server's, when shorter) raises
  :class:`~squall.errors.DRPCError` saying so.
- :class:`Invocations`: the topology side, one per topology task. A thread of its own
  long-polls the servers for requests of one function, no more than the task starts soon,
  renews the leases of those it holds, and gives back those it will not start (the task took
  none for a while: its topology is deactivated; or it is closed); :meth:`Invocations.take`
  hands one over without blocking (from the worker's loop thread). Results go back with
  :func:`respond`, which does not block either (an asynchronous gRPC call on a channel shared
  per server and process); a result the server refuses (larger than its
  ``drpc.max.message.bytes``) fails its request at once with that reason.

Channels receive and send messages of any size: the server's ``drpc.max.message.bytes``
bounds them.
"""
from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from squall.errors import DRPCError

log = logging.getLogger(__name__)
ERROR_KEY = "squall-error"


def server_addresses(conf: Mapping[str, Any]) -> list[str]:
    """``host:port`` of every server in ``drpc.servers``."""
    servers = conf.get("drpc.servers") or []
    if isinstance(servers, str):
        servers = [s for s in servers.split(",") if s.strip()]
    port = int(conf.get("drpc.port") or 3772)
    return [s if ":" in s else f"{s}:{port}" for s in (str(x).strip() for x in servers)]


#: the credential keys a DRPC channel carries (API.md section 14)
CREDENTIAL_KEYS = ("nimbus.authentication", "squall.auth.token", "squall.tls.ca",
                   "squall.tls.cert", "squall.tls.key")
#: DRPC channels take messages of any size (the server's drpc.max.message.bytes bounds them)
_CHANNEL_OPTIONS = [("grpc.max_receive_message_length", -1),
                    ("grpc.max_send_message_length", -1)]
_CHANNELS: dict[tuple[str, tuple[Any, ...]], Any] = {}
_CHANNELS_LOCK = threading.Lock()
_process_credentials: tuple[Any, ...] = ()


def use_process_credentials(conf: Mapping[str, Any]) -> None:
    """Credentials (``squall.auth.token``, ``squall.tls.*``) for this process's calls made
    without a conf of their own: a topology's results returned to the DRPC servers. Called
    when a worker starts (the trident plugin's ``squall_worker_start``)."""
    global _process_credentials
    _process_credentials = _credentials(conf)


def _credentials(conf: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple((k, conf.get(k)) for k in CREDENTIAL_KEYS if conf.get(k))


def _stub(address: str, conf: Mapping[str, Any] | None = None) -> Any:
    """A DRPC stub on a channel shared by this process, carrying ``conf``'s credentials (the
    process's, see :func:`use_process_credentials`, when ``conf`` is None)."""
    from squall.drpc._proto import drpc_pb2_grpc
    from squall.security.grpc_auth import client_channel
    creds = _credentials(conf) if conf is not None else _process_credentials
    with _CHANNELS_LOCK:
        channel = _CHANNELS.get((address, creds))
        if channel is None:
            channel = _CHANNELS[(address, creds)] = client_channel(dict(creds), address,
                                                                     options=_CHANNEL_OPTIONS)
    return drpc_pb2_grpc.DRPCStub(channel)


class DRPCClient:
    """Calls DRPC functions on the cluster's DRPC servers (``drpc.servers``)."""

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        from squall import config
        merged = {**config.defaults(), **(conf or {})}
        self.addresses = server_addresses(merged)
        if not self.addresses:
            raise DRPCError("no DRPC server configured: set drpc.servers")
        self.timeout = float(merged.get("drpc.request.timeout.secs") or 600)
        self.conf = merged

    def execute(self, function: str, args: str) -> str:
        """The JSON of the result rows of ``function`` applied to ``args``."""
        import grpc

        from squall.drpc._proto import drpc_pb2 as pb
        if not isinstance(function, str) or not isinstance(args, str):
            raise DRPCError(f"execute takes a function name and an args string, got "
                            f"{function!r}, {args!r}")
        tried = []
        busy: str | None = None
        timed_out = (f"DRPC request {function}({args!r}) timed out after {self.timeout:g} s "
                     "(drpc.request.timeout.secs)")
        deadline = time.monotonic() + self.timeout
        for address in self.addresses:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DRPCError(timed_out)
            try:
                reply = _stub(address, self.conf).Execute(
                    pb.ExecuteRequest(function=function, args=args), timeout=left)
                return str(reply.result)
            except grpc.RpcError as exc:
                code = exc.code()  # type: ignore[attr-defined]
                details = exc.details() or str(code)  # type: ignore[attr-defined]
                # the server's own errors carry ERROR_KEY; gRPC's (this client's deadline,
                # a message over the server's limit) do not
                from_server = any(k == ERROR_KEY for k, _ in
                                  exc.trailing_metadata() or ())  # type: ignore[attr-defined]
                if code == grpc.StatusCode.UNAVAILABLE:
                    tried.append(address)
                    continue
                if code == grpc.StatusCode.DEADLINE_EXCEEDED and not from_server:
                    raise DRPCError(timed_out) from None
                if code == grpc.StatusCode.RESOURCE_EXHAUSTED and not from_server:
                    raise DRPCError(
                        f"DRPC request {function}: the DRPC server {address} refused it: "
                        f"{details} (its args, {len(args.encode())} bytes, are over the "
                        "server's drpc.max.message.bytes)") from None
                if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    # busy (drpc.worker.threads callers waiting there): another may take it
                    busy = busy or f"{details} ({address})"
                    continue
                raise DRPCError(details) from None
        if busy is not None:
            raise DRPCError(busy)
        raise DRPCError(f"no DRPC server answered (tried {', '.join(tried)}; drpc.servers)")


    def functions(self) -> list[dict[str, Any]]:
        """What every DRPC server of ``drpc.servers`` serves: one entry per server and
        function (``server``, ``function``, ``waiting``, ``in_flight``,
        ``last_fetch_secs_ago``), and ``{"server", "error"}`` for a server that did not
        answer."""
        import grpc

        from squall.drpc._proto import drpc_pb2 as pb
        out: list[dict[str, Any]] = []
        for address in self.addresses:
            try:
                reply = _stub(address, self.conf).Functions(pb.Empty(), timeout=10)
            except grpc.RpcError as exc:
                out.append({"server": address, "error": exc.details() or str(exc.code())})
                continue
            out.extend({"server": address, "function": f.function, "waiting": f.waiting,
                        "in_flight": f.in_flight, "last_fetch_secs_ago": f.last_fetch_secs_ago}
                       for f in reply.functions)
        return out


def respond(address: str, request_id: str, result: str) -> None:
    """Send a result to the server the request came from, without waiting for it. A result
    the server refuses as too large fails the request instead (its caller hears why at once,
    not after its timeout)."""
    import grpc

    from squall.drpc._proto import drpc_pb2 as pb
    future = _stub(address).Result.future(pb.ResultRequest(id=request_id, result=result),
                                          timeout=30)

    def sent(done: Any) -> None:
        exc = None if done.cancelled() else done.exception()
        if exc is None:
            return
        code = exc.code() if hasattr(exc, "code") else None
        details = str(exc.details() if hasattr(exc, "details") else exc)
        if code != grpc.StatusCode.RESOURCE_EXHAUSTED:
            log.warning("a DRPC result could not be returned to %s: %s", address, details)
            return
        limit = re.search(r"vs\.? *(\d+)", details)
        reason = (f"result too large: {len(result.encode('utf-8', 'surrogatepass'))} bytes"
                  f"{f' > {limit.group(1)}' if limit else ''} (the DRPC server's "
                  "drpc.max.message.bytes)")
        log.warning("DRPC request %s: %s; failing it", request_id, reason)
        fail_request(address, request_id, reason)
    future.add_done_callback(sent)


def fail_request(address: str, request_id: str, reason: str = "") -> None:
    """Tell the server the request came from that the topology failed it, and why (its caller
    gets a DRPCError saying ``reason`` at once), without waiting for it."""
    from squall.drpc._proto import drpc_pb2 as pb
    future = _stub(address).Fail.future(pb.FailRequest(id=request_id, reason=reason),
                                        timeout=30)
    future.add_done_callback(_log_failure)


def _log_failure(future: Any) -> None:
    exc = None if future.cancelled() else future.exception()
    if exc is not None:
        log.warning("a DRPC failure could not be returned: %s", exc.details() if hasattr(
            exc, "details") else exc)


class Invocations:
    """Requests of ``function`` fetched from every DRPC server by a thread of its own, for one
    topology task that starts up to ``capacity`` of them at a time.

    - It holds at most ``capacity`` requests not taken yet, and fetches only while the task
      takes them: a task that took none for ``idle`` seconds (its topology is deactivated,
      or all its batches wait) gives back those it holds (``Requeue``: another topology, or
      this one later, takes them) and fetches again at its next :meth:`take`.
    - It renews the lease of every request it holds (taken or not) with ``Renew`` well within
      the server's ``drpc.fetch.lease.secs``, until :meth:`finished` says the task is done
      with it; a worker that dies stops renewing, and the server takes its requests back.
    - :meth:`close` gives back every request still held, taken or not (its batch will not
      finish).

    :meth:`take` and :meth:`finished` do not block (the worker's loop thread calls them);
    :meth:`close` waits for the thread, up to ``timeout``."""

    POLL_SECS = 1.0
    #: the least ``idle``: a task taking no request for this long gives back what it holds
    IDLE_SECS = 2.0
    #: how long one Renew or Requeue may take
    CALL_SECS = 5.0

    def __init__(self, conf: Mapping[str, Any], function: str, capacity: int = 1,
                 idle: float = IDLE_SECS) -> None:
        self.addresses = server_addresses(conf)
        if not self.addresses:
            raise DRPCError(f"the DRPC stream {function!r} needs DRPC servers: set "
                            "drpc.servers")
        self.function = function
        # a component's conf has no credentials: the worker's (see security.credentials)
        from squall.security.credentials import for_runtime
        self.conf = for_runtime(conf)
        self.capacity = max(1, int(capacity))
        self.idle = max(0.0, float(idle))
        #: names this task's fetches on the servers (its Renew and Requeue name it)
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._lock = threading.Lock()
        self._queue: deque[tuple[str, str, str]] = deque()
        #: (address, request id) of the requests taken and not finished
        self._taken: dict[tuple[str, str], None] = {}
        self._last_take: float | None = None
        self._lease = 0.0               # the shortest lease a server gave, 0: none yet
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._failures: dict[str, int] = {}
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"squall-drpc-fetch-{function}")
        self._thread.start()

    # -- the task's side (loop thread) -------------------------------------------------------
    def take(self) -> tuple[str, str, str] | None:
        """The oldest fetched request ``(server address, request id, args)``, or ``None``. A
        request taken is renewed until :meth:`finished`."""
        with self._lock:
            self._last_take = time.monotonic()
            got = self._queue.popleft() if self._queue else None
            if got is not None:
                self._taken[(got[0], got[1])] = None
        self._wake.set()                # room for one more, or fetching again after idling
        return got

    def finished(self, address: str, request_id: str) -> None:
        """The task is done with a request it took (answered or failed)."""
        with self._lock:
            self._taken.pop((address, request_id), None)

    def close(self, timeout: float = 15.0) -> None:
        """Stop fetching and give back every request held (waits up to ``timeout``)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # -- the fetching thread -----------------------------------------------------------------
    def _run(self) -> None:
        renew_at = 0.0
        turn = 0
        try:
            while not self._stop.is_set():
                self._wake.clear()
                now = time.monotonic()
                if now >= renew_at:
                    self._renew()
                    renew_at = now + (self._lease / 4 if self._lease else self.POLL_SECS)
                with self._lock:
                    idle = self._last_take is None or now - self._last_take > self.idle
                    room = self.capacity - len(self._queue)
                    back = list(self._queue) if idle else []
                    if back:
                        self._queue.clear()
                if back:
                    log.info("DRPC %r: no batch took a request for %g s (deactivated?); "
                             "giving %d back", self.function, self.idle, len(back))
                    self._requeue(back)
                if idle or room <= 0:
                    self._wake.wait(max(0.05, min(self.POLL_SECS, renew_at - now)))
                    continue
                address = self.addresses[turn % len(self.addresses)]
                turn += 1
                self._fetch(address, room)
        finally:
            with self._lock:
                held = list(self._queue) + [(a, i, "") for a, i in self._taken]
                self._queue.clear()
                self._taken.clear()
            if held:
                self._requeue(held)

    def _fetch(self, address: str, room: int) -> None:
        import grpc

        from squall.drpc._proto import drpc_pb2 as pb
        wait = self.POLL_SECS / len(self.addresses)
        try:
            got = _stub(address, self.conf).Fetch(pb.FetchRequest(
                function=self.function, max=room, wait_secs=wait, holder=self.holder),
                timeout=wait + 10)
        except grpc.RpcError as exc:
            self._failed(address, "fetch", exc)
            self._stop.wait(1.0)
            return
        self._failures.pop(address, None)
        if got.lease_secs > 0:
            self._lease = min(self._lease or got.lease_secs, got.lease_secs)
        if got.requests:
            with self._lock:
                self._queue.extend((address, r.id, r.args) for r in got.requests)

    def _renew(self) -> None:
        """Renew the lease of every request held, on each server."""
        from squall.drpc._proto import drpc_pb2 as pb
        with self._lock:
            queued = [(a, i) for a, i, _ in self._queue]
            taken = list(self._taken)
        if not queued and not taken:
            return
        for address in self.addresses:
            ids = [i for a, i in queued if a == address]
            started = [i for a, i in taken if a == address]
            if ids or started:
                self._call(address, "renew", lambda stub, ids=ids, started=started: stub.Renew(
                    pb.RenewRequest(holder=self.holder, ids=ids, started=started),
                    timeout=self.CALL_SECS))

    def _requeue(self, held: Iterable[tuple[str, str, str]]) -> None:
        """Give ``held`` back to their servers (first in their queues again)."""
        from squall.drpc._proto import drpc_pb2 as pb
        by_server: dict[str, list[str]] = {}
        for address, request_id, _ in held:
            by_server.setdefault(address, []).append(request_id)
        for address, ids in by_server.items():
            self._call(address, "requeue", lambda stub, ids=ids: stub.Requeue(
                pb.RequeueRequest(holder=self.holder, ids=ids), timeout=self.CALL_SECS))

    def _call(self, address: str, what: str, call: Any) -> None:
        import grpc
        try:
            call(_stub(address, self.conf))
        except grpc.RpcError as exc:
            self._failed(address, what, exc)

    def _failed(self, address: str, what: str, exc: Any) -> None:
        n = self._failures[address] = self._failures.get(address, 0) + 1
        if n == 1 or n % 60 == 0:
            log.warning("DRPC server %s: cannot %s %r requests (%d times; a request it holds "
                        "goes back to its queue when its lease ends): %s", address, what,
                        self.function, n, exc.details() if hasattr(exc, "details") else exc)
