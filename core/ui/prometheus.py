"""``GET /metrics``: the cluster view in Prometheus's text exposition format (version 0.0.4).

Rendered from the sampler's newest sample (so a scrape costs no nimbus call): cluster gauges;
per executor of a user component (labels ``topology``, ``topology_id``, ``component``,
``kind``, ``executor``) the counters since that executor started; per user component the
10-minute latencies. Workers' own metrics endpoints are another matter (each worker's); this
is the cluster seen from the UI.

The counters are per executor because a worker counts from 0 again when it restarts: summed
over a component's executors, one worker's restart made the component's counter drop by what
that worker had counted, and Prometheus, which takes any drop for a restart from 0, counted the
other executors' totals a second time. Per executor, a drop is exactly that executor's restart;
``sum by (component) (rate(...))`` gives a component's rate.

While nimbus does not answer the sampler, the newest sample is served still (a series that
vanished would read as a restart, and its counters would count again once it came back), and
two gauges say how old it is: ``squall_ui_nimbus_up`` (0 while the sampler's tries fail) and
``squall_ui_last_sample_timestamp_seconds`` (when that sample was taken; 0 before the first).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["CONTENT_TYPE", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_COUNTERS = ("emitted", "transferred", "acked", "failed", "executed")
_LATENCIES = ("execute", "process", "complete")


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, Any]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: Any) -> str:
    return repr(float(value or 0.0)) if isinstance(value, float) else str(int(value or 0))


def _executor(key: Any) -> str:
    """An executor's id as its worker's metrics endpoint labels it, the key of its beat:
    ``"[2, 3]"`` (a key given as a list too)."""
    if isinstance(key, (list, tuple)) and len(key) == 2:
        return f"[{key[0]}, {key[1]}]"
    return str(key)


def render(cluster: Any, topologies: Iterable[Mapping[str, Any]], *, nimbus_up: bool = False,
           sampled_at: float = 0.0) -> str:
    """The exposition text for ``cluster`` (a ClusterInfo, or None before the first sample)
    and the nimbus topology infos ``topologies``, sampled at ``sampled_at`` (0: never);
    ``nimbus_up``: whether the sampler's last try got its sample."""
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str,
               samples: Iterable[tuple[Mapping[str, Any], Any]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            lines.append(f"{name}{_labels(labels) if labels else ''} {_number(value)}")

    family("squall_ui_nimbus_up", "gauge",
           "1 when the UI's last try to sample the cluster from nimbus succeeded, else 0 "
           "(the other series then repeat the newest sample).", [({}, int(bool(nimbus_up)))])
    family("squall_ui_last_sample_timestamp_seconds", "gauge",
           "When the newest sample was taken, in seconds since the epoch (0: none yet).",
           [({}, float(sampled_at))])
    if cluster is not None:
        slots = sum(len(s.ports) for s in cluster.supervisors)
        used = sum(len(s.used_ports) for s in cluster.supervisors)
        family("squall_cluster_supervisors", "gauge", "Supervisors registered.",
               [({}, len(cluster.supervisors))])
        family("squall_cluster_slots", "gauge", "Worker slots of all supervisors.",
               [({"state": "used"}, used), ({"state": "free"}, slots - used)])
    infos = list(topologies)
    family("squall_cluster_topologies", "gauge", "Topologies shown.", [({}, len(infos))])
    family("squall_topology_workers", "gauge", "Workers of the topology.",
           [({"topology": i.get("name", ""), "topology_id": i.get("id", ""),
              "status": i.get("status", "")}, int(i.get("num_workers") or 0)) for i in infos])
    rows = []
    counts = []
    for info in infos:
        topo = {"topology": info.get("name", ""), "topology_id": info.get("id", "")}
        for comp, stats in sorted((info.get("components") or {}).items()):
            if str(comp).startswith("__"):
                continue
            labels = {**topo, "component": comp, "kind": stats.get("kind", "")}
            rows.append((labels, (stats.get("windows") or {}).get("600") or stats))
        for x in info.get("executors") or ():
            comp = str(x.get("component", ""))
            if comp.startswith("__"):
                continue
            labels = {**topo, "component": comp, "kind": x.get("kind", ""),
                      "executor": _executor(x.get("executor", ""))}
            total = x if "emitted" in x else (x.get("windows") or {}).get(":all-time") or {}
            counts.append((labels, total))
    counts.sort(key=lambda row: tuple(row[0].values()))
    for counter in _COUNTERS:
        family(f"squall_component_{counter}_total", "counter",
               f"Tuples {counter} by the executor's tasks since it started.",
               [(labels, int(total.get(counter) or 0)) for labels, total in counts])
    family("squall_component_latency_ms", "gauge",
           "Latency over the last 10 minutes in milliseconds: the mean, and the 50th and 99th "
           "percentiles where the workers measure them (the 99th from 100 samples up).",
           [({**labels, "latency": name, "stat": stat}, float(recent[key] or 0.0))
            for labels, recent in rows for name in _LATENCIES
            for stat, key in (("mean", f"{name}_latency_ms"), ("p50", f"{name}_latency_p50_ms"),
                              ("p99", f"{name}_latency_p99_ms")) if key in recent])
    return "\n".join(lines) + "\n"
