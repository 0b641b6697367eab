"""The bolt executor: runs its tasks' queued tuples through ``process`` (or a batch through
``process_batch``), anchoring, acking and failing as the bolt's class asks. Runs on the
worker's loop thread.
"""
from __future__ import annotations

import logging
from collections import deque
from itertools import repeat as _repeat
from itertools import starmap as _starmap
from threading import get_ident
from typing import Any

from squall.api.tuple import Source, Tuple, TupleBatch, TupleRun
from squall.errors import TopologyError
from squall.metrics.histogram import index as _bucket
from squall.runtime.executors.base import Executor, Services, _perf, pass_cap
from squall.runtime.executors.uncounted import Uncounted, settles
from squall.runtime.task import TaskState

log = logging.getLogger("squall.runtime.executors")
#: runs an iterator to its end in C (a deque that keeps nothing)
_consume = deque[Any](maxlen=0).extend
#: how long one pass over a bolt's queue may run when it takes more than one batch
PASS_SECONDS = 0.005
#: most tuples of one task sampled for process latency and not acked yet (bolts acking
#: explicitly); samples older than the message timeout are dropped by the stats timer
MAX_SAMPLES = 64


class BoltExecutor(Executor):
    kind = "bolt"
    system_n: int
    system_secs: float

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(services, component_id, tasks)
        self.acks = services.acks
        self.report_error = services.report_error
        bolt = tasks[0].instance
        cls = type(bolt)
        self.batch_mode = batch_mode(cls)
        #: process_batch takes a TupleBatch; its queues may hold TupleRun entries
        self.lazy = self.takes_runs(cls)
        self.auto_ack = bool(getattr(cls, "auto_ack", True))
        #: a bolt that acks itself may emit and ack from threads of its own (an async
        #: client's callbacks); one that acks automatically emits from its callbacks
        self.checks_threads = not self.auto_ack
        self.auto_anchor = bool(getattr(cls, "auto_anchor", True))
        self.auto_fail = bool(getattr(cls, "auto_fail", True))
        self.tick_src = services.sources.tick
        #: system tuples (ticks; checkpoints in a stateful executor) run in the current pass,
        #: and the time they took: not the user's tuples, so each pass takes them out of its
        #: counts (executed, execute latency) and resets them
        self.system_n = 0
        self.system_secs = 0.0
        #: the untracked tuples of the running call auto_ack has not counted yet: a bolt's
        #: own ack or fail counts only those (.uncounted)
        self.uncounted = Uncounted()

    @classmethod
    def takes_runs(cls, component_cls: type) -> bool:
        return batch_mode(component_cls) and bool(getattr(component_cls, "lazy_batch", False))

    def run_once(self) -> int:
        congested = self.flow.congested
        if congested and not congested.isdisjoint(self.downstream):
            self.paused += 1        # a task it emits to is congested: its queue waits
            return 0
        done = 0
        batch = self.batch
        auto_ack = self.auto_ack
        for ts in self.tasks:
            q = ts.queue
            n = len(q)
            if not n:
                continue
            t0 = _perf()
            if auto_ack:
                acked = ts.acked
            else:
                # process latency of bolts that ack themselves: the pass's first tuple is
                # sampled (a dict entry per pass, none per tuple); its ack closes the sample
                head = q[0]
                if head.__class__ is Tuple and head.src is not self.tick_src \
                        and len(ts.samples) < MAX_SAMPLES:
                    ts.samples[id(head)] = (head, t0)
            if self.lazy:
                n = self._run_lazy(ts, q, batch)
            elif self.batch_mode:
                n = self._take(n, batch, ts.pass_cap)
                if n == len(q):
                    tuples = list(q)
                    q.clear()
                else:
                    tuples = [q.popleft() for _ in range(n)]
                self._run_batch(ts, tuples)
            else:
                n = self._take(n, batch, ts.pass_cap)
                self._run_tuples(ts, q, n)
            spent = _perf() - t0
            ts.pass_cap = pass_cap(n, spent, PASS_SECONDS)
            done += n
            if self.system_n:           # ticks ran in the pass
                n, spent = self.users_share(n, spent)
                if not n:
                    continue
            ts.exec_ms += spent * 1000.0
            before = ts.exec_n
            ts.exec_n = after = before + n
            if (before ^ after) >> 4:   # a pass that crosses a 16th tuple feeds the percentiles
                ts.exec_hist[_bucket(spent * 1000.0 / n)] += n
                ts.exec_samples += 1
            ts.executed += n
            if auto_ack:
                # the pass's acks reach the acker when it ends: each tuple acked in it was
                # processed from the pass's start to its end
                acked = ts.acked - acked
                if acked:
                    ts.proc_ms += spent * 1000.0 * acked
                    ts.proc_n += acked
        return done

    def users_share(self, n: int, spent: float) -> tuple[int, float]:
        """The tuples of a pass of ``n`` that took ``spent`` s and the time they took, less
        the system tuples run in it (``system_n``, ``system_secs``, reset here): those count
        neither in executed nor in the execute latency."""
        n -= self.system_n
        spent = max(0.0, spent - self.system_secs)
        self.system_n = 0
        self.system_secs = 0.0
        return n, spent

    @staticmethod
    def _take(n: int, batch: int, cap: int) -> int:
        """How many of ``n`` queued tuples one pass takes: a long queue (over a batch) half
        at a time (a bolt that gets more per input than it gets passes - a split - keeps up
        without filling its queue), but never much more than PASS_SECONDS of this bolt's
        measured time per tuple (``cap``, 0 until measured, at least 1 once it is): a slow
        bolt's pass stays short, so its worker's loop checks backpressure and serves its
        other executors often (a bolt of 0.2 ms a tuple took a whole batch, 20 ms, a pass
        and 94 % of its worker's loop). The first pass, unmeasured, takes one tuple: a
        whole batch of a bolt of 0.2 s a tuple held the loop 20 s, past a shutdown's wait."""
        if not cap:
            return 1
        if n > batch:
            return min(max(batch, n >> 1), cap)
        return cap if cap < n else n

    def ack_function(self, ts: TaskState) -> Any:
        """The ``ack`` a bolt task calls: acks ``tup`` (an untracked one is counted once, see
        :mod:`.uncounted`) and, when ``tup`` was sampled at the start of its pass, adds the
        time since then to the task's process latency.

        An acked tuple's edge and XOR are zeroed (AckLedger.ack_tuple, as a failed one's:
        AckLedger.fail_tuple), so acking or failing it again (a second ``ack``, ``auto_ack``
        after an ``ack`` in ``process``, as streamparse bolts may do, or an ``ack`` of a tuple
        the bolt kept after auto_ack acked it) changes nothing and counts nothing; such an
        ack is logged once per task. (XORed twice, its edge would cancel out and its tree
        would wait for its timeout.)

        A tick tuple is in no tree and made settled (squall.runtime.timers): acking or
        failing it counts nothing and logs nothing.

        From a thread other than the loop's it is handed to the loop (.handoff)."""
        ack_tuple = self.acks.ack_tuple
        samples = ts.samples
        warned = False
        gate = self.handoff
        auto_ack = self.auto_ack
        uncounted = self.uncounted
        tick_src = self.tick_src

        def ack(tup: Tuple) -> None:
            nonlocal warned
            if get_ident() != gate.ident and not gate.here():
                if not isinstance(tup, Tuple):      # raised here, not on the loop thread
                    raise not_a_tuple(ts, "ack", tup)
                gate.put(ts, ack, (tup,))
                return
            if samples:
                sample = samples.pop(id(tup), None)   # the entry holds tup: its id is unique
                if sample is not None:
                    ts.proc_ms += (_perf() - sample[1]) * 1000.0
                    ts.proc_n += 1
            try:                # costs nothing while nothing raises (CPython 3.11)
                roots = tup.roots
            except AttributeError:
                raise not_a_tuple(ts, "ack", tup) from None
            if roots:
                if tup.id or tup.ackval:
                    ack_tuple(ts, tup)
                    return
            elif tup.src.__class__ is not Source:   # made by the bolt: nothing to count
                raise not_a_tuple(ts, "ack", tup)
            elif settles(tup, auto_ack, uncounted):
                ts.acked += 1
                return
            elif tup.src is tick_src:   # settled when made: counts nothing, not a repeat
                return
            if not warned:
                warned = True
                settled_again(ts, "acked", tup)
        return ack

    def reset_function(self, ts: TaskState) -> Any:
        """The ``reset_timeout`` a bolt task calls: restarts the message timeout of every
        tree ``tup`` belongs to, at their ackers and their spout tasks (AckLedger.reset_trees);
        nothing for an untracked tuple. From a thread other than the loop's it is handed to
        the loop (.handoff), as ``ack`` is."""
        reset_trees = self.acks.reset_trees
        gate = self.handoff

        def reset_timeout(tup: Tuple) -> None:
            if get_ident() != gate.ident and not gate.here():
                if not isinstance(tup, Tuple):      # raised here, not on the loop thread
                    raise not_a_tuple(ts, "reset_timeout", tup)
                gate.put(ts, reset_timeout, (tup,))
                return
            try:
                roots = tup.roots
            except AttributeError:
                raise not_a_tuple(ts, "reset_timeout", tup) from None
            if roots:
                reset_trees(ts, roots)
        return reset_timeout

    def install(self, ts: TaskState) -> None:
        inst = ts.instance
        inst.ack = self.ack_function(ts)
        inst.reset_timeout = self.reset_function(ts)
        fail_tuple = self.acks.fail_tuple
        fail_roots = self.acks.fail_roots
        gate = self.handoff
        auto_ack = self.auto_ack
        uncounted = self.uncounted
        tick_src = self.tick_src
        warned = False

        def fail(tup: Tuple) -> None:
            """Fails ``tup`` (AckLedger.fail_tuple); one acked or failed already (by the
            bolt, or by auto_ack when its ``process`` returned) is left as it is, and the
            first such call of the task is logged. An untracked one is counted once
            (.uncounted)."""
            nonlocal warned
            if get_ident() != gate.ident and not gate.here():
                if not isinstance(tup, Tuple):
                    raise not_a_tuple(ts, "fail", tup)
                gate.put(ts, fail, (tup,))
                return
            try:
                if tup.roots:
                    if tup.id or tup.ackval:
                        fail_tuple(ts, tup)
                        return
                elif tup.src.__class__ is not Source:   # made by the bolt
                    raise not_a_tuple(ts, "fail", tup)
                elif settles(tup, auto_ack, uncounted):
                    fail_roots(ts, None, 1)
                    return
                elif tup.src is tick_src:   # settled when made: counts nothing
                    return
                if not warned:
                    warned = True
                    settled_again(ts, "failed", tup)
            except AttributeError:
                if isinstance(tup, Tuple):
                    raise
                raise not_a_tuple(ts, "fail", tup) from None
        inst.fail = fail

    def drop_stale_samples(self, max_age: float) -> None:
        """Forget process-latency samples of tuples not acked within ``max_age`` seconds
        (failed, or never acked); called on the stats timer."""
        oldest = _perf() - max_age
        for ts in self.tasks:
            if ts.samples:
                for key in [k for k, (_, t0) in ts.samples.items() if t0 < oldest]:
                    del ts.samples[key]

    def _run_tuples(self, ts: TaskState, q: Any, n: int) -> None:
        """Run ``n`` queued tuples through ``process`` one by one: the common cases by the
        passes below, the rest (a tick queued without ackers, a bolt that turns off
        automatic anchoring or acking) here."""
        if not self.acks.acking:
            if not ts.ticks:
                self._run_plain(ts, q, n)
                return
        elif self.auto_anchor and self.auto_ack:
            self._run_tracked(ts, q, n)
            return
        popleft = q.popleft
        process = ts.instance.process
        tick_src = self.tick_src
        auto_ack = self.auto_ack
        auto_anchor = self.auto_anchor
        ack = self.acks.ack_tuple
        uncounted = self.uncounted
        plain = 0            # untracked tuples processed without error (acked in bulk)
        for _ in range(n):
            tup = popleft()
            if tup.roots:
                if auto_anchor:
                    ts.current = tup
                try:
                    process(tup)
                except Exception as exc:  # the executor goes on; see API.md section 2
                    ts.current = None
                    self._failed(ts, tup, exc)
                    continue
                ts.current = None
                if auto_ack:
                    ack(ts, tup)
            elif tup.src is tick_src:
                ts.ticks -= 1
                self._tick(ts, tup)
            else:
                uncounted.one = tup     # the bolt's own ack or fail of it counts (.uncounted)
                try:
                    process(tup)
                except Exception as exc:
                    uncounted.one = None
                    self._failed(ts, tup, exc)
                    continue
                uncounted.one = None
                if not tup.ackval:      # else the bolt acked or failed it itself: counted then
                    plain += 1
        if auto_ack:
            ts.acked += plain

    def _run_tracked(self, ts: TaskState, q: Any, n: int) -> None:
        """``_run_tuples`` with ackers, for a bolt that anchors and acks automatically (the
        default): each tracked tuple is the emit anchor while it is processed, and its ack
        is folded into the ledger's per-root XORs inline, as ``AckLedger.ack_tuple`` does
        (one call less per tuple: -1.5 % instructions per word, acking on), and it is marked
        settled as an explicit ack marks it (``id`` and ``ackval`` zeroed), so an ``ack`` or
        ``fail`` the bolt makes of it later (it kept the tuple) changes nothing and counts
        nothing. The loop takes each tuple from ``q`` by a C iterator (``starmap`` of
        ``popleft``): 5 bytecodes a tuple less than a ``popleft`` call of its own, which pays
        for the settling's 6 (bench.bytecodes, per-tuple acking on: this pass 56.1 -> 56.2
        per word, 2026-11-30)."""
        process = ts.instance.process
        acks = self.acks.folded
        acks_get = acks.get
        skipped = 0          # tuples not acked here: failed, ticks, acked by ack_tuple or
        #                      acked or failed by the bolt itself
        try:
            for tup in _starmap(q.popleft, _repeat((), n)):
                roots = tup.roots
                if roots:
                    ts.current = tup
                    try:
                        process(tup)
                    except Exception as exc:  # the executor goes on; see API.md section 2
                        ts.current = None
                        self._failed(ts, tup, exc)
                        skipped += 1
                        continue
                    v = tup.id ^ tup.ackval
                    if not v:   # the bolt acked or failed it itself: counted then
                        skipped += 1
                        continue
                    tup.id = tup.ackval = 0
                    for r in roots:
                        acks[r] = acks_get(r, 0) ^ v
                    continue
                # a tick or an untracked tuple: counted there
                ts.current = None
                skipped += 1
                self._run_tracked_one(ts, tup)
        finally:
            ts.current = None
        ts.acked += n - skipped

    def _run_tracked_one(self, ts: TaskState, tup: Tuple) -> None:
        """One tuple of a tracked pass that the pass's loop does not fold itself (a tick, an
        untracked tuple): processed, and acked (counted) unless it is a tick, it failed, or
        the bolt acked or failed it itself (.uncounted)."""
        if tup.src is self.tick_src:
            ts.ticks -= 1
            self._tick(ts, tup)
            return
        roots = tup.roots
        uncounted = self.uncounted
        if roots:
            ts.current = tup
        else:
            uncounted.one = tup
        try:
            ts.instance.process(tup)
        except Exception as exc:
            ts.current = uncounted.one = None
            self._failed(ts, tup, exc)
            return
        ts.current = uncounted.one = None
        if roots:
            self.acks.ack_tuple(ts, tup)
        elif not tup.ackval:
            ts.acked += 1

    def _run_plain(self, ts: TaskState, q: Any, n: int) -> None:
        """``_run_tuples`` without ackers and with no tick queued: the tuples are taken and
        passed to ``process`` by C loops (``map``), with no Python step of ours per tuple.
        The pass counts its tuples once it ends, less those that raised and those the bolt
        acked or failed itself (counted then: .uncounted, which finds the tuple in process
        from the map's iterator)."""
        if n == len(q):
            tuples = list(q)
            q.clear()
        else:
            tuples = list(_starmap(q.popleft, _repeat((), n)))
        process = ts.instance.process
        it = iter(tuples)
        failed = 0
        uncounted = self.uncounted
        uncounted.mapped(tuples, it)
        try:
            while True:
                try:
                    _consume(map(process, it))
                    break
                except Exception as exc:
                    # the tuple that raised is the last one map took from it
                    left = it.__length_hint__()  # type: ignore[attr-defined]
                    tup = tuples[n - left - 1]
                    if not tup.ackval:  # else the bolt acked or failed it: in ``own``
                        failed += 1
                    self._failed(ts, tup, exc)
        finally:
            own = uncounted.close()
        if self.auto_ack:
            ts.acked += n - failed - own

    def _run_lazy(self, ts: TaskState, q: Any, batch: int) -> int:
        """Run up to ``batch`` queue entries as one TupleBatch (fewer once they hold the
        pass's measured cap of tuples, see :meth:`_take`); returns the tuples taken."""
        extra = ts.run_extra
        cap = ts.pass_cap
        if len(q) <= batch and (not cap or len(q) + extra <= cap):
            parts: list[Any] = list(q)
            q.clear()
            ts.run_extra = 0
        else:
            parts = []
            taken = 0
            while q and len(parts) < batch and (not cap or taken < cap or not parts):
                p = q.popleft()
                parts.append(p)
                taken += len(p) if p.__class__ is TupleRun else 1
            extra = taken - len(parts)
            ts.run_extra -= extra
        n = size = len(parts) + extra    # size: tuples for process_batch, without ticks
        tick_src = self.tick_src
        if ts.ticks and any(p.src is tick_src for p in parts):
            for p in parts:
                if p.src is tick_src:
                    ts.ticks -= 1
                    self._tick(ts, p)
                    size -= 1
            parts = [p for p in parts if p.src is not tick_src]
            if not parts:
                return n
        batch_view = TupleBatch(parts, size)
        acks = self.acks
        uncounted = self.uncounted
        uncounted.batch(batch_view)
        try:
            ts.instance.process_batch(batch_view)
        except Exception as exc:
            uncounted.close()
            self.report_error(ts, exc)
            if self.auto_fail:
                built = batch_view.built
                if built is not None:   # the bolt read Tuples: those it settled stay so
                    acks.fail_tuples(ts, built)
                    return n
                for p in parts:
                    if p.__class__ is TupleRun:
                        acks.fail_roots(ts, p.trees(), len(p))
                    else:
                        acks.fail_tuple(ts, p)
            return n
        own = uncounted.close()     # the bolt's own acks and fails of untracked tuples
        if self.auto_ack:
            if not acks.acking:
                ts.acked += size - own
                return n
            ack = acks.ack_tuple
            built = batch_view.built
            if built is not None:       # the bolt read Tuples: ack those (their ids)
                for t in built:
                    ack(ts, t)
                return n
            for p in parts:
                if p.__class__ is TupleRun:
                    acks.ack_run(ts, p)
                else:
                    ack(ts, p)
        return n

    def _run_batch(self, ts: TaskState, tuples: list[Tuple]) -> None:
        tick_src = self.tick_src
        if ts.ticks and any(t.src is tick_src for t in tuples):
            for t in tuples:
                if t.src is tick_src:
                    ts.ticks -= 1
                    self._tick(ts, t)
            tuples = [t for t in tuples if t.src is not tick_src]
            if not tuples:
                return
        uncounted = self.uncounted
        uncounted.batch(tuples)
        try:
            ts.instance.process_batch(tuples)
        except Exception as exc:
            uncounted.close()
            self.report_error(ts, exc)
            if self.auto_fail:
                self.acks.fail_tuples(ts, tuples)
            return
        own = uncounted.close()     # the bolt's own acks and fails of untracked tuples
        if self.auto_ack:
            if not self.acks.acking:
                ts.acked += len(tuples) - own
                return
            ack = self.acks.ack_tuple
            for t in tuples:
                if t.roots:
                    ack(ts, t)
                elif not t.ackval:      # else the bolt acked or failed it itself
                    ts.acked += 1

    def _failed(self, ts: TaskState, tup: Tuple, exc: BaseException) -> None:
        self.report_error(ts, exc)
        if self.auto_fail:
            self.acks.fail_tuple(ts, tup)

    def _tick(self, ts: TaskState, tup: Tuple) -> None:
        """Run a tick tuple through ``process_tick``: a system tuple, counted apart from the
        user's (see ``system_n``)."""
        t0 = _perf()
        try:
            ts.instance.process_tick(tup)
        except Exception as exc:
            self.report_error(ts, exc)
        self.system_n += 1
        self.system_secs += _perf() - t0

    def stop(self) -> None:
        """Call ``cleanup`` of each task whose ``initialize`` returned (only those)."""
        for ts in self.tasks:
            if not ts.initialized:
                continue
            try:
                ts.instance.cleanup()
            except Exception:
                log.exception("cleanup of %s task %d failed", self.component_id, ts.task)


def batch_mode(cls: type) -> bool:
    """Whether a bolt class takes its tuples by batch (``process_batch`` without
    ``process``)."""
    return hasattr(cls, "process_batch") and not _overrides(cls, "process")


def _overrides(cls: type, name: str) -> bool:
    from squall.api.component import Bolt
    return getattr(cls, name, None) is not getattr(Bolt, name, None)


def settled_again(ts: TaskState, did: str, tup: Tuple) -> None:
    """Log an ``ack`` or ``fail`` of a tuple acked or failed already, by the bolt or by
    auto_ack when its ``process`` returned (the callers log a task's first one only)."""
    log.warning("%s task %d %s a tuple it had acked or failed already (itself, or by auto_ack "
                "when its process returned; values %.80r); the call is ignored",
                ts.component_id, ts.task, did, tup.values)


def not_a_tuple(ts: TaskState, call: str, given: Any) -> TopologyError:
    """The error of an ``ack`` or ``fail`` given something else than a received Tuple (a
    tuple id, as a multi-lang or streamparse bolt passes, or a Tuple the bolt made, with no
    stream's :class:`~squall.api.tuple.Source`: tested on the loop thread, for untracked
    tuples only, so neither a tracked ack nor another thread's hand-over pays for it)."""
    what = f"a Tuple no stream delivered (made with Tuple(...), values {given.values!r:.60})" \
        if isinstance(given, Tuple) else f"{type(given).__name__} {given!r:.80}"
    return TopologyError(f"component {ts.component_id!r}: {call} takes a Tuple this bolt "
                         f"received, got {what}")
