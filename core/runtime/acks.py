"""The worker's ack ledger: what its tasks tell the acker about tuple trees.

Storm's XOR scheme (DESIGN.md, "Guaranteed processing"): a spout starts a tree (init), every
processed tuple acks its edge, a failure fails the tree, and the acker task whose class the
root falls in (``root % len(acker_tasks)``) tells the spout task when its tree completed.

The ledger folds the acks a pass makes per root (XOR is associative, so the acker sees the
same totals) and sends them once per executor pass (:meth:`AckLedger.flush`); an acker task
of this worker is called directly, one in another worker gets ack tuples through the outbox.
Inits and fails go at once. Completions reach a spout task of this worker as ``(root, ok)`` in
its queue, one in another worker as an ack or fail tuple. A bolt's ``reset_timeout`` goes at
once too, as a reset to each root's acker task, which passes it on to the tree's spout task
(:meth:`AckLedger.reset_trees`): a reset tuple in its queue, here or in another worker.
Everything runs on the loop thread: the acks, fails and anchored emits a component makes on
threads of its own are handed to it (:mod:`squall.runtime.executors.handoff`; made there,
one changed ``folded`` while :meth:`AckLedger.flush` iterated it, and the loop died).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple, TupleRun
from squall.runtime.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET, Sources
from squall.runtime.task import LocalTasks, TaskState

if TYPE_CHECKING:
    from squall.runtime.wire.outbox import Outbox

log = logging.getLogger(__name__)
#: the ``ackval`` of an untracked tuple acked or failed already (by the bolt, auto_ack or
#: auto_fail): its tree-less counterpart of a tracked tuple's zeroed ``id`` and ``ackval``.
#: Nothing XORs into an untracked tuple's ``ackval`` (an emit anchored to it is unanchored)
SETTLED = 1


class AckLedger:
    """One worker's side of the acker protocol.

    ``folded`` (root -> XOR of this pass's acks) is public on purpose: a bolt's tracked pass
    XORs into it inline, without a call per tuple (see BoltExecutor._run_tracked)."""

    __slots__ = ("acker_errors", "acker_tasks", "acking", "folded", "local", "outbox",
                 "report", "sources", "tasks")

    def __init__(self, acker_tasks: list[int], tasks: LocalTasks, sources: Sources,
                 outbox: Outbox,
                 report: Callable[[TaskState, str], None] | None = None) -> None:
        self.acker_tasks = acker_tasks
        self.tasks = tasks
        self.sources = sources
        self.outbox = outbox
        self.local = tasks.ackers
        self.folded: dict[int, int] = {}
        #: whether the topology has acker tasks (else nothing is tracked)
        self.acking = bool(acker_tasks)
        #: reports an acker task's error on the topology (its first one)
        self.report = report
        #: calls of this worker's acker tasks that raised
        self.acker_errors = 0

    def acker_raised(self, ats: TaskState, call: str, exc: Exception) -> None:
        """An :class:`squall.Acker` plugin raised in ``call``: reported once, then logged now
        and then; the tree it was told of is left to its timeout (the spout replays it)."""
        self.acker_errors += 1
        text = (f"acker {type(ats.instance).__name__} (task {ats.task}) raised in {call}: "
                f"{exc!r}; the tree is left to its timeout")
        if self.acker_errors == 1 and self.report is not None:
            self.report(ats, text)
        if self.acker_errors == 1 or self.acker_errors % 1000 == 0:
            log.warning("%s (%d so far)", text, self.acker_errors)

    def acker_of(self, root: int) -> int:
        return self.acker_tasks[root % len(self.acker_tasks)]

    # -- acks ------------------------------------------------------------------------------
    def ack_tuple(self, ts: TaskState, tup: Tuple) -> None:
        """Ack ``tup``: its XOR contribution joins this pass's fold, and a tracked tuple is
        marked settled (its ``id`` and ``ackval`` zeroed, as :meth:`fail_tuple` marks one),
        so that acking or failing it again (the bolt's ``ack`` or ``fail`` after auto_ack
        acked it here) changes nothing and counts nothing. A tracked tuple settled already
        (acked or failed by the bolt itself) is left as it is, and not counted again
        (auto_ack after an ``ack`` or ``fail`` in ``process``). An untracked tuple is marked
        and counted the same way, once (:mod:`squall.runtime.executors.uncounted`)."""
        roots = tup.roots
        if not roots:
            if not tup.ackval:
                tup.ackval = SETTLED
                ts.acked += 1
            return
        v = tup.id ^ tup.ackval  # type: ignore[operator]
        if not v:
            return
        tup.id = tup.ackval = 0
        ts.acked += 1
        acks = self.folded
        for r in roots:
            acks[r] = acks.get(r, 0) ^ v

    def ack_run(self, ts: TaskState, run: TupleRun) -> None:
        """Ack every tuple of a TupleRun whose Tuples were never built: one XOR per root, or
        per tuple of a run by tree."""
        ts.acked += len(run)
        roots = run.roots
        if roots:
            acks = self.folded
            get = acks.get
            ids = run.ids
            if ids is not None:
                for r, e in zip(roots, ids):
                    acks[r] = get(r, 0) ^ e
                return
            edge = run.edge
            for r in roots:
                acks[r] = get(r, 0) ^ edge

    def flush(self) -> None:
        """Send the folded acks: an acker task here gets them straight (its
        :class:`squall.Acker` called on this thread, as its executor would), one in another
        worker as ack tuples, all of this flush's for one task in one run."""
        acks = self.folded
        tasks = self.acker_tasks
        n = len(tasks)
        local = self.local.get
        remote: dict[int, list[tuple[int, int]]] | None = None
        for r, v in acks.items():
            if v:
                t = tasks[r % n]
                ats = local(t)
                if ats is not None:
                    ats.executed += 1
                    try:
                        res = ats.instance.ack(r, v)
                    except Exception as exc:    # a plugin's bug: the loop goes on
                        self.acker_raised(ats, "ack", exc)
                        continue
                    if res is not None:
                        self.complete_tree(ats, r, res[0], res[1])
                elif remote is None:
                    remote = {t: [(r, v)]}
                elif t in remote:
                    remote[t].append((r, v))
                else:
                    remote[t] = [(r, v)]
        acks.clear()
        if remote:
            src = self.sources.ack[ACK_ACK]
            send = self.outbox.send_values_run
            for t, pairs in remote.items():
                send(t, pairs, 0, src)

    def acker_values(self, ats: TaskState, src: Any, values: list[Any]) -> None:
        """Apply a run of system tuples that arrived for the acker task ``ats`` of this worker
        straight to its :class:`squall.Acker`, as :meth:`flush` does for this worker's own
        acks (none is built as a Tuple or queued: the acker's queue holds nothing they could
        overtake)."""
        acker = ats.instance
        complete = self.complete_tree
        ack = self.sources.ack
        if src is ack[ACK_ACK]:
            for v in values:
                res = acker.ack(v[0], v[1])
                if res is not None:
                    complete(ats, v[0], res[0], res[1])
        elif src is ack[ACK_INIT]:
            for v in values:
                res = acker.init(v[0], v[1], v[2])
                if res is not None:
                    complete(ats, v[0], res[0], res[1])
        elif src is ack[ACK_FAIL]:
            for v in values:
                res = acker.fail(v[0])
                if res is not None:
                    complete(ats, v[0], res[0], res[1])
        elif src is ack[ACK_RESET]:
            for v in values:
                self.reset_at(ats, v[0])
        ats.executed += len(values)

    # -- trees -----------------------------------------------------------------------------
    def root_plan(self, task: int) -> tuple[int, int, int]:
        """How spout task ``task`` draws the root ids of its trees: ``rand(bits) * mul +
        home``, below 2**64.

        ``root % len(acker_tasks)`` picks a tree's acker task. With an acker task in this
        worker, every root is drawn in that task's class, so the spout's init and the acker's
        completion stay in this worker; only acks from bolts in other workers travel. The
        other ``bits`` of a root stay random. Without acker tasks here, or with all of them,
        roots are uniform 64-bit ids. Spout tasks of a worker with some of several acker
        tasks are spread over those."""
        n = len(self.acker_tasks)
        here = [i for i, t in enumerate(self.acker_tasks) if t in self.local]
        if not here or len(here) == n:
            return 64, 1, 0
        return 64 - n.bit_length(), n, here[task % len(here)]

    def init_tree(self, ts: TaskState, acker_task: int, root: int, xor: int) -> None:
        """Tell ``acker_task`` that spout task ``ts`` started tree ``root`` with edges
        ``xor``: straight to its acker in this worker, else as an init tuple."""
        ats = self.local.get(acker_task)
        if ats is None:
            self._system(acker_task, (root, xor, ts.task), ts.task, ACK_INIT)
            return
        ats.executed += 1
        try:
            res = ats.instance.init(root, xor, ts.task)
        except Exception as exc:    # a plugin's bug: the loop goes on
            self.acker_raised(ats, "init", exc)
            return
        if res is not None:
            self.complete_tree(ats, root, res[0], res[1])

    def fail_tree(self, acker_task: int, root: int) -> None:
        """Fail tree ``root`` at ``acker_task`` (straight to its acker in this worker, else as
        a fail tuple). At once, not folded like acks: the acks a pass folds for the same tree
        reach the acker after the fail, as they did when it was sent."""
        ats = self.local.get(acker_task)
        if ats is None:
            self._system(acker_task, (root, 0), 0, ACK_FAIL)
            return
        ats.executed += 1
        try:
            res = ats.instance.fail(root)
        except Exception as exc:    # a plugin's bug: the loop goes on
            self.acker_raised(ats, "fail", exc)
            return
        if res is not None:
            self.complete_tree(ats, root, res[0], res[1])

    def fail_tuple(self, ts: TaskState | None, tup: Tuple) -> None:
        """Fail ``tup``'s trees. A tracked tuple is marked settled as an ack marks it (its
        ``id`` and ``ackval`` zeroed), so a later ack or fail of it (auto_ack or auto_fail
        after the bolt's own call, a second call) changes nothing and counts nothing; one the
        bolt acked already is not failed (its ack is on its way to the acker). An untracked
        tuple is marked (``ackval``) and counted once the same way
        (:mod:`squall.runtime.executors.uncounted`)."""
        roots = tup.roots
        if roots:
            if not (tup.id or tup.ackval):
                return
            tup.id = tup.ackval = 0
        elif tup.ackval:
            return
        else:
            tup.ackval = SETTLED
        self.fail_roots(ts, roots, 1)

    def fail_tuples(self, ts: TaskState, tuples: Any) -> None:
        """Fail the Tuples of a batch whose ``process_batch`` raised (auto_fail): those not
        acked or failed already (by the bolt, in the batch), each counted once and marked
        settled as :meth:`fail_tuple` marks one, and each of their trees once."""
        roots: dict[int, None] = {}
        n = 0
        for tup in tuples:
            r = tup.roots
            if r:
                if not (tup.id or tup.ackval):
                    continue
                tup.id = tup.ackval = 0
                roots.update(dict.fromkeys(r))
            elif tup.ackval:
                continue
            else:
                tup.ackval = SETTLED
            n += 1
        self.fail_roots(ts, roots, n)

    def fail_roots(self, ts: TaskState | None, roots: Any, count: int) -> None:
        """Fail ``count`` tuples that share ``roots`` (one Tuple, or a TupleRun): each tree
        fails once."""
        if ts is not None:
            ts.failed += count
        if not roots or not self.acker_tasks:
            return
        for r in roots:
            self.fail_tree(self.acker_of(r), r)

    def reset_trees(self, ts: TaskState, roots: Any) -> None:
        """Restart the timeout of the trees ``roots`` (a bolt task ``ts``'s ``reset_timeout``):
        at each one's acker task (straight to its acker in this worker, else as a reset
        tuple), which passes it on to the tree's spout task (:meth:`reset_at`). Not folded:
        rare, and each goes at once."""
        if not self.acker_tasks:
            return
        local = self.local.get
        for r in roots:
            task = self.acker_of(r)
            ats = local(task)
            if ats is None:
                self._system(task, (r, 0), ts.task, ACK_RESET)
            else:
                ats.executed += 1
                self.reset_at(ats, r)

    def reset_at(self, ats: TaskState, root: int) -> None:
        """Restart tree ``root``'s timeout at this worker's acker task ``ats``, and tell the
        tree's spout task (a reset tuple ``(root,)`` queued for it here, or sent to its
        worker) when the acker tracks the tree."""
        try:
            spout_task = ats.instance.reset_timeout(root)
        except Exception as exc:    # a plugin's bug: the loop goes on
            self.acker_raised(ats, "reset_timeout", exc)
            return
        if spout_task is not None:
            self._system(spout_task, (root,), ats.task, ACK_RESET)

    def fail_lost(self, roots: set[int]) -> None:
        """Fail the trees of tuples that could not be delivered (the outbox's loss), each
        once, where their acker task is reachable."""
        if not self.acker_tasks:
            return
        queues = self.tasks.queues
        reachable = self.outbox.reaches
        for r in roots:
            task = self.acker_of(r)
            if task in queues or reachable(task):
                self.fail_tree(task, r)

    def complete_tree(self, ats: TaskState, root: int, spout_task: int, ok: bool) -> None:
        """Tell ``spout_task`` that tree ``root`` completed (``ok``) or failed: a spout task of
        this worker gets ``(root, ok)`` queued, one in another worker an ack or fail tuple."""
        q = self.tasks.spout_queues.get(spout_task)
        if q is not None:
            q.append((root, ok))
        else:
            self._system(spout_task, (root,), ats.task, ACK_ACK if ok else ACK_FAIL)

    def _system(self, task: int, values: tuple[Any, ...], src_task: int, stream: str) -> None:
        """An untracked tuple of an acker stream for ``task``: queued here, or joining the
        open run of its worker as values."""
        src = self.sources.ack[stream]
        q = self.tasks.queues.get(task)
        if q is not None:
            q.append(Tuple(values, src_task, src))
        else:
            self.outbox.send_values(task, values, src_task, src)
