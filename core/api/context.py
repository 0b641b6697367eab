"""What a component knows about its place in the running topology."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from squall.runtime.memory_stores import MemoryStores


class TopologyContext:
    """Passed to ``initialize``; also ``component.context``.

    Built by the worker once per task; read-only for components.
    """

    def __init__(self, *, topology_id: str, topology_name: str, component_id: str, task_id: int,
                 task_to_component: Mapping[int, str], this_worker_port: int | None,
                 outputs: Mapping[str, tuple[str, ...]] | None = None,
                 host: str = "127.0.0.1", register_metric: Any = None,
                 worker_tasks: Sequence[int] = (),
                 inputs: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None,
                 memory_stores: MemoryStores | None = None) -> None:
        self.topology_id = topology_id
        self.topology_name = topology_name
        self.component_id = component_id
        self.task_id = task_id
        self.this_worker_port = this_worker_port
        self.host = host
        self._task_to_component = dict(task_to_component)
        self._outputs = dict(outputs or {})
        self._register_metric = register_metric
        #: the task ids this task's worker runs (``local_or_shuffle`` prefers them)
        self.worker_tasks = list(worker_tasks)
        self._inputs = {c: dict(s) for c, s in (inputs or {}).items()}
        if memory_stores is None:
            from squall.runtime.memory_stores import MemoryStores
            memory_stores = MemoryStores()
        #: where the ``memory`` state provider and ``MemoryMapState`` keep this task's state:
        #: its worker's (see :mod:`squall.runtime.memory_stores`); stores of its own when the
        #: context is built without a worker
        self.memory_stores = memory_stores

    def component_tasks(self, component_id: str) -> list[int]:
        """Sorted task ids of a component (``[]`` if unknown)."""
        return sorted(t for t, c in self._task_to_component.items() if c == component_id)

    def this_sources(self) -> list[tuple[str, str]]:
        """The ``(component, stream)`` pairs this component subscribes to (Storm's
        ``getThisSources``)."""
        return [(c, s) for c, streams in self._inputs.items() for s in streams]

    def task_to_component(self) -> dict[int, str]:
        """Every task id of the topology -> its component id (a copy)."""
        return dict(self._task_to_component)

    def input_fields(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """The streams this component subscribes to: source component -> stream -> fields."""
        return {c: dict(s) for c, s in self._inputs.items()}

    def outputs(self) -> dict[str, tuple[str, ...]]:
        """This component's declared streams -> their fields."""
        return dict(self._outputs)

    def component_for_task(self, task_id: int) -> str | None:
        return self._task_to_component.get(task_id)

    @property
    def task_index(self) -> int:
        """This task's 0-based position among its component's tasks."""
        return self.component_tasks(self.component_id).index(self.task_id)

    def output_fields(self, stream: str = "default") -> tuple[str, ...]:
        return self._outputs[stream]

    def register_metric(self, name: str, metric: Any, bucket_secs: float | None = None) -> Any:
        """Register a user metric (see :mod:`squall.metrics`); returns ``metric``."""
        if self._register_metric is None:
            return metric
        return self._register_metric(name, metric, bucket_secs)

    def __repr__(self) -> str:
        return f"TopologyContext({self.component_id!r}, task={self.task_id})"
