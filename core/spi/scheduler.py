"""The scheduler SPI (``squall.schedulers``, chosen with ``squall.scheduler``).

``schedule(topologies, cluster)`` is called by nimbus (and by LocalCluster) whenever topologies,
supervisors or heartbeats change. It reads what needs scheduling from ``topologies`` and the free
slots from ``cluster`` and records assignments through ``cluster.assign(...)``; it must be
deterministic for the same input. See :mod:`squall.scheduling.cluster` for the model objects.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar


class Scheduler(ABC):
    """Base class of every scheduler.

    ``Scheduler(conf)`` receives nimbus's merged configuration; a subclass reads its own
    options under ``squall.scheduler.<name>.``. Instances are reused across passes.
    """

    name: str = ""
    #: True when the scheduler keeps every supervisor within its advertised ``resources``
    #: (the scheduler contract suite then checks capacity too); False: worker slots only.
    resource_aware: ClassVar[bool] = False

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        self.conf: dict[str, Any] = dict(conf or {})

    @abstractmethod
    def schedule(self, topologies: Any, cluster: Any) -> None:
        """Place the executors of ``topologies`` (a :class:`squall.scheduling.cluster.Topologies`)
        on ``cluster`` (a :class:`squall.scheduling.cluster.Cluster`) by calling
        ``cluster.assign`` / ``cluster.free_slot``; report a topology that cannot be placed with
        ``cluster.set_status(id, "pending", reason)``.

        Called on nimbus's scheduling thread, one pass at a time; must not block or do I/O, and
        must give the same result for the same input. Existing valid placements should be kept.
        Raising :class:`squall.SchedulingError` aborts the pass (nimbus keeps the old
        assignments and logs it); a topology that merely does not fit is not an error.
        """
