"""Reshaping a running topology's placement with the fewest moves (used after a rebalance).

A rebalance keeps the surviving placement: executors whose task range did not change stay on
their slots, the executors of a component whose count changed are homeless. These pure helpers
plan what a scheduler then applies to the :class:`~squall.scheduling.cluster.Cluster`; the
``even`` and ``multidim`` schedulers use them, and a third-party scheduler may too.

- Fewer workers: :func:`surplus_workers` names the workers to free (those with the fewest
  executors, so the fewest move); their executors join the remaining workers.
- More workers: :func:`spread` takes off the existing workers only the executors above their
  share (the most loaded keep the larger shares) and deals them, with the homeless ones, over
  the new workers and the existing ones below their share.
- Same workers: homeless executors join the least loaded workers (:func:`join_least_loaded`);
  nothing else moves.

>>> from squall.scheduling.model import split_tasks
>>> placed = {WorkerSlot("a", 1): split_tasks(1, 5, 5), WorkerSlot("b", 1): split_tasks(6, 5, 5)}
>>> taken, hands, added = spread(placed, [], 1, {})
>>> len(taken), [len(h) for h in hands], added
(3, [3], {})
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from squall.scheduling.model import ExecutorDetails, WorkerSlot

__all__ = ["join_least_loaded", "spread", "surplus_workers"]


def surplus_workers(placed: Mapping[WorkerSlot, Sequence[ExecutorDetails]],
                    keep: int) -> list[WorkerSlot]:
    """The workers to free so that ``keep`` (>= 1) remain: the fewest executors first, ties by
    the highest slot. Empty when there are ``keep`` workers or fewer."""
    order = sorted(placed, key=lambda s: (len(placed[s]), _desc(s)))
    return sorted(order[:max(0, len(placed) - max(1, keep))])


def _desc(slot: WorkerSlot) -> tuple[tuple[int, ...], int]:
    return tuple(-ord(ch) for ch in slot.node_id), -slot.port


def _take(executors: Sequence[ExecutorDetails], n: int,
          component_of: Mapping[ExecutorDetails, str]) -> list[ExecutorDetails]:
    """``n`` executors to move off one worker: each time one of the component with the most
    executors on it (ties by component id), its highest task range first; so a worker keeps
    a mix of components and a component spreads."""
    by_comp: dict[str, list[ExecutorDetails]] = {}
    for e in sorted(executors):
        by_comp.setdefault(component_of.get(e, ""), []).append(e)
    out = []
    for _ in range(min(n, len(executors))):
        comp = min(by_comp, key=lambda c: (-len(by_comp[c]), c))
        out.append(by_comp[comp].pop())
        if not by_comp[comp]:
            del by_comp[comp]
    return out


def spread(placed: Mapping[WorkerSlot, Sequence[ExecutorDetails]],
           homeless: Sequence[ExecutorDetails], new_workers: int,
           component_of: Mapping[ExecutorDetails, str],
           ) -> tuple[list[ExecutorDetails], list[list[ExecutorDetails]],
                      dict[WorkerSlot, list[ExecutorDetails]]]:
    """Plan ``new_workers`` (>= 1) more workers for a topology whose workers hold ``placed``.

    Every worker (old and new) gets a share of the executors differing by at most one; the
    most loaded existing workers keep the larger shares, so only the executors above a share
    move. Returns ``(taken, hands, added)``: the executors to take off existing workers, the
    executors of each new worker (task order dealt round-robin, so a component spreads), and
    the homeless or taken executors that join existing workers below their share.
    """
    total = sum(len(v) for v in placed.values()) + len(homeless)
    workers = len(placed) + new_workers
    base, extra = divmod(total, workers)
    order = sorted(placed, key=lambda s: (-len(placed[s]), s))
    share = {s: base + (1 if i < extra else 0) for i, s in enumerate(order)}
    new_share = [base + (1 if len(order) + j < extra else 0) for j in range(new_workers)]
    taken: list[ExecutorDetails] = []
    for s in order:
        taken.extend(_take(placed[s], len(placed[s]) - share[s], component_of))
    # receivers: the new workers, then existing workers below their share (slot order)
    room: list[int] = list(new_share) + [share[s] - len(placed[s]) for s in sorted(placed)
                                         if share[s] > len(placed[s])]
    under = [s for s in sorted(placed) if share[s] > len(placed[s])]
    given: list[list[ExecutorDetails]] = [[] for _ in room]
    i = 0
    for e in sorted([*homeless, *taken]):    # the shares add up to exactly these executors
        for _ in range(len(room)):
            if room[i % len(room)]:
                break
            i += 1
        room[i % len(room)] -= 1
        given[i % len(room)].append(e)
        i += 1
    hands = given[:new_workers]
    added = {s: given[new_workers + k] for k, s in enumerate(under) if given[new_workers + k]}
    return sorted(taken), hands, added


def join_least_loaded(loads: Mapping[WorkerSlot, int], homeless: Sequence[ExecutorDetails],
                      ) -> dict[WorkerSlot, list[ExecutorDetails]]:
    """Homeless executors (task order) each to the worker with the fewest executors (ties by
    slot); ``loads`` is each worker's executor count. Nothing already placed moves."""
    load = dict(loads)
    out: dict[WorkerSlot, list[ExecutorDetails]] = {}
    if not load:
        return out
    for e in sorted(homeless):
        slot = min(load, key=lambda s: (load[s], s))
        load[slot] += 1
        out.setdefault(slot, []).append(e)
    return dict(sorted(out.items()))
