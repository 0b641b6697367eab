"""One topology's placement: executor -> worker slot, and what each worker needs.

Import from :mod:`squall.scheduling.cluster`. Read-only to schedulers and nimbus; only the
:class:`~squall.scheduling.cluster.Cluster` that owns it changes it (through ``assign`` and
``free_slot``). Not thread-safe; scheduling is single-threaded.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from squall.errors import ConfigError
from squall.scheduling.model import ExecutorDetails, WorkerSlot
from squall.scheduling.resources import Resources

__all__ = ["SchedulerAssignment"]


class SchedulerAssignment:
    """Where one topology's executors run.

    ``SchedulerAssignment(topology_id, executor_to_slot, worker_resources=None)`` is the plain
    constructor nimbus uses to describe an existing placement it read from ``/assignments``
    (see :meth:`from_executor_node_port`).
    """

    __slots__ = ("_executor_to_slot", "_slot_executors", "_worker_resources", "topology_id")

    def __init__(self, topology_id: str,
                 executor_to_slot: Mapping[ExecutorDetails, WorkerSlot] | None = None,
                 worker_resources: Mapping[WorkerSlot, Resources] | None = None) -> None:
        self.topology_id = topology_id
        self._executor_to_slot: dict[ExecutorDetails, WorkerSlot] = {}
        self._slot_executors: dict[WorkerSlot, set[ExecutorDetails]] = {}
        self._worker_resources: dict[WorkerSlot, Resources] = {}
        for executor, slot in (executor_to_slot or {}).items():
            self.place(WorkerSlot(*slot), [ExecutorDetails(*executor)], Resources())
        for slot, res in (worker_resources or {}).items():
            if slot in self._slot_executors:
                self._worker_resources[WorkerSlot(*slot)] = res

    @classmethod
    def from_executor_node_port(cls, topology_id: str,
                                executor_node_port: Mapping[str, Any]) -> SchedulerAssignment:
        """Build from the ``/assignments`` JSON map ``{"[s, e]": [node, port]}``.

        Raises :class:`ConfigError` for a malformed key or value.
        """
        mapping = {}
        for key, value in executor_node_port.items():
            try:
                node, port = value
                mapping[ExecutorDetails.parse(key)] = WorkerSlot(str(node), int(port))
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"bad executor_node_port entry {key!r}: {value!r}") from exc
        return cls(topology_id, mapping)

    @classmethod
    def from_state(cls, topology_id: str, state: Mapping[str, Any]) -> SchedulerAssignment:
        """Build from a stored ``/assignments`` record: its ``executor_node_port`` (as
        :meth:`from_executor_node_port`) and its ``worker_resources`` (the inverse of
        :meth:`worker_resources_state`; a malformed entry holds nothing)."""
        plain = cls.from_executor_node_port(topology_id, state.get("executor_node_port") or {})
        held: dict[WorkerSlot, Resources] = {}
        for key, amounts in (state.get("worker_resources") or {}).items():
            node, _, port = str(key).rpartition("-")
            try:
                held[WorkerSlot(node, int(port))] = Resources.from_dict(amounts)
            except (TypeError, ValueError, ConfigError):
                continue
        return cls(topology_id, dict(plain.executor_to_slot), held)

    # -- reading ------------------------------------------------------------------------------

    @property
    def executor_to_slot(self) -> Mapping[ExecutorDetails, WorkerSlot]:
        """Read-only view: executor -> slot."""
        return MappingProxyType(self._executor_to_slot)

    @property
    def worker_resources(self) -> Mapping[WorkerSlot, Resources]:
        """Read-only view: slot -> the sum of the needs of the executors in that worker."""
        return MappingProxyType(self._worker_resources)

    def slots(self) -> list[WorkerSlot]:
        """The slots this topology uses, sorted."""
        return sorted(self._slot_executors)

    def executors(self) -> list[ExecutorDetails]:
        return sorted(self._executor_to_slot)

    def executors_on(self, slot: WorkerSlot) -> list[ExecutorDetails]:
        """The executors in the worker on ``slot`` (sorted; empty if none)."""
        return sorted(self._slot_executors.get(slot, ()))

    def slot_of(self, executor: ExecutorDetails) -> WorkerSlot | None:
        return self._executor_to_slot.get(executor)

    def is_assigned(self, executor: ExecutorDetails) -> bool:
        return executor in self._executor_to_slot

    def nodes(self) -> list[str]:
        """The supervisor ids this topology has workers on, sorted."""
        return sorted({slot.node_id for slot in self._slot_executors})

    def executor_node_port(self) -> dict[str, list[Any]]:
        """``{"[s, e]": [node, port]}``, the ``/assignments`` JSON form (API.md section 9)."""
        return {str(e): [s.node_id, s.port] for e, s in sorted(self._executor_to_slot.items())}

    def worker_resources_state(self) -> dict[str, dict[str, int]]:
        """``{"<node>-<port>": {"cpu": n, "memory": n, "net": n, "disk": n}}`` (JSON-ready;
        the key has the shape of ``/workerbeats`` children)."""
        return {f"{s.node_id}-{s.port}": r.as_dict()
                for s, r in sorted(self._worker_resources.items())}

    def __len__(self) -> int:
        return len(self._executor_to_slot)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SchedulerAssignment) and other.topology_id == self.topology_id
                and other._executor_to_slot == self._executor_to_slot)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"SchedulerAssignment({self.topology_id!r}, {len(self._executor_to_slot)} "
                f"executors on {len(self._slot_executors)} slots)")

    def copy(self) -> SchedulerAssignment:
        out = SchedulerAssignment(self.topology_id)
        out._executor_to_slot = dict(self._executor_to_slot)
        out._slot_executors = {s: set(es) for s, es in self._slot_executors.items()}
        out._worker_resources = dict(self._worker_resources)
        return out

    # -- changing ------------------------------------------------------------------------------
    # The Cluster that owns it calls these and keeps its own books (slot owners, resources
    # used) in step; a scheduler places through Cluster.assign, free_slot and unassign.

    def place(self, slot: WorkerSlot, executors: Iterable[ExecutorDetails],
              resources: Resources) -> None:
        on_slot = self._slot_executors.setdefault(slot, set())
        for e in executors:
            self._executor_to_slot[e] = slot
            on_slot.add(e)
        self._worker_resources[slot] = self._worker_resources.get(slot, Resources()) + resources

    def unplace(self, executors: Iterable[ExecutorDetails]) -> list[WorkerSlot]:
        """Take ``executors`` (all placed) off their workers (the caller adjusts the workers'
        resources with :meth:`set_worker_resources`). Returns the slots left empty."""
        emptied = []
        for e in executors:
            slot = self._executor_to_slot.pop(e)
            on_slot = self._slot_executors[slot]
            on_slot.discard(e)
            if not on_slot:
                del self._slot_executors[slot]
                self._worker_resources.pop(slot, None)
                emptied.append(slot)
        return emptied

    def set_worker_resources(self, slot: WorkerSlot, resources: Resources) -> None:
        if slot in self._slot_executors:
            self._worker_resources[slot] = resources

    def clear_slot(self, slot: WorkerSlot) -> set[ExecutorDetails]:
        executors = self._slot_executors.pop(slot, set())
        for e in executors:
            del self._executor_to_slot[e]
        self._worker_resources.pop(slot, None)
        return executors
