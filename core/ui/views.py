"""The JSON of the UI's REST API, shaped as Storm's UI REST API (Storm's ``docs/STORM-UI-REST-API.md``):
the same paths and envelopes, and Storm's field names for what squall knows, so that tools
written for Storm's UI read squall's. Left out where squall has no such data: a nimbus's
uptime, version and log link (``nimbus/summary`` gives ``host``, ``port``, ``status``).

Pure functions from what nimbus answers (``NimbusClient.cluster_info()``, a
``NimbusClient.topology_info()`` dict) to plain dicts; no I/O, no clock except the ``now``
passed in. Latencies are strings with three decimals and capacity too, as Storm sends them;
counts are integers. Fields squall adds (``owner``, ``leader``, ``graph`` ...) are extra keys.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from squall.runtime.event_log import EVERY, settings_of
from squall.security import redact

__all__ = ["WINDOWS", "cluster_summary", "component_page", "nimbus_summary", "pretty_duration",
           "supervisor_summary", "topology_page", "topology_summary", "visualization",
           "window_hint", "worker_log_link"]

#: the windows of Storm's UI, in seconds, and all time
WINDOWS = ("600", "10800", "86400", ":all-time")
_COUNTS = ("emitted", "transferred", "acked", "failed", "executed")


def pretty_duration(secs: float) -> str:
    """``"1d 2h 3m 4s"`` as Storm's UI writes uptimes (leading zero units left out)."""
    secs = int(secs)
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m")]
    out: list[str] = []
    for value, unit in parts:
        if value or out:
            out.append(f"{value}{unit}")
    out.append(f"{seconds}s")
    return " ".join(out)


def window_hint(window: str) -> str:
    """``"10m 0s"`` for ``"600"``; ``"All time"`` for ``":all-time"``."""
    return "All time" if window == ":all-time" else pretty_duration(int(window))


def _executor_id(key: Any) -> str:
    """Storm's ``"[start-end]"`` from an executor key (``"1-2"``, ``[1, 2]`` or ``"[1, 2]"``)."""
    if isinstance(key, (list, tuple)) and len(key) == 2:
        return f"[{key[0]}-{key[1]}]"
    text = str(key).strip("[]").replace(", ", "-").replace(",", "-")
    return f"[{text}]"


def _ms(value: Any) -> str:
    return f"{float(value or 0.0):.3f}"


def worker_log_link(topology_id: str, host: str, port: Any, logviewer_port: Any,
                    log_query: str = "") -> str:
    """The supervisor's log viewer URL of one worker's log, ``log_query`` appended (the
    signature that lets the caller in: ``Access.log_link_query``); ``""`` when the supervisor
    publishes no ``logviewer_port``."""
    if not logviewer_port or not host:
        return ""
    return (f"http://{host}:{int(logviewer_port)}/log?topology={quote(topology_id)}"
            f"&port={int(port)}{log_query}")


# -- cluster -----------------------------------------------------------------------------------
def drpc_function(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of ``/api/v1/drpc/summary`` (see :meth:`squall.DRPCClient.functions`)."""
    if "error" in entry:
        return {"server": entry["server"], "error": entry["error"]}
    return {"server": entry["server"], "function": entry["function"],
            "waiting": entry["waiting"], "inFlight": entry["in_flight"],
            "lastFetchSecsAgo": entry["last_fetch_secs_ago"]}


def cluster_summary(info: Any, visible: Sequence[Any]) -> dict[str, Any]:
    """``/api/v1/cluster/summary`` from a ClusterInfo; ``visible``: the topology summaries the
    caller may see (their executors and tasks are counted)."""
    from squall import __version__
    slots = sum(len(s.ports) for s in info.supervisors)
    used = sum(len(s.used_ports) for s in info.supervisors)
    return {"stormVersion": __version__, "supervisors": len(info.supervisors),
            "topologies": len(visible), "slotsTotal": slots, "slotsUsed": used,
            "slotsFree": slots - used,
            "executorsTotal": sum(int(t.num_executors) for t in visible),
            "tasksTotal": sum(int(t.num_tasks) for t in visible),
            "leader": info.leader, "nimbuses": list(info.nimbuses)}


def supervisor_summary(info: Any) -> dict[str, Any]:
    """``/api/v1/supervisor/summary``: ``{"supervisors": [...]}``."""
    return {"supervisors": [
        {"id": s.id, "host": s.hostname, "uptime": pretty_duration(s.uptime_secs),
         "uptimeSeconds": int(s.uptime_secs), "slotsTotal": len(s.ports),
         "slotsUsed": len(s.used_ports), "slots": list(s.ports), "usedSlots": list(s.used_ports)}
        for s in info.supervisors]}


def nimbus_summary(info: Any) -> dict[str, Any]:
    """``/api/v1/nimbus/summary``: every registered nimbus, the leader marked ``Leader``."""
    out = []
    for address in info.nimbuses:
        host, _, port = str(address).rpartition(":")
        out.append({"host": host, "port": int(port) if port.isdigit() else 0,
                    "status": "Leader" if address == info.leader else "Not a Leader"})
    return {"nimbuses": out}


def topology_summary(visible: Iterable[Any], owners: Mapping[str, str]) -> dict[str, Any]:
    """``/api/v1/topology/summary`` from TopologySummary messages (``owners``: id -> owner)."""
    return {"topologies": [
        {"id": t.id, "name": t.name, "status": str(t.status).upper(),
         "statusReason": t.status_reason, "uptime": pretty_duration(t.uptime_secs),
         "uptimeSeconds": int(t.uptime_secs), "tasksTotal": int(t.num_tasks),
         "workersTotal": int(t.num_workers), "executorsTotal": int(t.num_executors),
         "encodedId": quote(t.id, safe=""), "owner": owners.get(t.id, "")}
        for t in visible]}


# -- a topology --------------------------------------------------------------------------------
def _window_stats(stats: Mapping[str, Any], window: str) -> dict[str, Any]:
    windows = stats.get("windows") or {}
    if window in windows:
        return dict(windows[window])
    if window == ":all-time":        # a worker that reports no windows: its all-time counters
        return {k: stats.get(k, 0) for k in (*_COUNTS, "execute_latency_ms",
                                             "process_latency_ms", "complete_latency_ms")}
    return {}


def _busy_ms(x: Mapping[str, Any], window: str) -> float:
    """The milliseconds executor ``x`` spent executing tuples in ``window``."""
    w = _window_stats(x, window)
    return int(w.get("executed", 0)) * float(w.get("execute_latency_ms", 0.0))


def _loop_busy(info: Mapping[str, Any], window: str) -> dict[str, float]:
    """Worker -> the milliseconds its loop spent executing tuples in ``window``: the busy
    time of its executors, system ones too, but those on threads of their own."""
    out: dict[str, float] = {}
    for x in info.get("executors") or ():
        if not x.get("threaded"):
            key = str(x.get("worker"))
            out[key] = out.get(key, 0.0) + _busy_ms(x, window)
    return out


def _span(window: str, uptime: float) -> float:
    """The seconds ``window`` covers of something up for ``uptime`` seconds."""
    return uptime if window == ":all-time" else min(float(window), uptime)


def _executor_capacity(x: Mapping[str, Any], window: str, loop_busy: Mapping[str, float]
                       ) -> float:
    """The executor's busy time over the time it could have had in ``window``: 1 when it
    executed whenever it could, so its component holds the topology back. One on its
    worker's loop could have had what the loop did not spend on the worker's other
    executors (``loop_busy``: see :func:`_loop_busy`), so its capacity stays at most 1 and
    reaches it when it is saturated though it shares the loop (a share of the window would
    keep two saturated executors of one worker under 0.5 each). One on its own thread
    (``threaded``) could have had the whole window."""
    span = _span(window, float(x.get("uptime_secs") or 0)) * 1000.0
    if span <= 0:
        return 0.0
    busy = _busy_ms(x, window)
    if x.get("threaded"):
        return busy / span
    others = loop_busy.get(str(x.get("worker")), busy) - busy
    room = max(span - others, busy)
    return busy / room if room > 0 else 0.0


def _worker_links(info: Mapping[str, Any], log_query: str) -> dict[str, str]:
    """``"node:port"`` -> the log link of that worker (``""`` without a log viewer)."""
    tid = str(info.get("id", ""))
    return {str(w.get("worker")): worker_log_link(tid, str(w.get("host") or ""), w.get("port"),
                                                  w.get("logviewer_port"), log_query)
            for w in info.get("workers") or ()}


def _errors(info: Mapping[str, Any], component: str, now: float,
            log_query: str) -> list[dict[str, Any]]:
    """The component's kept errors, newest first, in Storm's ``componentErrors`` shape."""
    tid = str(info.get("id", ""))
    links = {(str(w.get("host") or ""), int(w.get("port") or 0)): w.get("logviewer_port")
             for w in info.get("workers") or ()}
    out = []
    for e in reversed((info.get("errors") or {}).get(component) or []):
        if not isinstance(e, Mapping):
            e = {"error": str(e)}
        host, port = str(e.get("host") or ""), int(e.get("port") or 0)
        when = int(e.get("time_secs") or 0)
        out.append({"error": str(e.get("error", "")), "errorTime": when,
                    "errorLapsedSecs": max(0, int(now - when)) if when else None,
                    "errorHost": host, "errorPort": port, "task": e.get("task"),
                    "errorWorkerLogLink": worker_log_link(tid, host, port,
                                                          links.get((host, port)), log_query)})
    return out


def _component_row(comp: str, stats: Mapping[str, Any], execs: list[Mapping[str, Any]],
                   window: str, errors: list[dict[str, Any]],
                   loop_busy: Mapping[str, float]) -> dict[str, Any]:
    w = _window_stats(stats, window)
    kind = str(stats.get("kind", ""))
    row: dict[str, Any] = {"executors": int(stats.get("executors", 0)),
                           "tasks": int(stats.get("tasks", 0)),
                           **{k: int(w.get(k, 0)) for k in _COUNTS}}
    last = errors[0] if errors else {}
    row.update({"lastError": last.get("error", ""), "errorHost": last.get("errorHost", ""),
                "errorPort": last.get("errorPort"), "errorTime": last.get("errorTime"),
                "errorLapsedSecs": last.get("errorLapsedSecs"),
                "errorWorkerLogLink": last.get("errorWorkerLogLink", "")})
    if kind == "spout":
        row["spoutId"] = comp
        row["completeLatency"] = _ms(w.get("complete_latency_ms"))
    else:
        row["boltId"] = comp
        row["executeLatency"] = _ms(w.get("execute_latency_ms"))
        row["processLatency"] = _ms(w.get("process_latency_ms"))
        row["capacity"] = \
            f"{max((_executor_capacity(x, window, loop_busy) for x in execs), default=0):.3f}"
    _add_percentiles(row, w)
    return row


def _add_percentiles(row: dict[str, Any], w: Mapping[str, Any]) -> None:
    """``executeLatencyP50`` ... ``completeLatencyP99`` (strings, ms) where the window has
    them (workers fold a latency histogram per executor), and the samples they come from
    (``executeLatencySamples``, ``completeLatencySamples``) where workers count them; the
    p99 is null where the window has a p50 but too few samples for a p99
    (``squall.metrics.stats.P99_MIN_SAMPLES``). Left out where the window has no histogram."""
    for key in ("execute", "complete"):
        if f"{key}_latency_p50_ms" not in w:
            continue
        row[f"{key}LatencyP50"] = _ms(w[f"{key}_latency_p50_ms"])
        p99 = w.get(f"{key}_latency_p99_ms")
        row[f"{key}LatencyP99"] = None if p99 is None else _ms(p99)
        samples = w.get(f"{key}_latency_samples")
        if samples is not None:
            row[f"{key}LatencySamples"] = int(samples)


def _executors_of(info: Mapping[str, Any], comp: str) -> list[Mapping[str, Any]]:
    return [x for x in info.get("executors") or () if x.get("component") == comp]


def _user_components(info: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The user's components with their stats; one no worker reported yet (the topology
    just started, or is being rebalanced) is listed from the graph with zero counts."""
    comps: dict[str, Mapping[str, Any]] = {
        c: s for c, s in (info.get("components") or {}).items() if not c.startswith("__")}
    for node in info.get("graph") or ():
        cid = str(node.get("id"))
        if cid not in comps:
            comps[cid] = {"kind": node.get("kind", ""), "executors": node.get("executors", 0),
                          "tasks": node.get("tasks", 0), **dict.fromkeys(_COUNTS, 0)}
    return comps


def _system_component(info: Mapping[str, Any], component: str) -> Mapping[str, Any] | None:
    """The stats of a system component (``__acker``, ``__metrics_<name>`` ...): what its
    executors reported, or zero counts for one that only has errors (``__worker``: workers
    that failed to start); None when the topology has no such component."""
    if not component.startswith("__"):
        return None
    stats = (info.get("components") or {}).get(component)
    if stats is not None:
        return stats
    if (info.get("errors") or {}).get(component):
        return {"kind": "system", "executors": 0, "tasks": 0, **dict.fromkeys(_COUNTS, 0)}
    return None


def _topology_stats(info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``topologyStats``: per window, emitted and transferred over the user's components,
    acked, failed and the complete latency (weighted by acks) over its spouts."""
    comps = _user_components(info)
    out = []
    for window in WINDOWS:
        emitted = transferred = acked = failed = 0
        latency_weight = 0.0
        for stats in comps.values():
            w = _window_stats(stats, window)
            emitted += int(w.get("emitted", 0))
            transferred += int(w.get("transferred", 0))
            if stats.get("kind") == "spout":
                acked += int(w.get("acked", 0))
                failed += int(w.get("failed", 0))
                latency_weight += float(w.get("complete_latency_ms", 0.0)) * int(w.get("acked", 0))
        out.append({"window": window, "windowPretty": window_hint(window), "emitted": emitted,
                    "transferred": transferred, "acked": acked, "failed": failed,
                    "completeLatency": _ms(latency_weight / acked if acked else 0.0)})
    return out


def _sampling(info: Mapping[str, Any], component: str | None) -> float:
    """The share (%) of ``component``'s emits (every component's when None) recorded into
    the events logs now: the submitted ``topology.debug`` as changed at run time (squall
    debug, the debug action: ``component_debug`` of the topology info), as workers read it."""
    settings = settings_of(info.get("conf") or {}, info.get("component_debug"))
    if component is not None and component in settings:
        return settings[component]
    return settings.get(EVERY, 0.0)


def topology_page(info: Mapping[str, Any], window: str, now: float,
                  log_query: str = "") -> dict[str, Any]:
    """``/api/v1/topology/:id``: the topology, ``topologyStats`` (every window), ``spouts``
    and ``bolts`` (for ``window``), ``workers`` (with log links, ``log_query`` appended),
    ``configuration`` (redacted), and squall's ``errors`` (newest first: every user
    component's, and those of system components that have any, a failing metrics consumer's
    ``__metrics_<name>`` say) and ``graph``; ``debug`` and ``samplingPct``: whether every
    component's emits are sampled into the events logs now, and what share. Counts and
    stats are the user's components' only."""
    tid = str(info.get("id", ""))
    links = _worker_links(info, log_query)
    spouts: list[dict[str, Any]] = []
    bolts: list[dict[str, Any]] = []
    errors: dict[str, list[dict[str, Any]]] = {}
    loop_busy = _loop_busy(info, window)
    for comp, stats in sorted(_user_components(info).items()):
        errors[comp] = _errors(info, comp, now, log_query)
        row = _component_row(comp, stats, _executors_of(info, comp), window, errors[comp],
                             loop_busy)
        (spouts if stats.get("kind") == "spout" else bolts).append(row)
    for comp in sorted(info.get("errors") or {}):
        if comp not in errors and str(comp).startswith("__"):
            kept = _errors(info, comp, now, log_query)
            if kept:
                errors[comp] = kept
    workers = []
    for w in info.get("workers") or ():
        counts: dict[str, int] = {}
        for x in info.get("executors") or ():
            if x.get("worker") == w.get("worker") and not str(x.get("component")).startswith("__"):
                comp = str(x.get("component"))
                counts[comp] = counts.get(comp, 0) + len(x.get("tasks") or ())
        workers.append({"topologyId": tid, "topologyName": info.get("name", ""),
                        "supervisorId": w.get("supervisor_id", ""), "host": w.get("host", ""),
                        "port": w.get("port"), "uptime": pretty_duration(w.get("uptime_secs", 0)),
                        "uptimeSeconds": int(w.get("uptime_secs", 0)),
                        "executorsTotal": sum(1 for x in info.get("executors") or ()
                                              if x.get("worker") == w.get("worker")),
                        "componentNumTasks": counts,
                        "workerLogLink": links.get(str(w.get("worker")), "")})
    conf = redact(info.get("conf") or {})
    return {"id": tid, "name": info.get("name", ""), "owner": info.get("owner", ""),
            "status": str(info.get("status", "")).upper(),
            "statusReason": info.get("status_reason", ""),
            "uptime": pretty_duration(info.get("uptime_secs", 0)),
            "uptimeSeconds": int(info.get("uptime_secs", 0)),
            "tasksTotal": int(info.get("num_tasks", 0)),
            "workersTotal": int(info.get("num_workers", 0)),
            "executorsTotal": int(info.get("num_executors", 0)),
            "msgTimeout": conf.get("topology.message.timeout.secs"),
            "debug": _sampling(info, None) > 0, "samplingPct": _sampling(info, None),
            "window": window, "windowHint": window_hint(window),
            "topologyStats": _topology_stats(info), "spouts": spouts, "bolts": bolts,
            "workers": workers, "configuration": conf, "errors": errors,
            "graph": list(info.get("graph") or ())}


def component_page(info: Mapping[str, Any], component: str, window: str,
                   now: float, log_query: str = "") -> dict[str, Any] | None:
    """``/api/v1/topology/:id/component/:component`` (log links with ``log_query`` appended),
    a system component's too (its executors, stats and errors), with ``debug`` and
    ``samplingPct`` of that component now; None for a component the topology does not
    have."""
    stats = _user_components(info).get(component) or _system_component(info, component)
    if stats is None:
        return None
    tid = str(info.get("id", ""))
    kind = str(stats.get("kind", ""))
    execs = _executors_of(info, component)
    errors = _errors(info, component, now, log_query)
    per_window = []
    for name in WINDOWS:
        row = _component_row(component, stats, execs, name, errors, _loop_busy(info, name))
        per_window.append({"window": name, "windowPretty": window_hint(name),
                           **{k: v for k, v in row.items()
                              if not k.startswith(("error", "lastError"))}})
    links = _worker_links(info, log_query)
    loop_busy = _loop_busy(info, window)
    executor_stats = []
    for x in execs:
        w = _window_stats(x, window)
        node_port = str(x.get("worker", ""))
        row = {"id": _executor_id(x.get("executor", "")), "host": x.get("host", ""),
               "port": int(node_port.rpartition(":")[2] or 0) if ":" in node_port else None,
               "uptime": pretty_duration(x.get("uptime_secs", 0)),
               "uptimeSeconds": int(x.get("uptime_secs", 0)),
               "tasks": list(x.get("tasks") or ()),
               **{k: int(w.get(k, 0)) for k in _COUNTS},
               "workerLogLink": links.get(node_port, "")}
        if kind == "spout":
            row["completeLatency"] = _ms(w.get("complete_latency_ms"))
        else:
            row["executeLatency"] = _ms(w.get("execute_latency_ms"))
            row["processLatency"] = _ms(w.get("process_latency_ms"))
            row["capacity"] = f"{_executor_capacity(x, window, loop_busy):.3f}"
        _add_percentiles(row, w)
        executor_stats.append(row)
    return {"id": component, "encodedId": quote(component, safe=""),
            "name": info.get("name", ""), "topologyId": tid,
            "encodedTopologyId": quote(tid, safe=""), "user": info.get("owner", ""),
            "topologyStatus": str(info.get("status", "")).upper(),
            "componentType": kind, "debug": _sampling(info, component) > 0,
            "samplingPct": _sampling(info, component),
            "executors": int(stats.get("executors", 0)),
            "tasks": int(stats.get("tasks", 0)), "window": window,
            "windowHint": window_hint(window),
            ("spoutSummary" if kind == "spout" else "boltStats"): per_window,
            "executorStats": executor_stats, "componentErrors": errors}


def _rate(info: Mapping[str, Any], comps: Mapping[str, Mapping[str, Any]], comp: str,
          key: str, window: str) -> float:
    """Component ``comp``'s ``key`` count per second over ``window``: each executor's count
    over the part of the window it was up, summed (its counts restart with its worker: over
    the topology's uptime, a rebalance or a restarted worker 10 s before read a third of
    the rate). A component whose executors ``info`` does not list (or one that reports no
    uptime): its count over the part of the window the topology was up."""
    uptime = info.get("uptime_secs") or 0
    execs = _executors_of(info, comp)
    if not execs:
        span = _span(window, float(uptime))
        count = int(_window_stats(comps.get(comp) or {}, window).get(key, 0) or 0)
        return count / span if span > 0 else 0.0
    rate = 0.0
    for x in execs:
        up = x.get("uptime_secs")
        span = _span(window, float(uptime if up is None else up))
        if span > 0:
            rate += int(_window_stats(x, window).get(key, 0) or 0) / span
    return rate


def _edge_rate(info: Mapping[str, Any], comps: Mapping[str, Mapping[str, Any]], target: str,
               edge: Mapping[str, Any], window: str) -> float | None:
    """Tuples per second on one edge, where a counter holds that edge's tuples alone (see
    ``rate_from`` in :func:`squall.daemon.nimbus_info.topology_graph`): the source's
    ``transferred`` or the target's ``executed`` over the window; None otherwise."""
    source = edge.get("rate_from")
    if source == "source":
        return _rate(info, comps, str(edge.get("component")), "transferred", window)
    if source == "target":
        return _rate(info, comps, target, "executed", window)
    return None


def visualization(info: Mapping[str, Any], window: str) -> dict[str, Any]:
    """``/api/v1/topology/:id/visualization``: per component (Storm's ``:type``,
    ``:capacity``, ``:latency``, ``:inputs``), squall's ``:emitted`` and ``:rate`` (tuples the
    component emitted, on all its streams, and per second over ``window``: see
    :func:`_rate`), and per input its ``:rate``: tuples per second on that edge where squall
    counts them apart from the component's other traffic (the edge is its source's only
    subscription, or its target's only input), else null. The page writes the component's
    rate on the component and an edge's on the edge."""
    comps = _user_components(info)
    loop_busy = _loop_busy(info, window)
    out: dict[str, Any] = {}
    for node in info.get("graph") or ():
        cid = str(node.get("id"))
        stats = comps.get(cid) or {}
        w = _window_stats(stats, window)
        kind = str(node.get("kind", ""))
        latency = w.get("complete_latency_ms" if kind == "spout" else "execute_latency_ms", 0.0)
        execs = _executors_of(info, cid)
        out[cid] = {":type": kind, ":executors": int(node.get("executors", 0)),
                    ":capacity": max((_executor_capacity(x, window, loop_busy) for x in execs),
                                     default=0.0),
                    ":latency": float(latency or 0.0),
                    ":emitted": int(w.get("emitted", 0)),
                    ":rate": _rate(info, comps, cid, "emitted", window),
                    ":inputs": [{":component": i.get("component"), ":stream": i.get("stream"),
                                 ":grouping": i.get("grouping"),
                                 ":fields": list(i.get("fields") or ()),
                                 ":rate": _edge_rate(info, comps, cid, i, window)}
                                for i in node.get("inputs") or ()]}
    return out
