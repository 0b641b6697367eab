"""Components on a thread of their own, for components that block: the thread, the outbox,
the control queue and the proxies and the two executors that use
them (:class:`ThreadedBolt`, :class:`ThreadedSpout`).

A component class that sets ``dedicated_thread = True`` (or whose configuration sets
``topology.executor.dedicated.thread``) has its callbacks run on one thread per executor, so a
blocking call (a database write, a blocking poll, a slow service) stalls that executor's tasks
alone, not every executor of the worker.

Only the component's own code moves. What it asks of the runtime (``emit``, ``emit_many``,
``ack``, ``fail``, ``report_error``) is queued in the executor's *outbox* and applied by the
worker's loop thread, in call order, when it next runs this executor: routing, acking and
transfer stay on one thread. The other way, tuples arrive in the task's inbound queue as for any
bolt (a deque: appended on the loop thread, taken here), and a spout's completions, timeouts,
activation and deactivation arrive as calls in the executor's *control* queue.

Emit arguments are checked at the call (an undeclared stream raises in the component, as it
would on the loop) and values are copied there, so a list the component reuses arrives as it
was emitted. An emit that still fails when applied is reported as the component's error, and
its anchors fail so their trees replay. ``need_task_ids=True`` waits for the loop to apply the
emit. When the loop falls behind, the outbox fills and the component waits at its next call.
The outbox takes calls from any thread, so a component's own helper threads may emit too;
before the loop starts (``initialize``) and after it stops (``cleanup``) calls go straight to
the runtime, as they do for every component.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from itertools import repeat as _repeat
from threading import get_ident
from typing import Any

from squall.runtime import osthread
from squall.api.tuple import Tuple, TupleBatch
from squall.runtime.acks import SETTLED
from squall.metrics.histogram import index as _bucket
from squall.runtime.emit.fast import KEYWORDS, positional_options
from squall.runtime.emit.general import (
    anchors_of, as_values, check_anchors, check_arity, check_emit, values_list_of,
)
from squall.runtime.executors.base import Executor, Services, _perf
from squall.runtime.executors.bolt import MAX_SAMPLES, BoltExecutor, not_a_tuple
from squall.runtime.executors.pending import PendingLimit
from squall.runtime.executors.spout import SpoutExecutor
from squall.runtime.executors.uncounted import Uncounted
from squall.runtime.loop import FENCE_SECS
from squall.runtime.task import TaskState

log = logging.getLogger("squall.runtime.threaded")
#: calls an outbox takes before the component waits for the loop to apply some
OUTBOX_CAP = 8192
#: calls the loop applies from one outbox in one pass
OUTBOX_PASS = 4096
#: calls a feeding component's thread leaves for the loop before it waits for the loop to
#: take them: its emits reach the target queues only then, so what the thread is ahead of the
#: loop is what a congested target's queue may overshoot its high watermark by (at the
#: whole OUTBOX_CAP, a slow bolt's queue went 20 % past its capacity, then its feeder sat
#: still for seconds while it drained: stop-go). Unloaded it costs nothing: a spout on its
#: thread feeding two bolts, tuples per CPU second 503,830 unbounded, 665,303 at 1024
#: (medians of 4 alternated runs, 2026-11-30)
FEED_AHEAD = 1024
#: how long an idle component thread waits for a wake-up before it looks again
IDLE_WAIT = 0.05
CONF_KEY = "topology.executor.dedicated.thread"
#: a component whose queue drops its oldest tuples says so at most this often
DROP_LOG_SECS = 60.0
SWITCH_KEY = "topology.worker.thread.switch.interval.ms"
_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.0


def hold_switch_interval(conf: dict[str, Any]) -> bool:
    """Shorten the interpreter's switch interval to ``topology.worker.thread.switch.interval.ms``
    while a worker runs components on threads of their own: a thread back from a blocking
    call waits up to that long for a busy loop to let it run (5 ms by default: a component
    blocking 5 ms per tuple then got half the tuples through). Returns whether it holds it
    (release with :func:`release_switch_interval`); the shortest held value wins."""
    global _switch_users, _switch_saved
    ms = conf.get(SWITCH_KEY)
    if not ms:
        return False
    with _switch_lock:
        if not _switch_users:
            _switch_saved = sys.getswitchinterval()
        _switch_users += 1
        sys.setswitchinterval(min(sys.getswitchinterval(), float(ms) / 1000.0))
    return True


def release_switch_interval() -> None:
    """The interpreter's own switch interval again once no worker holds it."""
    global _switch_users
    with _switch_lock:
        _switch_users -= 1
        if not _switch_users:
            sys.setswitchinterval(_switch_saved)


def wants_thread(cls: type, conf: dict[str, Any]) -> bool:
    """Whether a component of class ``cls`` with configuration ``conf`` runs on its own
    thread."""
    return bool(getattr(cls, "dedicated_thread", False) or conf.get(CONF_KEY))


class ComponentThread:
    """The thread of one threaded executor, its outbox (calls for the loop thread) and its
    control queue (calls for the component thread). ``serve`` is the executor's body, run
    on the thread until :meth:`signal_stop`."""

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState],
                 serve: Callable[[], None]) -> None:
        self.services = services
        self.loop = services.loop
        self.component_id = component_id
        self.tasks = tasks
        self.serve = serve
        #: (task, function, args, anchors) applied on the loop thread, in order
        self.outbox: deque[tuple[TaskState, Callable[..., Any], tuple, Any]] = deque()
        #: (task, function, args) called on the component thread
        self.control: deque[tuple[TaskState, Callable[..., Any], tuple]] = deque()
        self.wake_thread = threading.Event()
        self.room = threading.Event()
        self.waiting_room = False
        #: tuples taken from a queue whose outcome is not in the outbox yet (Worker.queued)
        self.busy = 0
        self.alive = False
        self.thread: threading.Thread | None = None
        #: when (``time.monotonic``) the thread's current round of its serve loop began
        self.round_began = 0.0
        #: the thread's id once it runs (-1 before)
        self.ident = -1

    def start(self) -> None:
        self.alive = True
        self.thread = threading.Thread(
            target=self._main, daemon=True,
            name=f"squall-{self.component_id}-{self.tasks[0].task}")
        self.thread.start()

    def backlog(self) -> int:
        """Calls and tuples this thread has in hand (counted by ``Worker.queued``)."""
        return len(self.outbox) + len(self.control) + self.busy

    # -- component thread ----------------------------------------------------------------------
    def put(self, ts: TaskState, fn: Callable[..., Any], args: tuple, anchors: Any = None) -> None:
        """Queue ``fn(*args)`` for the loop thread; waits while the outbox is full."""
        out = self.outbox
        out.append((ts, fn, args, anchors))
        if len(out) == 1:
            self.loop.wake()
        elif len(out) > OUTBOX_CAP:
            self.room.clear()
            self.waiting_room = True
            while len(out) > OUTBOX_CAP // 2 and self.alive and self.loop.running:
                self.room.wait(0.1)
            self.waiting_room = False

    def _main(self) -> None:
        self.ident = threading.get_ident()
        osthread.set_name(f"sq-{self.component_id}")
        self.round_began = time.monotonic()
        try:
            self.serve()
        except BaseException as exc:   # reported as the error of the task that raised it
            self.loop.died(exc, self.tasks)
        finally:
            self.run_control()     # a deactivate or close-time call still reaches it

    def run_control(self) -> int:
        """On the component thread: make the calls queued for it; returns how many."""
        control = self.control
        n = 0
        while control:
            ts, fn, args = control.popleft()
            n += 1
            try:
                fn(*args)
            except Exception as exc:
                self.put(ts, self.services.report_error, (ts, exc))
        return n

    def idle(self, seconds: float) -> None:
        self.wake_thread.wait(seconds)
        self.wake_thread.clear()

    def held_by_pause(self) -> bool:
        """On the component thread, as each round of its serve loop begins: after a pause of
        the whole process (:mod:`squall.runtime.pause`: this round began more than the
        threshold after the previous one, and the process's watcher was late too) make no
        component call until the fence is lifted or the thread is told to stop, as the loop
        does; True when it waited. One comparison a round (a round takes up to a batch)."""
        now = time.monotonic()
        last, self.round_began = self.round_began, now
        pauses = self.loop.pauses
        if now - last <= pauses.threshold or not pauses.paused(now):
            return False
        while self.alive and pauses.fenced:
            self.wake_thread.wait(FENCE_SECS)
            self.wake_thread.clear()
        self.round_began = time.monotonic()
        return True

    # -- loop thread -------------------------------------------------------------------------
    def apply(self) -> int:
        """Apply the component's queued calls; returns how many."""
        out = self.outbox
        n = min(len(out), OUTBOX_PASS)
        fail_tuple = self.services.acks.fail_tuple
        report_error = self.services.report_error
        for _ in range(n):
            ts, fn, args, anchors = out.popleft()
            try:
                fn(*args)
            except Exception as exc:
                report_error(ts, exc)
                for a in anchors or ():
                    if a.__class__ is Tuple and a.roots:
                        fail_tuple(ts, a)
        if self.waiting_room and len(out) <= OUTBOX_CAP // 2:
            self.room.set()
        return n

    def wait_for(self, ts: TaskState, fn: Callable[..., Any], args: tuple) -> Any:
        """On the component thread: have the loop call ``fn(*args)`` and return its result
        (or raise its error)."""
        done = threading.Event()
        outcome: list[Any] = [None, None]       # result, error

        def run() -> None:
            try:
                outcome[0] = fn(*args)
            except BaseException as exc:        # handed back to the component's thread
                outcome[1] = exc
            finally:
                done.set()
        self.put(ts, run, ())
        while not done.wait(0.1):
            if not self.loop.running:
                raise RuntimeError("the worker stopped before the emit was applied")
        if outcome[1] is not None:
            raise outcome[1]
        return outcome[0]

    def call(self, ts: TaskState, fn: Callable[..., Any], *args: Any) -> None:
        """Have the component thread call ``fn(*args)`` (errors are reported as the task's)."""
        self.control.append((ts, fn, args))
        self.wake_thread.set()

    def signal_stop(self) -> None:
        """Ask the thread to leave once its current call returns."""
        self.alive = False
        self.wake_thread.set()
        self.room.set()

    def running(self) -> bool:
        """Whether the thread still runs (in a component's call, or on its way out)."""
        return self.thread is not None and self.thread.is_alive()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the thread to end."""
        if self.thread is not None:
            self.thread.join(timeout)

    def stop(self) -> bool:
        """Stop the thread, waiting until the loop's stop deadline; False if it is still in
        a call then (its component's cleanup or close is then skipped)."""
        self.signal_stop()
        if self.thread is None:
            return True
        self.thread.join(max(0.0, self.loop.stop_deadline - time.monotonic()))
        if self.thread.is_alive():
            log.warning("%s tasks %s: the component's thread is still in a call at shutdown; "
                        "its cleanup is skipped", self.component_id,
                        [ts.task for ts in self.tasks])
            return False
        return True

    # -- what the component calls ------------------------------------------------------------
    def install(self, ts: TaskState, spout: bool, auto_anchor: bool,
                uncounted: Uncounted | None = None, limit: PendingLimit | None = None) -> None:
        """Put proxies of the runtime's methods on the task's instance (after the executor
        installed the methods themselves). ``uncounted``: a bolt that acks automatically,
        the untracked tuples of its running call (set by its thread), which its own ``ack``
        or ``fail`` counts here, in call order with the pass's count (.uncounted).
        ``limit``: a spout's ``max.spout.pending``, which a tracked emit from a thread other
        than the component's waits in (.pending; the component's own is asked for
        ``next_tuple`` only below it)."""
        inst = ts.instance
        real_emit, real_many = inst.emit, inst.emit_many
        real_report = inst.report_error
        put = self.put
        loop = self.loop

        def direct() -> bool:
            """No loop runs (``initialize`` comes before it, ``cleanup`` after it): a call goes
            straight to the runtime, as it does for any component then."""
            return not loop.looping

        #: streams a plain emit (no direct task) was checked on: they stay valid
        checked: set[str] = set()

        def check(stream: str, direct_task: int | None) -> None:
            if direct_task is not None or stream not in checked:
                check_emit(ts, stream, direct_task)
                if direct_task is None:
                    checked.add(stream)

        def anchored(anchors: Any) -> Any:
            """The anchors as given (any iterable, read once), checked, as a tuple; else the
            tuple in process if auto-anchoring."""
            if anchors is not None:
                anchors = anchors_of(ts, anchors)
                check_anchors(ts, anchors)
                return tuple(anchors)
            cur = ts.thread_current if auto_anchor else None
            return (cur,) if cur is not None else None

        def emit(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                 anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                 need_task_ids: bool = False) -> list[int] | None:
            if _kw is not KEYWORDS:
                raise positional_options()
            if direct():
                return real_emit(values, stream, anchors=anchors, tup_id=tup_id,
                                 direct_task=direct_task, need_task_ids=need_task_ids)
            if stream is None:
                stream = "default"
            check(stream, direct_task)
            anchors = anchored(anchors)
            values = as_values(ts, stream, values)
            check_arity(ts, stream, values)
            if spout:
                ts.thread_emits += 1
                if tup_id is not None and limit is not None and get_ident() != self.ident:
                    limit.enter(ts)     # a helper thread's: waits while at max pending
                    call = (ts, _with_id, real_emit, values, stream, tup_id, direct_task,
                            need_task_ids)
                    if need_task_ids:
                        return self.wait_for(ts, limit.tracked_emit, call)
                    put(ts, limit.tracked_emit, call)
                    return None
                if tup_id is not None:
                    ts.put_tracked += 1
                    args = (ts, real_emit, values, stream, tup_id, direct_task, need_task_ids)
                    if need_task_ids:
                        return self.wait_for(ts, _tracked, args)
                    put(ts, _tracked, args)
                    return None
            if need_task_ids:
                return self.wait_for(ts, _one, (real_emit, values, stream, anchors, direct_task,
                                                True))
            put(ts, _one, (real_emit, values, stream, anchors, direct_task), anchors)
            return None

        def emit_many(values_list: Sequence[Sequence[Any]], stream: str = "default",
                      _kw: object = KEYWORDS, anchors: Any = None) -> None:
            if _kw is not KEYWORDS:
                raise positional_options("emit_many", "values_list", "anchors")
            if direct():
                return real_many(values_list, stream, anchors=anchors)
            if stream is None:
                stream = "default"
            check(stream, None)
            anchors = anchored(anchors)
            vals = [as_values(ts, stream, v) for v in values_list_of(ts, stream, values_list)]
            for v in vals:
                check_arity(ts, stream, v)
            if not vals:
                return
            if spout:
                ts.thread_emits += len(vals)
            put(ts, _many, (real_many, vals, stream, anchors), anchors)

        inst.emit = emit
        inst.emit_many = emit_many
        inst.report_error = lambda e: real_report(e) if direct() else put(ts, real_report, (e,))
        if not spout:
            real_ack, real_fail, real_reset = inst.ack, inst.fail, inst.reset_timeout
            samples = ts.thread_samples

            def own(tup: Tuple) -> bool:
                """An untracked tuple of the running call auto_ack has not counted yet: marked
                settled here, before the call returns (its pass then leaves it out)."""
                if uncounted is None or tup.roots or tup.ackval or not uncounted.holds(tup):
                    return False
                tup.ackval = SETTLED
                return True

            def ack(tup: Tuple) -> None:
                if not isinstance(tup, Tuple):      # raised here, not on the loop thread
                    raise not_a_tuple(ts, "ack", tup)
                if samples:
                    t0 = samples.pop(id(tup), None)
                    if t0 is not None:
                        ts.proc_ms += (_perf() - t0) * 1000.0
                        ts.proc_n += 1
                if direct():
                    real_ack(tup)
                elif own(tup):
                    put(ts, _count_acked, (ts, 1))
                else:
                    put(ts, real_ack, (tup,))

            def fail(tup: Tuple) -> None:
                if not isinstance(tup, Tuple):
                    raise not_a_tuple(ts, "fail", tup)
                if samples:     # not timed; forgotten, so no later tuple at its id gets it
                    samples.pop(id(tup), None)
                if direct():
                    real_fail(tup)
                elif own(tup):
                    put(ts, _count_failed, (ts, 1))
                else:
                    put(ts, real_fail, (tup,))

            def reset_timeout(tup: Tuple) -> None:
                if not isinstance(tup, Tuple):
                    raise not_a_tuple(ts, "reset_timeout", tup)
                if direct():
                    real_reset(tup)
                else:
                    put(ts, real_reset, (tup,))

            inst.ack = ack
            inst.fail = fail
            inst.reset_timeout = reset_timeout


def _count_acked(ts: TaskState, n: int) -> None:
    ts.acked += n


def _count_failed(ts: TaskState, n: int) -> None:
    ts.failed += n


def _one(real_emit: Callable[..., Any], values: tuple, stream: str, anchors: Any,
         direct_task: int | None, need_task_ids: bool = False) -> list[int] | None:
    return real_emit(values, stream, anchors=anchors, direct_task=direct_task,
                     need_task_ids=need_task_ids)


def _many(real_many: Callable[..., None], vals: list[tuple], stream: str, anchors: Any) -> None:
    real_many(vals, stream, anchors=anchors)


def _with_id(real_emit: Callable[..., Any], values: tuple, stream: str, tup_id: Any,
             direct_task: int | None, need_task_ids: bool) -> Any:
    return real_emit(values, stream, tup_id=tup_id, direct_task=direct_task,
                     need_task_ids=need_task_ids)


def _tracked(ts: TaskState, real_emit: Callable[..., Any], values: tuple, stream: str,
             tup_id: Any, direct_task: int | None, need_task_ids: bool) -> Any:
    try:
        return real_emit(values, stream, tup_id=tup_id, direct_task=direct_task,
                         need_task_ids=need_task_ids)
    finally:
        ts.applied_tracked += 1


class ThreadedBolt(BoltExecutor):
    """A bolt executor whose tasks' ``process``/``process_batch`` run on their own thread."""

    threaded = True

    @classmethod
    def takes_runs(cls, component_cls: type) -> bool:
        return False        # its thread takes Tuples from its queue, never runs

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(services, component_id, tasks)
        self.checks_threads = False     # its proxies hand every call over (install)
        self.thread = ComponentThread(services, component_id, tasks, self._serve)
        #: a lazy_batch class gets a TupleBatch of Tuples: its queue takes no runs
        self.lazy_class: bool = bool(getattr(type(tasks[0].instance), "lazy_batch", False)) \
            and self.batch_mode
        self.timeout = float(tasks[0].conf.get("topology.message.timeout.secs", 30))
        #: most tuples a task's queue keeps, the oldest dropped beyond it (0: no limit), for
        #: a class that asks for it (a metrics consumer: ``max.retain.metric.tuples``) with a
        #: classmethod ``squall_queue_limit(conf) -> (limit, the setting's name)``; its
        #: tuples are untracked (nothing to fail when one is dropped)
        limit = getattr(type(tasks[0].instance), "squall_queue_limit", None)
        self.retain: int
        self.retain_key: str
        self.retain, self.retain_key = limit(tasks[0].conf) if limit else (0, "")
        #: tuples dropped so far, those not logged yet, and when the next log line may come
        self.dropped = 0
        self.unlogged = 0
        self.log_at = 0.0
        #: the untracked tuples of the call its thread runs that auto_ack has not counted
        #: yet (set by the thread; the proxies of ``ack`` and ``fail`` read it: .uncounted)
        self.thread_uncounted = Uncounted()

    def install(self, ts: TaskState) -> None:
        super().install(ts)
        self.thread.install(ts, spout=False, auto_anchor=self.auto_anchor,
                            uncounted=self.thread_uncounted if self.auto_ack else None)

    def queued(self) -> int:
        return self.thread.backlog()

    def run_once(self) -> int:
        thread = self.thread
        n = thread.apply()
        if self.retain:
            self._trim()
        if thread.control or any(ts.queue for ts in self.tasks):
            thread.wake_thread.set()
        return n

    def _trim(self) -> None:
        """On the loop thread: drop the oldest tuples of a queue beyond ``retain``, counted,
        and said in the log at most once a minute. The component's thread may take from the
        same end meanwhile (each ``popleft`` is atomic): the queue then keeps one fewer."""
        retain = self.retain
        for ts in self.tasks:
            q = ts.queue
            over = len(q) - retain
            if over <= 0:
                continue
            popleft = q.popleft
            for _ in range(over):
                try:
                    popleft()
                except IndexError:      # the thread took the rest meanwhile
                    break
                self.dropped += 1
                self.unlogged += 1
        if self.unlogged and time.monotonic() >= self.log_at:
            self.log_at = time.monotonic() + DROP_LOG_SECS
            log.warning("%s tasks %s fall behind: dropped the %d oldest queued tuples (%d in "
                        "all), keeping at most %d per task (%s)", self.component_id,
                        [ts.task for ts in self.tasks], self.unlogged, self.dropped, retain,
                        self.retain_key)
            self.unlogged = 0

    def _serve(self) -> None:
        batch = self.batch
        thread = self.thread
        flow = self.flow
        while thread.alive:
            if thread.held_by_pause():
                continue
            done = thread.run_control()
            # a task it emits to is congested, or the loop has not taken what it emitted yet
            if flow.blocks(self.downstream) or len(thread.outbox) >= FEED_AHEAD:
                thread.idle(IDLE_WAIT)
                continue
            for ts in self.tasks:
                q = ts.queue
                if q:
                    done += self._batch(ts, q, batch) if self.batch_mode else \
                        self._tuples(ts, q, batch)
            if not done:
                thread.idle(IDLE_WAIT)

    def _tuples(self, ts: TaskState, q: deque[Tuple], batch: int) -> int:
        process = ts.instance.process
        thread = self.thread
        put = thread.put
        report_error = self.report_error
        tick_src = self.tick_src
        auto_ack, auto_fail, auto_anchor = self.auto_ack, self.auto_fail, self.auto_anchor
        ack, fail = self.acks.ack_tuple, self.acks.fail_tuple
        samples = None if auto_ack else ts.thread_samples
        uncounted = self.thread_uncounted
        n = plain = ticks = 0
        tick_secs = 0.0
        thread.busy = 1             # before a tuple leaves the queue (Worker.queued)
        t0 = _perf()
        while q and n < batch and thread.alive:
            tup = q.popleft()
            n += 1
            if tup.src is tick_src:     # a system tuple: not in the user's counts
                t1 = _perf()
                self._tick(ts, tup)
                ticks += 1
                tick_secs += _perf() - t1
                continue
            if samples is not None and len(samples) < MAX_SAMPLES:
                samples[id(tup)] = _perf()
            if auto_anchor:
                ts.thread_current = tup
            uncounted.one = tup
            try:
                process(tup)
            except Exception as exc:
                put(ts, report_error, (ts, exc))
                if auto_fail:
                    put(ts, fail, (ts, tup))
            else:
                if auto_ack:
                    if tup.roots:
                        put(ts, ack, (ts, tup))
                    elif not tup.ackval:    # else the bolt acked or failed it: counted then
                        plain += 1      # untracked: counted, in one call for the pass
            ts.thread_current = uncounted.one = None
        if plain:
            put(ts, _count_acked, (ts, plain))
        spent = max(0.0, _perf() - t0 - tick_secs)
        done = n
        n -= ticks
        if n:
            ts.exec_ms += spent * 1000.0
            before = ts.exec_n
            ts.exec_n = after = before + n
            if (before ^ after) >> 4:   # as BoltExecutor.run_once: one pass in 16 tuples
                ts.exec_hist[_bucket(spent * 1000.0 / n)] += n
                ts.exec_samples += 1
            ts.executed += n
            if auto_ack:    # each tuple acked in the pass: processed from its start to its end
                ts.proc_ms += spent * 1000.0 * n
                ts.proc_n += n
        thread.busy = 0
        if samples and len(samples) >= MAX_SAMPLES:
            self._forget_stale(samples)
        return done

    def _forget_stale(self, samples: dict[int, float]) -> None:
        """Forget the process-latency samples older than the message timeout (never acked).
        The component's own threads may ack (pop) meanwhile: a copy (one C call) is iterated,
        and a key popped already is no error."""
        oldest = _perf() - self.timeout
        pop = samples.pop
        for key, t0 in samples.copy().items():
            if t0 < oldest:
                pop(key, None)

    def _batch(self, ts: TaskState, q: deque[Tuple], batch: int) -> int:
        thread = self.thread
        put = thread.put
        acks = self.acks
        tick_src = self.tick_src
        samples = None if self.auto_ack else ts.thread_samples
        thread.busy = 1
        tuples = [q.popleft() for _ in range(min(len(q), batch))]
        n = len(tuples)
        for t in tuples:
            if t.src is tick_src:
                self._tick(ts, t)
        tuples = [t for t in tuples if t.src is not tick_src]
        if tuples:
            t0 = _perf()
            if samples is not None and len(samples) < MAX_SAMPLES:
                # process latency of a bolt that acks itself (a multi-lang bolt): the batch's
                # tuples from here to their acks, while fewer than MAX_SAMPLES await theirs;
                # one dict update in C per batch: 0.5 µs a batch and 0.07 µs a tuple sampled
                # (the 2-core test host, 2026-12)
                samples.update(zip(map(id, tuples[:MAX_SAMPLES - len(samples)]), _repeat(t0)))
            arg = TupleBatch(tuples, len(tuples)) if self.lazy_class else tuples  # type: ignore[arg-type]
            uncounted = self.thread_uncounted
            uncounted.batch(tuples)
            try:
                ts.instance.process_batch(arg)
            except Exception as exc:
                uncounted.close()
                put(ts, self.report_error, (ts, exc))
                if self.auto_fail:
                    for t in tuples:
                        put(ts, acks.fail_tuple, (ts, t))
            else:
                uncounted.close()
                if self.auto_ack:
                    plain = 0
                    for t in tuples:
                        if t.roots:
                            put(ts, acks.ack_tuple, (ts, t))
                        elif not t.ackval:      # else the bolt acked or failed it itself
                            plain += 1
                    if plain:
                        put(ts, _count_acked, (ts, plain))
            spent = _perf() - t0
            ts.exec_ms += spent * 1000.0
            before = ts.exec_n
            ts.exec_n = after = before + len(tuples)
            if (before ^ after) >> 4:
                ts.exec_hist[_bucket(spent * 1000.0 / len(tuples))] += len(tuples)
                ts.exec_samples += 1
            ts.executed += len(tuples)
            if self.auto_ack:
                ts.proc_ms += spent * 1000.0 * len(tuples)
                ts.proc_n += len(tuples)
        thread.busy = 0
        if samples and len(samples) >= MAX_SAMPLES:
            self._forget_stale(samples)
        return n

    def _tick(self, ts: TaskState, tup: Tuple) -> None:
        try:
            ts.instance.process_tick(tup)
        except Exception as exc:
            self.thread.put(ts, self.report_error, (ts, exc))

    def stop(self) -> None:
        if self.thread.stop():
            super().stop()


class ThreadedSpout(SpoutExecutor):
    """A spout executor whose tasks' ``next_tuple``, ``ack`` and ``fail`` run on their own
    thread."""

    active: bool
    threaded = True
    checks_threads = False      # its proxies hand every call over (install)

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(services, component_id, tasks)
        self.thread = ComponentThread(services, component_id, tasks, self._serve)
        #: the thread's view of ``active``: flipped in order with activate/deactivate calls
        self.thread_active = False
        #: the thread waits for activation or for the throttle to lift
        self.parked = False
        self.settled = threading.Event()

    def install(self, ts: TaskState) -> None:
        super().install(ts)
        self.thread.install(ts, spout=True, auto_anchor=False, limit=self.pending_limit)

    def queued(self) -> int:
        return self.thread.backlog()

    def pending_calls(self, ts: TaskState) -> int:
        """Tracked emits made and not yet applied by the loop (not in ``pending`` yet): the
        component thread's and its helper threads'."""
        return ts.put_tracked - ts.applied_tracked + super().pending_calls(ts)

    def run_once(self) -> int:
        thread = self.thread
        self.clock.turn = time.monotonic()     # stamps the trees applied now (SpoutExecutor)
        done = thread.apply() + self.completions()
        for ts in self.tasks:
            self.run_deferred_acks(ts)      # untracked emits with a tup_id: acked at once
        if self.active and self.flow.blocks(self.downstream):
            self.paused += 1        # as SpoutExecutor.run_once: its thread waits meanwhile
            if not self.held_since:
                self.held_since = self.clock.now
        else:
            if self.held_since:
                self.released()
            if self.parked and self.active and len(thread.outbox) < FEED_AHEAD:
                thread.wake_thread.set()
        return done

    def _call(self, ts: TaskState, fn: Callable[..., Any], *args: Any) -> None:
        """A spout callback runs on the spout's own thread."""
        self.thread.call(ts, fn, *args)

    def room_made(self) -> None:
        """The spout's ``ack`` and ``fail`` run on its thread: its helper threads waiting for
        room are woken there, after them (.pending)."""
        limit = self.pending_limit
        if limit is not None and limit.waiting:
            self.thread.call(self.tasks[0], limit.wake)

    def set_active(self, active: bool) -> None:
        """Activation reaches the thread as calls: ``activate`` runs there before the first
        ``next_tuple``, and no ``next_tuple`` follows ``deactivate``."""
        if active == self.active:
            return
        self.active = active
        self.deactivated = not active
        if self.pending_limit is not None:
            self.pending_limit.wake()   # inactive: its helper threads' emits wait no more
        call = self.thread.call
        for ts in self.tasks:
            call(ts, ts.instance.activate if active else ts.instance.deactivate)
        call(self.tasks[0], self._flip, active)
        #: set once the thread has made the calls (``Worker.activate`` waits for it)
        self.settled = threading.Event()
        call(self.tasks[0], self.settled.set)

    def _flip(self, active: bool) -> None:
        self.thread_active = active

    def _serve(self) -> None:
        thread = self.thread
        flow = self.flow
        batch = self.batch
        max_pending = self.max_pending
        outbox = thread.outbox
        downstream = self.downstream
        while thread.alive:
            if thread.held_by_pause():
                continue
            thread.run_control()
            if (not self.thread_active or flow.blocks(downstream)
                    or len(outbox) >= FEED_AHEAD):
                self.parked = True
                thread.idle(IDLE_WAIT)
                self.parked = False
                continue
            emitted = 0
            for ts in self.tasks:
                now = time.monotonic()
                if ts.idle_until > now:
                    continue
                next_tuple = ts.instance.next_tuple
                for _ in range(batch):
                    if max_pending and (self.pending(ts) + self.pending_calls(ts)
                                        >= max_pending):
                        self.at_max_pending += 1
                        break
                    if len(outbox) >= FEED_AHEAD or flow.blocks(downstream):
                        break           # the loop takes what it has first (see FEED_AHEAD)
                    before = ts.thread_emits
                    try:
                        next_tuple()
                    except Exception as exc:
                        thread.put(ts, self.report_error, (ts, exc))
                        ts.idle_until = now + self.idle_secs
                        break
                    if ts.thread_emits == before:
                        ts.idle_until = now + self.idle_secs
                        break
                    emitted += 1
                    if thread.control:
                        break
            if not emitted:
                # asked again when the first idle task's wait.strategy time is up (one
                # that emitted nothing in this pass too), else in IDLE_WAIT or at a wake-up
                now = time.monotonic()
                wait = IDLE_WAIT
                for ts in self.tasks:
                    if now < ts.idle_until < now + wait:
                        wait = ts.idle_until - now
                thread.idle(wait)

    def stop(self) -> None:
        if self.pending_limit is not None:
            self.pending_limit.wake()   # its helper threads waiting for room go (.pending)
        if self.thread.stop():
            super().stop()


def threaded_class(base: type[Executor]) -> type[BoltExecutor] | type[SpoutExecutor]:
    """The threaded executor class for ``base`` (a bolt or spout executor class)."""
    return ThreadedSpout if issubclass(base, SpoutExecutor) else ThreadedBolt
