"""The ``prometheus`` metrics consumer: every data point of a topology, for a Prometheus scraper.

Registered with ``topology.metrics.consumer.register: [{class: prometheus, argument: {port:
9400}}]`` (``host`` defaults to the worker's host, 127.0.0.1 in a LocalCluster, whose host
"local" names no interface; port 0 picks a free one, logged). It serves
``http://<host>:<port>/metrics`` in the OpenMetrics text format: one gauge per metric name,
``squall_<metric>`` (``__emit-count`` -> ``squall_emit_count``; a user metric that would
read as one of squall's, ``emit-count``, is ``squall_user_emit_count``), holding the newest bucket's
value of each task (labels ``topology``, ``component``, ``task``, ``host``, ``port``). A map
value becomes one gauge per numeric key (``__receive`` -> ``squall_receive_population``, ...);
values that are not numbers are left out. Run it with one task (the default): each task binds
its own port.

Each worker also serves its executors' built-in counters itself (``worker.metrics.endpoint``);
this consumer adds user metrics and per-task buckets in one place.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from squall.errors import ConfigError
from squall.metrics.openmetrics import Family, MetricsEndpoint, metric_name, render
from squall.spi.metrics import DataPoint, MetricsConsumer, TaskInfo

log = logging.getLogger(__name__)
DEFAULT_PORT = 9400
#: the host a LocalCluster gives its workers (squall.runtime.local_cluster): no interface
LOCAL_CLUSTER_HOST = "local"


class PrometheusMetricsConsumer(MetricsConsumer):
    """See the module docstring. ``handle`` runs on the consumer task's executor thread; the
    endpoint's threads read a rendered copy."""

    def __init__(self) -> None:
        self._values: dict[str, dict[tuple[tuple[str, Any], ...], float]] = {}
        #: series name -> the metric that has it; metric -> its series (None: left out)
        self._owners: dict[str, str] = {}
        self._by_source: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self.endpoint: MetricsEndpoint | None = None

    def prepare(self, conf: Mapping[str, Any], argument: Any, context: Any) -> None:
        argument = {} if argument is None else argument
        if not isinstance(argument, Mapping) or set(argument) - {"port", "host"}:
            raise ConfigError("the 'prometheus' metrics consumer takes {port: N, host: H} "
                              f"(both optional), got {argument!r}")
        port = argument.get("port", DEFAULT_PORT)
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port < 65536:
            raise ConfigError(f"prometheus consumer: port must be 0..65535, got {port!r}")
        host = str(argument.get("host") or getattr(context, "host", None) or "127.0.0.1")
        if host == LOCAL_CLUSTER_HOST:
            host = "127.0.0.1"
        self.endpoint = MetricsEndpoint(host, port)
        self.endpoint.render_with(self._render)
        try:
            self.endpoint.start()
        except OSError as exc:
            raise ConfigError(f"prometheus consumer cannot listen on {host}:{port}: {exc}"
                              ) from exc
        log.info("prometheus metrics consumer serving http://%s:%d/metrics", host,
                 self.endpoint.port)

    def handle(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        labels = (("component", task_info.component), ("host", task_info.worker_host),
                  ("port", task_info.worker_port), ("task", task_info.task),
                  ("topology", task_info.topology))
        with self._lock:
            for point in data_points:
                series = self._series(point.name)
                if series is None:
                    continue
                for name, value in _numbers(series, point.value):
                    self._values.setdefault(name, {})[labels] = value

    def _series(self, source: str) -> str | None:
        """The series name of metric ``source`` (called with the lock held). squall's own
        metrics (``__emit-count``) keep ``squall_<name>``; a user metric whose name reads
        the same (``emit-count``) gets ``squall_user_<name>``, whichever came first. Two user
        metrics that read the same (``req.count``, ``req_count``): the later is left out,
        said once."""
        if source in self._by_source:
            return self._by_source[source]
        name = metric_name(source)
        owner = self._owners.get(name)
        own = source.startswith("__")
        if owner is not None and own and not owner.startswith("__"):
            # squall's metric takes its name back from a user metric, which moves aside
            self._values.pop(name, None)
            del self._by_source[owner]
            self._owners[name] = source
            self._by_source[source] = name
            return name
        if owner is not None and not own and owner.startswith("__"):
            name = f"user_{name}"
            owner = self._owners.get(name)
        if owner is not None and owner != source:
            self._by_source[source] = None
            log.warning("prometheus consumer: metrics %r and %r both read as squall_%s; %r is "
                        "left out (rename one)", owner, source, name, source)
            return None
        self._owners[name] = source
        self._by_source[source] = name
        return name

    def _render(self) -> str:
        """The endpoint's text, made at each scrape (not at each ``handle``: a bucket
        brings one ``handle`` per task)."""
        with self._lock:
            families = []
            for name in sorted(self._values):
                fam = Family(f"squall_{name}", "gauge", f"newest bucket's value of {name}")
                for labels, value in sorted(self._values[name].items(), key=lambda kv: kv[0]):
                    fam.add(dict(labels), value)
                families.append(fam)
        return render(families)

    def cleanup(self) -> None:
        if self.endpoint is not None:
            self.endpoint.stop()
            self.endpoint = None


def _numbers(name: str, value: Any) -> list[tuple[str, float]]:
    if isinstance(value, bool):
        return [(name, int(value))]
    if isinstance(value, (int, float)):
        return [(name, value)]
    if isinstance(value, Mapping):
        out = []
        for key, sub in value.items():
            out.extend(_numbers(f"{name}_{metric_name(str(key))}", sub))
        return out
    return []


__all__ = ["PrometheusMetricsConsumer"]
