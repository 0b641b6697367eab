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
from squall.runtime.tasks import METRICS_STREAM

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
        bucket = float(worker.conf.get("topology.builtin.metrics.bucket.size.secs") or 60)
        plan = state["plan"] = (ticking, consumers, bucket)
        for ex, freq in ticking:
            state[("tick", ex.range)] = now + float(freq)
        state["metrics"] = now + bucket
    ticking, consumers, bucket = plan
    for ex, freq in ticking:
        if now >= state[("tick", ex.range)]:
            state[("tick", ex.range)] = now + float(freq)
            for ts in ex.tasks:
                ts.ticks += 1
                ts.queue.append(Tuple((freq,), 0, worker.tick_source))
    if consumers and now >= state["metrics"]:
        state["metrics"] = now + bucket
        _send_metrics(worker, consumers, bucket, state)


def _send_metrics(worker: Worker, consumers: list[str], bucket: float,
                  state: dict[Any, Any]) -> None:
    now = time.monotonic()
    last = state.setdefault("metrics_last", {})
    stamp = time.time()
    for ts in list(worker.tasks.values()):
        if ts.component_id.startswith("__"):
            continue
        counts = ts.counters()
        prev = last.get(ts.task, {})
        points: list[list[Any]] = []
        for key, name in BUILTIN_METRICS.items():
            points.append([name, counts[key] - prev.get(key, 0)])
        for key, names in (("execute_ms", ("__execute-latency", "__process-latency")),
                           ("complete_ms", ("__complete-latency",))):
            total, n = counts[key]
            ptotal, pn = prev.get(key, (0.0, 0))
            if n - pn:
                for name in names:
                    points.append([name, (total - ptotal) / (n - pn)])
        points.append(["__receive", {"population": len(ts.queue) + ts.run_extra,
                                     "capacity": worker.high}])
        registry = ts.__dict__.get("metrics")
        if registry is not None:
            for size in registry.bucket_sizes():
                if size == int(bucket) or state.setdefault(("due", ts.task, size), 0) <= now:
                    state[("due", ts.task, size)] = now + size
                    points.extend([p.name, p.value] for p in registry.collect(size))
        last[ts.task] = counts
        info = {"topology": worker.topology_id, "component": ts.component_id, "task": ts.task,
                "worker_host": worker.host, "worker_port": worker.port, "timestamp": stamp,
                "interval_secs": bucket}
        for cid in consumers:
            tasks = worker.topology.tasks(cid)
            target = tasks[ts.task % len(tasks)]
            worker.deliver(ts, target, Tuple((info, points), ts.task,
                                             worker.source(ts.component_id, METRICS_STREAM)))


def fold_stats(worker: Worker) -> None:
    """Fold each executor's counters since the last fold into its windowed stats."""
    from squall.metrics.stats import WindowedStats
    stamp = time.time()
    for ex in worker.executors:
        stats = ex.__dict__.get("windows")
        if stats is None:
            stats = ex.windows = WindowedStats()  # type: ignore[attr-defined]
            ex.last_fold = {}  # type: ignore[attr-defined]
        cur = executor_stats(ex, windows=False)
        prev = ex.last_fold  # type: ignore[attr-defined]
        counts = {k: cur[k] - prev.get(k, 0) for k in BUILTIN_METRICS}
        lat = {}
        for name, key in (("execute", "exec"), ("process", "exec"), ("complete", "complete")):
            total, n = cur[f"_{key}_total"], cur[f"_{key}_n"]
            ptotal, pn = prev.get(f"_{key}_total", 0.0), prev.get(f"_{key}_n", 0)
            if n - pn:
                lat[name] = (total - ptotal, n - pn)
        stats.add(counts, lat, stamp)
        ex.last_fold = cur  # type: ignore[attr-defined]


def executor_stats(ex: Executor, windows: bool = True) -> dict[str, Any]:
    """Counters of one executor, summed over its tasks (read from any thread)."""
    total: dict[str, Any] = {"component": ex.component_id, "kind": ex.kind,
                             "tasks": [ts.task for ts in ex.tasks]}
    exec_ms = exec_n = comp_ms = comp_n = 0.0
    for ts in ex.tasks:
        for key in BUILTIN_METRICS:
            total[key] = total.get(key, 0) + getattr(ts, key)
        exec_ms += ts.exec_ms
        exec_n += ts.exec_n
        comp_ms += ts.complete_ms
        comp_n += ts.complete_n
    total["execute_latency_ms"] = exec_ms / exec_n if exec_n else 0.0
    total["complete_latency_ms"] = comp_ms / comp_n if comp_n else 0.0
    total.update(_exec_total=exec_ms, _exec_n=exec_n, _complete_total=comp_ms,
                 _complete_n=comp_n)
    stats = ex.__dict__.get("windows")
    if windows:
        for key in ("_exec_total", "_exec_n", "_complete_total", "_complete_n"):
            del total[key]
        if stats is not None:
            total["windows"] = stats.snapshot(time.time())
    total["queued"] = sum(len(ts.queue) + ts.run_extra for ts in ex.tasks)
    total["uptime_secs"] = int(time.time() - ex.start_time)
    return total
