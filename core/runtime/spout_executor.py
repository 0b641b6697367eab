"""The spout executor: calls ``next_tuple`` while the spouts may emit (active, under
``topology.max.spout.pending``), hands completions from the acker to ``ack`` and ``fail``,
and times out pending tuples. Runs on the worker's loop thread.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple
from squall.runtime.executors import Executor
from squall.runtime.tasks import ACK_ACK, TaskState

if TYPE_CHECKING:
    from squall.runtime.worker import Worker

log = logging.getLogger("squall.runtime.executors")


class SpoutExecutor(Executor):
    kind = "spout"

    def __init__(self, worker: Worker, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(worker, component_id, tasks)
        conf = tasks[0].conf
        self.max_pending = conf.get("topology.max.spout.pending") or 0
        self.idle_secs = float(conf.get("topology.sleep.spout.wait.strategy.time.ms", 1)) / 1000
        self.timeout = float(conf.get("topology.message.timeout.secs", 30))
        self.timeouts = bool(conf.get("topology.enable.message.timeouts", True))
        self.next_rotate = time.monotonic() + self.timeout
        self.active = False
        self.malformed = 0           # completions from the network that were not one
        for ts in tasks:
            ts.pending_new = {}      # type: ignore[attr-defined]
            ts.pending_old = {}      # type: ignore[attr-defined]
            ts.idle_until = 0.0      # type: ignore[attr-defined]

    def pending(self, ts: TaskState) -> int:
        return len(ts.pending_new) + len(ts.pending_old)  # type: ignore[attr-defined]

    def completions(self) -> int:
        """Hand every queued completion to its spout; returns how many."""
        done = 0
        for ts in self.tasks:
            q = ts.queue
            while q:
                self._completion(ts, q.popleft())
                done += 1
        return done

    def run_once(self) -> int:
        done = self.completions()
        worker = self.worker
        if not self.active or worker.throttled:
            return done
        now = worker.now
        batch = self.batch
        max_pending = self.max_pending
        for ts in self.tasks:
            if ts.idle_until > now:    # type: ignore[attr-defined]
                continue
            next_tuple = ts.instance.next_tuple
            # a pass emits about one batch per task, and no more than the pending room: a
            # tracked emit adds one pending tree, an untracked one none
            room = batch
            if max_pending:
                room = min(batch, max_pending - self.pending(ts))
            limit = ts.emitted + room
            for _ in range(batch if room > 0 else 0):
                before = ts.emitted
                try:
                    next_tuple()
                except Exception as exc:
                    worker.report_error(ts, exc)
                    ts.idle_until = now + self.idle_secs  # type: ignore[attr-defined]
                    break
                if ts.emitted == before:
                    ts.idle_until = now + self.idle_secs  # type: ignore[attr-defined]
                    break
                done += 1
                if ts.emitted >= limit:
                    break
            worker.run_deferred_acks(ts)
        return done

    def track(self, ts: TaskState, root: int, tup_id: Any) -> None:
        ts.pending_new[root] = (tup_id, self.worker.now)  # type: ignore[attr-defined]

    def _completion(self, ts: TaskState, tup: Tuple | tuple[int, bool]) -> None:
        """One completion: ``(root, ok)`` from an acker of this worker, or an ack or fail
        tuple ``(root,)`` from one in another worker."""
        if tup.__class__ is tuple:
            root, ok = tup              # type: ignore[misc]
            entry = ts.pending_new.pop(root, None)  # type: ignore[attr-defined]
        else:
            try:
                root = tup.values[0]    # type: ignore[union-attr]
                entry = ts.pending_new.pop(root, None)  # type: ignore[attr-defined]
            except (IndexError, TypeError):     # not an acker's completion: from the network
                self.malformed += 1
                if self.malformed == 1 or self.malformed % 1000 == 0:
                    log.warning("spout task %d dropped a malformed completion %.80r (%d so "
                                "far)", ts.task, tup.values, self.malformed)  # type: ignore
                return
            ok = tup.src.stream == ACK_ACK  # type: ignore[union-attr]
        if entry is None:
            entry = ts.pending_old.pop(root, None)  # type: ignore[attr-defined]
            if entry is None:
                return        # already timed out
        if ok:
            ts.acked += 1
            ts.complete_ms += (self.worker.now - entry[1]) * 1000.0
            ts.complete_n += 1
            self._call(ts, ts.instance.ack, entry[0])
        else:
            ts.failed += 1
            self._call(ts, ts.instance.fail, entry[0])

    def _call(self, ts: TaskState, fn: Any, *args: Any) -> None:
        """Call one of the spout's callbacks; an error is reported as the task's."""
        try:
            fn(*args)
        except Exception as exc:
            self.worker.report_error(ts, exc)

    def on_timer(self, now: float) -> None:
        if not self.timeouts or now < self.next_rotate:
            return
        self.next_rotate = now + self.timeout
        for ts in self.tasks:
            expired = ts.pending_old              # type: ignore[attr-defined]
            ts.pending_old = ts.pending_new       # type: ignore[attr-defined]
            ts.pending_new = {}                   # type: ignore[attr-defined]
            for tup_id, _ in expired.values():
                ts.failed += 1
                self._call(ts, ts.instance.fail, tup_id)

    def set_active(self, active: bool) -> None:
        if active == self.active:
            return
        self.active = active
        for ts in self.tasks:
            self._call(ts, ts.instance.activate if active else ts.instance.deactivate)

    def stop(self) -> None:
        for ts in self.tasks:
            try:
                ts.instance.close()
            except Exception:
                log.exception("close of %s task %d failed", self.component_id, ts.task)
