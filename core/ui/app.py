"""The UI's web application (Starlette): the pages, Storm's UI REST API, ``/metrics``.

Routes (``:id`` is a topology id or name; ``:c`` a component id, percent-encoded as its
``encodedId``;
``window`` is ``600``, ``10800``, ``86400`` or ``:all-time``, the default):

===========================================================  =====================================
``GET /``, ``/topology/:id``, ``/topology/:id/component/:c``  the page (one HTML shell, app.js)
``GET /static/...``                                           the page's scripts, styles, libraries
``GET /api/v1/cluster/summary``                               :func:`.views.cluster_summary`
``GET /api/v1/supervisor/summary``, ``nimbus/summary``,
``topology/summary``                                          the matching ``views`` function
``GET /api/v1/topology/:id?window=``                          :func:`.views.topology_page`
``GET /api/v1/topology/:id/component/:c?window=``             :func:`.views.component_page`
``GET /api/v1/topology/:id/visualization?window=``            :func:`.views.visualization`
``GET /api/v1/topology/:id/history``                          the charts' series (squall's own)
``GET /api/v1/drpc/summary``                                  DRPC functions served (squall's)
``POST /api/v1/topology/:id/activate``, ``deactivate``        the action
``POST /api/v1/topology/:id/rebalance/:wait``                 body ``{"rebalanceOptions":
                                                              {"numWorkers": N, "executors":
                                                              {"comp": N}}}`` (optional; N
                                                              whole, 1 to 2**31-1)
``POST /api/v1/topology/:id/kill/:wait``                      the action (``:wait`` 0 to
                                                              ``MAX_WAIT_SECS``)
``POST /api/v1/topology/:id/debug/enable|disable/:pct``,
``.../component/:c/debug/enable|disable/:pct``                Storm's event logger (events logs)
``POST /api/v1/topology/:id/logconfig``                       body ``{"namedLoggerLevels":
                                                              {"logger": {"target_level":
                                                              "DEBUG", "timeout": 60}}}``
``GET /metrics``                                              :func:`.prometheus.render`
===========================================================  =====================================

Actions answer Storm's ``{"topologyOperation", "topologyId", "status": "success"}`` (a
rebalance adds ``notes``: what it will not get, and why, as ``squall rebalance`` prints them);
errors are ``{"error": "one line"}`` with 400 (bad request or refused by nimbus), 401
(authentication on and no known bearer token), 403 (a POST from another origin), 404 (no such
topology, path, component or static file), 405 (a method the path does not take), 503 (no
nimbus answers). Nimbus calls run in Starlette's thread pool. A POST acts
only once its whole body has arrived; a client that goes away is one log line.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from squall.daemon.topology_requests import MAX_WAIT_SECS
from squall.daemon.nimbus_client import MAX_REBALANCE_COUNT
from squall.errors import SquallError
from squall.ui import prometheus, views
from squall.ui.access import Access, Forbidden, Unauthorized, User
from squall.ui.cluster_view import ClusterView

__all__ = ["STATIC", "make_app"]

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "static"
_ACTIONS = ("activate", "deactivate", "rebalance", "kill")
#: HTTP status of squall's exceptions by class name (nearest in the MRO wins)
_STATUS = {"AuthenticationError": 401, "AuthorizationError": 403, "NotAliveError": 404,
           "BeingKilledError": 400, "NimbusUnavailableError": 503}
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "DENY"}
#: the page runs only its own scripts and talks only to this UI
_PAGE_HEADERS = {**_HEADERS, "Content-Security-Policy": (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")}


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _status_of(exc: SquallError) -> int:
    for cls in type(exc).__mro__:
        if cls.__name__ in _STATUS:
            return _STATUS[cls.__name__]
    return 400


def _error(status: int, message: str) -> JSONResponse:
    headers = dict(_HEADERS)
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="squall"'
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _window(request: Request) -> str:
    window = request.query_params.get("window") or ":all-time"
    if window not in views.WINDOWS:
        raise _HttpError(400, f"window={window!r}: expected one of {', '.join(views.WINDOWS)}")
    return window


def _wait(raw: str | None) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        wait = float(raw)
    except ValueError:
        raise _HttpError(400, f"wait time {raw!r} is not a number") from None
    if not math.isfinite(wait):      # NaN, or a transition that would never end
        raise _HttpError(400, f"wait time {raw!r} is not a finite number of seconds")
    if wait < 0:
        raise _HttpError(400, f"wait time {raw!r} is negative")
    if wait > MAX_WAIT_SECS:
        raise _HttpError(400, f"wait time {raw!r} is more than {MAX_WAIT_SECS} seconds (a day)")
    return wait


def _count(value: Any, what: str) -> int:
    """A rebalance count: a JSON integer (or a string of digits, as a form sends it) from 1
    to ``MAX_REBALANCE_COUNT``; anything else (1.7, true, -2) is a 400 naming ``what``."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) \
            or not 1 <= value <= MAX_REBALANCE_COUNT:
        raise _HttpError(400, f"{what}={json.dumps(value)}: expected a whole number from 1 to "
                              f"{MAX_REBALANCE_COUNT}")
    return value


def _rebalance_options(body: bytes) -> tuple[int | None, dict[str, int]]:
    """``(numWorkers, executors)`` from a rebalance body (empty: neither)."""
    if not body.strip():
        return None, {}
    try:
        doc = json.loads(body)
    except ValueError:
        raise _HttpError(400, "the rebalance body is not JSON") from None
    opts = doc.get("rebalanceOptions", {}) if isinstance(doc, dict) else None
    if not isinstance(opts, dict):
        raise _HttpError(400, 'expected {"rebalanceOptions": {"numWorkers": N, '
                              '"executors": {"component": N}}}')
    raw_workers = opts.get("numWorkers")
    workers = None if raw_workers is None or raw_workers == "" \
        else _count(raw_workers, "numWorkers")
    raw_executors = opts.get("executors") or {}
    if not isinstance(raw_executors, dict):
        raise _HttpError(400, 'executors must be an object: {"component": N}')
    executors = {str(c): _count(n, f"executors of {str(c)!r}")
                 for c, n in raw_executors.items()}
    return workers, executors


def _number(raw: str, what: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise _HttpError(400, f"the {what} {raw!r} is not a number") from None


def _log_levels(body: bytes) -> dict[float, dict[str, str]]:
    """Storm's ``{"namedLoggerLevels": {"logger": {"target_level": "DEBUG", "timeout": 60}}}``
    as ``{timeout: {logger: level}}`` (``ROOT`` names the root logger; a missing timeout is
    0, no revert; ``target_level`` ``RESET`` undoes an earlier level)."""
    try:
        doc = json.loads(body or b"{}")
    except ValueError:
        raise _HttpError(400, "the logconfig body is not JSON") from None
    named = doc.get("namedLoggerLevels") if isinstance(doc, dict) else None
    if not isinstance(named, dict) or not named:
        raise _HttpError(400, 'expected {"namedLoggerLevels": {"logger": {"target_level": '
                              '"DEBUG", "timeout": 60}}}')
    out: dict[float, dict[str, str]] = {}
    for logger, spec in named.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("target_level"), str):
            raise _HttpError(400, f"logger {logger!r}: expected {{\"target_level\": LEVEL, "
                                  f"\"timeout\": SECONDS}}")
        timeout = spec.get("timeout") or 0
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not math.isfinite(timeout) or timeout < 0:
            raise _HttpError(400, f"logger {logger!r}: timeout must be a finite number "
                                  f"of seconds, 0 or more")
        out.setdefault(float(timeout), {})[str(logger)] = spec["target_level"].upper()
    return out


def _loopback(host: str | None) -> bool:
    """Whether ``host`` (an address or a name) is this machine's loopback."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _foreign_name(request: Request) -> bool:
    """Whether a UI listening on loopback was reached by a name that is not a loopback one:
    a page of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding), which
    the browser then treats as that site's own, Origin and Host alike."""
    server = request.scope.get("server")
    if not server or not _loopback(str(server[0])):
        return False
    return not _loopback(urlsplit(f"//{request.headers.get('host') or ''}").hostname)


def _same_origin(request: Request) -> bool:
    """True unless the request names an ``Origin`` other than this UI's own (scheme, host and
    port as the browser reached it)."""
    origin = request.headers.get("origin")
    if origin is None:
        return True            # not sent by a browser page
    parts = urlsplit(origin)
    return (parts.scheme == request.url.scheme
            and parts.netloc.lower() == (request.headers.get("host") or "").lower())


Handler = Callable[[Request, User], Awaitable[Response]]


def make_app(access: Access, view: ClusterView) -> Starlette:
    """The Starlette application over ``view``, guarded by ``access``."""

    def guarded(handler: Handler, post: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                if _foreign_name(request):
                    raise Forbidden(f"this UI listens on loopback and answers only to loopback "
                                    f"names, not {request.headers.get('host')!r}")
                if post and not _same_origin(request):
                    raise Forbidden(f"a POST from {request.headers.get('origin')!r} is not "
                                    f"this UI's own")
                user = access.user(request.headers.get("authorization"))
                return await handler(request, user)
            except ClientDisconnect:
                log.info("squall ui: %s %s: the client went away before its request arrived; "
                         "nothing done", request.method, request.url.path)
                return Response(status_code=400)
            except Unauthorized as exc:
                return _error(401, str(exc))
            except Forbidden as exc:
                return _error(403, str(exc))
            except _HttpError as exc:
                return _error(exc.status, str(exc))
            except SquallError as exc:
                return _error(_status_of(exc), str(exc))
            except Exception as exc:          # a bug: one line with its class, keep serving
                log.error("squall ui: %s %s failed: %s: %s", request.method, request.url.path,
                          type(exc).__name__, exc)
                log.debug("squall ui: the failure's traceback", exc_info=True)
                return _error(500, f"internal error: {type(exc).__name__}")
        return endpoint

    def reply(value: Any) -> JSONResponse:
        return JSONResponse(value, headers=_HEADERS)

    async def cluster_summary(request: Request, user: User) -> Response:
        info, visible, _ = await run_in_threadpool(view.cluster, user)
        return reply(views.cluster_summary(info, visible))

    async def drpc_summary(request: Request, user: User) -> Response:
        functions = await run_in_threadpool(view.drpc, user)
        return reply({"functions": [views.drpc_function(f) for f in functions]})

    async def supervisor_summary(request: Request, user: User) -> Response:
        info, _, _ = await run_in_threadpool(view.cluster, user)
        return reply(views.supervisor_summary(info))

    async def nimbus_summary(request: Request, user: User) -> Response:
        info, _, _ = await run_in_threadpool(view.cluster, user)
        return reply(views.nimbus_summary(info))

    async def topology_summary(request: Request, user: User) -> Response:
        _, visible, owners = await run_in_threadpool(view.cluster, user)
        return reply(views.topology_summary(visible, owners))

    def log_query(user: User, info: Any, now: float) -> str:
        return access.log_link_query(user, str(info.get("id", "")), now)

    async def topology(request: Request, user: User) -> Response:
        window = _window(request)
        info = await run_in_threadpool(view.topology, user, request.path_params["id"])
        now = time.time()
        return reply(views.topology_page(info, window, now,
                                         log_query=log_query(user, info, now)))

    async def component(request: Request, user: User) -> Response:
        window = _window(request)
        info = await run_in_threadpool(view.topology, user, request.path_params["id"])
        comp = request.path_params["component"]
        now = time.time()
        page = views.component_page(info, comp, window, now,
                                    log_query=log_query(user, info, now))
        if page is None:
            raise _HttpError(404, f"topology {info.get('name')!r} has no component {comp!r}")
        return reply(page)

    async def visualization(request: Request, user: User) -> Response:
        window = _window(request)
        info = await run_in_threadpool(view.topology, user, request.path_params["id"])
        return reply(views.visualization(info, window))

    async def history(request: Request, user: User) -> Response:
        series = await run_in_threadpool(view.history, user, request.path_params["id"])
        return reply(series)

    async def action(request: Request, user: User) -> Response:
        body = await request.body()          # all of it, or ClientDisconnect: nothing done
        name = request.path_params["action"]
        if name not in _ACTIONS:
            raise _HttpError(404, f"no action {name!r}; actions: {', '.join(_ACTIONS)}")
        wait = _wait(request.path_params.get("wait"))
        if name in ("activate", "deactivate") and "wait" in request.path_params:
            raise _HttpError(404, f"{name} takes no wait time")
        answer: dict[str, Any] = {}
        if name == "rebalance":
            workers, executors = _rebalance_options(body)
            tid, notes = await run_in_threadpool(view.rebalance, user,
                                                 request.path_params["id"], wait, workers,
                                                 executors)
            answer["notes"] = notes
        else:
            tid = await run_in_threadpool(view.act, user, request.path_params["id"], name, wait)
        log.info("squall ui: %s %s by %s", name, tid, user.name or "anonymous")
        return reply({"topologyOperation": name, "topologyId": tid, "status": "success",
                      **answer})

    async def debug(request: Request, user: User) -> Response:
        await request.body()                 # all of it, or ClientDisconnect: nothing done
        enable = {"enable": True, "disable": False}.get(request.path_params["action"])
        if enable is None:
            raise _HttpError(404, "debug takes enable or disable")
        pct = _number(request.path_params.get("spct", "100"), "sampling percentage")
        if enable and not 0 < pct <= 100:
            raise _HttpError(400, f"the sampling percentage must be in (0, 100], got {pct:g}")
        # disabling samples nothing, whatever percentage a client sends with it (0, say)
        component = request.path_params.get("component")
        tid = await run_in_threadpool(view.debug, user, request.path_params["id"], component,
                                      enable, pct)
        log.info("squall ui: debug %s %s%s by %s", "on" if enable else "off", tid,
                 f" {component}" if component else "", user.name or "anonymous")
        return reply({"topologyOperation": "debug", "topologyId": tid, "status": "success",
                      "debug": enable, "samplingPct": pct, "component": component})

    async def logconfig(request: Request, user: User) -> Response:
        body = await request.body()
        by_timeout = _log_levels(body)
        tid = request.path_params["id"]
        for timeout, levels in sorted(by_timeout.items()):
            tid = await run_in_threadpool(view.set_log_levels, user, request.path_params["id"],
                                          levels, timeout)
        log.info("squall ui: log levels of %s set by %s", tid, user.name or "anonymous")
        return reply({"topologyOperation": "logconfig", "topologyId": tid,
                      "status": "success"})

    async def metrics(request: Request, user: User) -> Response:
        cluster, infos = view.latest(user)
        up, sampled_at = view.freshness()
        return PlainTextResponse(prometheus.render(cluster, infos, nimbus_up=up,
                                                   sampled_at=sampled_at),
                                 media_type=prometheus.CONTENT_TYPE, headers=_HEADERS)

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=_PAGE_HEADERS)

    async def not_found(request: Request) -> Response:
        return _error(404, f"no {request.method} {request.url.path}")

    async def http_error(request: Request, exc: Exception) -> Response:
        """What Starlette's router and static files refuse (a method a route does not take,
        a missing static file) in the API's own form."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        allowed = (getattr(exc, "headers", None) or {}).get("Allow") or ""
        allow = ", ".join(sorted(m.strip() for m in allowed.split(",") if m.strip()))
        if status == 405:
            message = f"{request.method} is not allowed on {request.url.path}" + (
                f"; allowed: {allow}" if allow else "")
        elif status == 404:
            message = f"no {request.method} {request.url.path}"
        else:
            message = str(getattr(exc, "detail", "") or status)
        response = _error(status, message)
        if allow:
            response.headers["Allow"] = allow
        return response

    api = "/api/v1"
    routes = [
        Route("/", page),
        Route("/topology/{id}", page),
        # a component id may hold "/": {component:path} takes the rest of the (decoded)
        # path; a POST .../component/C/debug/ACTION/PCT ends in two plain segments, so the
        # debug route's greedy C is the whole id, and a GET never matches that POST route
        Route("/topology/{id}/component/{component:path}", page),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route(f"{api}/cluster/summary", guarded(cluster_summary)),
        Route(f"{api}/supervisor/summary", guarded(supervisor_summary)),
        Route(f"{api}/drpc/summary", guarded(drpc_summary)),
        Route(f"{api}/nimbus/summary", guarded(nimbus_summary)),
        Route(f"{api}/topology/summary", guarded(topology_summary)),
        Route(f"{api}/topology/{{id}}", guarded(topology)),
        Route(f"{api}/topology/{{id}}/visualization", guarded(visualization)),
        Route(f"{api}/topology/{{id}}/history", guarded(history)),
        Route(f"{api}/topology/{{id}}/logconfig", guarded(logconfig, post=True),
              methods=["POST"]),
        Route(f"{api}/topology/{{id}}/debug/{{action}}/{{spct}}", guarded(debug, post=True),
              methods=["POST"]),
        Route(f"{api}/topology/{{id}}/component/{{component:path}}/debug/{{action}}/{{spct}}",
              guarded(debug, post=True), methods=["POST"]),
        Route(f"{api}/topology/{{id}}/component/{{component:path}}", guarded(component)),
        Route(f"{api}/topology/{{id}}/{{action}}", guarded(action, post=True),
              methods=["POST"]),
        Route(f"{api}/topology/{{id}}/{{action}}/{{wait}}", guarded(action, post=True),
              methods=["POST"]),
        Route("/metrics", guarded(metrics)),
        # GET and HEAD of any other path; another method is a 405 (http_error)
        Route("/{path:path}", not_found, methods=["GET", "HEAD"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error})

