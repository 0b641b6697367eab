"""The DRPC server (``squall drpc``): gRPC on ``drpc.port`` (3772) for callers and topologies,
HTTP on ``drpc.http.port`` (3774) for callers (``GET /drpc/<function>/<args>``).

Both fronts (:mod:`.fronts`) turn what arrives into a :class:`Call` plus the :class:`Caller`
(transport, peer address, metadata: gRPC invocation metadata or HTTP headers) and hand it to
:meth:`DRPCServer.handle`, the one place where requests are checked and served; a caller's
authentication is checked there. A call not answered raises a
:class:`~squall.errors.DRPCError` of :mod:`.failures` saying why (a bad call, busy, timed out,
failed by its topology, shutting down; the fronts answer each with its status and one error
line) and the server keeps serving. ``functions()`` lists the
functions with requests waiting or in flight and those topologies fetched lately (also
``GET /drpc`` and the gRPC ``Functions`` call); nothing of a request stays once it is answered,
failed, timed out or given up.

Requests a topology fetched are held under a lease (``drpc.fetch.lease.secs``, 10 s) that its
workers renew while they hold them; they give back (``requeue``) those they will not start (the
topology was deactivated or killed). A lease that runs out (the worker died) queues a request
that was not started again and fails one that was (see :mod:`.requests`). A call's messages
(args, results) may be up to ``drpc.max.message.bytes`` (64 MiB) each; a result over it
fails its request at once (the worker's :func:`~squall.drpc.client.respond` sees the refusal
and says so with ``fail``).

Security (API.md section 14) follows nimbus's settings: with ``nimbus.authentication: token``
every call needs a token of ``nimbus.auth.tokens`` (gRPC: the ``squall-auth-token`` metadata
:func:`squall.security.grpc_auth.client_channel` sends; HTTP: ``Authorization: Bearer
<token>``), with ``mtls`` a client certificate (gRPC only: the HTTP front then refuses every
call). The gRPC port is TLS when ``squall.tls.cert`` / ``.key`` are set. Any authenticated user
may ``execute`` and list functions; serving requests (``fetch``, ``result``, ``fail``,
``renew``, ``requeue``: what a
topology's workers do, with their supervisor's token) is for ``nimbus.admins``. A refused call
is one clear error (401/403 over HTTP, UNAUTHENTICATED/PERMISSION_DENIED over gRPC) and one
log line per peer and reason.

Threads: a caller's ``execute`` waits on a thread of its front until its result, its
timeout (the shorter of ``drpc.request.timeout.secs`` and the gRPC caller's deadline), or the
caller giving up (a gRPC call cancelled, an HTTP connection closed: the request is dropped and
the thread freed). At most ``drpc.worker.threads`` callers (gRPC and HTTP together) wait at
once; one more is refused at once as busy (RESOURCE_EXHAUSTED over gRPC, 503 over HTTP) rather
than queued. The gRPC pool has ``drpc.invocations.threads`` threads more than that, so the topologies' calls
(quick, or bounded by ``MAX_FETCH_WAIT``)
always find one: with callers holding every thread of a shared pool, no request would be
fetched or answered, and every caller would wait out its timeout. A thread of its own ends
leases that ran out (:meth:`RequestBook.expire`), every second at most.
"""
from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from squall.daemon.addresses import listen_error
from squall.drpc.failures import BadCall, Busy
from squall.drpc.names import RULE, function_problem, shown
from squall.drpc.requests import DEFAULT_LEASE, RequestBook
from squall.errors import AuthenticationError, AuthorizationError, ConfigError, SquallError
from squall.security import user_for_token
from squall.security.settings import admins, authentication_mode

log = logging.getLogger(__name__)

#: longest wait a topology's fetch may ask for
MAX_FETCH_WAIT = 5.0
#: calls a topology makes to serve requests (admins only when authentication is on)
SERVING_OPS = ("fetch", "result", "fail", "renew", "requeue")
#: ``drpc.max.message.bytes`` when unset: the largest args or result a call carries
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20
#: the longest reason a topology's ``fail`` passes on to the caller
MAX_REASON_CHARS = 1000
#: why a request failed when its topology does not say
TOPOLOGY_FAILED = "the topology failed the request"
#: how the error of a caller over drpc.worker.threads begins
BUSY = "the DRPC server is busy"


@dataclass(frozen=True)
class Caller:
    """Who sent a call: ``transport`` ("grpc" or "http"), ``peer`` and its ``metadata``
    (gRPC invocation metadata or HTTP headers, names lower-cased)."""
    transport: str
    peer: str
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """One request to the server: ``op`` is execute, fetch, result, fail, renew, requeue or
    functions.

    ``timeout``: what is left of the caller's own deadline (execute; ``None``: none).
    ``on_end``: registers a callback run when the caller's call ends (execute over gRPC:
    ``context.add_callback``), so a caller that gives up frees its request at once.
    ``holder``: the topology task that fetches, renews or requeues; ``ids`` / ``started``:
    the requests it renews or gives back (``started``: those it runs in a batch).
    ``reason``: why a topology fails a request (fail)."""
    op: str
    function: str = ""
    args: str = ""
    request_id: str = ""
    result: str = ""
    max_requests: int = 1
    wait: float = 0.0
    reason: str = ""
    holder: str = ""
    ids: tuple[str, ...] = ()
    started: tuple[str, ...] = ()
    timeout: float | None = None
    on_end: Callable[[Callable[[], None]], Any] | None = field(default=None, compare=False)


class DRPCServer:
    """A DRPC server; ``start()`` binds and serves, ``stop()`` ends it (the Daemon protocol of
    ``squall.cli.cluster``). ``port`` / ``http_port`` are the bound ports (0 in the conf: a
    free one)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        #: drpc.fetch.lease.secs: how long a topology holds a fetched request unrenewed
        self.lease = _positive(self.conf, "drpc.fetch.lease.secs", DEFAULT_LEASE)
        #: drpc.max.message.bytes: the largest message (args, a result) a call carries
        self.max_message_bytes = int(_positive(self.conf, "drpc.max.message.bytes",
                                               DEFAULT_MAX_MESSAGE_BYTES))
        self.book = RequestBook(float(self.conf.get("drpc.request.timeout.secs") or 600),
                                self.lease)
        self.host = str(self.conf.get("drpc.host") or "127.0.0.1")
        self.port = int(self.conf.get("drpc.port") or 0)
        self.http_port = int(self.conf.get("drpc.http.port") or 0)
        self.caller_threads = max(1, int(self.conf.get("drpc.worker.threads") or 64))
        self.invocation_threads = max(1, int(self.conf.get("drpc.invocations.threads") or 64))
        self._callers = threading.BoundedSemaphore(self.caller_threads)
        self._grpc: Any = None
        self._http: Any = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.auth_mode = authentication_mode(self.conf)
        self.admins = admins(self.conf)
        self._refusals: set[tuple[str, str]] = set()
        self._refusals_lock = threading.Lock()

    # -- the one place requests are served ---------------------------------------------------
    def handle(self, call: Call, caller: Caller) -> Any:
        """Serve ``call`` from ``caller``: the result of execute (str), fetch (a list of
        ``(id, args)``), result / fail (bool: the request was still waiting), renew /
        requeue (how many of the requests named it still had), functions (a list of
        dicts). Raises a DRPCError of :mod:`.failures` for a bad call, a busy server or a
        request that is not answered, AuthenticationError / AuthorizationError for a caller
        who may not make it."""
        if self.auth_mode != "none":
            self._authorize(call, self._user_of(caller), caller)
        if call.op in ("execute", "fetch"):
            _check_function(call.function)
        if call.op == "execute":
            if not isinstance(call.args, str):
                raise BadCall("DRPC args must be a string")
            if not self._callers.acquire(blocking=False):
                raise Busy(f"{BUSY}: {self.caller_threads} callers are "
                                "waiting for results already (drpc.worker.threads); call again "
                                "later or raise drpc.worker.threads")
            try:
                return self.book.execute(call.function, call.args, call.timeout, call.on_end)
            finally:
                self._callers.release()
        if call.op == "fetch":
            wait = min(max(0.0, float(call.wait)), MAX_FETCH_WAIT)
            return self.book.fetch(call.function, max(1, int(call.max_requests)), wait,
                                   call.holder, self.max_message_bytes)
        if call.op == "result":
            return self.book.result(call.request_id, call.result)
        if call.op == "fail":
            return self.book.fail(call.request_id, _reason(call.reason))
        if call.op == "renew":
            return self.book.renew(call.holder, call.ids, call.started)
        if call.op == "requeue":
            return self.book.requeue(call.holder, call.ids)
        if call.op == "functions":
            return self.functions()
        raise BadCall(f"unknown DRPC call {call.op!r}")

    def _user_of(self, caller: Caller) -> str:
        """The authenticated user of a call (gRPC calls were authenticated by the server's
        interceptor before they got here)."""
        if caller.transport == "grpc":
            from squall.security.grpc_auth import current_user
            user = current_user()
            if user is not None:
                return user
            raise self._refuse(AuthenticationError("DRPC refused the call: not authenticated"),
                               caller)
        if self.auth_mode == "mtls":
            raise self._refuse(AuthenticationError(
                "DRPC refused the call: nimbus.authentication is mtls, which HTTP cannot carry; "
                "call through gRPC (DRPCClient) with a client certificate"), caller)
        header = str(caller.metadata.get("authorization") or "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise self._refuse(AuthenticationError(
                "DRPC refused the call: no token (send Authorization: Bearer <token>)"), caller)
        user = user_for_token(self.conf, token.strip())
        if user is None:
            raise self._refuse(AuthenticationError("DRPC refused the call: unknown token"),
                               caller)
        return user

    def _authorize(self, call: Call, user: str, caller: Caller) -> None:
        if call.op in SERVING_OPS and user not in self.admins:
            raise self._refuse(AuthorizationError(
                f"DRPC refused the call: user {user!r} may not serve DRPC requests ({call.op}; "
                f"only nimbus.admins, as topologies' workers are)"), caller)

    def _refuse(self, exc: SquallError, caller: Caller) -> SquallError:
        """``exc``, logged once per peer and reason."""
        key = (caller.peer.rsplit(":", 1)[0], str(exc))
        with self._refusals_lock:
            first = key not in self._refusals
            if first:
                if len(self._refusals) >= 1024:
                    self._refusals.clear()
                self._refusals.add(key)
        if first:
            log.warning("%s (from %s over %s); further refusals like it from this peer are not "
                        "logged", exc, key[0], caller.transport)
        return exc

    def functions(self) -> list[dict[str, object]]:
        """The functions served or asked for (see :meth:`RequestBook.functions`)."""
        return self.book.functions()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> DRPCServer:
        from concurrent import futures

        import grpc

        from squall.drpc._proto import drpc_pb2_grpc
        from squall.drpc.fronts import GrpcFront, http_server
        from squall.security.grpc_auth import AuthInterceptor, server_credentials
        interceptors = [AuthInterceptor(self.conf, "DRPC")] if self.auth_mode != "none" else []
        # callers hold at most caller_threads of them (handle): the rest serve topologies
        limit = min(self.max_message_bytes, 2**31 - 1)      # gRPC's options are int32
        self._grpc = grpc.server(futures.ThreadPoolExecutor(
            max_workers=self.caller_threads + self.invocation_threads,
            thread_name_prefix="squall-drpc-rpc"),
            interceptors=interceptors, options=[("grpc.so_reuseport", 0),
                                                ("grpc.max_receive_message_length", limit),
                                                ("grpc.max_send_message_length", limit)])
        drpc_pb2_grpc.add_DRPCServicer_to_server(GrpcFront(self), self._grpc)
        credentials = server_credentials(self.conf)
        try:        # HTTP first: a gRPC server stopped before it started keeps its port
            http = http_server(self, self.host, self.http_port)
        except OSError as exc:
            raise SquallError(listen_error("DRPC", self.host, self.http_port,
                                           "drpc.host / drpc.http.port", exc, kind="HTTP")
                              ) from exc
        wanted, failure = self.port, None
        try:
            address = f"{self.host}:{self.port}"
            self.port = (self._grpc.add_secure_port(address, credentials)
                         if credentials is not None else self._grpc.add_insecure_port(address))
        except RuntimeError as exc:
            self.port, failure = 0, exc
        if not self.port:       # said while the HTTP front holds its port (maybe this one)
            said = listen_error("DRPC", self.host, wanted, "drpc.host / drpc.port", failure)
            http.server_close()
            raise SquallError(said) from failure
        self._http = http
        self.http_port = int(http.server_address[1])
        self._grpc.start()
        for target, name in ((self._http.serve_forever, "squall-drpc-http"),
                             (self._expire_leases, "squall-drpc-leases")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        log.info("DRPC server listening on %s (reachable as %s): gRPC port %d, HTTP port %d",
                 self.host, self._advertised(), self.port, self.http_port)
        return self

    def _expire_leases(self) -> None:
        """Thread: end the leases of fetched requests whose topology stopped renewing them."""
        while not self._stop.wait(min(1.0, self.lease / 4)):
            requeued, failed = self.book.expire()
            if requeued or failed:
                log.warning("DRPC: %d fetched requests were not renewed by their topology "
                            "within drpc.fetch.lease.secs (%g s): %d queued again for another "
                            "to take, %d it had started failed", requeued + failed, self.lease,
                            requeued, failed)

    def _advertised(self) -> str:
        if self.host in ("0.0.0.0", "::", ""):
            return str(self.conf.get("storm.local.hostname") or socket.gethostname())
        return self.host

    def wait(self) -> None:
        while not self._stop.wait(1.0):
            pass

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        """Fail waiting callers, stop both fronts. Idempotent."""
        self._stop.set()
        self.book.close()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._grpc is not None:
            self._grpc.stop(grace=1).wait(5)
            self._grpc = None
        for t in self._threads:
            t.join(5)
        self._threads = []


def _positive(conf: Mapping[str, Any], key: str, default: float) -> float:
    value = conf.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{key} must be a number above 0, got {value!r}")
    return value


def _reason(reason: str) -> str:
    """A topology's reason for failing a request, as one line for its caller."""
    line = " ".join(str(reason or "").split())
    if len(line) > MAX_REASON_CHARS:
        line = line[:MAX_REASON_CHARS] + "..."
    return line or TOPOLOGY_FAILED


def _check_function(function: Any) -> None:
    problem = function_problem(function)
    if problem is not None:
        raise BadCall(f"bad DRPC function name {shown(function)}: it {problem}; {RULE}")
