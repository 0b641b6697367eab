"""The spout executor: calls ``next_tuple`` while the spouts may emit (active, under
``topology.max.spout.pending``), hands completions from the acker to ``ack`` and ``fail``,
and times out pending tuples. Runs on the worker's loop thread.
"""
from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

from squall.api.tuple import Tuple
from squall.metrics.histogram import index as _bucket
from squall.runtime.executors.base import INF, Executor, Services, pass_cap
from squall.runtime.executors.pending import PendingLimit
from squall.runtime.executors.timeout_report import Backlog, TimeoutReport
from squall.runtime.streams import ACK_ACK, ACK_RESET
from squall.runtime.task import TaskState

log = logging.getLogger("squall.runtime.executors")
#: about the longest one pass of a spout task calls ``next_tuple`` for, once its time per call
#: is measured (the first pass calls it once): a spout of 0.1 s a call held its worker's loop
#: for a whole batch of calls (6.4 s), and a deactivation or a shutdown with it. Long enough
#: that a spout of 100 µs a call keeps its batch a pass (bench.scale's run at 500 calls).
PASS_SECONDS = 0.05
_perf = time.perf_counter
_monotonic = time.monotonic
#: failing tuple ids a spout executor counts (the most recent; older ones are forgotten)
FAILS_KEPT = 100_000
#: marks the count key of an unhashable tuple id (no hashable id can equal it)
_UNHASHABLE = object()


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a tuple id, equal for equal ids: lists and tuples as tuples,
    dicts as their items sorted, sets as frozensets, recursively; anything else that is not
    hashable as its ``repr``. For the failure counts of ``topology.max.replays`` only."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        items = [(_frozen(k), _frozen(v)) for k, v in value.items()]
        try:
            items.sort()
        except TypeError:               # keys of mixed types
            items.sort(key=repr)
        return (dict, tuple(items))
    if isinstance(value, (set, frozenset)):
        return frozenset(_frozen(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


class SpoutExecutor(Executor):
    kind = "spout"
    checks_threads = True       # a poller thread of the spout's own may emit
    #: whether the spouts may emit (activated)
    active: bool

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(services, component_id, tasks)
        self.clock = services.clock
        self.report_error = services.report_error
        conf = tasks[0].conf
        # trees in flight per task: without ackers there are none, and the key does nothing
        # (as in Storm), rather than holding each pass to that many calls
        self.max_pending = (conf.get("topology.max.spout.pending") or 0) \
            if services.acks.acking else 0
        #: the same limit for the tracked emits of the spout's own threads (.pending)
        self.pending_limit: PendingLimit | None = None
        if self.max_pending:
            self.pending_limit = PendingLimit(self.max_pending, self.in_flight,
                                              self.limit_applies)
            self.handoff.limit_tracked(self.pending_limit)
        #: turns a task was not called because it had max pending trees in flight (beside
        #: ``paused``, the passes backpressure held every task back)
        self.at_max_pending = 0
        self.idle_secs = float(conf.get("topology.sleep.spout.wait.strategy.time.ms", 1)) / 1000
        self.timeout = float(conf.get("topology.message.timeout.secs", 30))
        self.timeouts = bool(conf.get("topology.enable.message.timeouts", True))
        self.next_rotate = time.monotonic() + self.timeout
        #: tells when its trees time out in numbers (checked as they rotate)
        self.timeout_report = TimeoutReport(component_id, self.timeout, self.max_pending)
        #: ``paused`` at the previous rotation: whether backpressure held the spout back since
        #: (.timeout_report)
        self.paused_then = 0
        self.active = False
        #: whether it was deactivated (and not activated since): its threads' tracked emits
        #: wait for no room meanwhile (.pending)
        self.deactivated = False
        #: a system spout that goes on while the topology is deactivated (the checkpoint
        #: spout: what stateful bolts hold still commits, and is acked, meanwhile)
        self.stays_active = bool(getattr(type(tasks[0].instance), "stays_active", False))
        self.malformed = 0           # completions from the network that were not one
        #: the source of the resets of a tree's timeout an acker passes on (.acks)
        self.reset_src = services.sources.ack[ACK_RESET]
        #: since when (loop clock) backpressure has held the spouts back without a break
        #: (0: it does not), and whether that spell was logged (past ``stall_secs``)
        self.held_since = 0.0
        self.held_logged = False
        self.stall_secs = float(conf.get("topology.backpressure.stall.report.secs", 60))
        #: ``topology.max.replays``: failures of one tuple id before it is reported as a
        #: poison tuple (0: not counted); the counts, and the newest poison tuples reported
        self.max_replays = int(conf.get("topology.max.replays") or 0)
        self.fail_counts: dict[Any, int] = {}
        self.poison: deque[dict[str, Any]] = deque(maxlen=10)

    def pending(self, ts: TaskState) -> int:
        """Trees of task ``ts`` in flight."""
        return len(ts.pending_new) + len(ts.pending_old)

    def pending_calls(self, ts: TaskState) -> int:
        """Tracked emits of task ``ts`` made on other threads and not applied by the loop
        yet (not in ``pending`` yet): those its own threads handed over (.pending)."""
        limit = self.pending_limit
        return limit.queued(ts) if limit is not None else 0

    def in_flight(self, ts: TaskState) -> int:
        """What ``topology.max.spout.pending`` bounds for task ``ts``: its trees in flight
        and its tracked emits on their way to the loop. Read from any thread."""
        return self.pending(ts) + self.pending_calls(ts)

    def room_made(self) -> None:
        """Trees completed or timed out and the spout's ``ack``/``fail`` of them ran: its
        threads waiting for room look again (.pending). Called while some wait."""
        self.pending_limit.wake()   # type: ignore[union-attr]

    def limit_applies(self) -> bool:
        """Whether a tracked emit from a thread of the spout's own waits for room: while
        the worker's loop runs, from the start (a poller started in ``initialize`` emits
        before the topology is activated) until the spout is deactivated, and again once
        it is activated (.pending)."""
        return not self.deactivated and self.services.loop.running

    def completions(self) -> int:
        """Hand every queued completion to its spout; returns how many (and wakes the
        spout's threads waiting for room when trees completed: .pending)."""
        done = 0
        for ts in self.tasks:
            q = ts.queue
            while q:
                self._completion(ts, q.popleft())
                done += 1
        if done and self.pending_limit is not None and self.pending_limit.waiting:
            self.room_made()
        return done

    def run_once(self) -> int:
        # the trees its ack, fail and next_tuple start from now on are stamped with the start
        # of its turn, not of the pass: the bolts of this worker may have run before it
        self.clock.turn = _monotonic()
        done = self.completions()
        if not self.active:
            return done
        congested = self.flow.congested
        if congested and not congested.isdisjoint(self.downstream):
            self.paused += 1        # a task it emits to is congested: no next_tuple
            if not self.held_since:
                self.held_since = self.clock.now
            return done
        if self.held_since:
            self.released()
        now = self.clock.now
        report_error = self.report_error
        batch = self.batch
        max_pending = self.max_pending
        # tracked emits its own threads handed over count as in flight (.pending)
        queued = self.pending_limit.queued if self.pending_limit is not None else None
        for ts in self.tasks:
            if ts.idle_until > now:
                continue
            next_tuple = ts.instance.next_tuple
            # a pass emits about one batch per task, and no more than the pending room: a
            # tracked emit adds one pending tree, an untracked one none
            room = batch
            if queued is not None:
                room = min(batch, max_pending - len(ts.pending_new) - len(ts.pending_old)
                           - queued(ts))
                if room <= 0:
                    self.at_max_pending += 1
            limit = ts.emitted + room
            calls = batch if room > 0 else 0
            cap = ts.pass_cap or 1          # calls per pass: measured below
            if cap < calls:
                calls = cap
            made = 0
            t0 = _perf()
            # the loop's variable counts the calls made, read after it (no count per call)
            for made in range(1, calls + 1):  # noqa: B007
                before = ts.emitted
                try:
                    next_tuple()
                except Exception as exc:
                    report_error(ts, exc)
                    ts.idle_until = now + self.idle_secs
                    break
                if ts.emitted == before:
                    ts.idle_until = now + self.idle_secs
                    break
                done += 1
                if ts.emitted >= limit:
                    break
            if made:
                ts.pass_cap = pass_cap(made, _perf() - t0, PASS_SECONDS)
            self.run_deferred_acks(ts)
        return done

    def poll_due(self) -> float:
        """When an active spout on the loop is asked for ``next_tuple`` again: the earliest
        of its tasks' ``idle_until`` (a call that emitted nothing rests its task
        ``topology.sleep.spout.wait.strategy.time.ms``), so an idle worker's loop sleeps
        until then rather than waking every millisecond.

        Never (``inf``) while backpressure holds it, and a task with max pending trees in
        flight counts not: what ends either comes with a wake-up or a busy pass (a credit
        or a congestion report received, a local task draining, a completion from an
        acker) or with the loop's timers (a remote congestion expiring, pending trees timing
        out), so polling then only wakes an idle worker for nothing."""
        if not self.active or self.threaded or self.flow.blocks(self.downstream):
            return INF
        max_pending = self.max_pending
        due = INF
        for ts in self.tasks:
            if ts.idle_until < due and not (max_pending and self.in_flight(ts) >= max_pending):
                due = ts.idle_until
        return due

    def at_max_everywhere(self) -> bool:
        """Whether every task has ``topology.max.spout.pending`` trees in flight."""
        max_pending = self.max_pending
        return bool(max_pending) and all(self.in_flight(ts) >= max_pending
                                         for ts in self.tasks)

    def released(self) -> None:
        """Backpressure let the spouts go again."""
        if self.held_logged:
            log.info("spout %s resumes after %.0f s held back by backpressure",
                     self.component_id, self.clock.now - self.held_since)
        self.held_since = 0.0
        self.held_logged = False

    def held_secs(self, now: float) -> float:
        """Seconds backpressure has held the spouts back without a break (0: it does not)."""
        return now - self.held_since if self.held_since else 0.0

    def waiting_for(self, now: float) -> str:
        """Why ``next_tuple`` is not being called now: ``inactive``, ``backpressure``,
        ``max.spout.pending`` (every task has that many trees in flight), or ``""`` (it is
        called). Read from any thread, for the stats."""
        if not self.active:
            return "inactive"
        if self.held_secs(now) > 0:
            return "backpressure"
        if self.at_max_everywhere():
            return "max.spout.pending"
        return ""

    def run_deferred_acks(self, ts: TaskState) -> None:
        """Ack the tup_ids of untracked emits (a topology without ackers): after the
        ``next_tuple`` that emitted them, through ``_call`` (on the spout's own thread when
        it has one). An emit whose routing raised fails its tup_id instead, as a tracked
        one's tree fails."""
        deferred = ts.deferred
        if deferred:
            ts.deferred = []
            for tup_id in deferred:
                ts.acked += 1
                self._call(ts, ts.instance.ack, tup_id)
        if ts.deferred_fails:
            failed, ts.deferred_fails = ts.deferred_fails, []
            for tup_id in failed:
                ts.failed += 1
                self._call(ts, ts.instance.fail, tup_id)

    def _completion(self, ts: TaskState, tup: Tuple | tuple[int, bool]) -> None:
        """One completion: ``(root, ok)`` from an acker of this worker, or an ack or fail
        tuple ``(root,)`` from one in another worker; or a reset tuple ``(root,)`` from an
        acker here or there (a bolt's ``reset_timeout``)."""
        if tup.__class__ is tuple:
            root, ok = tup              # type: ignore[misc]
            entry = ts.pending_new.pop(root, None)
        else:
            try:
                root = tup.values[0]    # type: ignore[union-attr]
                if tup.src is self.reset_src:   # type: ignore[union-attr]
                    self._reset(ts, root)
                    return
                entry = ts.pending_new.pop(root, None)
            except (IndexError, TypeError):     # not an acker's completion: from the network
                self.malformed += 1
                if self.malformed == 1 or self.malformed % 1000 == 0:
                    log.warning("spout task %d dropped a malformed completion %.80r (%d so "
                                "far)", ts.task, tup.values, self.malformed)  # type: ignore
                return
            ok = tup.src.stream == ACK_ACK  # type: ignore[union-attr]
        if entry is None:
            entry = ts.pending_old.pop(root, None)
            if entry is None:
                return        # already timed out
        if ok:
            ts.acked += 1
            # now, not the pass's clock: a tree whose bolts and acker run in this worker
            # completes within the pass that ran them (one clock read per completed tree)
            latency = (_monotonic() - entry[1]) * 1000.0
            ts.complete_ms += latency
            if not ts.complete_n & 15:     # one completion in 16 feeds the percentiles
                ts.complete_hist[_bucket(latency)] += 1
                ts.complete_samples += 1
            ts.complete_n += 1
            self._call(ts, ts.instance.ack, entry[0])
        else:
            ts.failed += 1
            if self.max_replays:
                self._count_failure(ts, entry[0], "failed downstream")
            self._call(ts, ts.instance.fail, entry[0])

    @staticmethod
    def _reset(ts: TaskState, root: int) -> None:
        """Restart tree ``root``'s timeout: back in the newer of the two generations of
        pending trees, it times out no sooner than a message timeout from now (one not
        pending any more, completed or timed out, is left alone)."""
        entry = ts.pending_old.pop(root, None)
        if entry is not None:
            ts.pending_new[root] = entry

    def _count_failure(self, ts: TaskState, tup_id: Any, why: str) -> None:
        """One more failure of ``tup_id``: past ``topology.max.replays`` it is reported (an
        error of the component naming it, and the ``poison`` stats), once per further
        time it crosses the limit."""
        counts = self.fail_counts
        try:
            # re-inserted: the most recently failed stay longest. Both steps inside the try:
            # pop from an empty dict returns its default without hashing the key
            n = counts.pop(tup_id, 0) + 1
            counts[tup_id] = n
        except TypeError:
            # an unhashable tuple id ([partition, offset] from a multi-lang or Kafka-style
            # spout): counted by a hashable copy of its value, on this path alone
            try:
                key = (_UNHASHABLE, _frozen(tup_id))
            except RecursionError:      # a list that holds itself
                key = (_UNHASHABLE, repr(tup_id))
            n = counts.pop(key, 0) + 1
            counts[key] = n
        if len(counts) > FAILS_KEPT:
            del counts[next(iter(counts))]
        if n == self.max_replays + 1:
            self.poison.append({"task": ts.task, "tup_id": repr(tup_id)[:200], "fails": n,
                                "last": why, "time_secs": int(time.time())})
            self.report_error(ts, f"poison tuple: tuple id {tup_id!r:.200} of spout "
                                  f"{self.component_id} failed {n} times (last: {why}; "
                                  f"topology.max.replays is {self.max_replays})", True)

    def _call(self, ts: TaskState, fn: Any, *args: Any) -> None:
        """Call one of the spout's callbacks; an error is reported as the task's."""
        try:
            fn(*args)
        except Exception as exc:
            self.report_error(ts, exc)

    def on_timer(self, now: float) -> None:
        if self.held_since and not self.held_logged and now - self.held_since >= self.stall_secs:
            self.held_logged = True
            log.warning("spout %s has been held back by backpressure for %.0f s: a task it "
                        "feeds (or one downstream of it) does not keep up",
                        self.component_id, now - self.held_since)
        if not self.timeouts or now < self.next_rotate:
            return
        self.next_rotate = now + self.timeout
        timed_out = most = 0
        worst = self.tasks[0]       # the task with the most timed out
        for ts in self.tasks:
            expired = ts.pending_old
            ts.pending_old = ts.pending_new
            ts.pending_new = {}
            timed_out += len(expired)
            if len(expired) > most:
                worst, most = ts, len(expired)
            for tup_id, _ in expired.values():
                ts.failed += 1
                if self.max_replays:
                    self._count_failure(ts, tup_id, "timed out")
                self._call(ts, ts.instance.fail, tup_id)
        if timed_out and self.pending_limit is not None and self.pending_limit.waiting:
            self.room_made()
        held_back = self.paused != self.paused_then     # by backpressure, since the last one
        self.paused_then = self.paused
        text = self.timeout_report.rotated(
            timed_out, sum(ts.acked + ts.failed for ts in self.tasks), now,
            lambda: Backlog.of(self.services.loop.executors, held_back))
        if text is not None:
            self.report_error(worst, text, True)

    def set_active(self, active: bool) -> None:
        if active == self.active or (self.stays_active and not active):
            return
        self.active = active
        self.deactivated = not active
        if self.pending_limit is not None:
            self.pending_limit.wake()   # inactive: its threads' emits wait no more
        for ts in self.tasks:
            self._call(ts, ts.instance.activate if active else ts.instance.deactivate)

    def stop(self) -> None:
        """Call ``close`` of each task whose ``initialize`` returned (only those), once the
        spout's threads waiting for room are let go (the loop stopped: .pending)."""
        if self.pending_limit is not None:
            self.pending_limit.wake()
        for ts in self.tasks:
            if not ts.initialized:
                continue
            try:
                ts.instance.close()
            except Exception:
                log.exception("close of %s task %d failed", self.component_id, ts.task)
