"""Backpressure: when this worker's queues are too full, it asks every worker of the
topology (itself included) to stop calling its spouts until they drained.

The high and low watermarks are ``topology.backpressure.high.watermark`` and ``.low.watermark``
times ``topology.executor.receive.buffer.size`` (tuples in one task's queue), and half and an
eighth of :data:`~squall.runtime.wire.inbox.INBOX_LIMIT` for received messages waiting for the
loop. Checked by the loop after it dispatched received messages and at the end of each pass.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from squall.runtime.task import LocalTasks
from squall.runtime.wire.inbox import INBOX_LIMIT

INBOX_HIGH, INBOX_LOW = INBOX_LIMIT // 2, INBOX_LIMIT // 8   # received messages


class Backpressure:
    """One worker's throttle: its own verdict (``overloaded``), the other workers'
    (``remote``, from their control messages), and what spouts read: ``throttled``."""

    def __init__(self, conf: dict[str, Any], tasks: LocalTasks,
                 inbox_len: Callable[[], int], broadcast: Callable[[str, Any], None]) -> None:
        cap = int(conf.get("topology.executor.receive.buffer.size") or 32768)
        self.high = int(cap * float(conf.get("topology.backpressure.high.watermark", 0.9)))
        self.low = int(cap * float(conf.get("topology.backpressure.low.watermark", 0.4)))
        self.tasks = tasks
        self.inbox_len = inbox_len
        self.broadcast = broadcast
        #: spouts of this worker may not emit
        self.throttled = False
        #: this worker asked the others to stop their spouts
        self.overloaded = False
        #: received messages wait in the inbox (a lazy_batch task's queue is far behind)
        self.hold_inbox = False
        #: seconds spent overloaded before the current spell, which began at ``since``
        self.overloaded_secs = 0.0
        self.since = 0.0
        #: other workers' verdicts, by ``host:port``
        self.remote: dict[str, bool] = {}

    def check(self, now: float) -> None:
        inbox = self.inbox_len()
        queues = self.tasks.queues
        # queued tuples, not entries: a lazy_batch task's TupleRun entries hold many
        lazy = self.tasks.lazy
        high = self.high
        full = (any(len(q) > high for q in queues.values())
                or any(len(t.queue) + t.run_extra > high for t in lazy.values()))
        # while a lazy_batch task's queue holds twice the high watermark, received messages
        # wait in the inbox (and then in the transport): runs multiply what the senders had
        # in flight before they heard the throttle, and it must not all land at once. Other
        # queues never hold the inbox: doing so stalls an acknowledged transport's window
        # (grpc: 260 k -> 80-150 k words/s distributed, per-tuple, acking off).
        self.hold_inbox = full and any(len(t.queue) + t.run_extra > 2 * high
                                       for t in lazy.values())
        if self.overloaded:
            if (inbox <= INBOX_LOW and all(len(q) <= self.low for q in queues.values())
                    and all(len(t.queue) + t.run_extra <= self.low for t in lazy.values())):
                self.overloaded = False
                self.overloaded_secs += now - self.since
                self.broadcast("throttle", False)
        elif inbox > INBOX_HIGH or full:
            self.overloaded = True
            self.since = now
            self.broadcast("throttle", True)
        self.throttled = self.overloaded or any(self.remote.values())

    def remote_verdict(self, who: str, on: Any) -> None:
        """Another worker's throttle control message."""
        self.remote[who] = bool(on)

    def forget(self, who: str) -> None:
        """A worker no longer assigned: its verdict no longer counts."""
        self.remote.pop(who, None)

    def overloaded_total(self, now: float) -> float:
        """Seconds this worker has spent overloaded so far (the current spell included)."""
        if self.overloaded:
            return self.overloaded_secs + max(0.0, now - self.since)
        return self.overloaded_secs
