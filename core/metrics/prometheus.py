"""The ``prometheus`` metrics consumer: every data point of a topology, for a Prometheus scraper.

Registered with ``topology.metrics.consumer.register: [{class: prometheus, argument: {port:
9400}}]`` (``host`` defaults to the worker's host, 127.0.0.1 in a LocalCluster, whose host
"local" names no interface; port 0 picks a free one, logged). It serves
``http://<host>:<port>/metrics`` in the OpenMetrics text format: one gauge per metric name,
``squall_<metric>`` (``__emit-count`` -> ``squall_emit_count``; a user metric that would
read as one of squall's, ``emit-count``, is ``squall_user_emit_count``), holding the newest bucket's
value of each task (labels ``topology``, ``component``, ``task``, ``host``, ``port``). A map
value becomes one gauge per numeric key (``__receive`` -> ``squall_receive_population``, ...);
values that are not numbers are left out. It runs as one task: an entry with a
``parallelism.hint`` other than 1 is refused at submit (every task would bind the same
port). A port it cannot listen on (in use) is reported as its component's error, and the
topology runs on without the endpoint.

Each task has one series per metric: when a rebalance moves a task, its buckets from the new
worker relabel its series (``host``, ``port``) rather than add a second one, and a bucket that
arrives late from where the task ran before (older than the newest one held) is dropped. A
series not refreshed for :data:`EXPIRY_BUCKETS` (3) of its buckets (measured on this consumer's
clock from when its newest bucket arrived) is dropped: a task that is gone, or a metric a task
no longer reports, leaves the endpoint after three buckets.

Each worker also serves its executors' built-in counters itself (``worker.metrics.endpoint``);
this consumer adds user metrics and per-task buckets in one place.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from squall.errors import ConfigError
from squall.metrics.openmetrics import Family, MetricsEndpoint, metric_name, render
from squall.spi.metrics import DataPoint, MetricsConsumer, TaskInfo

log = logging.getLogger(__name__)
DEFAULT_PORT = 9400
#: the host a LocalCluster gives its workers (squall.runtime.local_cluster): no interface
LOCAL_CLUSTER_HOST = "local"
#: a series not refreshed for this many of its buckets is dropped (its task is gone or no
#: longer reports that metric)
EXPIRY_BUCKETS = 3
#: the shortest bucket the expiry counts with (a bucket of 0 s would expire at once)
MIN_BUCKET_SECS = 1.0
#: how often ``handle`` drops expired series when nobody scrapes (a scrape drops them too)
PRUNE_EVERY_SECS = 1.0
#: (topology, component, task)
TaskKey = tuple[str, str, int]
#: where a series' value comes from: a metric's name, then the keys down its map value
Source = tuple[str, ...]
#: a series' labels, in the order they render
Labels = tuple[tuple[str, Any], ...]


class _TaskSeries:
    """One task's newest values and where they came from (used with the consumer's lock held)."""

    __slots__ = ("host", "port", "timestamp", "values")

    def __init__(self, host: str, port: int, timestamp: float) -> None:
        self.host = host
        self.port = port
        #: the end of the newest bucket taken, by the reporting worker's clock
        self.timestamp = timestamp
        #: series name -> (value, when it expires on the consumer's clock)
        self.values: dict[str, tuple[float, float]] = {}


class PrometheusMetricsConsumer(MetricsConsumer):
    """See the module docstring. ``handle`` runs on the consumer task's executor thread; the
    endpoint's threads read a rendered copy. ``clock`` (monotonic seconds) times the expiry."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._tasks: dict[TaskKey, _TaskSeries] = {}
        self._clock = clock
        self._pruned_at = clock()
        #: series name -> the source that has it; source -> its series (None: left out)
        self._owners: dict[str, Source] = {}
        self._by_source: dict[Source, str | None] = {}
        self._lock = threading.Lock()
        self.endpoint: MetricsEndpoint | None = None

    @classmethod
    def squall_check_entry(cls, spec: Mapping[str, Any]) -> None:
        """Refuse, at submit, an entry of more than one task: every task would bind the
        argument's port on its worker's host, and all but one could not."""
        tasks = spec.get("parallelism.hint", 1)
        if tasks != 1:
            raise ConfigError(f"metrics consumer 'prometheus': it serves one port, so its "
                              f"parallelism.hint must be 1, got {tasks!r}")

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
        except OSError as exc:      # the consumer's task reports it and runs on
            self.endpoint = None
            raise OSError(f"cannot listen on {host}:{port} (its argument's host and port): "
                          f"{exc.strerror or exc}") from exc
        log.info("prometheus metrics consumer serving http://%s:%d/metrics", host,
                 self.endpoint.port)

    def handle(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        key = (task_info.topology, task_info.component, task_info.task)
        host, port = task_info.worker_host, task_info.worker_port
        now = self._clock()
        expires = now + EXPIRY_BUCKETS * max(float(task_info.interval_secs or 0),
                                             MIN_BUCKET_SECS)
        with self._lock:
            task = self._tasks.get(key)
            if task is None:
                task = self._tasks[key] = _TaskSeries(host, port, task_info.timestamp)
            elif (task.host, task.port) != (host, port):
                if task_info.timestamp < task.timestamp:
                    return          # a late bucket from the worker the task has left
                task.host, task.port = host, port
            task.timestamp = max(task.timestamp, task_info.timestamp)
            for point in data_points:
                for source, value in _numbers((point.name,), point.value):
                    name = self._series(source)
                    if name is not None:
                        task.values[name] = (value, expires)
            if now - self._pruned_at >= PRUNE_EVERY_SECS:
                self._prune(now)

    def _prune(self, now: float) -> None:
        """Drop the series that expired by ``now``, and tasks left with none, and forget
        the names of map keys no task has a series of any more (a map whose keys change, one
        per user say, would otherwise grow them for good; a key that comes back is named
        again) (lock held)."""
        self._pruned_at = now
        expired = False
        for key, task in list(self._tasks.items()):
            for name, (_, expires) in list(task.values.items()):
                if expires <= now:
                    del task.values[name]
                    expired = True
            if not task.values:
                del self._tasks[key]
        if expired:
            live = set().union(*(task.values.keys() for task in self._tasks.values()))
            for name, source in list(self._owners.items()):
                if len(source) > 1 and name not in live:
                    del self._owners[name]
                    del self._by_source[source]

    def _series(self, source: Source) -> str | None:
        """The series name of ``source`` (called with the lock held): a metric, or a key of
        its map value (``("__receive", "population")`` -> ``receive_population``). squall's
        own metrics (``__emit-count``) keep ``squall_<name>``; a user metric whose name, or
        one of whose map keys, reads the same (``emit-count``) gets ``squall_user_<name>``,
        whichever came first. Two user sources that read the same (``req.count`` and
        ``req_count``, or the map keys ``"a b"`` and ``"a.b"`` of one metric): the later is
        left out, said once."""
        if source in self._by_source:
            return self._by_source[source]
        if len(source) == 1:
            name: str | None = metric_name(source[0])
        else:
            name = self._series(source[:1])
            if name is not None:
                name += "".join(f"_{metric_name(key)}" for key in source[1:])
        if name is None:            # a map whose metric is left out
            self._by_source[source] = None
            return None
        owner = self._owners.get(name)
        own = source[0].startswith("__")
        if owner is not None and own and not owner[0].startswith("__"):
            # squall's metric takes its name back from a user metric, which moves aside
            self._release(owner)
            self._owners[name] = source
            self._by_source[source] = name
            return name
        if owner is not None and not own and owner[0].startswith("__"):
            name = f"user_{name}"
            owner = self._owners.get(name)
        if owner is not None and owner != source:
            self._by_source[source] = None
            log.warning("prometheus consumer: metrics %s and %s both read as squall_%s; %s is "
                        "left out (rename one)", _described(owner), _described(source), name,
                        _described(source))
            return None
        self._owners[name] = source
        self._by_source[source] = name
        return name

    def _release(self, owner: Source) -> None:
        """Forget the series of user source ``owner`` and, for a metric, of its map keys
        (their names follow from its name), so their next data points are named again (lock
        held)."""
        for source in [s for s in self._by_source
                       if s == owner or (len(owner) == 1 and s[0] == owner[0])]:
            name = self._by_source.pop(source)
            if name is not None and self._owners.get(name) == source:
                del self._owners[name]
                for task in self._tasks.values():
                    task.values.pop(name, None)

    def _render(self) -> str:
        """The endpoint's text, made at each scrape (not at each ``handle``: a bucket
        brings one ``handle`` per task)."""
        with self._lock:
            self._prune(self._clock())
            rows: dict[str, list[tuple[Labels, float]]] = {}
            for (topology, component, task_id), task in self._tasks.items():
                labels: Labels = (("component", component), ("host", task.host),
                                  ("port", task.port), ("task", task_id), ("topology", topology))
                for name, (value, _) in task.values.items():
                    rows.setdefault(name, []).append((labels, value))
        families = []
        for name in sorted(rows):
            fam = Family(f"squall_{name}", "gauge", f"newest bucket's value of {name}")
            for row_labels, value in sorted(rows[name], key=lambda kv: kv[0]):
                fam.add(dict(row_labels), value)
            families.append(fam)
        return render(families)

    def cleanup(self) -> None:
        if self.endpoint is not None:
            self.endpoint.stop()
            self.endpoint = None


def _numbers(source: Source, value: Any) -> list[tuple[Source, float]]:
    """The numbers in ``value``, each with its source: ``source`` itself for a number, and
    for a map ``source`` followed by the keys down to the number."""
    if isinstance(value, bool):
        return [(source, int(value))]
    if isinstance(value, (int, float)):
        return [(source, value)]
    if isinstance(value, Mapping):
        out = []
        for key, sub in value.items():
            out.extend(_numbers((*source, str(key)), sub))
        return out
    return []


def _described(source: Source) -> str:
    """``'words'`` for metric ``words``, ``words['a b']`` for its map key ``"a b"`` (log
    lines)."""
    if len(source) == 1:
        return repr(source[0])
    return source[0] + "".join(f"[{key!r}]" for key in source[1:])


__all__ = ["PrometheusMetricsConsumer"]
