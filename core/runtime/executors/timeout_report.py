"""A spout whose tuple trees time out in numbers, reported as an error of the spout.

With acking on and ``topology.max.spout.pending`` unset, backpressure alone bounds what a
spout has in flight: about 0.9 × ``topology.executor.receive.buffer.size`` tuples queued at
each task it feeds. A bolt that takes longer than ``topology.message.timeout.secs`` to drain
that (32,768 × 0.9 × 2.5 ms = 74 s, against 30 s) fails its tuples by timeout while they
wait, and each replay waits at the back again: the topology may ack nothing for good while
its bolts stay busy. :class:`TimeoutReport` says so, once a minute at most per spout.

It is fed when the spout executor's pending trees rotate (once a message timeout, on the
loop's timers) with the trees that timed out then and the running count of finished ones:
nothing is added to the emit, ack or fail of a tuple.
"""
from __future__ import annotations

#: trees timed out at one rotation, as a share of those the spout finished (acked or failed,
#: timeouts included) since the previous one, from which they are reported
TIMED_OUT_SHARE = 0.1
#: and at least this many: a few trees lost with a worker are no such case
TIMED_OUT_MIN = 100
#: seconds between two reports of one spout, at least
REPORT_SECS = 60.0


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

    def rotated(self, timed_out: int, finished: int, now: float) -> str | None:
        """The spout's pending trees rotated at ``now``: ``timed_out`` of them timed out, and
        its tasks have finished ``finished`` trees since they started (acked or failed, these
        included). The error to report, or None: fewer than :data:`TIMED_OUT_SHARE` of the
        trees finished since the previous rotation, or than :data:`TIMED_OUT_MIN`, timed out,
        or the spout reported less than :data:`REPORT_SECS` ago."""
        window = finished - self.finished
        self.finished = finished
        if timed_out < TIMED_OUT_MIN or timed_out < window * TIMED_OUT_SHARE:
            return None
        if self.reported_at is not None and now - self.reported_at < REPORT_SECS:
            return None
        self.reported_at = now
        if self.max_pending:
            advice = f"lower topology.max.spout.pending ({self.max_pending})"
        else:
            advice = ("set topology.max.spout.pending (the trees each spout task keeps in "
                      "flight; unset, backpressure keeps up to 0.9 x "
                      "topology.executor.receive.buffer.size tuples queued at each task)")
        return (f"spout {self.component}: {timed_out} of the {window} tuple trees it finished "
                f"in the last {self.timeout:.0f} s timed out (topology.message.timeout.secs): "
                f"its tuples wait in queues longer than that before they are processed, and "
                f"each replay waits at the back again, so few or none are acked. Unless a "
                f"worker that held them died, {advice}, or raise "
                f"topology.message.timeout.secs")
