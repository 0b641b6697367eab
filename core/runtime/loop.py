"""The loop: one thread per worker that drives every executor cooperatively, one pass at a
time (no GIL contention between executors).

A pass: run the commands other threads queued (:meth:`Loop.call`); dispatch received messages
(and what waited for a queue to drain) and check backpressure; give each executor its turn
(``run_once``), releasing the emits a task held and flushing the folded acks after each;
flush the outboxes that waited long enough; every 5 ms run the timers and grant the other
workers credits for what the tasks here took (and, while a task of another worker is
saturated, probe and watch the workers waited for: ``Outbox.expire_windows``); check
backpressure.
A pass that found nothing to do sends what waits and sleeps until woken, or until the next
timer or the end of an active spout's wait after a ``next_tuple`` that emitted nothing
(``topology.sleep.spout.wait.strategy.time.ms``), whichever comes first (at least 1 ms).

After a pause of the whole process (:mod:`.pause`: one comparison per pass finds a pass begun
more than ``pauses.threshold`` after the previous one) the loop runs no executor, no timer and
no dispatch while ``pauses.fenced``: only the commands other threads queue (a shutdown's), until
the worker process's main thread has read the assignment again. The timers then wait one
pass more, so the acks that came meanwhile are taken before a spout's pending trees rotate.

``clock.now``, set as each pass begins, is also when the current pass began: another thread
reads it (:meth:`Loop.pass_began`) to tell a loop stuck in a component's call from a busy one
(``Worker.loop_stuck``), with nothing added to the pass.

An exception that ends the loop's thread or a component's own thread (one a component's call
raised past the executor's ``except Exception``: ``sys.exit()``, ``KeyboardInterrupt``; or a
bug) ends the worker: :meth:`Loop.died` reports it first, as an error of the task whose call
raised it. The per-call ``try`` of the executors stays as it is: nothing is added per tuple.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from squall.runtime import osthread
from squall.runtime.errors import death_text, raised_in, task_in
from squall.runtime.pause import PauseWatch

if TYPE_CHECKING:
    from squall.runtime.acks import AckLedger
    from squall.runtime.emit import Clock
    from squall.runtime.executors.base import Executor
    from squall.runtime.executors.threaded import ComponentThread
    from squall.runtime.flow import Backpressure
    from squall.runtime.task import TaskState
    from squall.runtime.wire.inbox import Inbox
    from squall.runtime.wire.outbox import Outbox

log = logging.getLogger("squall.runtime.worker")
TIMER_SECS = 0.005
#: the shortest wait of a pass that found nothing to do
IDLE_SECS = 0.001
#: how often a fenced loop looks whether the fence was lifted, if nothing wakes it
FENCE_SECS = 0.1
#: the loops running passes in this process, by their thread's id (:func:`component_of`)
_RUNNING: dict[int, Loop] = {}


def component_of(ident: int) -> str | None:
    """The component whose call thread ``ident`` runs now, for the worker log's lines
    (squall.daemon.log_files): on a loop's thread, the component whose executor has its turn
    (None between turns: dispatch, timers, commands); on a component's own thread, that
    component. None for any other thread. Any thread; reads only, nothing per tuple."""
    loop = _RUNNING.get(ident)
    if loop is not None:
        ex = loop.executing
        return ex.component_id if ex is not None else None
    for loop in list(_RUNNING.values()):
        for thread in loop.threads:
            if thread.ident == ident:
                return thread.component_id
    return None


class Loop:
    """The loop thread of one worker and the state other threads read of it.

    ``running``: the loop should go on (cleared to stop it); ``looping``: it runs (from
    :meth:`start` until it has sent its last), so components on threads of their own hand
    their calls to it meanwhile; ``alive``: nothing killed the worker (a loop or component
    thread that died, or ``topology.worker.die.on.error``).

    ``report_death(ts, text)`` records the death of the loop's thread or of a component's
    own (:meth:`died`) as an error of task ``ts`` (None: of the worker itself); it is called
    on the thread that died."""

    def __init__(self, *, name: str, clock: Clock, inbox: Inbox, outbox: Outbox,
                 acks: AckLedger, flow: Backpressure, holding: list[Callable[[], None]],
                 timers: Callable[[float], None], wakeup: threading.Event,
                 report_death: Callable[[TaskState | None, str], None],
                 pauses: PauseWatch | None = None) -> None:
        self.name = name
        self.clock = clock
        self.inbox = inbox
        self.outbox = outbox
        self.acks = acks
        self.flow = flow
        self.holding = holding
        self.timers = timers
        self.report_death = report_death
        #: pauses of the whole process, and the fence after one (never armed: no fence)
        self.pauses = pauses if pauses is not None else PauseWatch()
        self.pauses.on_lift(wakeup.set)
        self.executors: list[Executor] = []
        self.threads: list[ComponentThread] = []
        self.commands: deque[Callable[[], Any]] = deque()
        self.running = False
        self.looping = False
        self.alive = False
        #: loop passes completed, and the last one that dispatched or ran anything (for
        #: squall.testing.complete_topology's "quiet" check)
        self.passes = self.last_busy_pass = 0
        #: passes that found nothing to do and waited for work (until the next timer, or
        #: sooner when a spout's wait after an empty next_tuple ends first)
        self.idle_waits = 0
        #: until when shutdown waits for components' own threads to leave their calls
        self.stop_deadline = 0.0
        #: set to wake the loop (the receive thread and components' threads set it too)
        self._wake = wakeup
        self._thread: threading.Thread | None = None
        #: set once the loop ran the last ``call`` that timed out (None: none timed out)
        self._overdue: threading.Event | None = None
        #: the loop runs passes: from just before its first pass (what ran before, such as the
        #: components' ``initialize``, is not a pass) until it leaves the last
        self.in_passes = False
        #: when the pass found stuck began (``Worker.loop_stuck``; None: none found)
        self.stuck_pass: float | None = None
        #: the executor whose turn (``run_once``) runs on the loop thread now (None between
        #: turns): one store per executor and pass, read by :func:`component_of`
        self.executing: Executor | None = None

    # -- from any thread --------------------------------------------------------------------
    def wake(self) -> None:
        """Wake the loop if it waits for work."""
        self._wake.set()

    def submit(self, fn: Callable[[], Any]) -> None:
        """Have the loop thread run ``fn`` at the start of its next pass."""
        self.commands.append(fn)
        self._wake.set()

    def call(self, fn: Callable[[], Any], timeout: float = 10.0) -> None:
        """Run ``fn`` on the loop thread and wait for it up to ``timeout`` (or run it here if
        no loop runs, or if this is the loop thread). While an earlier call that timed out is
        still waiting for the loop (a component blocked in a call), ``fn`` is queued without
        waiting: the loop runs it when it gets free."""
        if not self.running or self.on_loop_thread():
            fn()
            return
        done = threading.Event()

        def run() -> None:
            fn()
            done.set()
        self.submit(run)
        if self.overdue():
            return
        if not done.wait(timeout):
            self._overdue = done

    def overdue(self) -> bool:
        """Whether a ``call`` timed out and the loop has not run it yet, or the loop is still
        in the pass found stuck (a component blocked in a call on it)."""
        overdue = self._overdue
        if overdue is not None and not overdue.is_set():
            return True
        return self.stuck_pass is not None and self.pass_began() == self.stuck_pass

    def pass_began(self) -> float | None:
        """When (``time.monotonic``) the loop's current pass began; None while it runs no
        passes (not started yet, or left)."""
        if not self.in_passes:      # read first: clock.now is set before it
            return None
        return self.clock.now

    def current_frame(self) -> FrameType | None:
        """The frame the loop's thread runs now (None when it runs no more)."""
        thread = self._thread
        if thread is None or thread.ident is None:
            return None
        return sys._current_frames().get(thread.ident)

    def thread_alive(self) -> bool:
        """Whether the loop's thread still runs (after ``stop``: still in a call)."""
        return self._thread is not None and self._thread.is_alive()

    def on_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def mark_dead(self) -> None:
        """The worker cannot go on (its supervisor, or LocalCluster, restarts it)."""
        self.alive = False

    def died(self, exc: BaseException, tasks: list[TaskState] | None = None) -> None:
        """The loop's thread (``tasks`` None), or the own thread of a component's ``tasks``,
        ends with ``exc``: report it, as an error of the task whose call raised it (else
        that thread's first task, or the worker itself), and mark the worker dead, so its
        supervisor (or LocalCluster) restarts it. Called on the thread that dies."""
        try:
            if tasks is None:
                ts = task_in(raised_in(exc.__traceback__),
                             [t for ex in self.executors for t in ex.tasks], self.executors)
            else:
                ts = task_in(raised_in(exc.__traceback__), tasks) or tasks[0]
            self.report_death(ts, death_text(exc, ts, own_thread=tasks is not None))
        except Exception:   # the report must not hide the death
            log.exception("worker %s: reporting the death of a thread failed", self.name)
            log.error("worker %s: a thread died", self.name, exc_info=exc)
        finally:
            self.alive = False

    def halt(self) -> None:
        """Stop the loop from within and mark the worker dead (``die.on.error``)."""
        self.running = False
        self.alive = False

    def is_alive(self) -> bool:
        return self.alive and self._thread is not None and self._thread.is_alive()

    # -- life ------------------------------------------------------------------------------
    def start(self) -> None:
        self.running = self.looping = self.alive = True
        self._thread = threading.Thread(target=self._run, daemon=True, name=self.name)
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Ask the loop to end its pass and leave; wait up to ``timeout`` for it."""
        self.running = False
        self.stop_deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.signal_stop()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.looping = False        # a loop that never started (or died) takes no more calls

    def _fenced(self) -> None:
        """Run no executor while ``pauses.fenced`` (see the module docstring): only the
        commands queued meanwhile, until the fence is lifted or the loop is stopped.
        ``clock.now`` follows, so the loop is not taken for stuck in one pass."""
        pauses = self.pauses
        commands = self.commands
        wake = self._wake
        clock = self.clock
        while True:
            clock.now = clock.turn = time.monotonic()
            wake.clear()            # before the look: a lift sets it again
            while commands:
                commands.popleft()()
            if not (self.running and pauses.fenced):
                return
            wake.wait(FENCE_SECS)

    def _run(self) -> None:
        osthread.set_name("squall-loop")
        executors = self.executors
        commands = self.commands
        clock = self.clock
        inbox = self.inbox
        pending = inbox.pending
        waiting = inbox.waiting
        outbox = self.outbox
        acks = self.acks
        folded = acks.folded
        flow = self.flow
        held = self.holding
        wake = self._wake
        send_control = outbox.send_control
        grant = inbox.grants.grant
        saturated = outbox.windows.saturated
        stuck = outbox.stalls.stuck
        next_timer = 0.0
        monotonic = time.monotonic
        pauses = self.pauses
        gap = pauses.threshold      # armed before the loop starts (inf: never)
        # the first pass begins: not when the worker was built
        clock.now = clock.turn = last = monotonic()
        self.in_passes = True
        ident = threading.get_ident()
        _RUNNING[ident] = self
        try:
            while self.running:
                clock.now = clock.turn = now = monotonic()
                if now - last > gap and pauses.paused(now):     # the process was paused
                    self._fenced()
                    if not self.running:
                        break
                    clock.now = clock.turn = now = monotonic()
                    next_timer = now + TIMER_SECS   # the acks that came meanwhile first
                last = now
                while commands:
                    commands.popleft()()
                busy = False
                if pending or waiting:
                    busy = inbox.dispatch() > 0 or bool(pending)
                    flow.check(now)         # tell senders before a slow batch runs
                done = 0
                for ex in executors:
                    self.executing = ex
                    done += ex.run_once()
                    while held:
                        held.pop()()
                    if folded:
                        acks.flush()
                self.executing = None
                while held:         # anything held since the last executor's release
                    held.pop()()
                outbox.flush_all(now)
                if now >= next_timer:
                    next_timer = now + TIMER_SECS
                    self.timers(now)
                    grant(send_control, now)    # what the tasks here took since
                    if saturated or stuck:
                        outbox.expire_windows(now)
                flow.check(now)
                self.passes += 1
                if done or busy:
                    self.last_busy_pass = self.passes
                if not done and not pending and not commands:
                    outbox.flush_all()         # nothing else to do: send what waits
                    self.idle_waits += 1
                    # nothing needs a pass before the next timer, a wake-up or the end of
                    # an active spout's wait after an empty next_tuple (none for a worker
                    # of bolts alone, an inactive topology, spouts held by backpressure or
                    # at max pending): an idle spout of a 100 ms wait woke its worker 870
                    # times a second when it was asked every IDLE_SECS
                    due = next_timer
                    for ex in executors:
                        t = ex.poll_due()
                        if t < due:
                            due = t
                    wake.wait(max(IDLE_SECS, due - monotonic()))
                    wake.clear()
        except BaseException as exc:
            # no loop runs calls any more: they run on their caller's thread, not wait
            self.running = False
            self.died(exc)
        finally:
            self.in_passes = False
            self.executing = None
            _RUNNING.pop(ident, None)
            for thread in self.threads:     # what the components' threads handed over by now
                thread.apply()
            while held:
                held.pop()()
            outbox.flush_all()
            self.looping = False
