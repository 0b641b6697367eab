"""The DRPC server's two fronts: a gRPC servicer and an HTTP handler. Each only translates
between its wire format and :meth:`DRPCServer.handle`; errors become gRPC status codes (with
the squall exception's class name in the ``squall-error`` trailing metadata) or HTTP status
codes with one line of text.

HTTP: ``GET /drpc/<function>/<args>`` and ``POST /drpc/<function>`` (args: the body) answer
the result (``application/json``); ``GET /drpc`` lists the functions (JSON). While an HTTP
caller waits, its connection is watched (:mod:`.hangups`): one that closes it (or its sending
side) frees its request and its caller slot at once, as a gRPC caller that gives up does.

Statuses, by the :mod:`.failures` class of the error (never by its words, which quote the
caller's args and the topology's error):

=====================  ========  ===================  =====================================
failure                HTTP      gRPC                 when
=====================  ========  ===================  =====================================
``BadCall``            400       INVALID_ARGUMENT     the caller's input (a bad name, ...)
``RequestFailed``      500       INTERNAL             the topology failed the request
``Busy``               503       RESOURCE_EXHAUSTED   ``drpc.worker.threads`` callers wait
``ShuttingDown``       503       UNAVAILABLE          the server stops
``TimedOut``           504       DEADLINE_EXCEEDED    ``drpc.request.timeout.secs`` passed
any other DRPCError    500       INTERNAL
=====================  ========  ===================  =====================================
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import grpc

from squall.drpc._proto import drpc_pb2 as pb
from squall.drpc._proto import drpc_pb2_grpc as pb_grpc
from squall.drpc.failures import BadCall, Busy, RequestFailed, ShuttingDown, TimedOut
from squall.drpc.hangups import HangupWatch, Watch
from squall.errors import AuthenticationError, AuthorizationError, DRPCError

if TYPE_CHECKING:
    from squall.drpc.server import Caller, DRPCServer

log = logging.getLogger(__name__)
ERROR_KEY = "squall-error"
MAX_BODY = 1 << 20
#: the answer to an HTTP caller that closed its connection, or its sending side, while it
#: waited (a half-closing client still reads it)
HUNG_UP = ("the DRPC caller closed its connection (or its sending side) before its answer, "
           "so its request was dropped: keep the connection open until the answer")


#: each failure's gRPC code and HTTP status (the module's table)
_STATUSES: tuple[tuple[type[DRPCError], grpc.StatusCode, int], ...] = (
    (BadCall, grpc.StatusCode.INVALID_ARGUMENT, 400),
    (RequestFailed, grpc.StatusCode.INTERNAL, 500),
    (Busy, grpc.StatusCode.RESOURCE_EXHAUSTED, 503),
    (ShuttingDown, grpc.StatusCode.UNAVAILABLE, 503),
    (TimedOut, grpc.StatusCode.DEADLINE_EXCEEDED, 504),
)


def _status(exc: DRPCError) -> tuple[grpc.StatusCode, int]:
    for kind, code, http in _STATUSES:
        if isinstance(exc, kind):
            return code, http
    return grpc.StatusCode.INTERNAL, 500


class GrpcFront(pb_grpc.DRPCServicer):
    def __init__(self, server: DRPCServer) -> None:
        self._server = server

    def _handle(self, call: Any, context: grpc.ServicerContext) -> Any:
        from squall.drpc.server import Caller
        caller = Caller("grpc", context.peer(),
                        {k.lower(): v for k, v in context.invocation_metadata()
                         if isinstance(v, str)})
        try:
            return self._server.handle(call, caller)
        except AuthenticationError as exc:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
        except AuthorizationError as exc:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        except DRPCError as exc:
            # the public class a caller catches, not the failure's (a server-side detail)
            context.set_trailing_metadata(((ERROR_KEY, DRPCError.__name__),))
            context.abort(_status(exc)[0], str(exc))
        except Exception as exc:      # report, keep serving
            log.exception("DRPC %s failed", call.op)
            context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")

    def Execute(self, request: pb.ExecuteRequest, context: grpc.ServicerContext
                ) -> pb.ExecuteReply:
        from squall.drpc.server import Call
        # the caller's deadline bounds the wait; a caller that gives up (cancels, or its
        # deadline passes) ends the call, and add_callback's callback frees its request
        return pb.ExecuteReply(result=self._handle(
            Call("execute", function=request.function, args=request.args,
                 timeout=context.time_remaining(), on_end=context.add_callback), context))

    def Fetch(self, request: pb.FetchRequest, context: grpc.ServicerContext) -> pb.Invocations:
        from squall.drpc.server import Call
        got = self._handle(Call("fetch", function=request.function, max_requests=request.max,
                                wait=request.wait_secs, holder=request.holder), context)
        return pb.Invocations(requests=[pb.Invocation(id=i, args=a) for i, a in got],
                              lease_secs=self._server.lease)

    def Result(self, request: pb.ResultRequest, context: grpc.ServicerContext) -> pb.Empty:
        from squall.drpc.server import Call
        self._handle(Call("result", request_id=request.id, result=request.result), context)
        return pb.Empty()

    def Fail(self, request: pb.FailRequest, context: grpc.ServicerContext) -> pb.Empty:
        from squall.drpc.server import Call
        self._handle(Call("fail", request_id=request.id, reason=request.reason), context)
        return pb.Empty()

    def Renew(self, request: pb.RenewRequest, context: grpc.ServicerContext) -> pb.Empty:
        from squall.drpc.server import Call
        self._handle(Call("renew", holder=request.holder, ids=tuple(request.ids),
                          started=tuple(request.started)), context)
        return pb.Empty()

    def Requeue(self, request: pb.RequeueRequest, context: grpc.ServicerContext) -> pb.Empty:
        from squall.drpc.server import Call
        self._handle(Call("requeue", holder=request.holder, ids=tuple(request.ids)), context)
        return pb.Empty()

    def Functions(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.FunctionList:
        from squall.drpc.server import Call
        infos = self._handle(Call("functions"), context)
        return pb.FunctionList(functions=[pb.FunctionInfo(**i) for i in infos])


def http_server(server: DRPCServer, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server (not started) answering DRPC calls for ``server``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("DRPC http %s: " + format, self.client_address[0], *args)

        def _reply(self, status: int, body: str, kind: str = "text/plain") -> None:
            data = body.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", f"{kind}; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError) as exc:
                # the caller left before its answer: nothing to tell it, nothing to report
                self.close_connection = True
                log.debug("DRPC http %s left before its answer: %s", self.client_address[0],
                          exc)

        def _serve(self, function: str | None, args: str | None) -> None:
            from squall.drpc.server import Call, Caller
            caller = Caller("http", self.client_address[0],
                            {k.lower(): v for k, v in self.headers.items()})
            try:
                if function is None:
                    out = json.dumps(server.handle(Call("functions"), caller))
                else:
                    out = self._execute(function, args or "", caller)
            except AuthenticationError as exc:
                self._reply(401, f"{exc}\n")
                return
            except AuthorizationError as exc:
                self._reply(403, f"{exc}\n")
                return
            except DRPCError as exc:
                self._reply(_status(exc)[1], f"{exc}\n")
                return
            except Exception as exc:   # report, keep serving
                log.exception("DRPC http request failed")
                self._reply(500, f"{type(exc).__name__}: {exc}\n")
                return
            self._reply(200, out, "application/json")

        def _execute(self, function: str, args: str, caller: Caller) -> str:
            """The result of ``function(args)``; the caller's connection is watched while it
            waits, and a caller that hangs up frees its request (the book's ``on_end``)."""
            from squall.drpc.server import Call
            watches: list[Watch] = []

            def on_end(callback: Callable[[], None]) -> bool:
                watch = hangups.watch(self.connection, callback)
                if watch is not None:       # None: the server stops (and fails the request)
                    watches.append(watch)
                return True
            try:
                return str(server.handle(Call("execute", function=function, args=args,
                                              on_end=on_end), caller))
            except DRPCError as exc:
                if watches and watches[0].hung_up:
                    self.close_connection = True
                    log.debug("DRPC http %s hung up while waiting for %s", caller.peer,
                              function)
                    raise BadCall(HUNG_UP) from exc
                raise
            finally:
                for watch in watches:
                    hangups.unwatch(watch)

        def _path(self) -> list[str] | None:
            parts = self.path.split("?", 1)[0].split("/")
            if len(parts) < 2 or parts[1] != "drpc":
                self._reply(404, "not found: use /drpc/<function>/<args>\n")
                return None
            return parts[2:]

        def do_GET(self) -> None:
            parts = self._path()
            if parts is None:
                return
            if not parts or parts == [""]:
                self._serve(None, None)
            elif len(parts) == 1:
                self._serve(unquote(parts[0]), "")
            else:
                self._serve(unquote(parts[0]), unquote("/".join(parts[1:])))

        def do_POST(self) -> None:
            parts = self._path()
            if parts is None:
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if len(parts) != 1 or not parts[0] or not 0 <= length <= MAX_BODY:
                self.close_connection = True        # its body, if any, is not read
                self._reply(400, "POST /drpc/<function> with the args as the body (at most "
                                 f"{MAX_BODY} bytes, its Content-Length a number)\n")
                return
            body = self.rfile.read(length).decode("utf-8", "replace")
            self._serve(unquote(parts[0]), body)

    hangups = HangupWatch("squall-drpc-http-hangups")
    return _HTTPServer((host, port), Handler, hangups)


class _HTTPServer(ThreadingHTTPServer):
    """The HTTP front: a thread per connection; ``server_close`` also ends the watch of its
    waiting callers' connections."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 hangups: HangupWatch) -> None:
        # set first: a bind that fails calls server_close from within super().__init__
        self.hangups = hangups
        super().__init__(address, handler)

    def server_close(self) -> None:
        super().server_close()
        self.hangups.close()
