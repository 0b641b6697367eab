"""Destination workers that accept nothing: one warning and one error of the topology while it
lasts, one line when it ends.

A worker sends a task of another worker only what that worker granted (:mod:`.credits`); a
task sent up to its grant is *saturated*, and what emits to it here waits. A destination
worker that grants nothing more while tasks of it stay saturated (its port refuses
connections, the network drops its traffic, its process hangs, or its tasks take nothing)
holds part of the topology still, and only its senders see it. :class:`Stalls` watches for
that, per destination worker:

- A *spell* begins when a check finds one of the worker's tasks saturated, and ends when the
  worker grants more (:attr:`.credits.Windows.granted_at`: a grant grew, or a restarted life
  of it counted afresh). A probe (a quarter of a share sent to a silent worker) lets its task
  take a few tuples more but grants nothing: the spell goes on.
- A spell that has lasted ``after`` seconds (``topology.backpressure.stall.report.secs``) while
  a task of the worker is saturated is reported once: a WARNING naming the worker
  (``host:port``), the tasks that tuples wait for, how long, and whether the worker said
  anything meanwhile (a silent one is unreachable or hung; one that talks runs, and its tasks
  take nothing, or too slowly to leave room); the same text goes to ``report``, which the
  worker records as an error of the topology (``__worker``).
- The end of a reported spell is one INFO line, and so is the worker leaving the assignment.

Nothing is sent, held or dropped here: it only reports. :meth:`Stalls.check` runs with the
loop's timers, only while a task is saturated or a reported spell lasts, and looks at most
every :data:`CHECK_SECS`: nothing per tuple. Everything runs on the worker's loop thread.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from squall.runtime.wire.credits import Windows

__all__ = ["CHECK_SECS", "Stalls"]

log = logging.getLogger("squall.runtime.transfer")
Key = tuple[str, int]
#: the most often a check looks at the saturated tasks (a spell lasts seconds)
CHECK_SECS = 0.25


def _name(who: Key) -> str:
    return f"{who[0]}:{who[1]}"


class Stalls:
    """The spells of the destination workers of one worker (see the module's docstring).

    ``after``: the seconds a spell lasts before it is reported; ``report(text)`` records the
    report as an error of the topology (the WARNING line is logged here); ``components``:
    task -> component, to name the tasks waited for."""

    def __init__(self, after: float, report: Callable[[str], None] = lambda text: None,
                 components: Mapping[int, str] | None = None) -> None:
        self.after = after
        self.report = report
        self.components = components if components is not None else {}
        #: per destination worker: when its current spell began (the loop's clock)
        self.since: dict[Key, float] = {}
        #: the workers whose current spell was reported, and when it began: the loop checks
        #: while this holds any, so the end of a spell is seen with no task saturated
        self.stuck: dict[Key, float] = {}
        #: spells reported so far
        self.reported = 0
        self._next = 0.0

    def check(self, now: float, windows: Windows, owner: Callable[[int], Key | None],
              me: Key) -> None:
        """Begin, end and report spells at ``now`` from ``windows`` (``owner(task)``: the
        worker that runs ``task``; ``me``: this worker, as the report names it)."""
        if now < self._next:
            return
        self._next = now + CHECK_SECS
        since, stuck = self.since, self.stuck
        if since:
            granted_at = windows.granted_at
            for who in [w for w, began in since.items() if granted_at.get(w, began) > began]:
                began = since.pop(who)
                if stuck.pop(who, None) is not None:
                    log.info("worker %s accepts tuples from worker %s again, after %.0f s",
                             _name(who), _name(me), now - began)
        waiting: dict[Key, list[int]] = {}
        for task in windows.saturated:
            dest = owner(task)
            if dest is not None:
                waiting.setdefault(dest, []).append(task)
        for who, tasks in waiting.items():
            began = since.setdefault(who, now)
            if who not in stuck and now - began >= self.after:
                stuck[who] = began
                self.reported += 1
                text = self._text(who, sorted(tasks), me, now - began,
                                  windows.heard_at.get(who), began, now)
                log.warning("%s", text)
                self.report(text)

    def forget(self, who: Key, now: float) -> None:
        """``who`` is no longer in the assignment: its spell ends (a line if it was
        reported)."""
        began = self.since.pop(who, None)
        if self.stuck.pop(who, None) is not None and began is not None:
            log.info("worker %s, which had accepted no tuples for %.0f s, is no longer in "
                     "the assignment: its tasks moved", _name(who), now - began)

    def _text(self, who: Key, tasks: list[int], me: Key, secs: float, heard: float | None,
              began: float, now: float) -> str:
        if heard is None:
            why = ("nothing has been heard from it since this worker started: it has not "
                   "started yet, its process hangs, its port refuses connections, or the "
                   "network between drops its traffic")
        elif heard <= began:
            why = (f"nothing has been heard from it for {now - heard:.0f} s: its process "
                   f"hangs, its port refuses connections, or the network between drops its "
                   f"traffic")
        else:
            why = ("it still sends control messages, so it runs: its tasks take nothing (a "
                   "call that does not return, backpressure further on) or so slowly that "
                   "their queues stay above the high watermark, or what is sent to it does "
                   "not arrive (a network that drops this way only)")
        return (f"worker {_name(who)} ({self._tasks(tasks)}) has accepted no tuples from "
                f"worker {_name(me)} for {secs:.0f} s (it granted no room) while tuples wait "
                f"for it: {why}. What emits to those tasks in worker {_name(me)} waits "
                f"meanwhile; nothing is dropped (topology.backpressure.stall.report.secs is "
                f"{self.after:g})")

    def _tasks(self, tasks: list[int]) -> str:
        """``tasks`` by component: ``tasks 3, 4 of 'count'; task 7 of 'split'``."""
        of: dict[str, list[int]] = {}
        for task in tasks:
            of.setdefault(self.components.get(task, "?"), []).append(task)
        return "; ".join(f"task{'s' if len(ts) > 1 else ''} {', '.join(map(str, ts))} of {c!r}"
                         for c, ts in of.items())
