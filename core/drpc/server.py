"""The DRPC server (``squall drpc``): gRPC on ``drpc.port`` (3772) for callers and topologies,
HTTP on ``drpc.http.port`` (3774) for callers (``GET /drpc/<function>/<args>``).

Both fronts (:mod:`.fronts`) turn what arrives into a :class:`Call` plus the :class:`Caller`
(transport, peer address, metadata: gRPC invocation metadata or HTTP headers) and hand it to
:meth:`DRPCServer.handle`, the one place where requests are checked and served; a caller's
authentication belongs there. A bad call raises :class:`~squall.errors.DRPCError` (the fronts
answer it as one error line) and the server keeps serving. ``functions()`` lists the functions
callers and topologies have named (also ``GET /drpc`` and the gRPC ``Functions`` call).
"""
from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from squall.drpc.requests import RequestBook
from squall.errors import DRPCError, SquallError

log = logging.getLogger(__name__)

#: longest wait a topology's fetch may ask for
MAX_FETCH_WAIT = 5.0
MAX_FUNCTION_CHARS = 256


@dataclass(frozen=True)
class Caller:
    """Who sent a call: ``transport`` ("grpc" or "http"), ``peer`` and its ``metadata``
    (gRPC invocation metadata or HTTP headers, names lower-cased)."""
    transport: str
    peer: str
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """One request to the server: ``op`` is execute, fetch, result, fail or functions."""
    op: str
    function: str = ""
    args: str = ""
    request_id: str = ""
    result: str = ""
    max_requests: int = 1
    wait: float = 0.0


class DRPCServer:
    """A DRPC server; ``start()`` binds and serves, ``stop()`` ends it (the Daemon protocol of
    ``squall.cli.cluster``). ``port`` / ``http_port`` are the bound ports (0 in the conf: a
    free one)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        self.book = RequestBook(float(self.conf.get("drpc.request.timeout.secs") or 600))
        self.host = str(self.conf.get("drpc.host") or "0.0.0.0")
        self.port = int(self.conf.get("drpc.port") or 0)
        self.http_port = int(self.conf.get("drpc.http.port") or 0)
        self._grpc: Any = None
        self._http: Any = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    # -- the one place requests are served ---------------------------------------------------
    def handle(self, call: Call, caller: Caller) -> Any:
        """Serve ``call`` from ``caller``: the result of execute (str), fetch (a list of
        ``(id, args)``), result / fail (bool: the request was still waiting), functions
        (a list of dicts). Raises DRPCError for a bad call or a request that fails."""
        if call.op in ("execute", "fetch"):
            _check_function(call.function)
        if call.op == "execute":
            if not isinstance(call.args, str):
                raise DRPCError("DRPC args must be a string")
            return self.book.execute(call.function, call.args)
        if call.op == "fetch":
            wait = min(max(0.0, float(call.wait)), MAX_FETCH_WAIT)
            return self.book.fetch(call.function, max(1, int(call.max_requests)), wait)
        if call.op == "result":
            return self.book.result(call.request_id, call.result)
        if call.op == "fail":
            return self.book.fail(call.request_id, "the topology failed the request")
        if call.op == "functions":
            return self.functions()
        raise DRPCError(f"unknown DRPC call {call.op!r}")

    def functions(self) -> list[dict[str, object]]:
        """The functions served or asked for (see :meth:`RequestBook.functions`)."""
        return self.book.functions()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> DRPCServer:
        from concurrent import futures

        import grpc

        from squall.drpc._proto import drpc_pb2_grpc
        from squall.drpc.fronts import GrpcFront, http_server
        threads = int(self.conf.get("drpc.worker.threads") or 64)
        self._grpc = grpc.server(futures.ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="squall-drpc-rpc"),
            options=[("grpc.so_reuseport", 0)])
        drpc_pb2_grpc.add_DRPCServicer_to_server(GrpcFront(self), self._grpc)
        try:
            self.port = self._grpc.add_insecure_port(f"{self.host}:{self.port}")
        except RuntimeError as exc:
            raise SquallError(f"DRPC cannot listen on {self.host}:{self.port}: {exc}") from exc
        if not self.port:
            raise SquallError(f"DRPC cannot listen on {self.host}:{self.port} (port in use?)")
        try:
            self._http = http_server(self, self.host, self.http_port)
        except OSError as exc:
            self._grpc.stop(0)
            raise SquallError(f"DRPC cannot listen for HTTP on {self.host}:{self.http_port}: "
                              f"{exc}") from exc
        self.http_port = int(self._http.server_address[1])
        self._grpc.start()
        t = threading.Thread(target=self._http.serve_forever, name="squall-drpc-http",
                             daemon=True)
        t.start()
        self._threads.append(t)
        log.info("DRPC server on %s: gRPC port %d, HTTP port %d", self._advertised(),
                 self.port, self.http_port)
        return self

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


def _check_function(function: Any) -> None:
    if not isinstance(function, str) or not function or len(function) > MAX_FUNCTION_CHARS \
            or "/" in function:
        raise DRPCError(f"bad DRPC function name {function!r}: a non-empty name without '/' "
                        f"of at most {MAX_FUNCTION_CHARS} characters")
