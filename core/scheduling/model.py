"""The immutable inputs of scheduling: executors, slots, topologies and supervisors.

These are plain values built by nimbus (from ZooKeeper state) or LocalCluster and handed to a
scheduler inside a :class:`~squall.scheduling.cluster.Cluster`. Import them from
:mod:`squall.scheduling.cluster`, which re-exports everything here.

>>> e = ExecutorDetails(3, 4)
>>> str(e), ExecutorDetails.parse("[3, 4]") == e
('[3, 4]', True)
>>> str(WorkerSlot("sup-1", 6700))
'sup-1:6700'
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from squall.errors import ConfigError
from squall.scheduling.resources import Resources, component_conf, component_resources

__all__ = [
    "ExecutorDetails",
    "SupervisorDetails",
    "Topologies",
    "TopologyDetails",
    "WorkerSlot",
    "details_from_topology",
    "split_tasks",
]

_EXECUTOR_RE = re.compile(r"^\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]\s*$")


class ExecutorDetails(NamedTuple):
    """An executor: the contiguous task range ``[start_task, end_task]`` (both inclusive).

    Hashable and ordered by ``(start_task, end_task)``; ``str()`` gives the ``"[s, e]"`` key
    used in ``/assignments`` (``executor_node_port``) and worker stats.
    """

    start_task: int
    end_task: int

    def __str__(self) -> str:
        return f"[{self.start_task}, {self.end_task}]"

    @property
    def tasks(self) -> range:
        return range(self.start_task, self.end_task + 1)

    @classmethod
    def parse(cls, text: str) -> ExecutorDetails:
        """Read the ``"[s, e]"`` form back; raises :class:`ConfigError` if malformed."""
        match = _EXECUTOR_RE.match(text)
        if match is None:
            raise ConfigError(f"bad executor key {text!r}; expected '[start, end]'")
        return cls(int(match.group(1)), int(match.group(2)))


class WorkerSlot(NamedTuple):
    """A worker slot: one port of one supervisor (``node_id`` is the supervisor id)."""

    node_id: str
    port: int

    def __str__(self) -> str:
        return f"{self.node_id}:{self.port}"


def split_tasks(first_task: int, num_tasks: int, num_executors: int) -> list[ExecutorDetails]:
    """Split ``num_tasks`` consecutive task ids starting at ``first_task`` into at most
    ``num_executors`` contiguous executors whose sizes differ by at most one (larger first).

    >>> [str(e) for e in split_tasks(1, 5, 2)]
    ['[1, 3]', '[4, 5]']
    """
    if num_tasks <= 0:
        return []
    n = max(1, min(num_executors, num_tasks))
    base, extra = divmod(num_tasks, n)
    out, start = [], first_task
    for i in range(n):
        size = base + (1 if i < extra else 0)
        out.append(ExecutorDetails(start, start + size - 1))
        start += size
    return out


@dataclass(frozen=True, eq=False)
class TopologyDetails:
    """What a scheduler knows about one topology.

    Attributes:
      id: the topology id (``name-counter-launchtime``).
      name: the user's topology name.
      conf: the merged topology configuration (read-only view).
      num_workers: workers requested (``topology.workers`` or a rebalance's ``--workers``).
      executors: every executor -> its component id (system components such as ``__acker``
        included).
      component_resources: component id -> what ONE executor of it needs; a component not
        listed needs the ``topology.component.*`` defaults from ``conf`` (see
        :func:`squall.scheduling.resources.component_resources`).
      launch_time: seconds since the epoch; older topologies are scheduled first.
      rebalanced: True in the first pass after ``squall rebalance`` changed this topology's
        workers or executors. Its surviving placement is in the cluster (executors whose task
        range did not change keep their slots); the scheduler should bring the worker count to
        ``num_workers`` moving as few executors as it can (see
        :mod:`squall.scheduling.rebalance`). False in every other pass; there, a topology
        running on fewer workers than asked for (the cluster had no more free slots) should
        be spread out in the same way once slots are free (``Cluster.needs_scheduling`` says
        so), after the topologies with homeless executors had their turn.
    """

    id: str
    name: str
    conf: Mapping[str, Any]
    num_workers: int
    executors: Mapping[ExecutorDetails, str]
    component_resources: Mapping[str, Resources] = field(default_factory=dict)
    launch_time: float = 0.0
    rebalanced: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "conf", MappingProxyType(dict(self.conf)))
        set_(self, "executors", MappingProxyType(
            {ExecutorDetails(*e): c for e, c in sorted(self.executors.items())}))
        set_(self, "component_resources", MappingProxyType(dict(self.component_resources)))
        set_(self, "num_workers", int(self.num_workers))
        set_(self, "_default_resources", component_resources(self.conf))
        seen: set[int] = set()
        for e in self.executors:
            if e.start_task > e.end_task or seen.intersection(e.tasks):
                raise ConfigError(f"topology {self.id}: executor {e} is empty or overlaps another")
            seen.update(e.tasks)

    @property
    def wanted_workers(self) -> int:
        """The workers it can use: ``num_workers``, at most one per executor, at least 1."""
        return max(1, min(self.num_workers, len(self.executors)))

    def resources_for_component(self, component_id: str) -> Resources:
        """What one executor of ``component_id`` needs."""
        got = self.component_resources.get(component_id)
        return got if got is not None else self._default_resources  # type: ignore[attr-defined]

    def resources_for(self, executor: ExecutorDetails) -> Resources:
        """What ``executor`` needs; raises KeyError for an executor not in this topology."""
        return self.resources_for_component(self.executors[executor])

    def component_executors(self) -> dict[str, list[ExecutorDetails]]:
        """component id -> its executors, sorted."""
        out: dict[str, list[ExecutorDetails]] = {}
        for e, comp in self.executors.items():
            out.setdefault(comp, []).append(e)
        return out

    def total_resources(self) -> Resources:
        """The sum of every executor's needs."""
        total = Resources()
        for e in self.executors:
            total = total + self.resources_for(e)
        return total

    @property
    def isolated_hosts(self) -> tuple[str, ...]:
        """``topology.isolated.hosts``: hosts this topology must run on (empty: anywhere)."""
        hosts = self.conf.get("topology.isolated.hosts") or ()
        if isinstance(hosts, str):
            hosts = [h for h in hosts.split(",") if h.strip()]
        return tuple(sorted(str(h).strip() for h in hosts))

    def __repr__(self) -> str:
        return (f"TopologyDetails(id={self.id!r}, num_workers={self.num_workers}, "
                f"executors={len(self.executors)}{', rebalanced' if self.rebalanced else ''})")


class Topologies:
    """The topologies to schedule, by id. Iterates in scheduling order: oldest
    ``launch_time`` first, then by id."""

    def __init__(self, topologies: Iterable[TopologyDetails] = ()) -> None:
        self._by_id: dict[str, TopologyDetails] = {}
        for t in sorted(topologies, key=lambda t: (t.launch_time, t.id)):
            if t.id in self._by_id:
                raise ConfigError(f"topology id {t.id!r} given twice")
            self._by_id[t.id] = t

    def get(self, topology_id: str) -> TopologyDetails | None:
        return self._by_id.get(topology_id)

    def __getitem__(self, topology_id: str) -> TopologyDetails:
        return self._by_id[topology_id]

    def by_name(self, name: str) -> TopologyDetails | None:
        return next((t for t in self._by_id.values() if t.name == name), None)

    def ids(self) -> list[str]:
        return list(self._by_id)

    def __iter__(self) -> Iterator[TopologyDetails]:
        return iter(list(self._by_id.values()))

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, topology_id: object) -> bool:
        return topology_id in self._by_id


@dataclass(frozen=True, eq=False)
class SupervisorDetails:
    """A live supervisor: its id (the node id in slots), host, worker ports and capacity.

    ``resources`` is the capacity it advertised (``/supervisors/<id>`` ``resources``, read
    with :meth:`Resources.from_dict`); ``meta`` is free-form (e.g. ``uptime_secs``).
    """

    id: str
    host: str
    ports: tuple[int, ...]
    resources: Resources = field(default_factory=Resources)
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ports", tuple(sorted({int(p) for p in self.ports})))
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))

    def slots(self) -> list[WorkerSlot]:
        return [WorkerSlot(self.id, p) for p in self.ports]


def details_from_topology(topology_id: str, name: str, conf: Mapping[str, Any], topology: Any,
                          num_workers: int, launch_time: float = 0.0,
                          rebalanced: bool = False) -> TopologyDetails:
    """Build :class:`TopologyDetails` from a :class:`squall.api.topology.Topology`.

    Uses ``topology.executor_component()`` (``{(start, end): component}``, system components
    included) and each component's ``set_resources`` values (``components[id].resources``, keys
    ``cpu``, ``memory_mb``, ``net``, ``disk``), missing ones defaulting from the
    ``topology.component.*`` keys of the component's config, then of ``conf``. Raises
    :class:`ConfigError` for a bad resource value.
    """
    executors = {ExecutorDetails(*e): c for e, c in topology.executor_component().items()}
    wanted = {}
    for cid, spec in topology.components.items():
        asked = getattr(spec, "resources", None) or {}
        own = component_conf(conf, getattr(spec, "config", None))
        if asked or own is not conf:
            wanted[cid] = component_resources(own, **{k: asked.get(k) for k in (
                "cpu", "memory_mb", "net", "disk")})
    return TopologyDetails(topology_id, name, conf, num_workers, executors, wanted, launch_time,
                           rebalanced)
