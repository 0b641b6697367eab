"""The loop's periodic work (every few milliseconds): executors' timers (acker rotations,
spout timeouts), load reports, tick tuples, stats folding and metrics data points.

Tick tuples (from ``__system``, task -1, stream ``__tick``, values ``(freq,)``) go to bolts
with ``topology.tick.tuple.freq.secs``; every task's built-in metrics go to the metrics
consumer bolts every ``topology.builtin.metrics.bucket.size.secs``, and its user metrics
every bucket size they were registered with. At an orderly shutdown the worker has the
buckets begun sent too (:meth:`Timers.send_partial`).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.api.topology import Topology
from squall.api.tuple import Tuple
from squall.metrics.registry import MetricRegistry
from squall.runtime.acks import SETTLED
from squall.runtime.executors.base import Executor
from squall.runtime.stats import BUILTIN_METRICS, fold_stats
from squall.runtime.streams import METRICS_STREAM, Sources
from squall.runtime.system import METRICS_PREFIX
from squall.runtime.task import TaskState

if TYPE_CHECKING:
    from squall.runtime.load import LoadTracker

FOLD_SECS = 1.0
#: the source task of a tick tuple (``tup.task``, and ``"task"`` on the multi-lang wire):
#: the system's, -1, which no task id is, as Storm's ticks have it
SYSTEM_TASK = -1


class Timers:
    """One worker's periodic work, run by its loop (:meth:`run`)."""

    def __init__(self, *, conf: dict[str, Any], topology: Topology, executors: list[Executor],
                 sources: Sources, load: LoadTracker,
                 deliver: Callable[[int, Tuple], None], capacity: int,
                 identity: Callable[[], dict[str, Any]],
                 report: Callable[[TaskState, str], None],
                 check: Callable[[Any], Any]) -> None:
        self.conf = conf
        self.topology = topology
        self.executors = executors
        self.sources = sources
        self.load = load
        self.deliver = deliver
        #: what ``__receive`` reports as a queue's capacity (the high watermark)
        self.capacity = capacity
        #: the worker's part of a data point's task info (topology, host, port)
        self.identity = identity
        #: reports a task's error (a user metric that raised or gave a value no consumer
        #: can receive), and checks a value can travel (the serializer's ``dumps``)
        self.report = report
        self.check = check
        self.max_age = float(conf.get("topology.message.timeout.secs") or 30)
        self.bucket = int(conf.get("topology.builtin.metrics.bucket.size.secs", 60))
        self.next_fold = 0.0
        #: (bolt executor, tick frequency) and when its next tick is due
        self.ticking: list[tuple[Executor, Any]] = []
        self.tick_due: dict[int, float] = {}
        self.consumers = [c for c in topology.components if c.startswith(METRICS_PREFIX)]
        #: bucket size -> when its data points are next sent (built-in ones: ``bucket``)
        self.due: dict[int, float] = {}
        self.registrations = -1
        #: each task's counters when its built-in data points were last sent
        self.last_sent: dict[int, dict[str, Any]] = {}
        #: user metrics being read on components' own threads, not delivered yet
        self.collecting = 0
        #: whether send_partial sent the buckets begun
        self.sent_partial = False
        self.started = False

    def _start(self, now: float) -> None:
        self.started = True
        self.ticking = [(ex, freq) for ex in self.executors if ex.kind == "bolt"
                        for freq in [ex.tasks[0].conf.get("topology.tick.tuple.freq.secs")]
                        if freq]
        for ex, freq in self.ticking:
            self.tick_due[id(ex)] = now + float(freq)
        self.due = {self.bucket: now + self.bucket}

    def run(self, now: float) -> None:
        for ex in self.executors:
            ex.on_timer(now)
        self.load.tick(now)
        if not self.started:
            self._start(now)
        if now >= self.next_fold:
            self.next_fold = now + FOLD_SECS
            fold_stats(self.executors, self.max_age)
        tick = self.sources.tick
        for ex, freq in self.ticking:
            if now >= self.tick_due[id(ex)]:
                self.tick_due[id(ex)] = now + float(freq)
                for ts in ex.tasks:
                    ts.ticks += 1
                    tup = Tuple((freq,), SYSTEM_TASK, tick)
                    tup.ackval = SETTLED    # in no tree: the bolt's ack or fail counts nothing
                    ts.queue.append(tup)
        if not self.consumers:
            return
        due = self.due
        if self.registrations != MetricRegistry.registrations:
            # a user metric with a bucket size of its own gets a timer of its own
            self.registrations = MetricRegistry.registrations
            for ex in self.executors:
                for ts in ex.tasks:
                    if ts.metrics is not None:
                        for size in ts.metrics.bucket_sizes():
                            due.setdefault(size, now + size)
        for size, when in due.items():
            if now >= when:
                due[size] = when + size if when + size > now else now + size
                self.send_metrics(size, size == self.bucket)

    def send_partial(self, now: float) -> None:
        """At an orderly shutdown (spouts deactivated): send every task's data points of each
        bucket begun and not due yet, with the seconds it ran (``now - its start``) as their
        ``interval_secs``, so that what a topology did since its last bucket, all of it for a
        topology shorter than one, reaches the consumers. Once: a later call does nothing.
        Loop thread; ``now`` is the loop's clock. The buckets then start again at ``now``."""
        if not self.consumers or not self.started or self.sent_partial:
            return
        self.sent_partial = True
        for size, when in list(self.due.items()):
            ran = round(now - (when - size), 3)
            if ran > 0:
                self.due[size] = now + size
                self.send_metrics(size, size == self.bucket, ran)

    def send_metrics(self, size: int, builtin: bool, interval: float | None = None) -> None:
        """Send every task's data points of one bucket size: the built-in metrics (when
        ``builtin``) and the user metrics of that size; ``interval`` (default ``size``) is
        the seconds they cover."""
        stamp = time.time()
        for ex in self.executors:
            for ts in ex.tasks:
                if ts.component_id.startswith("__"):
                    continue
                points: list[list[Any]] = []
                if builtin:
                    points.extend(self._builtin_points(ts))
                info = {**self.identity(), "component": ts.component_id, "task": ts.task,
                        "timestamp": stamp, "interval_secs": size if interval is None
                        else interval}
                registry = ts.metrics
                if registry is not None:
                    if ex.threaded and ex.thread.alive:   # type: ignore[attr-defined]
                        # the component updates its metrics on a thread of its own: read
                        # and reset them there, between two of its calls, so no update
                        # falls in between
                        self.collecting += 1
                        ex.thread.call(ts, self._collect_on_thread,   # type: ignore[attr-defined]
                                       ex, ts, registry, size, info, points)
                        continue
                    problems: list[str] = []
                    points.extend(self._user_points(ts, registry, size, problems))
                    for problem in problems:
                        self.report(ts, problem)
                self.deliver_points(ts, info, points)

    def _user_points(self, ts: TaskState, registry: MetricRegistry, size: int,
                     problems: list[str]) -> list[list[Any]]:
        """A task's user metrics of one bucket size as data points. A metric that raises, or
        whose value the serializer refuses, is left out and said in ``problems``: the rest
        of the task's points (its built-in ones too) still go."""
        where = f"{ts.component_id} task {ts.task}"
        points = []
        for p in registry.collect(size, lambda name, exc: problems.append(
                f"metric {name!r} of {where}: get_value_and_reset raised {exc!r}")):
            try:
                self.check(p.value)
            except Exception as exc:
                problems.append(f"metric {p.name!r} of {where}: its value cannot be sent to a "
                                f"metrics consumer: {exc}")
                continue
            points.append([p.name, p.value])
        return points

    def _builtin_points(self, ts: TaskState) -> list[list[Any]]:
        counts = ts.counters()
        prev = self.last_sent.get(ts.task, {})
        points: list[list[Any]] = [[name, counts[key] - prev.get(key, 0)]
                                   for key, name in BUILTIN_METRICS.items()]
        for key, name in (("execute_ms", "__execute-latency"),
                          ("process_ms", "__process-latency"),
                          ("complete_ms", "__complete-latency")):
            total, n = counts[key]
            ptotal, pn = prev.get(key, (0.0, 0))
            if n - pn:
                points.append([name, (total - ptotal) / (n - pn)])
        points.append(["__receive", {"population": ts.queued(), "capacity": self.capacity}])
        self.last_sent[ts.task] = counts
        return points

    def _collect_on_thread(self, ex: Any, ts: TaskState, registry: MetricRegistry, size: int,
                           info: dict[str, Any], points: list[list[Any]]) -> None:
        """On a component's own thread: its user metrics' data points join ``points``,
        which the loop then delivers (and reports what went wrong)."""
        problems: list[str] = []
        points.extend(self._user_points(ts, registry, size, problems))
        ex.thread.put(ts, self._deliver_reporting, (ts, info, points, problems))

    def _deliver_reporting(self, ts: TaskState, info: dict[str, Any],
                           points: list[list[Any]], problems: list[str]) -> None:
        self.collecting -= 1
        for problem in problems:
            self.report(ts, problem)
        self.deliver_points(ts, info, points)

    def deliver_points(self, ts: TaskState, info: dict[str, Any],
                       points: list[list[Any]]) -> None:
        """Send one task's data points of one bucket to every metrics consumer task."""
        if not points:
            return
        src = self.sources.get(ts.component_id, METRICS_STREAM)
        for cid in self.consumers:
            tasks = self.topology.tasks(cid)
            self.deliver(tasks[ts.task % len(tasks)], Tuple((info, points), ts.task, src))
