"""squall's metrics in the OpenMetrics text format, and a small HTTP endpoint serving them.

Two producers use it: every worker serves its executors' built-in counters on ``/metrics``
(:func:`worker_families`, refreshed each ``task.heartbeat.frequency.secs``), and the
``prometheus`` metrics consumer serves the newest value of every data point it received
(:mod:`squall.metrics.prometheus`).

>>> fam = Family("squall_emitted", "counter", "tuples emitted")
>>> fam.add({"component": "split"}, 12)
>>> print(render([fam]), end="")
# TYPE squall_emitted counter
# HELP squall_emitted tuples emitted
squall_emitted_total{component="split"} 12
# EOF
"""
from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)
CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
_BAD = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(text: str) -> str:
    """A valid metric name from any text (``__emit-count`` -> ``emit_count``)."""
    name = _BAD.sub("_", text).strip("_")
    name = re.sub(r"_+", "_", name)
    return name if name and not name[0].isdigit() else f"m_{name}"


def _label_value(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


@dataclass
class Family:
    """One metric family: a name, ``counter`` or ``gauge``, help text and its samples."""

    name: str
    kind: str
    help: str
    samples: list[tuple[dict[str, Any], float]] = field(default_factory=list)

    def add(self, labels: Mapping[str, Any], value: float) -> None:
        self.samples.append((dict(labels), value))


def render(families: Iterable[Family]) -> str:
    """The OpenMetrics text of ``families`` (empty ones left out), ending in ``# EOF``."""
    lines = []
    for fam in families:
        if not fam.samples:
            continue
        lines.append(f"# TYPE {fam.name} {fam.kind}")
        lines.append(f"# HELP {fam.name} {fam.help}")
        suffix = "_total" if fam.kind == "counter" else ""
        for labels, value in fam.samples:
            text = ",".join(f'{k}="{_label_value(v)}"' for k, v in sorted(labels.items()))
            lines.append(f"{fam.name}{suffix}{{{text}}} {_number(value)}" if text
                         else f"{fam.name}{suffix} {_number(value)}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


#: executor counters in a worker beat -> (family name, help)
EXECUTOR_COUNTERS = {
    "emitted": ("squall_emitted", "tuples emitted (__emit-count)"),
    "transferred": ("squall_transferred", "tuples sent to tasks (__transfer-count)"),
    "acked": ("squall_acked", "tuples acked (__ack-count)"),
    "failed": ("squall_failed", "tuples failed (__fail-count)"),
    "executed": ("squall_executed", "tuples executed (__execute-count)"),
}
EXECUTOR_GAUGES = {
    "execute_latency_ms": ("squall_execute_latency_ms", "mean execute latency since start, ms"),
    "process_latency_ms": ("squall_process_latency_ms", "mean process latency since start, ms"),
    "complete_latency_ms": ("squall_complete_latency_ms",
                            "mean complete latency of spout tuples since start, ms"),
    "queued": ("squall_queued", "tuples waiting in the executor's queues"),
    "uptime_secs": ("squall_executor_uptime_seconds", "seconds since the executor started"),
}
WORKER_COUNTERS = {
    "loop_passes": ("squall_worker_loop_passes", "passes of the worker's loop"),
    "idle_waits": ("squall_worker_idle_waits", "loop passes that waited idle"),
    "overloaded_secs": ("squall_worker_overloaded_seconds",
                        "seconds the worker held a congested task"),
    "sent_batches": ("squall_worker_sent_batches", "task messages sent to other workers"),
    "sent_bytes": ("squall_worker_sent_bytes", "bytes of task messages sent to other workers"),
    "received_batches": ("squall_worker_received_batches",
                         "task messages received from other workers"),
}


def worker_families(beat: Mapping[str, Any], topology: str, host: str,
                    port: int) -> list[Family]:
    """Families of one worker's beat (``executors`` -> stats, ``worker`` -> counters)."""
    base = {"topology": topology, "host": host, "port": port}
    fams = {key: Family(name, "counter", text) for key, (name, text) in EXECUTOR_COUNTERS.items()}
    gauges = {key: Family(name, "gauge", text) for key, (name, text) in EXECUTOR_GAUGES.items()}
    for executor, st in sorted((beat.get("executors") or {}).items()):
        labels = {**base, "component": st.get("component", "?"), "executor": executor,
                  "kind": st.get("kind", "")}
        for key, fam in fams.items():
            fam.add(labels, st.get(key) or 0)
        for key, fam in gauges.items():
            if key == "complete_latency_ms" and st.get("kind") != "spout":
                continue
            value = st.get(key)
            if isinstance(value, (int, float)):
                fam.add(labels, value)
    workers = []
    for key, (name, text) in WORKER_COUNTERS.items():
        fam = Family(name, "counter", text)
        value = (beat.get("worker") or {}).get(key)
        if isinstance(value, (int, float)):
            fam.add(base, value)
        workers.append(fam)
    uptime = Family("squall_worker_uptime_seconds", "gauge", "seconds since the worker started")
    if isinstance(beat.get("uptime_secs"), (int, float)):
        uptime.add(base, beat["uptime_secs"])
    return [*fams.values(), *gauges.values(), *workers, uptime]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            body, status, ctype = b"only /metrics here\n", HTTPStatus.NOT_FOUND, "text/plain"
        else:
            body, status, ctype = self.server.text().encode(), HTTPStatus.OK, CONTENT_TYPE
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("metrics endpoint %s: " + format, self.address_string(), *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], text: Any) -> None:
        super().__init__(address, _Handler)
        self.text = text


class MetricsEndpoint:
    """Serves the text :meth:`update` last set on ``http://host:port/metrics`` (port 0: a
    free one; :attr:`port` is the bound port). ``start`` raises OSError when it cannot bind;
    ``update`` may be called from any thread."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.requested_port = port
        self._text = render([])
        self._make: Callable[[], str] | None = None
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1]) if self._server is not None else 0

    def update(self, text: str) -> None:
        with self._lock:
            self._text = text

    def render_with(self, make: Callable[[], str]) -> None:
        """Serve what ``make()`` returns at each scrape instead of :meth:`update`'s text:
        for a source that changes more often than it is read."""
        with self._lock:
            self._make = make

    def _current(self) -> str:
        with self._lock:
            make, text = self._make, self._text
        return make() if make is not None else text

    def start(self) -> None:
        self._server = _Server((self.host, self.requested_port), self._current)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="squall-metrics-endpoint", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
