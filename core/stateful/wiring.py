"""Wiring the checkpoint path into a topology, when ``create_topology()`` finds a stateful
bolt.

The checkpoint path is every stateful bolt and every bolt upstream of one. The builder adds
the ``__checkpoint`` spout (:class:`~squall.stateful.checkpoint.CheckpointSpout`); each bolt
on the path subscribes with ``all`` grouping to the ``__checkpoint`` stream of each of its
upstream bolts, or of the ``__checkpoint`` spout where it reads from a spout, and declares a
``__checkpoint`` stream of its own to forward checkpoints on. So every task of the path gets
each checkpoint once from every input task (the barrier it aligns on).

Refused with :class:`~squall.errors.TopologyError`: a stateful bolt in a topology without
ackers (checked here when ``create_topology(conf)`` is given ``topology.acker.executors: 0``,
and again at submit by :func:`check_ackers`) or with a checkpoint interval not below the
message timeout (checked the same way), a cycle on the path, a stateful bolt without
``process`` or that is also a windowed bolt, and a bolt on the path that is windowed, is a
multi-lang bolt (checkpoints cannot pass through its subprocess) or runs on a thread of its
own.
"""
from __future__ import annotations

import sys
from typing import Any

from squall.api.topology import ComponentSpec, Input, Topology
from squall.api.tuple import Stream
from squall.errors import TopologyError
from squall.stateful.checkpoint import CHECKPOINT, FIELDS

__all__ = ["check_ackers", "check_classes", "checkpoint_inputs", "checkpointed",
           "stateful_components", "wire"]

CHECKPOINT_REF = "squall.stateful.checkpoint:CheckpointSpout"
INTERVAL_KEY = "topology.state.checkpoint.interval.ms"
TIMEOUT_KEY = "topology.message.timeout.secs"


def _is_stateful(spec: ComponentSpec) -> bool:
    from squall.stateful.bolt import StatefulBolt
    return spec.kind == "bolt" and isinstance(spec.cls, type) and issubclass(spec.cls,
                                                                              StatefulBolt)


def _is_multilang(cls: Any) -> bool:
    """Whether ``cls`` runs in a subprocess (a ShellBolt, as streamparse shell components
    are): only when squall.multilang is imported can a class be one."""
    multilang = sys.modules.get("squall.multilang.bolt")
    return multilang is not None and isinstance(cls, type) and issubclass(cls,
                                                                          multilang.ShellBolt)


def stateful_components(topology: Topology) -> list[str]:
    """The ids of ``topology``'s stateful bolts, sorted."""
    return [cid for cid, spec in sorted(topology.components.items()) if _is_stateful(spec)]


def checkpointed(spec: ComponentSpec) -> bool:
    """Whether ``spec`` is a bolt on the checkpoint path (it gets checkpoint tuples)."""
    return spec.kind == "bolt" and any(i.stream == CHECKPOINT for i in spec.inputs)


def checkpoint_inputs(topology: Topology, component_id: str) -> list[str]:
    """The components whose ``__checkpoint`` stream ``component_id`` subscribes to."""
    spec = topology.components[component_id]
    return sorted({i.component for i in spec.inputs if i.stream == CHECKPOINT})


def check_ackers(topology: Topology | dict[str, ComponentSpec], conf: dict[str, Any]) -> None:
    """TopologyError when the topology has a checkpoint path and ``conf`` has no ackers, or a
    checkpoint interval that is not positive or not below the message timeout."""
    components = topology.components if isinstance(topology, Topology) else topology
    if CHECKPOINT not in components:
        return
    interval = conf.get(INTERVAL_KEY, 1000)
    if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
        raise TopologyError(f"{INTERVAL_KEY} must be a positive number of milliseconds, got "
                            f"{interval!r}")
    timeout = conf.get(TIMEOUT_KEY)
    if timeout is None:
        from squall import config
        timeout = config.defaults().get(TIMEOUT_KEY) or 30
    if conf.get("topology.enable.message.timeouts", True) and \
            isinstance(timeout, (int, float)) and interval >= timeout * 1000:
        # a stateful bolt's inputs are acked when the checkpoint after them commits: up to
        # an interval later. Timed out first, they would be replayed while their effect is
        # already in the state the next checkpoint commits, and counted twice
        raise TopologyError(f"{INTERVAL_KEY} ({interval} ms) must be below {TIMEOUT_KEY} "
                            f"({timeout} s): a stateful bolt's inputs are acked only when "
                            "the next checkpoint commits, and would time out and be "
                            "replayed first")
    if conf.get("topology.acker.executors", None) == 0:
        stateful = sorted(c for c, s in components.items() if _is_stateful(s)
                          or (checkpointed(s) and s.cls is None))
        raise TopologyError(
            f"stateful bolts ({', '.join(stateful) or 'the checkpoint path'}) need ackers: "
            "their inputs are acked when a checkpoint commits; set topology.acker.executors "
            "to at least 1 (or leave it null)")


def check_classes(specs: dict[str, ComponentSpec]) -> None:
    """Refuse a stateful bolt that is also a windowed bolt, or that defines no ``process``:
    called by the builder before the windowed bolts' own checks, so that a class both
    stateful and windowed hears that, not what a windowed bolt may not define."""
    from squall.stateful.bolt import StatefulBolt
    from squall.windowing.topology import is_windowed
    for cid, spec in sorted(specs.items()):
        if not _is_stateful(spec):
            continue
        cls = spec.cls
        if is_windowed(cls):
            raise TopologyError(f"bolt {cid!r} is both a StatefulBolt and a WindowedBolt: "
                                "stateful windowing (Storm's IStatefulWindowedBolt) is not "
                                "supported; use a WindowedBolt feeding a StatefulBolt")
        if getattr(cls, "process", None) is getattr(StatefulBolt, "process", None):
            raise TopologyError(f"stateful bolt {cid!r}: {cls.__qualname__} must define "  # type: ignore[union-attr]
                                "process() (stateful bolts take their tuples one by one)")


def wire(specs: dict[str, ComponentSpec], conf: dict[str, Any] | None) -> None:
    """Add the checkpoint path to ``specs`` (validated user components, their classes
    passed by :func:`check_classes`) in place, when one of them is a stateful bolt; see the
    module docstring."""
    stateful = [cid for cid, spec in sorted(specs.items()) if _is_stateful(spec)]
    if not stateful:
        return
    from squall.windowing.topology import is_windowed
    path = _upstream_closure(specs, stateful)
    _check_acyclic(specs, path)
    for cid in sorted(path):
        if _is_multilang(specs[cid].cls):
            raise TopologyError(f"bolt {cid!r} is a multi-lang bolt and cannot be upstream of a "
                                f"stateful bolt ({', '.join(stateful)}): checkpoints cannot "
                                "pass through its subprocess; place it downstream, or feed "
                                "the stateful bolt from other components")
        if is_windowed(specs[cid].cls):
            raise TopologyError(f"bolt {cid!r} is a WindowedBolt on the checkpoint path of a "
                                f"stateful bolt ({', '.join(stateful)}): windowed bolts do not "
                                "pass checkpoints on; keep them off a stateful bolt's inputs")
        if getattr(specs[cid].cls, "dedicated_thread", False) or \
                specs[cid].config.get("topology.executor.dedicated.thread"):
            raise TopologyError(f"bolt {cid!r} is on the checkpoint path of a stateful bolt "
                                "and cannot run on a thread of its own (dedicated_thread)")
    stream = Stream(FIELDS, name=CHECKPOINT)
    for cid in sorted(path):
        spec = specs[cid]
        sources = sorted({CHECKPOINT if specs[i.component].kind == "spout" else i.component
                          for i in spec.inputs})
        spec.inputs = spec.inputs + [Input(src, CHECKPOINT, "all") for src in sources]
        spec.streams = {**spec.streams, CHECKPOINT: stream}
    from squall.stateful.checkpoint import CheckpointSpout
    specs[CHECKPOINT] = ComponentSpec(id=CHECKPOINT, kind="spout", cls=CheckpointSpout,
                                      ref=CHECKPOINT_REF, parallelism=1, num_tasks=1,
                                      streams={CHECKPOINT: stream})
    check_ackers(specs, conf or {})


def _upstream_closure(specs: dict[str, ComponentSpec], start: list[str]) -> set[str]:
    """``start`` and every bolt upstream of them."""
    path: set[str] = set()
    todo = list(start)
    while todo:
        cid = todo.pop()
        if cid in path:
            continue
        path.add(cid)
        todo.extend(i.component for i in specs[cid].inputs
                    if specs[i.component].kind == "bolt")
    return path


def _check_acyclic(specs: dict[str, ComponentSpec], path: set[str]) -> None:
    """TopologyError naming a cycle among the bolts of ``path`` (its barriers would wait
    for themselves)."""
    state: dict[str, int] = {}          # 1: being visited, 2: done

    def visit(cid: str, trail: list[str]) -> None:
        state[cid] = 1
        for up in sorted({i.component for i in specs[cid].inputs if i.component in path}):
            if state.get(up) == 1:
                cycle = trail[trail.index(up):] + [up] if up in trail else [cid, up]
                raise TopologyError("the checkpoint path of a stateful bolt has a cycle ("
                                    f"{' <- '.join(cycle)}); stateful bolts need an acyclic "
                                    "upstream")
            if state.get(up) is None:
                visit(up, trail + [up])
        state[cid] = 2

    for cid in sorted(path):
        if state.get(cid) is None:
            visit(cid, [cid])
