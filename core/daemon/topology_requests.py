"""What a kill or a rebalance may ask of nimbus, shared by nimbus, which enforces it, and by
the clients that check a request before sending it (the ``squall`` CLI and the UI)."""
from __future__ import annotations

from typing import Any

__all__ = ["MAX_WAIT_SECS", "rebalance_caps"]

#: the longest wait a kill or a rebalance may be given (a day)
MAX_WAIT_SECS = 86400


def rebalance_caps(info: dict[str, Any], cluster: Any, workers: int | None,
                   executors: dict[str, int]) -> list[str]:
    """What a rebalance request will not get, and why: a component's executors are capped by
    its tasks (fixed at submit: ``set_num_tasks``, ``topology.max.task.parallelism``), the
    workers by the slots this topology may use (free ones and its own).

    The tasks come from the topology's graph (its package, always there), not from what the
    executors reported (``components``: empty while the workers restart, right after another
    rebalance), which serves only for a component the graph leaves out (a system one). The
    slots it holds are those it is assigned (``assigned_workers``), beating or not, as
    ``used_ports`` counts them."""
    notes = []
    tasks_of = {str(c): int((v or {}).get("tasks") or 0)
                for c, v in (info.get("components") or {}).items()}
    tasks_of.update({str(n.get("id")): int(n.get("tasks") or 0)
                     for n in info.get("graph") or ()})
    cap = (info.get("conf") or {}).get("topology.max.task.parallelism")
    for comp, asked in sorted(executors.items()):
        tasks = tasks_of.get(comp, 0)
        if tasks and asked > tasks:
            how = (f"topology.max.task.parallelism is {cap}" if cap is not None and
                   tasks == int(cap) else "raise them with set_num_tasks")
            notes.append(f"{comp}: {asked} executors asked, it gets {tasks}: it has {tasks} "
                         f"task{'s' if tasks != 1 else ''} (fixed at submit; {how})")
    if workers is not None:
        own = {(w.get("worker") or "")
               for w in info.get("assigned_workers") or info.get("workers") or []}
        free = sum(len(set(s.ports) - set(s.used_ports)) for s in cluster.supervisors)
        slots = free + len(own)
        if workers > slots:
            notes.append(f"{workers} workers asked, at most {slots} can run: the cluster has "
                         f"{free} free slot{'s' if free != 1 else ''} and the topology holds "
                         f"{len(own)}")
    return notes
