"""What any nimbus answers, leader or standby: cluster and topology summaries, a topology's
info, its package files.

Built from ZooKeeper (``/storms``, ``/assignments``, ``/supervisors``, ``/nimbuses``,
``/workerbeats``, ``/errors``) and the local code store (task counts), so a standby answers
too; only a package file a standby lacks sends the caller to the leader. The topology info's
shape matches ``LocalCluster.get_topology_info``. Called on gRPC handler threads; blocks on the
state store and the file system.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from squall.api.topology import Topology
from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_leader import Leadership, NotLeaderError
from squall.errors import BeingKilledError, NotAliveError
from squall.runtime.errors import death_reason
from squall.security import redact
from squall.state.cluster_state import ClusterState, beat_key

COUNTERS = ("emitted", "transferred", "acked", "failed", "executed")
#: a worker start failure this recent, with no beat of that worker since, is the topology's
#: status reason (a failing slot is relaunched at least every minute: see supervisor_backoff)
FAILURE_RECENT_SECS = 150


def start_failure_reason(errors: dict[str, list[dict[str, Any]]],
                         beats: dict[str, dict[str, Any]], now: float,
                         assigned: Collection[tuple[str, int]]) -> str:
    """Why the topology does not run (``""`` if it does): its newest worker start failure
    on one of the ``assigned`` slots (``(supervisor id, port)`` of its assignment now) when
    that is recent and the worker has not beaten since. A failure on a slot nimbus moved the
    executors away from says nothing about where they run now."""
    from squall.runtime.errors import WORKER_COMPONENT
    for entry in reversed(errors.get(WORKER_COMPONENT) or []):
        if not entry.get("start_failure"):
            continue
        at = float(entry.get("time_secs") or 0)
        if now - at > FAILURE_RECENT_SECS:
            return ""
        slot = (str(entry.get("node")), int(entry.get("port") or 0))
        if slot not in assigned:
            continue
        beat = beats.get(beat_key(*slot)) or {}
        if float(beat.get("time_secs") or 0) >= at:
            continue
        lines = str(entry.get("error") or "").strip().splitlines()
        return (f"workers fail to start ({entry.get('host') or entry.get('node')}:"
                f"{entry.get('port')}): {lines[-1] if lines else 'unknown error'}")
    return ""


def live_topology(state: ClusterState, name: str) -> tuple[str, dict[str, Any]]:
    """``(topology id, /storms record)`` of the topology named ``name``; NotAliveError saying
    so when it is in its kill wait, or listing the running ones when there is none."""
    tid = state.find_topology_id(name)
    base = state.get_storm(tid) if tid else None
    if tid is None or base is None:
        dying = state.find_topology_id(name, killed=True)
        base = state.get_storm(dying) if dying else None
        if base is not None:
            raise BeingKilledError(f"{being_killed(name, base)}; only kill acts on it now "
                                "(kill --wait 0 ends the wait)")
        raise not_running(name, state.storms().values())
    return tid, base


def not_running(name: str, bases: Iterable[Mapping[str, Any]]) -> NotAliveError:
    """The NotAliveError for a name none of the topologies ``bases`` (``/storms`` records)
    has: it lists the running ones, and those in their kill wait apart (they run no more,
    yet hold their name and their slots until it ends)."""
    named = sorted((str(b.get("name", "?")), b.get("status") == "killed") for b in bases)
    running = [n for n, killed in named if not killed]
    dying = [n for n, killed in named if killed]
    return NotAliveError(f"no topology named {name!r} is running; running: "
                         f"{', '.join(running) or 'none'}"
                         + (f"; being killed: {', '.join(dying)}" if dying else ""))


def killable_topology(state: ClusterState, name: str) -> tuple[str, dict[str, Any]]:
    """Like :func:`live_topology`, but a topology in its kill wait is found too: a second
    kill replaces that wait, as in Storm."""
    tid = state.find_topology_id(name, killed=True)
    base = state.get_storm(tid) if tid else None
    if tid is None or base is None:
        return live_topology(state, name)       # raises, listing the running ones
    return tid, base


def being_killed(name: str, base: Mapping[str, Any]) -> str:
    """``topology NAME is being killed (N s of its kill wait left)`` for a killed record (by
    this nimbus's clock, never more than the wait asked for)."""
    left = max(0.0, float(base.get("kill_time") or 0) - time.time())
    if base.get("kill_wait") is not None:
        left = min(left, float(base["kill_wait"]))
    return f"topology {name!r} is being killed ({left:.0f} s of its kill wait left)"


def topology_graph(topology: Topology,
                   executors: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """The user's components (system ones left out), each ``{"id", "kind", "executors",
    "tasks", "inputs": [{"component", "stream", "grouping", "fields", "rate_from"}]}``: what
    the UI draws (inputs from system components and on system streams, ``__checkpoint``, left
    out). ``executors``: the current executor counts (``component_executors`` of the
    ``/storms`` record, which a rebalance changes); the package's, from submit time, where
    absent.

    An input's ``rate_from`` says which counter holds exactly the tuples that input carries
    (workers count per task, not per stream): ``"source"`` when it is the only subscription to
    its source component, whatever the stream (the source's ``transferred``: one per tuple
    delivered to a task), else ``"target"`` when it is the only input of its bolt (the bolt's
    ``executed``, which counts no tick tuples), else None: no counter holds that edge alone."""
    subscriptions: dict[str, int] = {}
    for spec in topology.components.values():
        for i in spec.inputs:
            subscriptions[i.component] = subscriptions.get(i.component, 0) + 1
    out = []
    for cid, spec in sorted(topology.components.items()):
        if cid.startswith("__"):
            continue
        count = (executors or {}).get(cid)
        alone = len(spec.inputs) == 1
        inputs = []
        for i in spec.inputs:
            if i.component.startswith("__") or i.stream.startswith("__"):
                continue
            rate_from = ("source" if subscriptions.get(i.component) == 1
                         else "target" if alone else None)
            inputs.append({"component": i.component, "stream": i.stream,
                           "grouping": i.grouping, "fields": list(i.fields),
                           "rate_from": rate_from})
        out.append({"id": cid, "kind": spec.kind,
                    "executors": min(int(count), spec.num_tasks) if count else spec.parallelism,
                    "tasks": spec.num_tasks, "inputs": inputs})
    return out


def logviewer_ports(supervisors: dict[str, dict[str, Any]]) -> dict[str, int]:
    """supervisor id -> the ``logviewer_port`` its ``/supervisors/<id>`` record publishes
    (supervisors that publish none are left out)."""
    out = {}
    for sid, info in supervisors.items():
        port = info.get("logviewer_port")
        if port:
            out[sid] = int(port)
    return out


class NimbusReads:
    """The read side of nimbus's API over ``state``, ``code`` and ``leadership`` (which only
    names the leader)."""

    def __init__(self, state: ClusterState, code: CodeStore, leadership: Leadership) -> None:
        self._state = state
        self._code = code
        self._leadership = leadership

    def cluster_summary(self, visible: Callable[[Mapping[str, Any]], bool] | None = None
                        ) -> dict[str, Any]:
        """``topologies`` (see :meth:`topology_summaries`; only those whose ``/storms`` record
        ``visible`` accepts, when given), ``supervisors`` (``id``,
        ``hostname``, ``ports``, ``used_ports``, ``uptime_secs``, ``logviewer_port``: 0 for
        none), ``nimbuses`` (sorted ``host:port``) and ``leader``."""
        state = self._state
        used: dict[str, set[int]] = {}
        for a in state.assignments().values():
            for node, port in (a.get("executor_node_port") or {}).values():
                used.setdefault(str(node), set()).add(int(port))
        supervisors = [{"id": sid, "hostname": str(info.get("hostname", "")),
                        "ports": [int(p) for p in info.get("ports") or ()],
                        "used_ports": sorted(used.get(sid, ())),
                        "uptime_secs": int(info.get("uptime_secs") or 0),
                        "logviewer_port": int(info.get("logviewer_port") or 0)}
                       for sid, info in sorted(state.supervisors().items())]
        return {"topologies": self.topology_summaries(visible), "supervisors": supervisors,
                "nimbuses": sorted(state.nimbuses()),
                "leader": self._leadership.leader_address()}

    def topology_summaries(self, visible: Callable[[Mapping[str, Any]], bool] | None = None
                           ) -> list[dict[str, Any]]:
        """One entry per topology (that ``visible`` accepts), by id: ``name``, ``id``,
        ``status``, ``status_reason``, ``num_workers``, ``num_executors``, ``num_tasks``,
        ``uptime_secs``."""
        out = []
        now = time.time()
        assignments = self._state.assignments()
        for tid, base in sorted(self._state.storms().items()):
            if visible is not None and not visible(base):
                continue
            enp = (assignments.get(tid) or {}).get("executor_node_port") or {}
            loaded = self._code.topology_of(tid)
            errors = self._state.errors(tid)
            reason = (base.get("status_reason") or start_failure_reason(
                errors, self._state.worker_beats(tid), now, _slots(enp))
                or death_reason(errors, now))
            out.append({"name": base.get("name", ""), "id": tid, "status": base.get("status", ""),
                        "status_reason": reason,
                        "num_workers": len({tuple(v) for v in enp.values()}),
                        "num_executors": len(enp),
                        "num_tasks": len(loaded[1].all_tasks()) if loaded else 0,
                        "uptime_secs": int(now - float(base.get("launch_time") or now))})
        return out

    def topology_info(self, name: str) -> dict[str, Any]:
        """The status, owner, workers that beat (with their supervisor's ``logviewer_port``,
        None where it publishes none) and every assigned worker (``assigned_workers``: where
        each runs, beating or not), per-component counters (and stats windows), per-executor stats, newest
        errors, components in flow order (``flow``), graph (see :func:`topology_graph`),
        run-time debug settings (``component_debug``, as ``squall debug`` left them) and
        redacted conf of the topology named
        ``name``, running or in its kill wait; NotAliveError if there is none."""
        # one in its kill wait too (status killed), so the operator can watch it drain
        tid, base = killable_topology(self._state, name)
        state = self._state
        assignment = state.get_assignment(tid) or {}
        enp = assignment.get("executor_node_port") or {}
        beats = state.worker_beats(tid)
        components: dict[str, dict[str, Any]] = {}
        executors = []
        windows: dict[str, list[Any]] = {}
        workers = []
        assigned = []     # every assigned slot, beating or not (its log says why it is not)
        logviewers = logviewer_ports(state.supervisors())
        for node, port in sorted(_slots(enp)):
            assigned.append({"worker": f"{node}:{port}", "supervisor_id": node, "port": port,
                             "host": (assignment.get("node_host") or {}).get(node, ""),
                             "logviewer_port": logviewers.get(node)})
            beat = beats.get(beat_key(node, port)) or {}
            if beat:
                workers.append({"worker": f"{node}:{port}", "supervisor_id": node,
                                "port": port,
                                "host": (assignment.get("node_host") or {}).get(node, ""),
                                "logviewer_port": logviewers.get(node),
                                "uptime_secs": beat.get("uptime_secs", 0),
                                # when the worker took the counters of this beat (its clock)
                                "time_secs": float(beat.get("time_secs") or 0),
                                **(beat.get("worker") or {})})
        for key, (node, port) in sorted(enp.items()):
            beat = beats.get(beat_key(str(node), int(port))) or {}
            st = (beat.get("executors") or {}).get(key)
            if st is None:
                continue
            st = {**st, "executor": key, "worker": f"{node}:{port}",
                  "host": (assignment.get("node_host") or {}).get(node, "")}
            pending = (beat.get("spout_pending") or {}).get(key)
            if pending is not None:          # spouts: tracked tuples in flight
                st["pending"] = int(pending)
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
        loaded = self._code.topology_of(tid)
        launch = float(base.get("launch_time") or time.time())
        from squall.runtime.stats import stall_reason
        errors = state.errors(tid)
        reason = (base.get("status_reason")
                  or start_failure_reason(errors, beats, time.time(), _slots(enp))
                  or death_reason(errors, time.time())
                  or stall_reason(executors))
        return {"name": base.get("name", ""), "id": tid, "status": base.get("status", ""),
                "status_reason": reason,
                "uptime_secs": int(time.time() - launch),
                "num_workers": len({tuple(v) for v in enp.values()}),
                "num_executors": len(enp),
                "num_tasks": len(loaded[1].all_tasks()) if loaded else 0,
                "owner": str(base.get("owner") or ""),
                # squall debug's run-time sampling (see squall.runtime.event_log.settings_of)
                "component_debug": dict(base.get("component_debug") or {}),
                "components": components, "executors": executors, "workers": workers,
                "assigned_workers": assigned,
                "flow": _flow(loaded[1]) if loaded else sorted(components),
                "errors": errors,
                "graph": (topology_graph(loaded[1], base.get("component_executors"))
                          if loaded else []),
                "conf": redact(loaded[0]) if loaded else {}}

    def package_file(self, topology_id: str, file: str) -> Path:
        """The path of one file of ``topology_id``'s package. TopologyError for a name that is
        not a package file; when the package is missing, NotLeaderError on a standby (the
        leader has it) and NotAliveError on the leader."""
        path = self._code.package_file(topology_id, file)
        if path is None:
            if not self._leadership.is_leader:
                raise NotLeaderError(self._leadership.leader_address())
            raise NotAliveError(f"nimbus has no package for topology {topology_id!r}")
        return path


def _slots(executor_node_port: Mapping[str, Any]) -> set[tuple[str, int]]:
    """``(supervisor id, port)`` of every slot an assignment's ``executor_node_port`` uses."""
    return {(str(node), int(port)) for node, port in executor_node_port.values()}


def _flow(topology: Any) -> list[str]:
    """The topology's components in flow order (``squall monitor`` shows them so)."""
    from squall.daemon.topology_flow import flow_order, topology_inputs
    return flow_order(topology_inputs(topology))
