"""Slots whose workers failed: nimbus keeps executors off them for a while and says so once.

A worker that cannot come up on its slot (another process holds the port, ...) makes its
executors time out at nimbus. Dropped as dead, they would be handed the slot they just left,
now free, again; the assignment would not change, their start time would never be reset, and
they would time out again on every pass, never moved. So nimbus remembers the slots where
executors timed out (they never started there, or their worker stopped heart-beating) and
:mod:`~squall.daemon.nimbus_schedule` leaves them out of the cluster every scheduler sees while
another slot is free. A slot is remembered for ``nimbus.task.launch.secs`` after the last time
out seen there, or until a worker on it beats again. A worker killed once (``kill -9``) is
relaunched on its slot by its supervisor and beats again before it times out at nimbus: its slot
is never remembered.

What happened is said once per executor group (the executors of one topology that timed out
together on one slot) and outage: "timed out; reassigning to ..." when they move; when nothing
could take them, one line saying they stay, and another when their worker beats again.

Used on nimbus's monitor thread only, under nimbus's lock (as :class:`Scheduling`).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import NamedTuple

from squall.scheduling.cluster import WorkerSlot

log = logging.getLogger(__name__)

#: :attr:`Outage.reason` of executors whose worker never listed them in a beat
NEVER_STARTED = "never started there"
#: :attr:`Outage.reason` of executors whose worker's beat stopped changing
STOPPED_BEATING = "their worker stopped heart-beating"


class Outage(NamedTuple):
    """Executors of one topology that timed out together on one slot (``"[s, e]"`` keys, in
    task order)."""

    executors: tuple[str, ...]
    reason: str


class SlotFailures:
    """The slots to avoid and what was said about them (see the module docstring).
    ``hold_secs``: how long a slot is avoided after its last time out; ``clock``: monotonic
    seconds (a test's fake)."""

    def __init__(self, hold_secs: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._hold = hold_secs
        self._clock = clock
        #: slot -> until when (``clock``) it is avoided
        self._until: dict[WorkerSlot, float] = {}
        #: (topology id, slot) -> executors said to stay there, until their outage ends
        self._stuck: dict[tuple[str, WorkerSlot], frozenset[str]] = {}

    def observe(self, timed_out: Mapping[str, Mapping[WorkerSlot, Outage]],
                beating: Collection[WorkerSlot]) -> None:
        """Note one pass's liveness: ``timed_out`` is topology id -> slot -> its executors
        that timed out there; ``beating``, the slots whose workers beat within the task
        timeout (healthy again). A slot where executors timed out is avoided for
        ``hold_secs`` from now."""
        until = self._clock() + self._hold
        for slot in beating:
            self._until.pop(slot, None)
        for outages in timed_out.values():
            for slot in outages:
                self._until[slot] = until
        for key in [k for k in self._stuck if k[1] not in timed_out.get(k[0], {})]:
            del self._stuck[key]
            if key[1] in beating:   # else they moved (that was said) or the topology went
                log.info("topology %s: the worker on %s beats again", key[0], key[1])

    def avoided(self, busy: Iterable[WorkerSlot]) -> frozenset[WorkerSlot]:
        """The slots to leave out of the scheduler's view now: remembered ones, less those
        in ``busy`` (live executors run there, and leaving the slot out would drop them)."""
        now = self._clock()
        for slot in [s for s, t in self._until.items() if t <= now]:
            del self._until[slot]
        return frozenset(self._until) - frozenset(busy)

    def report(self, topology_id: str, outages: Mapping[WorkerSlot, Outage],
               placed: Mapping[str, WorkerSlot], homeless: Collection[str],
               why_stay: str) -> None:
        """Say where the executors that timed out in this pass went: ``placed`` is the
        topology's new placement (executor key -> slot), ``homeless`` its executors left
        without a slot (one in neither is no longer in the topology, a rebalance), and
        ``why_stay`` the reason given when some keep their slot or have none. Executors that
        moved are said once (they have a new start time and do not time out again there);
        those that stay, once per outage."""
        for slot, outage in sorted(outages.items()):
            moved = {k: placed[k] for k in outage.executors if placed.get(k, slot) != slot}
            if moved:
                log.info("topology %s executors %s on %s timed out (%s); reassigning to %s",
                         topology_id, ", ".join(moved), slot, outage.reason,
                         ", ".join(str(s) for s in sorted(set(moved.values()))))
            stayed = [k for k in outage.executors if placed.get(k) == slot]
            waiting = [k for k in outage.executors if k in homeless]
            stuck = frozenset(stayed + waiting)
            if not stuck or self._stuck.get((topology_id, slot)) == stuck:
                continue
            self._stuck[(topology_id, slot)] = stuck
            if stayed:
                log.warning("topology %s executors %s on %s timed out (%s); they stay there "
                            "and its supervisor keeps relaunching the worker: %s",
                            topology_id, ", ".join(stayed), slot, outage.reason, why_stay)
            if waiting:
                log.warning("topology %s executors %s on %s timed out (%s); they wait for a "
                            "free slot: %s", topology_id, ", ".join(waiting), slot,
                            outage.reason, why_stay)

    def forget(self, topology_id: str) -> None:
        """Drop what was said about ``topology_id`` (it was killed); its slots' records
        stay, since they are about the slots."""
        for key in [k for k in self._stuck if k[0] == topology_id]:
            del self._stuck[key]

    def clear(self) -> None:
        """Forget everything (a new leadership term: beat ages start again, and so does
        what is known of the slots)."""
        self._until.clear()
        self._stuck.clear()
