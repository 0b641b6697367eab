"""System components and periodic work: ackers, metrics consumers, ticks, stats.

``add_system_components`` completes a user topology before it is scheduled (nimbus and
LocalCluster both call it): ``__acker`` tasks (``topology.acker.executors``; null means one per
worker) and one ``__metrics_<name>`` bolt per registered metrics consumer.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from squall import drivers
from squall.api.topology import ACKER, ComponentSpec, Topology
from squall.api.tuple import Tuple
from squall.metrics.registry import MetricRegistry
from squall.runtime.tasks import METRICS_STREAM
from squall.runtime.threaded import Dedicated

if TYPE_CHECKING:
    from squall.runtime.executors import Executor
    from squall.runtime.worker import Worker

METRICS_PREFIX = "__metrics_"
BUILTIN_METRICS = {"emitted": "__emit-count", "transferred": "__transfer-count",
                   "acked": "__ack-count", "failed": "__fail-count",
                   "executed": "__execute-count"}


def add_system_components(topology: Topology, conf: dict[str, Any]) -> Topology:
    """Return ``topology`` with its acker and metrics-consumer components (idempotent)."""
    if any(c.startswith("__") for c in topology.components):
        return topology
    extra = []
    ackers = conf.get("topology.acker.executors")
    if ackers is None:
        ackers = int(conf.get("topology.workers") or 1)
    if ackers:
        extra.append(ComponentSpec(id=ACKER, kind="acker", cls=None, ref="", parallelism=ackers,
                                   num_tasks=ackers))
    from squall.metrics.consumer_bolt import MetricsConsumerBolt, consumer_components
    for cid, config, parallelism in consumer_components(conf):
        drivers.check("squall.metrics_consumers", config["squall.metrics.consumer"]["class"])
        extra.append(ComponentSpec(
            id=cid, kind="bolt", cls=MetricsConsumerBolt,
            ref="squall.metrics.consumer_bolt:MetricsConsumerBolt",
            parallelism=parallelism, num_tasks=parallelism, config=config))
    return topology.with_components(extra) if extra else topology


def instantiate(spec: ComponentSpec, conf: dict[str, Any]) -> Any:
    if spec.kind == "acker":
        return drivers.driver("acker", conf)
    cls = spec.cls
    if cls is None:
        from squall.api.topology import resolve_class
        cls = spec.cls = resolve_class(spec.ref)
    return cls()


def timers(worker: Worker, now: float) -> None:
    """Tick tuples and metrics buckets, from the worker's loop every few milliseconds."""
    state = worker.__dict__.setdefault("_timer_state", {})
    if now >= state.get("fold", 0.0):
        state["fold"] = now + 1.0
        fold_stats(worker)
    plan = state.get("plan")
    if plan is None:   # what needs timers never changes during a worker's life: work it out once
        ticking = [(ex, freq) for ex in worker.executors if ex.kind == "bolt"
                   for freq in [ex.tasks[0].conf.get("topology.tick.tuple.freq.secs")] if freq]
        consumers = [c for c in worker.topology.components if c.startswith(METRICS_PREFIX)]
        bucket = int(worker.conf.get("topology.builtin.metrics.bucket.size.secs") or 60)
        plan = state["plan"] = (ticking, consumers, bucket)
        for ex, freq in ticking:
            state[("tick", ex.range)] = now + float(freq)
        #: bucket size -> when its data points are next sent (built-in ones: ``bucket``)
        state["due"] = {bucket: now + bucket}
        state["registrations"] = -1
    ticking, consumers, bucket = plan
    for ex, freq in ticking:
        if now >= state[("tick", ex.range)]:
            state[("tick", ex.range)] = now + float(freq)
            for ts in ex.tasks:
                ts.ticks += 1
                ts.queue.append(Tuple((freq,), 0, worker.tick_source))
    if not consumers:
        return
    due = state["due"]
    if state["registrations"] != MetricRegistry.registrations:
        # a user metric with a bucket size of its own gets a timer of its own
        state["registrations"] = MetricRegistry.registrations
        for ts in worker.tasks.values():
            registry = ts.__dict__.get("metrics")
            if registry is not None:
                for size in registry.bucket_sizes():
                    due.setdefault(size, now + size)
    for size, when in due.items():
        if now >= when:
            due[size] = when + size if when + size > now else now + size
            _send_metrics(worker, consumers, size, size == bucket, state)


def _send_metrics(worker: Worker, consumers: list[str], size: int, builtin: bool,
                  state: dict[Any, Any]) -> None:
    """Send every task's data points of one bucket size: the built-in metrics (when ``size``
    is ``topology.builtin.metrics.bucket.size.secs``) and the user metrics of that size."""
    last = state.setdefault("metrics_last", {})
    stamp = time.time()
    for ts in list(worker.tasks.values()):
        if ts.component_id.startswith("__"):
            continue
        points: list[list[Any]] = []
        if builtin:
            counts = ts.counters()
            prev = last.get(ts.task, {})
            for key, name in BUILTIN_METRICS.items():
                points.append([name, counts[key] - prev.get(key, 0)])
            for key, name in (("execute_ms", "__execute-latency"),
                              ("process_ms", "__process-latency"),
                              ("complete_ms", "__complete-latency")):
                total, n = counts[key]
                ptotal, pn = prev.get(key, (0.0, 0))
                if n - pn:
                    points.append([name, (total - ptotal) / (n - pn)])
            points.append(["__receive", {"population": len(ts.queue) + ts.run_extra,
                                         "capacity": worker.high}])
            last[ts.task] = counts
        info = {"topology": worker.topology_id, "component": ts.component_id, "task": ts.task,
                "worker_host": worker.host, "worker_port": worker.port, "timestamp": stamp,
                "interval_secs": size}
        registry = ts.__dict__.get("metrics")
        if registry is not None:
            ex = ts.executor  # type: ignore[attr-defined]
            if isinstance(ex, Dedicated) and ex.alive:
                # the component updates its metrics on a thread of its own: read and reset
                # them there, between two of its calls, so no update falls in between
                ex._call(ts, _collect_on_thread, ex, ts, registry, size, info, points, consumers)
                continue
            points.extend([p.name, p.value] for p in registry.collect(size))
        _deliver_points(worker, ts, consumers, info, points)


def _collect_on_thread(ex: Dedicated, ts: Any, registry: MetricRegistry, size: int,
                       info: dict[str, Any], points: list[list[Any]],
                       consumers: list[str]) -> None:
    """On a component's own thread: its user metrics' data points join ``points``, which the
    loop then delivers."""
    points.extend([p.name, p.value] for p in registry.collect(size))
    ex.put(ts, _deliver_points, (ex.worker, ts, consumers, info, points))


def _deliver_points(worker: Worker, ts: Any, consumers: list[str], info: dict[str, Any],
                    points: list[list[Any]]) -> None:
    """Send one task's data points of one bucket to every metrics consumer task."""
    if not points:
        return
    for cid in consumers:
        tasks = worker.topology.tasks(cid)
        target = tasks[ts.task % len(tasks)]
        worker.deliver(ts, target, Tuple((info, points), ts.task,
                                         worker.source(ts.component_id, METRICS_STREAM)))


def fold_stats(worker: Worker) -> None:
    """Fold each executor's counters since the last fold into its windowed stats."""
    from squall.metrics.stats import WindowedStats
    stamp = time.time()
    max_age = float(worker.conf.get("topology.message.timeout.secs") or 30)
    for ex in worker.executors:
        stats = ex.__dict__.get("windows")
        if stats is None:
            stats = ex.windows = WindowedStats()  # type: ignore[attr-defined]
            ex.last_fold = {}  # type: ignore[attr-defined]
        cur = executor_stats(ex, windows=False)
        prev = ex.last_fold  # type: ignore[attr-defined]
        counts = {k: cur[k] - prev.get(k, 0) for k in BUILTIN_METRICS}
        lat = {}
        for name in ("execute", "process", "complete"):
            total, n = cur[f"_{name}_total"], cur[f"_{name}_n"]
            ptotal, pn = prev.get(f"_{name}_total", 0.0), prev.get(f"_{name}_n", 0)
            if n - pn:
                lat[name] = (total - ptotal, n - pn)
        stats.add(counts, lat, stamp)
        ex.last_fold = cur  # type: ignore[attr-defined]
        if ex.kind == "bolt":
            ex.drop_stale_samples(max_age)  # type: ignore[attr-defined]


def executor_stats(ex: Executor, windows: bool = True) -> dict[str, Any]:
    """Counters of one executor, summed over its tasks (read from any thread)."""
    total: dict[str, Any] = {"component": ex.component_id, "kind": ex.kind,
                             "tasks": [ts.task for ts in ex.tasks]}
    sums = {"execute": [0.0, 0], "process": [0.0, 0], "complete": [0.0, 0]}
    for ts in ex.tasks:
        for key in BUILTIN_METRICS:
            total[key] = total.get(key, 0) + getattr(ts, key)
        for name, ms, n in (("execute", ts.exec_ms, ts.exec_n),
                            ("process", ts.proc_ms, ts.proc_n),
                            ("complete", ts.complete_ms, ts.complete_n)):
            sums[name][0] += ms
            sums[name][1] += n
    for name, (ms, n) in sums.items():
        total[f"{name}_latency_ms"] = ms / n if n else 0.0
        if not windows:
            total[f"_{name}_total"], total[f"_{name}_n"] = ms, n
    stats = ex.__dict__.get("windows")
    if windows:
        if stats is not None:
            total["windows"] = stats.snapshot(time.time())
    total["queued"] = sum(len(ts.queue) + ts.run_extra for ts in ex.tasks)
    total["uptime_secs"] = int(time.time() - ex.start_time)
    return total
