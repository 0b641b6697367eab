"""A fake nimbus for the UI's unit tests, and a real UI server (uvicorn on a free 127.0.0.1 port)
over it (:func:`serve`). The fake answers ``cluster_info`` with the real protobuf messages and
``topology_info`` with dicts shaped as nimbus's (see :func:`topology_info`)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from squall.daemon._proto import nimbus_pb2 as pb
from squall.errors import BeingKilledError, NotAliveError, TopologyError
from squall.ui import UiServer


def windows(emitted: int, executed: int, acked: int, latency: float) -> dict[str, Any]:
    one = {"emitted": emitted, "transferred": emitted, "executed": executed, "acked": acked,
           "failed": 0, "execute_latency_ms": latency, "process_latency_ms": latency * 2,
           "complete_latency_ms": latency * 10, "execute_latency_p50_ms": latency * 0.8,
           "execute_latency_p99_ms": latency * 4, "complete_latency_p50_ms": latency * 9,
           "complete_latency_p99_ms": latency * 30}
    return {w: dict(one) for w in ("600", "10800", "86400", ":all-time")}


def topology_info(name: str, owner: str, *, scale: int = 1, logviewer: int | None = 8000,
                  errors: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """A nimbus topology info: spout ``words`` -> bolt ``count`` (fields grouping), two
    workers on host ``h1``; counts multiplied by ``scale``."""
    tid = f"{name}-1-1700000000"
    comps = {"words": {"kind": "spout", "executors": 1, "tasks": 1,
                       "windows": windows(1000 * scale, 0, 900 * scale, 2.0)},
             "count": {"kind": "bolt", "executors": 2, "tasks": 2,
                       "windows": windows(0, 1000 * scale, 1000 * scale, 0.5)},
             "__acker": {"kind": "acker", "executors": 1, "tasks": 1,
                         "windows": windows(5, 5, 0, 0.0)}}
    executors = [
        {"executor": "1-1", "component": "words", "kind": "spout", "tasks": [1],
         "worker": "sup1:6700", "host": "h1", "uptime_secs": 100,
         "windows": windows(1000 * scale, 0, 900 * scale, 2.0)},
        {"executor": "2-2", "component": "count", "kind": "bolt", "tasks": [2],
         "worker": "sup1:6700", "host": "h1", "uptime_secs": 100,
         "windows": windows(0, 600 * scale, 600 * scale, 0.5)},
        {"executor": [3, 3], "component": "count", "kind": "bolt", "tasks": [3],
         "worker": "sup1:6701", "host": "h1", "uptime_secs": 100,
         "windows": windows(0, 400 * scale, 400 * scale, 0.5)},
    ]
    workers = [{"worker": f"sup1:{p}", "supervisor_id": "sup1", "port": p, "host": "h1",
                "logviewer_port": logviewer, "uptime_secs": 100} for p in (6700, 6701)]
    return {"name": name, "id": tid, "owner": owner, "status": "active", "status_reason": "",
            "uptime_secs": 100, "num_workers": 2, "num_executors": 4, "num_tasks": 4,
            "components": comps, "executors": executors, "workers": workers,
            "errors": errors or {},
            "graph": [{"id": "count", "kind": "bolt", "executors": 2, "tasks": 2,
                       "inputs": [{"component": "words", "stream": "default",
                                   "grouping": "fields", "fields": ["word"]}]},
                      {"id": "words", "kind": "spout", "executors": 1, "tasks": 1,
                       "inputs": []}],
            "conf": {"topology.message.timeout.secs": 30, "nimbus.auth.tokens": "******",
                     "my.password": "hunter2"}}


class FakeNimbus:
    """What :class:`NimbusClient` offers the UI, over in-memory topologies (shared by every
    client built from it); ``calls`` records (token, action, args)."""

    def __init__(self) -> None:
        self.topologies: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.refuse_rebalance = False
        #: names in their kill wait: actions other than kill are refused, as nimbus does
        self.killing: set[str] = set()
        #: no nimbus answers: every read raises NimbusUnavailableError
        self.down = False

    def client(self, conf: Mapping[str, Any]) -> FakeClient:
        return FakeClient(self, conf.get("squall.auth.token"))


class FakeClient:
    def __init__(self, nimbus: FakeNimbus, token: Any) -> None:
        self.nimbus, self.token = nimbus, token

    def _answer(self) -> None:
        if self.nimbus.down:
            from squall.daemon.nimbus_client import NimbusUnavailableError
            raise NimbusUnavailableError("no nimbus leader answered (tried n1:6627)")

    def cluster_info(self) -> pb.ClusterInfo:
        self._answer()
        tops = [pb.TopologySummary(name=i["name"], id=i["id"], status=i["status"],
                                   num_workers=2, num_executors=4, num_tasks=4, uptime_secs=100)
                for i in self.nimbus.topologies.values()]
        sup = pb.SupervisorSummary(id="sup1", hostname="h1", ports=[6700, 6701, 6702],
                                   used_ports=[6700, 6701], uptime_secs=3700)
        return pb.ClusterInfo(topologies=tops, supervisors=[sup],
                              nimbuses=["n1:6627", "n2:6627"], leader="n1:6627")

    def topology_info(self, name: str) -> dict[str, Any]:
        self._answer()
        if name not in self.nimbus.topologies:
            raise NotAliveError(f"no topology named {name!r} is running")
        return json.loads(json.dumps(self.nimbus.topologies[name]))

    def _act(self, action: str, name: str, *args: Any) -> None:
        if name not in self.nimbus.topologies:
            raise NotAliveError(f"no topology named {name!r} is running")
        if name in self.nimbus.killing and action != "kill":
            raise BeingKilledError(f"topology {name!r} is being killed (30 s of its kill wait "
                                   "left); only kill acts on it now")
        self.nimbus.calls.append((self.token, action, name, *args))

    def activate(self, name: str) -> None:
        self._act("activate", name)

    def deactivate(self, name: str) -> None:
        self._act("deactivate", name)

    def kill_topology(self, name: str, wait: float | None = None) -> None:
        self._act("kill", name, wait)

    def rebalance(self, name: str, wait: float | None, workers: int | None,
                  executors: Mapping[str, int] | None) -> None:
        if self.nimbus.refuse_rebalance:
            raise TopologyError("rebalance refused: no such component 'nope'")
        self._act("rebalance", name, wait, workers, dict(executors or {}))

    def debug(self, name: str, component: str | None, enable: bool,
              sampling_pct: float = 100.0) -> None:
        self._act("debug", name, component, enable, sampling_pct)

    def set_log_levels(self, name: str, levels: Mapping[str, str], timeout_secs: float = 0
                       ) -> None:
        self._act("logconfig", name, dict(levels), timeout_secs)

    def close(self) -> None:
        pass


class Http:
    """Requests to one UI server: ``call(path, method, body, headers) -> (status, body)``."""

    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, path: str, method: str = "GET", body: bytes | None = None,
             headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
        if method == "POST" and body is None:
            body = b""
        req = urllib.request.Request(self.base + path, method=method, data=body,
                                     headers=dict(headers or {}))
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, raw, kind = resp.status, resp.read(), resp.headers["Content-Type"]
        except urllib.error.HTTPError as exc:
            status, raw, kind = exc.code, exc.read(), exc.headers["Content-Type"] or ""
        return status, json.loads(raw) if "json" in kind else raw.decode()


def serve(conf: Mapping[str, Any], nimbus: FakeNimbus) -> Iterator[tuple[UiServer, Http]]:
    ui = UiServer({"ui.sample.secs": 0.05, **conf}, host="127.0.0.1", port=0,
                  make_client=nimbus.client)
    port = ui.start()
    try:
        yield ui, Http(f"http://127.0.0.1:{port}")
    finally:
        ui.stop()


TOKENS = {"t-alice": "alice", "t-bob": "bob", "t-root": "root"}
