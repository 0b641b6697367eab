"""Backpressure, per destination task: what feeds a task whose queue is full waits, and only
that (JStorm's and Storm 2's flow control, by task), paced by what the task takes.

A task's *occupancy* is what its queue holds (a TupleRun counts its tuples) plus what waits in
front of it in the inbox. Its *high watermark* is ``topology.backpressure.high.watermark`` ×
``topology.executor.receive.buffer.size`` tuples.

- A task of this worker is *full* once its occupancy is above the high watermark: an executor
  here that emits to it waits until the task has taken it down to the low watermark
  (``topology.backpressure.low.watermark`` × the capacity). Both are checked twice a loop pass;
  by default the low watermark is the high one, so a feeder runs at the task's pace (a lower
  one makes it run in bursts, and wait while the task drains the band).
- A worker sends a task of another worker only what that worker granted it: a share of the
  room below the task's high watermark, growing as the task takes tuples (the credits of
  :mod:`squall.runtime.wire.credits`). A task sent up to its grant is *saturated*, and blocks
  its feeders here like a full one.
- Every task of a worker whose received messages pile up in front of its loop (more than half
  of :data:`~squall.runtime.wire.inbox.INBOX_BYTES`, until down to an eighth: counted in bytes,
  as a count of messages would stop every spout at a fraction of the words once they spread
  over many workers in small messages) is *congested*, and every worker of the topology is
  told (a control message listing tasks and their state), so what feeds them waits wherever it
  runs.

A remote congestion is state with a lifetime: its worker renews it (the full list of its
congested tasks) every :data:`RENEW_SECS` while it lasts, and a receiver forgets what was not
renewed for :data:`CONGESTION_TTL_SECS` (its worker died, or a report was lost or forged).
Each report carries its worker's incarnation: a restarted worker's first report (an empty
one, sent when it starts) wipes out what its previous life had said. A report naming a task
its sender does not run is refused whole.

An executor whose downstream tasks (the tasks its emits may reach) include a full, saturated
or congested one is *blocked*: a spout does not call ``next_tuple``, a bolt does not take
tuples from its queue, until none is. A blocked bolt's own queue then fills, so what feeds it
is blocked in turn: a slow bolt slows only what feeds it, hop by hop, and nothing is dropped.

Checked by the loop after it dispatched received messages and at the end of each pass;
renewals and expiry run with the loop's timers (:meth:`Backpressure.tick`).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from squall.errors import ConfigError
from squall.runtime.task import LocalTasks
from squall.runtime.wire.inbox import INBOX_BYTES

log = logging.getLogger("squall.runtime.flow")
INBOX_HIGH, INBOX_LOW = INBOX_BYTES // 2, INBOX_BYTES // 8   # bytes of received messages
#: a worker with congested tasks tells the others again this often
RENEW_SECS = 1.0
#: a remote congestion not renewed for this long is forgotten
CONGESTION_TTL_SECS = 5.0


def capacity(conf: dict[str, Any]) -> int:
    """The tuples a task's receive queue is sized for."""
    return max(1, int(conf.get("topology.executor.receive.buffer.size") or 32768))


HIGH_KEY = "topology.backpressure.high.watermark"
LOW_KEY = "topology.backpressure.low.watermark"


def check_watermarks(conf: Mapping[str, Any]) -> None:
    """ConfigError unless 0 < high <= 1 and 0 <= low <= high (``config.validate`` calls it).
    Both are shares of ``topology.executor.receive.buffer.size``: a high one above 1 would
    keep queues past the size they are given (a larger buffer size does that). A value that
    is not a number is left to the type check."""
    high, low = conf.get(HIGH_KEY, 0.9), conf.get(LOW_KEY, 0.9)
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in (high, low)):
        return
    if not 0 < high <= 1:
        raise ConfigError(f"config key {HIGH_KEY!r} must be above 0 and at most 1 (a share of "
                          f"topology.executor.receive.buffer.size), got {high!r}")
    if not 0 <= low <= high:
        raise ConfigError(f"config key {LOW_KEY!r} ({low!r}) must be from 0 to "
                          f"{HIGH_KEY!r} ({high!r})")


def watermarks(conf: dict[str, Any]) -> tuple[int, int]:
    """(high, low): the occupancy a task is kept at by its feeders, and the one a full task
    must be down to before its feeders go on (at most ``high``)."""
    cap = capacity(conf)
    high = int(cap * float(conf.get(HIGH_KEY, 0.9)))
    low = int(cap * float(conf.get(LOW_KEY, 0.9)))
    return max(1, high), max(0, min(high, low))


class Backpressure:
    """One worker's view of which tasks may not be fed: its own full tasks (``full``) and
    congested ones (``mine``: all of them while its inbox is full), every other worker's
    congested ones (``remote``, from their control messages) and the remote tasks sent up to
    their grant (``saturated``, the outbox's); ``congested`` is their union, what
    :meth:`blocks` reads."""

    def __init__(self, conf: dict[str, Any], tasks: LocalTasks, inbox_bytes: Callable[[], int],
                 held: dict[int, int], saturated: set[int],
                 broadcast: Callable[[str, Any], None], incarnation: str = "",
                 runs: Callable[[str, int], bool] = lambda who, task: True) -> None:
        self.high, self.low = watermarks(conf)
        self.tasks = tasks
        #: bytes of received messages the loop has not taken yet
        self.inbox_bytes = inbox_bytes
        #: tuples waiting in the inbox for each task's queue to drain (they count as queued)
        self.held = held
        #: other workers' tasks sent up to their grant (the outbox's)
        self.saturated = saturated
        self.broadcast = broadcast
        #: this worker's incarnation (in its reports), and whether worker ``who`` runs a task
        self.incarnation = incarnation
        self.runs = runs
        self.next_renew = 0.0
        #: every task that blocks its feeders, here or elsewhere
        self.congested: set[int] = set()
        self.full: set[int] = set()
        self.mine: set[int] = set()
        self.remote: dict[str, set[int]] = {}
        #: per worker with congested tasks: its incarnation, and when it last reported
        self.heard: dict[str, tuple[str, float]] = {}
        #: received messages piled up: every task here counts as congested
        self.inbox_full = False
        #: seconds this worker had a full or congested task before the current spell, which
        #: began at ``since`` (``overloaded``: one is now)
        self.overloaded = False
        self.overloaded_secs = 0.0
        self.since = 0.0

    def blocks(self, downstream: frozenset[int]) -> bool:
        """Whether an executor emitting to ``downstream`` must wait."""
        congested = self.congested
        return bool(congested) and not congested.isdisjoint(downstream)

    def check(self, now: float) -> None:
        """Measure this worker's queues; tell the other workers what changed."""
        high, low = self.high, self.low
        full = self.full
        mine = self.mine
        states = self.tasks.states
        lazy = self.tasks.lazy
        held = self.held
        changed: list[list[Any]] | None = None
        refill = False
        inbox = self.inbox_bytes()
        if self.inbox_full:
            self.inbox_full = inbox > INBOX_LOW
        elif inbox > INBOX_HIGH:
            self.inbox_full = True
        if self.inbox_full != bool(mine):      # every task here, or none
            changed = [[task, self.inbox_full] for task in self.tasks.queues]
            if self.inbox_full:
                mine.update(self.tasks.queues)
            else:
                mine.clear()
        for task, q in self.tasks.queues.items():
            n = len(q)
            if task in lazy:
                n += lazy[task].run_extra
            if held and task in held:
                n += held[task]
            if n > states[task].queue_peak:
                states[task].queue_peak = n
            if task in full:
                if n <= low:
                    full.discard(task)
                    refill = True
            elif n > high:
                full.add(task)
                refill = True
        if changed:
            self.broadcast("congested", [self.incarnation, changed, False])
            self.next_renew = now + RENEW_SECS
        if changed or refill:
            self.recount()
        busy = bool(mine or full)
        if busy and not self.overloaded:
            self.overloaded, self.since = True, now
        elif not busy and self.overloaded:
            self.overloaded = False
            self.overloaded_secs += now - self.since

    def remote_report(self, who: str, value: Any, now: float) -> None:
        """Another worker's ``congested`` control message, ``[incarnation, [[task, on], ...],
        full]`` (``full``: the list is every task it has congested); ValueError, and nothing
        changed, if it is anything else or names a task ``who`` does not run."""
        if (value.__class__ is not list or len(value) != 3 or value[0].__class__ is not str
                or value[1].__class__ is not list or value[2].__class__ is not bool):
            raise ValueError(f"a congestion report must be [incarnation, [[task, on], ...], "
                             f"full], got {value!r:.80}")
        incarnation, pairs, full = value
        for pair in pairs:
            if (pair.__class__ is not list or len(pair) != 2 or pair[0].__class__ is not int
                    or pair[1].__class__ is not bool):
                raise ValueError(f"a congestion report entry must be [task, true/false], got "
                                 f"{pair!r:.80}")
            if not self.runs(who, pair[0]):
                raise ValueError(f"task {pair[0]} does not run in worker {who}")
        seen = self.heard.get(who)
        if full or seen is None or seen[0] != incarnation:
            tasks: set[int] = set()         # renewed whole, or its worker restarted
        else:
            tasks = set(self.remote.get(who, ()))
        for task, on in pairs:
            (tasks.add if on else tasks.discard)(task)
        if tasks:
            self.remote[who] = tasks
            self.heard[who] = (incarnation, now)
        else:
            self.remote.pop(who, None)
            self.heard.pop(who, None)
        self.recount()

    def tick(self, now: float) -> None:
        """Renew this worker's congestion with the others; forget the remote congestions
        that were not renewed in time. Called with the loop's timers."""
        if self.mine and now >= self.next_renew:
            self.next_renew = now + RENEW_SECS
            self.broadcast("congested", [self.incarnation,
                                         [[t, True] for t in sorted(self.mine)], True])
        if self.heard:
            stale = [who for who, (_, at) in self.heard.items()
                     if now - at > CONGESTION_TTL_SECS]
            for who in stale:
                log.warning("worker %s did not renew its congestion of tasks %s for %.0f s; "
                            "sending to them again", who, sorted(self.remote.get(who, ()))[:10],
                            CONGESTION_TTL_SECS)
                self.remote.pop(who, None)
                self.heard.pop(who, None)
            if stale:
                self.recount()

    def announce(self) -> None:
        """Tell every other worker that this incarnation has nothing congested (sent when
        the worker starts: what a previous life of it reported no longer holds)."""
        self.broadcast("congested", [self.incarnation, [], True])

    def forget(self, who: str) -> None:
        """A worker no longer assigned: its congested tasks no longer count."""
        self.heard.pop(who, None)
        if self.remote.pop(who, None):
            self.recount()

    def recount(self) -> None:
        """Work ``congested`` out again (after a report, or a window filled or opened)."""
        congested = self.full | self.mine | self.saturated
        for tasks in self.remote.values():
            congested |= tasks
        self.congested = congested

    def overloaded_total(self, now: float) -> float:
        """Seconds this worker has had a full or congested task so far (the current spell
        included)."""
        if self.overloaded:
            return self.overloaded_secs + max(0.0, now - self.since)
        return self.overloaded_secs
