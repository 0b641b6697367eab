"""Credits: how many tuples one worker may send to a task of another worker. The receiver
grants; the sender keeps to the grant. This paces a sender by what the receiving task takes.

The receiving side (:class:`Grants`) counts, per sending worker and task, the tuples that
have *arrived* (reached the loop: delivered into the task's queue, or waiting in front of it).
The task's room is what its queue and what waits for it lack of the high watermark
(``topology.backpressure.high.watermark`` × ``topology.executor.receive.buffer.size``); each
of the ``peers`` other workers gets an equal share of it. A sender is granted ``arrived +
share``: an absolute total it may have sent to the task. What it has on its way is then at most
its share of the room, so however many workers send, a task's queue and what waits for it stay
at about the high watermark. Room opens as the task takes tuples, and grants grow with it:
the sender is paced by the task. It is not stopped until a whole queue has drained.

Grants only grow. A grant is told (a ``credit`` control message, ``[incarnation, [[task,
arrived, granted], ...]]``, the running totals) once it has grown by ``every`` tuples (a
quarter of a share, so reports grow with the traffic, not with the square of the workers), or
when the sender has less than ``every`` left of what it was granted and :data:`REPORT_SECS`
have passed since the last report to it (a sender paced by a slow task gets what that task took
at least this often). Until its first grant a sender may send one share of the whole room.

The sending side (:class:`Windows`) counts the tuples it sent to each task. A task it has sent
its grant to is *saturated*: backpressure blocks the executors that emit to it, as for a
congested task. A report from another incarnation of the receiver than the one it heard from
before (the receiver restarted) sets the count sent to what the receiver says arrived: what was
on its way to a previous life is gone. The first report it hears of a receiver leaves the count
as it is (what it sent before is on its way to that receiver). A receiver that hears of a new
incarnation of a sender (in the reports that sender sends as a receiver) starts that sender's
counts afresh.

A saturated task whose worker has said nothing at all (no control message of any kind) for
:data:`STALE_SECS` is *probed*: it may be sent a quarter of a share more (:func:`quarter`, what
a grant grows by before it is told), once until that worker says something again. Its loop
may be held in one long call (a bolt's ``process``: grants are sent from the loop), so a
whole share more per silence would pile queue on queue at it; a live worker that lost a grant
answers the probe with its grant (what arrived grew by a quarter), and a restarted one tells
every other worker its new life at once (its opening report). A worker that died for good is
sent nothing more until its tasks are assigned elsewhere; the acker fails or replays what was
sent to it.

A saturated task whose worker talks but has never said that anything of this worker's arrived
for it (it granted the task only in its opening report) is probed the same way, once per
incarnation of that worker: a worker that died before its first report to this one and came
back counts from nothing, while this one still counts what it sent to the dead life (a whole
share, maybe), and a grant comes only from what arrives. A live one with a full queue gets a
quarter of a share more, once.

However it is probed, a worker that grants nothing more while tasks of it stay saturated is
reported once it has done so for ``topology.backpressure.stall.report.secs``, by
:mod:`.stalls`, which reads ``saturated``, ``heard_at`` and ``granted_at`` here.

Acks folded by a worker's tasks (source task 0) are not counted: they feed the acker directly,
not a queue, and bear no sender a receiver could grant to.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from squall.runtime.task import LocalTasks

log = logging.getLogger("squall.runtime.transfer")
#: a sender paced by a slow task is told what it took at least this often
REPORT_SECS = 0.02
#: seconds a saturated task's worker may say nothing before the task is probed
STALE_SECS = 10.0
Key = tuple[str, int]


def share(high: int, peers: int) -> int:
    """One sender's share of a task's whole room (what it may send before its first grant)."""
    return max(1, high // max(1, peers))


def quarter(high: int, peers: int) -> int:
    """A quarter of a share: what a grant grows by before it is told, and what a task whose
    worker has said nothing for :data:`STALE_SECS` is probed with."""
    return max(1, share(high, peers) // 4)


class Grants:
    """The receiving side: what has arrived from each other worker for each task here, and
    what each was granted. ``held`` is the tuples waiting in front of each task's queue (the
    inbox's); ``peers`` is the number of other workers (set with the assignment)."""

    def __init__(self, tasks: LocalTasks, held: dict[int, int], high: int,
                 incarnation: str) -> None:
        self.tasks = tasks
        self.held = held
        self.high = high
        self.incarnation = incarnation
        self.peers = 1
        self.every = quarter(high, 1)
        #: per (sender, task): tuples arrived, the grant last told, and when it was told
        self.arrived: dict[tuple[Key, int], int] = {}
        self.granted: dict[tuple[Key, int], int] = {}
        self.told_at: dict[tuple[Key, int], float] = {}
        #: per task: the workers that have sent to it
        self.senders: dict[int, list[Key]] = {}
        #: per task: what it and its waiting entries held when its grants were last worked out
        #: (a task neither took nor received anything since needs no new grant), and the
        #: tasks whose senders are owed a grant too small to tell yet
        self.seen: dict[int, int] = {}
        self.owed: set[int] = set()
        #: each sender's incarnation, as its own reports name it
        self.incarnations: dict[Key, str] = {}

    def set_peers(self, peers: int) -> None:
        self.peers = max(1, peers)
        self.every = quarter(self.high, self.peers)

    def arrive(self, sender: Key | None, task: int, count: int) -> None:
        """``count`` tuples from ``sender`` reached the loop for ``task`` (delivered or
        waiting in front of its queue)."""
        if sender is None:          # a worker no longer assigned: nothing to grant it
            return
        key = (sender, task)
        total = self.arrived.get(key)
        if total is None:
            total = 0
            self.granted[key] = share(self.high, self.peers)
            self.senders.setdefault(task, []).append(sender)
        self.arrived[key] = total + count
        self.seen.pop(task, None)

    def grant(self, send: Callable[[Key, str, Any], None], now: float) -> None:
        """Work out the grants of the tasks that took or received tuples since the last call,
        and tell those due (see the module's docstring). Called every few milliseconds."""
        if not self.senders:
            return
        high, every = self.high, self.every
        peers = self.peers
        states = self.tasks.states
        held = self.held
        seen = self.seen
        owed = self.owed
        arrived, granted, told_at = self.arrived, self.granted, self.told_at
        due: dict[Key, list[list[int]]] = {}
        for task, senders in self.senders.items():
            ts = states[task]
            occupied = len(ts.queue) + ts.run_extra + held.get(task, 0)
            if seen.get(task) == occupied and task not in owed:
                continue
            seen[task] = occupied
            owed.discard(task)
            room = high - occupied
            part = room // peers if room > 0 else 0
            for sender in senders:
                key = (sender, task)
                got = arrived[key]
                told = granted[key]
                more = got + part - told
                if more <= 0:
                    continue
                if more >= every or (told - got < every and now - told_at.get(key, 0.0)
                                     >= REPORT_SECS):
                    granted[key] = told = got + part
                    told_at[key] = now
                    due.setdefault(sender, []).append([task, got, told])
                else:
                    owed.add(task)
        for sender, grants in due.items():
            send(sender, "credit", [self.incarnation, grants])

    def met(self, sender: Key, incarnation: str) -> None:
        """``sender``'s incarnation, from a report it sent: a new one (it restarted) starts
        its counts afresh, as its own do."""
        known = self.incarnations.get(sender)
        self.incarnations[sender] = incarnation
        if known is not None and known != incarnation:
            self.forget(sender)

    def opening(self, tasks: list[int]) -> list[Any]:
        """The report a worker sends every other one when it starts: nothing arrived, one
        share granted, per task (what it was told by a previous life no longer holds)."""
        first = share(self.high, self.peers)
        return [self.incarnation, [[t, 0, first] for t in tasks]]

    def forget(self, sender: Key) -> None:
        """A worker no longer assigned, or restarted: its counts are dropped."""
        for key in [k for k in self.arrived if k[0] == sender]:
            del self.arrived[key]
            self.granted.pop(key, None)
            self.told_at.pop(key, None)
            senders = self.senders[key[1]]
            senders.remove(sender)
            if not senders:
                del self.senders[key[1]]
                self.seen.pop(key[1], None)
                self.owed.discard(key[1])


class Windows:
    """The sending side: per task of another worker, the tuples sent to it and what its
    worker granted; the tasks sent up to their grant (``saturated``). ``changed`` is called
    when ``saturated`` changes."""

    def __init__(self, high: int, changed: Callable[[], None]) -> None:
        self.high = high
        self.changed = changed
        self.peers = 1
        #: per remote task: tuples sent, and the most its worker allows
        self.sent: dict[int, int] = {}
        self.limit: dict[int, int] = {}
        self.saturated: set[int] = set()
        self.saturated_at: dict[int, float] = {}
        #: each worker's incarnation (a report from a new one restarts the counts), when it
        #: last said anything, and when it last granted more (a grant grew, or a new life of
        #: it counted afresh): what :mod:`.stalls` watches
        self.incarnations: dict[Key, str] = {}
        self.heard_at: dict[Key, float] = {}
        self.granted_at: dict[Key, float] = {}
        #: per task probed: when its worker had last said anything then (it is not probed
        #: again until its worker says something)
        self.probed: dict[int, float] = {}
        #: per task: the incarnation of its worker that last told what arrived from here (a
        #: report with something arrived), and the one last probed for telling nothing
        self.answered: dict[int, str] = {}
        self.unanswered_probe: dict[int, str] = {}

    def set_peers(self, peers: int) -> None:
        self.peers = max(1, peers)

    def sent_to(self, task: int, count: int, now: float) -> bool:
        """Count ``count`` tuples sent to ``task``; True if that saturated it (the caller
        calls ``changed`` once for a whole batch)."""
        n = self.sent[task] = self.sent.get(task, 0) + count
        limit = self.limit.get(task)
        if limit is None:
            limit = self.limit[task] = n - count + share(self.high, self.peers)
        if n >= limit and task not in self.saturated:
            self.saturated.add(task)
            self.saturated_at[task] = now
            return True
        return False

    def heard(self, who: Key, now: float) -> None:
        """Worker ``who`` said something (any control message): it is alive."""
        self.heard_at[who] = now

    def credit(self, who: Key, incarnation: str, grants: Any, owner: Callable[[int], Any],
               now: float) -> None:
        """Worker ``who``'s grants, ``[[task, arrived, granted], ...]`` (tasks it does not run
        are passed over); ValueError, and nothing changed, if that is not what it is."""
        if grants.__class__ is not list:
            raise ValueError(f"a credit report must be a list of [task, arrived, granted], "
                             f"got {grants!r:.80}")
        for entry in grants:
            if (entry.__class__ is not list or len(entry) != 3
                    or any(v.__class__ is not int for v in entry)):
                raise ValueError(f"a credit report entry must be [task, arrived, granted], "
                                 f"got {entry!r:.80}")
        known = self.incarnations.get(who)
        restarted = known is not None and known != incarnation
        self.incarnations[who] = incarnation
        self.heard_at[who] = now
        sent, limit = self.sent, self.limit
        opened = grew = False
        for task, arrived, granted in grants:
            if owner(task) != who:
                continue
            if restarted:       # what was on its way to a previous life is gone
                sent[task] = arrived
                limit[task] = granted
                grew = True
            elif granted > limit.get(task, 0):
                limit[task] = granted
                grew = True
            if arrived:
                self.answered[task] = incarnation
            if task in self.saturated and sent.get(task, 0) < limit[task]:
                self.saturated.discard(task)
                opened = True
        if grew:
            self.granted_at[who] = now
        if opened:
            self.changed()

    def expire(self, now: float, owner: Callable[[int], Any]) -> None:
        """Probe the saturated tasks of workers that have said nothing for STALE_SECS and
        were not probed since they last did, and those saturated for STALE_SECS whose worker's
        incarnation never told what arrived from here (see the module's docstring)."""
        heard, probed, saturated_at = self.heard_at, self.probed, self.saturated_at
        stale = []
        unanswered = []
        for task in self.saturated:
            who = owner(task)
            last = heard.get(who, 0.0)
            since = saturated_at.get(task, now)
            if now - max(since, last) > STALE_SECS and probed.get(task) != last:
                stale.append((task, last))
            elif now - since > STALE_SECS and now - last <= STALE_SECS:
                life = self.incarnations.get(who)
                if life is not None and self.answered.get(task) != life \
                        and self.unanswered_probe.get(task) != life:
                    unanswered.append((task, life))
        probe = quarter(self.high, self.peers)
        for task, last in stale:
            # a worker silent for long is reported once by .stalls, naming it: this is one
            # line per task and silence
            who = owner(task)
            log.info("the worker of task %d (%s) has said nothing for %.0f s; sending the "
                     "task %d tuples more, once, to see whether it answers", task,
                     f"{who[0]}:{who[1]}" if who else "?", STALE_SECS, probe)
            probed[task] = last
            self._open(task, probe)
        for task, life in unanswered:
            log.info("the worker of task %d has not said for %.0f s that anything sent to the "
                     "task arrived; sending it %d tuples more, once", task, STALE_SECS, probe)
            self.unanswered_probe[task] = life
            self._open(task, probe)
        if stale or unanswered:
            self.changed()

    def _open(self, task: int, probe: int) -> None:
        self.limit[task] = self.sent.get(task, 0) + probe
        self.saturated.discard(task)
        self.saturated_at.pop(task, None)

    def drop(self, task: int) -> bool:
        """Forget ``task`` (it moved to another worker, or none runs it); True if it was
        saturated (the caller calls ``changed``)."""
        self.sent.pop(task, None)
        self.limit.pop(task, None)
        self.saturated_at.pop(task, None)
        self.probed.pop(task, None)
        self.answered.pop(task, None)
        self.unanswered_probe.pop(task, None)
        if task in self.saturated:
            self.saturated.discard(task)
            return True
        return False
