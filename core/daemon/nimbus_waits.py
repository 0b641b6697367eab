"""When the wait of a kill or a rebalance ends, on a nimbus's monotonic clock.

``kill`` stores ``kill_time`` in ``/storms/<id>`` and ``rebalance`` its plan's ``due``: when
the wait ends, in epoch seconds of the leader's clock, which other nimbuses, the UI and an
earlier release read. Beside them it stores the wait asked for (``kill_wait``, the plan's
``wait``). A nimbus does not take that stored time as its deadline: a step of its clock (NTP)
would stretch or cut the wait by the step. It counts the wait on its monotonic clock instead:

- from the command, on the leader that took it: the wait asked for;
- from the first time it sees the transition (a standby at its next pass, which becomes the
  leader later; a nimbus started since): what is left by its own clock of the stored time,
  but never more than the wait asked for (a record of an earlier release, which lacks it:
  never more than a day, the longest wait).

So a step of the leader's clock changes no wait, and after a failover to a nimbus whose clock
is behind, the wait ends at most the wait asked for after the new leader first saw it: a
standby sees it at its next pass, ``nimbus.monitor.freq.secs`` after the command at most.
Not thread-safe: used under :class:`~squall.daemon.nimbus_topologies.TopologyLifecycle`'s
lock.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from squall.daemon.topology_requests import MAX_WAIT_SECS


class TransitionWaits:
    """Each waiting transition's stored end and its deadline on ``clock`` (monotonic)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        #: (topology id, kind) -> (the stored end, epoch seconds; the deadline, ``clock``)
        self._deadlines: dict[tuple[str, str], tuple[float, float]] = {}

    def began(self, topology_id: str, kind: str, end: float, wait: float) -> None:
        """The leader just stored ``end`` (``time.time() + wait``) for the ``kind``
        (``killed``, ``rebalancing``) of ``topology_id``: its wait ends ``wait`` s from now."""
        self._deadlines[(topology_id, kind)] = (end, self.clock() + max(0.0, wait))

    def left(self, topology_id: str, kind: str, end: float, wait: float | None) -> float:
        """Seconds left (0: due) of the wait of ``topology_id``'s ``kind`` whose stored end
        is ``end`` and wait asked for ``wait`` (None: stored by an earlier release). The first
        call for a transition (or for a new ``end``: a second kill) starts its deadline (see
        the module docstring)."""
        now = self.clock()
        known = self._deadlines.get((topology_id, kind))
        if known is None or known[0] != end:
            cap = MAX_WAIT_SECS if wait is None else max(0.0, wait)
            known = (end, now + min(max(0.0, end - time.time()), cap))
            self._deadlines[(topology_id, kind)] = known
        return max(0.0, known[1] - now)

    def keep(self, waiting: Iterable[tuple[str, str]]) -> None:
        """Forget every transition but the ``(topology id, kind)`` still ``waiting``."""
        keep = set(waiting)
        for key in [k for k in self._deadlines if k not in keep]:
            del self._deadlines[key]
