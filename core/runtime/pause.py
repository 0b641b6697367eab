"""Telling a pause of the whole worker process (SIGSTOP, a host that froze or swapped, a C call
holding the GIL) from a loop that is merely slow, and fencing the executors after one.

A process paused long enough may have lost its executors: nimbus moves them once their beats
stop for ``nimbus.task.timeout.secs``, and the ZooKeeper session ends with the session timeout.
When such a process resumes, every thread resumes at once; the loop must not run an executor
again (a moved task's old instance would process tuples its new one processes too) until the
worker process's main thread has read the assignment from ZooKeeper again: then the loop goes
on, or the worker exits because its executors moved.

Three threads take part, each with its own method:

- a *watcher*, a thread that wakes regularly (the worker process's local heartbeat thread),
  calls :meth:`PauseWatch.waiting` before each wait and :meth:`PauseWatch.woke` after it: a
  wait that ended later than asked by more than the threshold is a pause of the process;
- the *loop*, whose pass found that the previous pass began more than the threshold ago (one
  comparison per pass, nothing per tuple), asks :meth:`PauseWatch.paused`: a pause if the
  watcher is also late by that much (else the loop was only slow: a component in a long call,
  which does not stop the other threads); then it runs no executor while :attr:`fenced`;
- the *main thread* takes :meth:`PauseWatch.epoch` before it reads the assignment and, when
  the executors are still this worker's, calls :meth:`PauseWatch.confirmed` with it: that
  lifts the fence unless another pause was found since the epoch was taken.

A ZooKeeper outage alone raises no fence (the process runs: the watcher is on time), and a
watch that was never armed (:meth:`PauseWatch.arm`: a ``LocalCluster``'s workers, whose
executors never move to another process) never fences.
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("squall.runtime.pause")
#: the least threshold: below it, a busy host's scheduling delays would fence the worker
MIN_THRESHOLD_SECS = 0.5


def pause_threshold(conf: Mapping[str, Any]) -> float:
    """The longest pause a worker process may take without fencing its executors: half of
    the shorter of ``nimbus.task.timeout.secs`` (after which nimbus moves executors that do
    not beat) and ``storm.zookeeper.session.timeout`` (ms; after which the worker's session
    and its watches are gone), so a pause is caught well before either can have moved them;
    at least :data:`MIN_THRESHOLD_SECS`."""
    task = float(conf.get("nimbus.task.timeout.secs") or 30)
    session = float(conf.get("storm.zookeeper.session.timeout") or 20000) / 1000
    return max(MIN_THRESHOLD_SECS, min(task, session) / 2)


def _nothing() -> None:
    pass


class PauseWatch:
    """Whether the process was paused, and the fence that follows (see the module
    docstring). Thread-safe by the order of its writes (each a single attribute store)."""

    __slots__ = ("threshold", "fenced", "resumed", "_due", "_raised", "_late", "_on_pause",
                 "_wake")

    def __init__(self) -> None:
        #: a gap longer than this (seconds) is a pause; ``inf`` until armed (never a pause)
        self.threshold = math.inf
        #: the loop runs no executor while set (raised by a pause, lifted by ``confirmed``)
        self.fenced = False
        #: when (``time.monotonic``) the last pause the watcher saw ended (-inf: none)
        self.resumed = -math.inf
        self._due: float | None = None      # when the watcher's current wait ends
        self._raised = 0                    # pauses found so far
        self._late = -math.inf              # the watcher's due time of the last one
        self._on_pause: Callable[[], None] = _nothing
        self._wake: Callable[[], None] = _nothing

    def arm(self, threshold: float, on_pause: Callable[[], None]) -> None:
        """Start watching (before the loop starts): pauses longer than ``threshold`` fence
        the loop, and ``on_pause`` is called (on the thread that found it) to have the
        assignment read again at once."""
        self._on_pause = on_pause
        self.threshold = float(threshold)

    def on_lift(self, wake: Callable[[], None]) -> None:
        """``wake`` is called when the fence is lifted (the loop's wake-up)."""
        self._wake = wake

    # -- the watcher thread ----------------------------------------------------------------
    def waiting(self, secs: float) -> None:
        """The watcher is about to wait ``secs`` seconds."""
        self._due = time.monotonic() + secs

    def woke(self) -> bool:
        """The watcher's wait ended: True when it ended more than the threshold late (the
        process was paused; the fence is raised)."""
        now = time.monotonic()
        due = self._due
        late = due is not None and now - due > self.threshold
        if late:
            self.resumed = now
            self._raise(due, now)   # type: ignore[arg-type]
        # after the fence (see paused); from now until its next wait the watcher is at work
        # (a beat to write): a loop finding it at work for longer than the threshold takes
        # that for a pause too (one beginning while it worked)
        self._due = now
        return late

    # -- the loop thread -------------------------------------------------------------------
    def paused(self, now: float) -> bool:
        """Called by a loop whose previous pass began more than the threshold before ``now``:
        whether the process was paused meanwhile (the watcher is late too, or found the pause
        first); the fence is raised then."""
        due = self._due                 # read before ``fenced``: woke sets them the other way
        if due is not None and now - due > self.threshold:
            self._raise(due, now)
            return True
        return self.fenced

    # -- the main thread -------------------------------------------------------------------
    def epoch(self) -> int:
        """Taken before the assignment is read (see :meth:`confirmed`)."""
        return self._raised

    def confirmed(self, epoch: int) -> None:
        """The assignment read since ``epoch`` still gives this worker its executors: the
        fence is lifted, unless a pause was found after ``epoch`` was taken (then a read
        begun before that pause proves nothing)."""
        if self.fenced and self._raised == epoch:
            self.fenced = False
            log.info("the assignment still gives this worker its executors; they run again")
            self._wake()

    def _raise(self, due: float, now: float) -> None:
        if due == self._late:       # the watcher and the loop both found this one
            return
        self._late = due
        if not self.fenced:
            log.warning("this worker process was paused for about %.1f s (more than %.1f s): "
                        "its executors wait until the assignment is read again", now - due,
                        self.threshold)
        self._raised += 1
        self.fenced = True
        self._on_pause()
