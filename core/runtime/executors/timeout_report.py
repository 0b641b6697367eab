"""A spout whose tuple trees time out in numbers, reported as an error of the spout.

Trees time out for one of two reasons, and the report says which is likelier:

* they wait in queues: with acking on and ``topology.max.spout.pending`` unset, backpressure
  alone bounds what a spout has in flight, about 0.9 × ``topology.executor.receive.buffer.size``
  tuples queued at each task it feeds. A bolt that takes longer than
  ``topology.message.timeout.secs`` to drain that (32,768 × 0.9 × 2.5 ms = 74 s, against 30 s)
  fails its tuples by timeout while they wait, and each replay waits at the back again: the
  topology may ack nothing for good while its bolts stay busy;
* a bolt holds them: one with ``auto_ack = False`` that neither acks nor fails what it takes,
  or one that keeps tuples on purpose (a window, a batch) longer than the timeout without
  calling ``reset_timeout``.

What the spout's worker can see tells them apart (:class:`Backlog`): whether backpressure held
the spout back since the previous rotation, the tuples waiting in its bolts' queues, and what
each of its bolts executed and has neither acked nor failed. Bolts of other workers are not
seen: a report without such figures names both causes. Once a minute at most per spout.

It is fed when the spout executor's pending trees rotate (once a message timeout, on the
loop's timers) with the trees that timed out then and the running count of finished ones; the
worker's bolts are looked at only for a report: nothing is added to the emit, ack or fail of
a tuple.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from squall.runtime.executors.base import Executor

#: trees timed out at one rotation, as a share of those the spout finished (acked or failed,
#: timeouts included) since the previous one, from which they are reported
TIMED_OUT_SHARE = 0.1
#: and at least this many: a few trees lost with a worker are no such case
TIMED_OUT_MIN = 100
#: seconds between two reports of one spout, at least
REPORT_SECS = 60.0


class Backlog:
    """What a spout's worker shows of where its tuples are, when a report is made:
    ``held_back``, whether backpressure held the spout back since the previous rotation;
    ``queued``, the tuples waiting for this worker's bolts (their queues and the calls of their
    own threads); ``holding``, per bolt of this worker, the tuples it executed and has neither
    acked nor failed; ``bolts``, how many bolt executors (not system ones) were looked at."""

    __slots__ = ("bolts", "held_back", "holding", "queued")

    def __init__(self, held_back: bool, queued: int = 0,
                 holding: dict[str, int] | None = None, bolts: int = 0) -> None:
        self.held_back = held_back
        self.queued = queued
        self.holding = holding or {}
        self.bolts = bolts

    @classmethod
    def of(cls, executors: Iterable[Executor], held_back: bool) -> Backlog:
        """Read the bolt executors among ``executors`` (a worker's: on its loop thread)."""
        queued = bolts = 0
        holding: dict[str, int] = {}
        for ex in executors:
            if ex.kind != "bolt" or ex.component_id.startswith("__"):
                continue
            bolts += 1
            queued += ex.queued()
            for ts in ex.tasks:
                queued += len(ts.queue) + ts.run_extra
                held = ts.executed - ts.acked - ts.failed
                if held > 0:
                    holding[ex.component_id] = holding.get(ex.component_id, 0) + held
        return cls(held_back, queued, holding, bolts)

    def cause(self) -> str:
        """``"holding"``: a bolt here holds at least :data:`TIMED_OUT_MIN` tuples, more than
        wait in the queues, and backpressure did not hold the spout back; ``"queues"``:
        backpressure held it back, or the queues hold at least as many; ``""``: neither shows
        here (its bolts run in other workers)."""
        held = sum(self.holding.values())
        if held >= TIMED_OUT_MIN and held > self.queued and not self.held_back:
            return "holding"
        if self.held_back or (self.queued >= TIMED_OUT_MIN and self.queued >= held):
            return "queues"
        return ""


HOLDING_ADVICE = ("a bolt with auto_ack = False must ack or fail every tuple it takes; one "
                  "that keeps tuples longer than the timeout on purpose (a window, a batch) "
                  "calls reset_timeout(tup) meanwhile, or raise topology.message.timeout.secs")


class TimeoutReport:
    """One spout executor's watch on its timed-out trees. ``timeout`` is the message timeout
    in seconds (the time between rotations) and ``max_pending`` the spout's
    ``topology.max.spout.pending`` (0: unset). Used on the loop thread only."""

    __slots__ = ("component", "finished", "max_pending", "reported_at", "timeout")

    def __init__(self, component: str, timeout: float, max_pending: int) -> None:
        self.component = component
        self.timeout = timeout
        self.max_pending = max_pending
        #: trees finished by the spout's tasks at the previous rotation
        self.finished = 0
        #: when (loop clock) it last reported; None: never
        self.reported_at: float | None = None

    def rotated(self, timed_out: int, finished: int, now: float,
                look: Callable[[], Backlog] | None = None) -> str | None:
        """The spout's pending trees rotated at ``now``: ``timed_out`` of them timed out, and
        its tasks have finished ``finished`` trees since they started (acked or failed, these
        included). The error to report, or None: fewer than :data:`TIMED_OUT_SHARE` of the
        trees finished since the previous rotation, or than :data:`TIMED_OUT_MIN`, timed out,
        or the spout reported less than :data:`REPORT_SECS` ago. ``look`` tells where its
        tuples are (called only for a report; None: not known)."""
        window = finished - self.finished
        self.finished = finished
        if timed_out < TIMED_OUT_MIN or timed_out < window * TIMED_OUT_SHARE:
            return None
        if self.reported_at is not None and now - self.reported_at < REPORT_SECS:
            return None
        self.reported_at = now
        backlog = look() if look is not None else Backlog(False)
        cause = backlog.cause()
        head = (f"spout {self.component}: {timed_out} of the {window} tuple trees it finished "
                f"in the last {self.timeout:.0f} s timed out (topology.message.timeout.secs)")
        if cause == "holding":
            top = sorted(backlog.holding.items(), key=lambda kv: -kv[1])[:3]
            bolts = ", ".join(f"bolt {c} {n}" for c, n in top)
            return (f"{head}, likelier held by a bolt than waiting in queues: in the spout's "
                    f"worker backpressure did not hold it back and the bolts' queues hold "
                    f"{backlog.queued} tuples, while tuples were executed and neither acked "
                    f"nor failed ({bolts}). Unless a worker that held them died, "
                    f"{HOLDING_ADVICE}")
        queues = ("its tuples wait in queues longer than that before they are processed, and "
                  "each replay waits at the back again, so few or none are acked")
        if self.max_pending:
            advice = f"lower topology.max.spout.pending ({self.max_pending})"
        else:
            advice = ("set topology.max.spout.pending (the trees each spout task keeps in "
                      "flight; unset, backpressure keeps up to 0.9 x "
                      "topology.executor.receive.buffer.size tuples queued at each task)")
        if cause == "queues":
            seen = ("backpressure held the spout back" if backlog.held_back else
                    f"the bolts of its worker have {backlog.queued} tuples queued")
            return (f"{head}: {queues} ({seen}). Unless a worker that held them died, "
                    f"{advice}, or raise topology.message.timeout.secs. A bolt that holds "
                    f"tuples times them out too: {HOLDING_ADVICE}")
        return (f"{head}, and its worker does not show why (no queues or held tuples there). "
                f"Unless a worker that held them died, either {queues}: {advice}, or raise "
                f"topology.message.timeout.secs; or a bolt holds them past the timeout: "
                f"{HOLDING_ADVICE}")
