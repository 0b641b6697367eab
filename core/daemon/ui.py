"""``squall ui``: a web page and a JSON API over the nimbus leader's view of the cluster.

Served on ``ui.host``:``ui.port`` (default ``0.0.0.0:8080``) by the standard library's threading
HTTP server; every request asks the nimbus leader (through :class:`NimbusClient`, so a standby
that takes over is found by itself). Nothing is cached and nothing is stored.

JSON (``application/json``):

* ``GET /api/v1/cluster/summary`` - leader, nimbuses, supervisor / slot / topology counts
* ``GET /api/v1/supervisor/summary`` - one entry per supervisor: host, slots, used slots
* ``GET /api/v1/topology/summary`` - one entry per topology: name, id, status, workers, ...
* ``GET /api/v1/topology/NAME`` - the topology info of ``squall``'s nimbus API: per-component
  counters and stats windows, per-executor stats, the newest errors per component
* ``POST /api/v1/topology/NAME/activate``, ``.../deactivate``, ``.../kill?wait=S`` and
  ``.../rebalance?workers=N&executors=comp=N,comp2=M&wait=S``

Errors are JSON too, ``{"error": "one line"}``: 404 for an unknown topology or path, 400 for a
request nimbus refuses (a bad rebalance), 503 when no nimbus answers.

HTML: ``/`` (cluster, supervisors, topologies) and ``/topology/NAME`` (components, executors,
errors, and buttons for the POST actions), refreshed every 5 s.
"""
from __future__ import annotations

import html
import json
import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from squall.errors import ConfigError, NotAliveError, SquallError

__all__ = ["UiServer"]

log = logging.getLogger(__name__)
API = "/api/v1"
_ACTIONS = ("activate", "deactivate", "kill", "rebalance")


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _status_of(exc: SquallError) -> int:
    from squall.daemon.nimbus_client import NimbusUnavailableError
    if isinstance(exc, NimbusUnavailableError):
        return 503
    if isinstance(exc, NotAliveError):
        return 404
    return 400


class UiServer:
    """The UI daemon: ``start()`` binds and serves in a thread, ``stop()`` shuts it down."""

    def __init__(self, conf: Mapping[str, Any], host: str | None = None,
                 port: int | None = None, client: Any = None) -> None:
        self.conf = dict(conf)
        self.host = str(host if host is not None else conf.get("ui.host") or "0.0.0.0")
        self.port = int(port if port is not None else conf.get("ui.port") or 8080)
        if client is None:
            from squall.daemon.nimbus_client import NimbusClient
            client = NimbusClient(self.conf)
        self.client = client
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- daemon lifecycle: start, wait until request_stop, stop ---------------------------------
    def start(self) -> int:
        """Bind and serve; returns the port (useful with ``ui.port: 0``)."""
        ui = self

        class Handler(_Handler):
            server_ui = ui

        try:
            self._server = ThreadingHTTPServer((self.host, self.port), Handler)
        except OSError as exc:
            raise ConfigError(f"squall ui cannot listen on {self.host}:{self.port}: "
                              f"{exc.strerror or exc}") from exc
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="squall-ui")
        self._thread.start()
        log.info("squall ui on http://%s:%d/", self.host, self.port)
        return self.port

    def wait(self) -> None:
        """Block until :meth:`request_stop` or :meth:`stop`."""
        self._stop.wait()

    def request_stop(self) -> None:
        """Make :meth:`wait` return (safe from a signal handler); :meth:`stop` shuts down."""
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    # -- what the pages and the API show ---------------------------------------------------------
    def cluster_summary(self) -> dict[str, Any]:
        info = self.client.cluster_info()
        slots = sum(len(s.ports) for s in info.supervisors)
        used = sum(len(s.used_ports) for s in info.supervisors)
        return {"leader": info.leader, "nimbuses": list(info.nimbuses),
                "supervisors": len(info.supervisors), "slotsTotal": slots, "slotsUsed": used,
                "slotsFree": slots - used, "topologies": len(info.topologies)}

    def supervisor_summary(self) -> list[dict[str, Any]]:
        return [{"id": s.id, "host": s.hostname, "slots": list(s.ports),
                 "usedSlots": list(s.used_ports), "uptimeSecs": s.uptime_secs}
                for s in self.client.cluster_info().supervisors]

    def topology_summary(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "id": t.id, "status": t.status,
                 "statusReason": t.status_reason, "workers": t.num_workers,
                 "executors": t.num_executors, "tasks": t.num_tasks,
                 "uptimeSecs": t.uptime_secs}
                for t in self.client.cluster_info().topologies]

    def topology(self, name: str) -> dict[str, Any]:
        return dict(self.client.topology_info(name))

    def act(self, name: str, action: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
        def number(key: str, kind: Callable[[str], Any]) -> Any:
            raw = (query.get(key) or [""])[0]
            if raw == "":
                return None
            try:
                return kind(raw)
            except ValueError:
                raise _HttpError(400, f"{key}={raw!r} is not a number") from None

        wait = number("wait", float)
        if action == "activate":
            self.client.activate(name)
        elif action == "deactivate":
            self.client.deactivate(name)
        elif action == "kill":
            self.client.kill_topology(name, wait)
        else:
            from squall.daemon.nimbus_client import parse_executors
            items = [i for raw in query.get("executors") or [] for i in raw.split(",") if i]
            try:
                executors = parse_executors(items)
            except ConfigError as exc:
                raise _HttpError(400, str(exc)) from None
            self.client.rebalance(name, wait, number("workers", int), executors)
        return {"topology": name, "action": action, "ok": True}


class _Handler(BaseHTTPRequestHandler):
    server_ui: UiServer
    server_version = "squall-ui"

    def log_message(self, fmt: str, *args: Any) -> None:   # to logging, not stderr
        log.debug("%s " + fmt, self.address_string(), *args)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        is_api = url.path.startswith(API + "/") or url.path == API
        try:
            if is_api:
                self._json(200, self._api(method, parts[2:], parse_qs(url.query)))
            elif method != "GET":
                raise _HttpError(405, f"{method} is not allowed on {url.path}")
            else:
                self._html(200, self._page(parts))
        except _HttpError as exc:
            self._fail(is_api, exc.status, str(exc))
        except SquallError as exc:
            self._fail(is_api, _status_of(exc), str(exc))
        except Exception as exc:    # a bug: say so, keep serving
            log.exception("squall ui: %s %s failed", method, self.path)
            self._fail(is_api, 500, f"internal error: {exc}")

    def _api(self, method: str, parts: list[str], query: dict[str, list[str]]) -> Any:
        ui = self.server_ui
        if method == "GET":
            if parts == ["cluster", "summary"]:
                return ui.cluster_summary()
            if parts == ["supervisor", "summary"]:
                return ui.supervisor_summary()
            if parts == ["topology", "summary"]:
                return ui.topology_summary()
            if len(parts) == 2 and parts[0] == "topology":
                return ui.topology(parts[1])
        elif len(parts) == 3 and parts[0] == "topology" and parts[2] in _ACTIONS:
            return ui.act(parts[1], parts[2], query)
        raise _HttpError(404 if method == "GET" else 405,
                         f"no {method} {API}/{'/'.join(parts)}")

    def _page(self, parts: list[str]) -> str:
        if not parts:
            return _cluster_page(self.server_ui)
        if len(parts) == 2 and parts[0] == "topology":
            return _topology_page(self.server_ui.topology(parts[1]))
        raise _HttpError(404, f"no page /{'/'.join(parts)}")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value, default=str).encode(), "application/json")

    def _html(self, status: int, page: str) -> None:
        self._send(status, page.encode(), "text/html; charset=utf-8")

    def _fail(self, is_api: bool, status: int, message: str) -> None:
        if is_api:
            self._json(status, {"error": message})
        else:
            self._html(status, _layout("squall", f"<p class=err>{html.escape(message)}</p>"))


# -- HTML ------------------------------------------------------------------------------------------
_STYLE = ("body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;"
          "margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}"
          "th{background:#eee}td:first-child,th:first-child{text-align:left}.err{color:#b00}")


def _layout(title: str, body: str, refresh: bool = True) -> str:
    meta = '<meta http-equiv="refresh" content="5">' if refresh else ""
    return (f"<!doctype html><html><head><meta charset=utf-8>{meta}<title>"
            f"{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
            f'<h1><a href="/">squall</a> {html.escape(title)}</h1>{body}</body></html>')


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _e(value: Any) -> str:
    return html.escape(str(value))


def _cluster_page(ui: UiServer) -> str:
    c = ui.cluster_summary()
    parts = [
        "<h2>Cluster</h2>",
        _table(["leader", "nimbuses", "supervisors", "slots", "used", "free", "topologies"],
               [[_e(c["leader"]), _e(", ".join(c["nimbuses"])), c["supervisors"],
                 c["slotsTotal"], c["slotsUsed"], c["slotsFree"], c["topologies"]]]),
        "<h2>Topologies</h2>",
        _table(["name", "id", "status", "workers", "executors", "tasks", "uptime s"],
               [[f'<a href="/topology/{quote(t["name"])}">{_e(t["name"])}</a>', _e(t["id"]),
                 _e(t["status"] + (f" ({t['statusReason']})" if t["statusReason"] else "")),
                 t["workers"], t["executors"], t["tasks"], t["uptimeSecs"]]
                for t in ui.topology_summary()]),
        "<h2>Supervisors</h2>",
        _table(["id", "host", "slots", "used", "uptime s"],
               [[_e(s["id"]), _e(s["host"]), _e(s["slots"]), _e(s["usedSlots"]),
                 s["uptimeSecs"]] for s in ui.supervisor_summary()]),
    ]
    return _layout("cluster", "".join(parts))


_COUNTERS = ("emitted", "transferred", "executed", "acked", "failed")


def _topology_page(info: Mapping[str, Any]) -> str:
    name = str(info.get("name", ""))
    path = f"{API}/topology/{quote(name)}"
    buttons = "".join(
        f"<button onclick=\"fetch('{path}/{a}',{{method:'POST'}}).then(r=>r.json())"
        f".then(j=>{{alert(j.error||'{a}: done');location.reload()}})\">{a}</button> "
        for a in ("activate", "deactivate", "kill"))
    comps = info.get("components") or {}
    rows = []
    for comp, st in sorted(comps.items()):
        rows.append([_e(comp), _e(st.get("kind", "")), st.get("executors", 0),
                     st.get("tasks", 0), *[st.get(k, 0) for k in _COUNTERS]])
    errors = [[_e(comp), _e(e.get("error", e) if isinstance(e, dict) else e)]
              for comp, errs in sorted((info.get("errors") or {}).items())
              for e in (errs or [])]
    executors = [[_e(x.get("executor", "")), _e(x.get("component", "")), _e(x.get("worker", "")),
                  *[x.get(k, 0) for k in _COUNTERS]] for x in info.get("executors") or []]
    body = [
        _table(["id", "status", "workers", "executors", "tasks", "uptime s"],
               [[_e(info.get("id", "")), _e(info.get("status", "")),
                 info.get("num_workers", 0), info.get("num_executors", 0),
                 info.get("num_tasks", 0), info.get("uptime_secs", 0)]]),
        f"<p>{buttons}</p>",
        "<h2>Components</h2>",
        _table(["component", "kind", "executors", "tasks", *_COUNTERS], rows),
        "<h2>Executors</h2>",
        _table(["executor", "component", "worker", *_COUNTERS], executors),
        "<h2>Errors</h2>",
        _table(["component", "error"], errors) if errors else "<p>none</p>",
    ]
    return _layout(f"topology {name}", "".join(body))
