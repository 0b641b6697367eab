"""Clients of the DRPC servers listed in ``drpc.servers`` (``host`` entries get
``drpc.port``; ``host:port`` entries keep theirs).

- :class:`DRPCClient`: ``execute(function, args) -> str``, for callers. It tries the servers in
  order until one answers (one that is down, or busy with ``drpc.worker.threads`` callers,
  passes it on to the next); a request that gets no result within
  ``drpc.request.timeout.secs`` (the server's) raises :class:`~squall.errors.DRPCError` with
  the server's reason.
- :class:`Invocations`: the topology side. A thread of its own long-polls every server for
  requests of one function and queues them; :meth:`Invocations.take` hands one over without
  blocking (from the worker's loop thread). Results go back with :func:`respond`, which does not
  block either (an asynchronous gRPC call on a channel shared per server and process).
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Mapping
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
            channel = _CHANNELS[(address, creds)] = client_channel(dict(creds), address)
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
        for address in self.addresses:
            try:
                reply = _stub(address, self.conf).Execute(pb.ExecuteRequest(function=function, args=args),
                                               timeout=self.timeout + 10)
                return str(reply.result)
            except grpc.RpcError as exc:
                code = exc.code()  # type: ignore[attr-defined]
                if code == grpc.StatusCode.UNAVAILABLE:
                    tried.append(address)
                    continue
                details = exc.details() or str(code)  # type: ignore[attr-defined]
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
    """Send a result to the server the request came from, without waiting for it."""
    from squall.drpc._proto import drpc_pb2 as pb
    future = _stub(address).Result.future(pb.ResultRequest(id=request_id, result=result),
                                          timeout=30)
    future.add_done_callback(_log_failure)


def fail_request(address: str, request_id: str) -> None:
    """Tell the server the request came from that the topology failed it (its caller gets a
    DRPCError at once), without waiting for it."""
    from squall.drpc._proto import drpc_pb2 as pb
    future = _stub(address).Fail.future(pb.FailRequest(id=request_id), timeout=30)
    future.add_done_callback(_log_failure)


def _log_failure(future: Any) -> None:
    exc = future.exception()
    if exc is not None:
        log.warning("a DRPC result or failure could not be returned: %s", exc.details() if hasattr(
            exc, "details") else exc)


class Invocations:
    """Requests of ``function`` fetched from every DRPC server by a thread of its own."""

    POLL_SECS = 1.0

    def __init__(self, conf: Mapping[str, Any], function: str) -> None:
        self.addresses = server_addresses(conf)
        if not self.addresses:
            raise DRPCError(f"the DRPC stream {function!r} needs DRPC servers: set "
                            "drpc.servers")
        self.function = function
        # a component's conf has no credentials: the worker's (see security.credentials)
        from squall.security.credentials import for_runtime
        self.conf = for_runtime(conf)
        self._queue: deque[tuple[str, str, str]] = deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"squall-drpc-fetch-{function}")
        self._thread.start()

    def take(self) -> tuple[str, str, str] | None:
        """The oldest fetched request ``(server address, request id, args)``, or ``None``."""
        try:
            return self._queue.popleft()
        except IndexError:
            return None

    def _run(self) -> None:
        import grpc

        from squall.drpc._proto import drpc_pb2 as pb
        failures: dict[str, int] = {}
        wait = self.POLL_SECS / max(1, len(self.addresses))
        while not self._stop.is_set():
            for address in self.addresses:
                if self._stop.is_set():
                    return
                try:
                    got = _stub(address, self.conf).Fetch(pb.FetchRequest(
                        function=self.function, max=64, wait_secs=wait), timeout=wait + 10)
                except grpc.RpcError as exc:
                    n = failures[address] = failures.get(address, 0) + 1
                    if n == 1 or n % 60 == 0:
                        log.warning("DRPC server %s: cannot fetch %r requests (%d times): %s",
                                    address, self.function, n,
                                    exc.details())  # type: ignore[attr-defined]
                    self._stop.wait(1.0)
                    continue
                failures.pop(address, None)
                for r in got.requests:
                    self._queue.append((address, r.id, r.args))

    def close(self) -> None:
        self._stop.set()
