"""A deliberately simple third-party scheduler: the first free slots in (node, port) order.

It uses only squall's public API and is installed through the ``squall.schedulers`` entry
point by the conformance tests, to prove an outside distribution plugs in like a built-in one.
"""
from __future__ import annotations

from typing import Any

from squall import Scheduler


class FirstFitScheduler(Scheduler):
    name = "firstfit"
    resource_aware = False

    def schedule(self, topologies: Any, cluster: Any) -> None:
        for topology in topologies:
            homeless = cluster.unassigned_executors(topology)
            if not homeless:
                continue
            assignment = cluster.get_assignment(topology.id)
            mine = assignment.slots() if assignment is not None else []
            wanted = max(1, min(topology.num_workers, len(topology.executors)))
            slots = cluster.available_slots()[:max(0, wanted - len(mine))] or mine
            if not slots:
                cluster.set_status(topology.id, "pending",
                                   f"needs {wanted} more worker slots (have 0, need {wanted})")
                continue
            for i, slot in enumerate(slots):
                hand = homeless[i::len(slots)]
                if hand:
                    cluster.assign(slot, topology.id, hand)
