"""``topology.max.spout.pending`` for the tracked emits a spout makes from threads of its own
(a poller it starts): the calling thread waits while its task has that many trees in flight.

On the loop, a spout's ``next_tuple`` is not called while its task is at the limit
(:class:`~.spout.SpoutExecutor`), and a spout on a thread of its own is not asked either
(:class:`~.threaded.ThreadedSpout`). A thread the spout started itself emits whenever it
likes: its emits are handed to the loop (:mod:`.handoff`, or the component thread's outbox),
and nothing held it back, so a poller had every tuple it read in flight at once. Its
*tracked* emits (with a ``tup_id``) now wait in :meth:`PendingLimit.enter` while the task's
trees in flight and the tracked emits handed over and not made yet reach the limit; they
are woken when trees complete or time out (:meth:`PendingLimit.wake`, once per pass that
completed any, after the spout's ``ack`` and ``fail`` of them ran). Untracked emits never
wait, and neither does the loop's thread (nor the spout's component thread, which is asked
for ``next_tuple`` only below the limit).

The limit applies from the start (a poller started in ``initialize`` emits before the
topology is activated). A waiting thread is let go, its emit handed over as usual, when the
limit stops applying: the spout is deactivated (until it is activated again, the emits of its
own threads are made as they come, as before; ``deactivate`` runs on the loop and may wait
for such a thread), or the worker stops (the emit is then made only if the stopping loop
still takes it, as any handed over then; one handed over after the loop's last pass is not
made: its tree never starts, and the spout hears no ``ack`` or ``fail`` of it).
Without ackers (``topology.acker.executors: 0``, or acking off) no tree is in flight and there
is no limit: the executor makes no PendingLimit.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from squall.runtime.task import TaskState

#: how often a waiting thread looks again whether the limit still applies (a worker whose
#: loop died, or one stopping, wakes nothing)
RECHECK_SECS = 0.1
#: how often it counts the trees in flight again though nothing woke it (a safety net: room
#: comes with a wake-up, made once the spout's ``ack``/``fail`` of the trees ran)
RECOUNT_SECS = 1.0


class PendingLimit:
    """One spout executor's ``max.spout.pending`` for its tasks' tracked emits from threads
    of their own.

    ``in_flight(ts)``: the task's trees in flight and its tracked emits on their way to the
    loop, those counted here included (:meth:`queued`: handed over through :meth:`enter`, not
    made yet), read from any thread; ``applies()``: whether the limit holds now (the
    worker's loop runs, and the spout was not deactivated)."""

    __slots__ = ("_queued", "applies", "cond", "in_flight", "max_pending", "waiting")

    def __init__(self, max_pending: int, in_flight: Callable[[TaskState], int],
                 applies: Callable[[], bool]) -> None:
        self.max_pending = max_pending
        self.in_flight = in_flight
        self.applies = applies
        self.cond = threading.Condition(threading.Lock())
        #: threads waiting in :meth:`enter` (read without the lock by :meth:`wake`)
        self.waiting = 0
        #: task -> tracked emits handed over through :meth:`enter`, not made yet
        self._queued: dict[int, int] = {}

    def queued(self, ts: TaskState) -> int:
        """Tracked emits of ``ts`` handed over from its threads and not made yet."""
        return self._queued.get(ts.task, 0)

    # -- on the calling thread ---------------------------------------------------------------
    def enter(self, ts: TaskState) -> None:
        """Wait while task ``ts`` is at the limit (and it applies), then count one tracked
        emit handed over (the caller hands it over next; :meth:`made` once the loop made
        it)."""
        limit = self.max_pending
        in_flight = self.in_flight
        cond = self.cond
        with cond:
            if in_flight(ts) >= limit and self.applies():
                self.waiting += 1
                recount = time.monotonic() + RECOUNT_SECS
                try:
                    while True:
                        # counted again when woken: after the spout's callbacks of the trees
                        # that made room (a thread let go between a tree's end and its
                        # ``ack`` would find the spout's own count of them one too high)
                        if cond.wait(RECHECK_SECS) or time.monotonic() >= recount:
                            if in_flight(ts) < limit:
                                break
                            recount = time.monotonic() + RECOUNT_SECS
                        if not self.applies():
                            break
                finally:
                    self.waiting -= 1
            self._queued[ts.task] = self._queued.get(ts.task, 0) + 1

    # -- on the loop thread -------------------------------------------------------------------
    def made(self, ts: TaskState, tree: bool = True) -> None:
        """One tracked emit counted by :meth:`enter` was made: a pending tree now (``tree``),
        or none (it raised: room, and waiting threads look again)."""
        with self.cond:
            self._queued[ts.task] -= 1
            if not tree and self.waiting:
                self.cond.notify_all()

    def tracked_emit(self, ts: TaskState, emit: Callable[..., Any], *args: Any) -> Any:
        """Make a tracked emit counted by :meth:`enter` (the call handed to the loop)."""
        try:
            sent = emit(*args)
        except BaseException:
            self.made(ts, False)
            raise
        self.made(ts)
        return sent

    def wake(self) -> None:
        """Trees completed or timed out, or the limit stopped applying: waiting threads
        look again. Costs one attribute test while none waits."""
        if self.waiting:
            with self.cond:
                self.cond.notify_all()
