"""``GetTopologyInfo``: a topology's status, workers, per-component counters and errors.

Built from ZooKeeper only (``/storms``, ``/assignments``, ``/workerbeats``, ``/errors``), so any
nimbus can answer. The shape matches ``LocalCluster.get_topology_info``. Called on a gRPC
handler thread; blocks on the state store.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from squall.state.cluster_state import beat_key

if TYPE_CHECKING:
    from squall.daemon.nimbus import Nimbus

COUNTERS = ("emitted", "transferred", "acked", "failed", "executed")


def topology_info(nimbus: Nimbus, tid: str, base: dict[str, Any]) -> dict[str, Any]:
    state = nimbus.state
    assignment = state.get_assignment(tid) or {}
    enp = assignment.get("executor_node_port") or {}
    beats = state.worker_beats(tid)
    components: dict[str, dict[str, Any]] = {}
    executors = []
    windows: dict[str, list[Any]] = {}
    workers = []
    for node, port in sorted({(str(n), int(p)) for n, p in enp.values()}):
        beat = beats.get(beat_key(node, port)) or {}
        if beat:
            workers.append({"worker": f"{node}:{port}",
                            "host": (assignment.get("node_host") or {}).get(node, ""),
                            "uptime_secs": beat.get("uptime_secs", 0),
                            **(beat.get("worker") or {})})
    for key, (node, port) in sorted(enp.items()):
        beat = beats.get(beat_key(str(node), int(port))) or {}
        st = (beat.get("executors") or {}).get(key)
        if st is None:
            continue
        st = {**st, "executor": key, "worker": f"{node}:{port}",
              "host": (assignment.get("node_host") or {}).get(node, "")}
        executors.append(st)
        comp = components.setdefault(st.get("component", "?"), {
            "kind": st.get("kind", ""), "executors": 0, "tasks": 0,
            **dict.fromkeys(COUNTERS, 0)})
        comp["executors"] += 1
        comp["tasks"] += len(st.get("tasks") or ())
        if st.get("windows"):
            windows.setdefault(st.get("component", "?"), []).append(st["windows"])
        for counter in COUNTERS:
            comp[counter] += int(st.get(counter) or 0)
    from squall.metrics.stats import aggregate
    for comp_id, snaps in windows.items():
        components[comp_id]["windows"] = aggregate(snaps)
    loaded = nimbus.topology_of(tid)
    launch = float(base.get("launch_time") or time.time())
    return {"name": base.get("name", ""), "id": tid, "status": base.get("status", ""),
            "status_reason": base.get("status_reason") or "",
            "uptime_secs": int(time.time() - launch),
            "num_workers": len({tuple(v) for v in enp.values()}),
            "num_executors": len(enp),
            "num_tasks": len(loaded[1].all_tasks()) if loaded else 0,
            "components": components, "executors": executors, "workers": workers,
            "errors": state.errors(tid)}
