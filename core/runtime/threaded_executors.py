"""The executors of components on threads of their own: :class:`ThreadedBolt` and
:class:`ThreadedSpout`. The thread, the outbox, the control queue and the proxies they install
are in :mod:`squall.runtime.threaded`."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from squall.api.tuple import Tuple, TupleBatch
from squall.runtime.executors import MAX_SAMPLES, BoltExecutor, _perf
from squall.runtime.spout_executor import SpoutExecutor
from squall.runtime.tasks import TaskState
from squall.runtime.threaded import IDLE_WAIT, Dedicated, _count_acked

if TYPE_CHECKING:
    from squall.runtime.executors import Executor
    from squall.runtime.worker import Worker


class ThreadedBolt(Dedicated, BoltExecutor):
    """A bolt executor whose tasks' ``process``/``process_batch`` run on their own thread."""

    def __init__(self, worker: Worker, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(worker, component_id, tasks)
        #: a lazy_batch class gets a TupleBatch of Tuples: its queue takes no runs
        self.lazy_class: bool = bool(getattr(type(tasks[0].instance), "lazy_batch", False)) \
            and self.batch_mode
        self.lazy = False
        self.timeout = float(tasks[0].conf.get("topology.message.timeout.secs", 30))
        for ts in tasks:
            ts.thread_current = None  # type: ignore[attr-defined]
        self._init_thread()

    def run_once(self) -> int:
        n = self.apply()
        if self.control or any(ts.queue for ts in self.tasks):
            self.wake_thread.set()
        return n

    def _serve(self) -> None:
        batch = self.batch
        while self.alive:
            done = self._run_control()
            for ts in self.tasks:
                q = ts.queue
                if q:
                    done += self._batch(ts, q, batch) if self.batch_mode else \
                        self._tuples(ts, q, batch)
            if not done:
                self._idle(IDLE_WAIT)

    def _tuples(self, ts: TaskState, q: deque[Tuple], batch: int) -> int:
        process = ts.instance.process
        put = self.put
        worker = self.worker
        tick_src = self.tick_src
        auto_ack, auto_fail, auto_anchor = self.auto_ack, self.auto_fail, self.auto_anchor
        ack, fail = worker.ack_tuple, worker.fail_tuple
        samples = None if auto_ack else ts.thread_samples  # type: ignore[attr-defined]
        n = plain = 0
        self.busy = 1               # before a tuple leaves the queue (Worker.queued)
        t0 = _perf()
        while q and n < batch and self.alive:
            tup = q.popleft()
            n += 1
            if tup.src is tick_src:
                self._tick(ts, tup)
                continue
            if samples is not None and len(samples) < MAX_SAMPLES:
                samples[id(tup)] = _perf()
            if auto_anchor:
                ts.thread_current = tup  # type: ignore[attr-defined]
            try:
                process(tup)
            except Exception as exc:
                put(ts, worker.report_error, (ts, exc))
                if auto_fail:
                    put(ts, fail, (ts, tup))
            else:
                if auto_ack:
                    if tup.roots:
                        put(ts, ack, (ts, tup))
                    else:
                        plain += 1      # untracked: counted, in one call for the pass
            ts.thread_current = None  # type: ignore[attr-defined]
        if plain:
            put(ts, _count_acked, (ts, plain))
        spent = _perf() - t0
        ts.exec_ms += spent * 1000.0
        ts.exec_n += n
        ts.executed += n
        if auto_ack:    # each tuple acked in the pass: processed from its start to its end
            ts.proc_ms += spent * 1000.0 * n
            ts.proc_n += n
        self.busy = 0
        if samples and len(samples) >= MAX_SAMPLES:    # never acked: forget the oldest
            oldest = _perf() - self.timeout
            for key in [k for k, t0 in samples.items() if t0 < oldest]:
                del samples[key]
        return n

    def _batch(self, ts: TaskState, q: deque[Tuple], batch: int) -> int:
        worker = self.worker
        put = self.put
        tick_src = self.tick_src
        self.busy = 1
        tuples = [q.popleft() for _ in range(min(len(q), batch))]
        n = len(tuples)
        for t in tuples:
            if t.src is tick_src:
                self._tick(ts, t)
        tuples = [t for t in tuples if t.src is not tick_src]
        if tuples:
            t0 = _perf()
            arg = TupleBatch(tuples, len(tuples)) if self.lazy_class else tuples  # type: ignore[arg-type]
            try:
                ts.instance.process_batch(arg)
            except Exception as exc:
                put(ts, worker.report_error, (ts, exc))
                if self.auto_fail:
                    for t in tuples:
                        put(ts, worker.fail_tuple, (ts, t))
            else:
                if self.auto_ack:
                    plain = 0
                    for t in tuples:
                        if t.roots:
                            put(ts, worker.ack_tuple, (ts, t))
                        else:
                            plain += 1
                    if plain:
                        put(ts, _count_acked, (ts, plain))
            spent = _perf() - t0
            ts.exec_ms += spent * 1000.0
            ts.exec_n += len(tuples)
            ts.executed += len(tuples)
            if self.auto_ack:
                ts.proc_ms += spent * 1000.0 * len(tuples)
                ts.proc_n += len(tuples)
        self.busy = 0
        return n

    def _tick(self, ts: TaskState, tup: Tuple) -> None:
        try:
            ts.instance.process_tick(tup)
        except Exception as exc:
            self.put(ts, self.worker.report_error, (ts, exc))

    def stop(self) -> None:
        if self.stop_thread():
            super().stop()


class ThreadedSpout(Dedicated, SpoutExecutor):
    """A spout executor whose tasks' ``next_tuple``, ``ack`` and ``fail`` run on their own
    thread."""

    active: bool

    def __init__(self, worker: Worker, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(worker, component_id, tasks)
        for ts in tasks:
            ts.thread_emits = 0      # type: ignore[attr-defined]
            ts.put_tracked = 0       # type: ignore[attr-defined]
            ts.applied_tracked = 0   # type: ignore[attr-defined]
        #: the thread's view of ``active``: flipped in order with activate/deactivate calls
        self.thread_active = False
        #: the thread waits for activation or for the throttle to lift
        self.parked = False
        self.settled = threading.Event()
        self._init_thread()

    def pending_calls(self, ts: TaskState) -> int:
        """Tracked emits made and not yet applied by the loop (not in ``pending`` yet)."""
        return ts.put_tracked - ts.applied_tracked  # type: ignore[attr-defined]

    def run_once(self) -> int:
        done = self.apply() + self.completions()
        worker = self.worker
        for ts in self.tasks:
            worker.run_deferred_acks(ts)    # untracked emits with a tup_id: acked at once
        if self.parked and self.active and not worker.throttled:
            self.wake_thread.set()
        return done

    def set_active(self, active: bool) -> None:
        """Activation reaches the thread as calls: ``activate`` runs there before the first
        ``next_tuple``, and no ``next_tuple`` follows ``deactivate``."""
        if active == self.active:
            return
        self.active = active
        for ts in self.tasks:
            self._call(ts, ts.instance.activate if active else ts.instance.deactivate)
        self._call(self.tasks[0], self._flip, active)
        #: set once the thread has made the calls (``Worker.activate`` waits for it)
        self.settled = threading.Event()
        self._call(self.tasks[0], self.settled.set)

    def _flip(self, active: bool) -> None:
        self.thread_active = active

    def _serve(self) -> None:
        worker = self.worker
        batch = self.batch
        max_pending = self.max_pending
        while self.alive:
            self._run_control()
            if not self.thread_active or worker.throttled:
                self.parked = True
                self._idle(IDLE_WAIT)
                self.parked = False
                continue
            emitted = 0
            soonest = None
            for ts in self.tasks:
                now = time.monotonic()
                if ts.idle_until > now:   # type: ignore[attr-defined]
                    soonest = ts.idle_until if soonest is None else min(soonest, ts.idle_until)  # type: ignore[attr-defined]
                    continue
                next_tuple = ts.instance.next_tuple
                for _ in range(batch):
                    if max_pending and (self.pending(ts) + self.pending_calls(ts)
                                        >= max_pending):
                        break
                    before = ts.thread_emits  # type: ignore[attr-defined]
                    try:
                        next_tuple()
                    except Exception as exc:
                        self.put(ts, worker.report_error, (ts, exc))
                        ts.idle_until = now + self.idle_secs  # type: ignore[attr-defined]
                        break
                    if ts.thread_emits == before:  # type: ignore[attr-defined]
                        ts.idle_until = now + self.idle_secs  # type: ignore[attr-defined]
                        break
                    emitted += 1
                    if self.control:
                        break
            if not emitted:
                wait = IDLE_WAIT if soonest is None else max(0.0, soonest - time.monotonic())
                self._idle(min(wait, IDLE_WAIT) or self.idle_secs)

    def stop(self) -> None:
        if self.stop_thread():
            super().stop()


def threaded_class(base: type[Executor]) -> type[Executor]:
    """The threaded executor class for ``base`` (a bolt or spout executor class)."""
    return ThreadedSpout if issubclass(base, SpoutExecutor) else ThreadedBolt
