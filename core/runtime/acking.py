"""The acking side of a worker (a mixin of :class:`squall.runtime.worker.Worker`): acks folded
per root and sent once per executor pass, trees started, failed and completed, and the acker
tasks of this worker fed directly. Runs on the worker's loop thread.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple, TupleRun
from squall.runtime.tasks import ACK_ACK, ACK_FAIL, ACK_INIT, TaskState

if TYPE_CHECKING:
    from squall.runtime.transfer import Transfer


class Acking:
    acker_tasks: list[int]
    local_ackers: dict[int, TaskState]
    spout_queues: dict[int, Any]
    transfer: Transfer
    _acks: dict[int, int]
    _sys: dict[str, Any]

    if TYPE_CHECKING:       # the Worker's, used here
        def deliver_system(self, ts: TaskState | None, task: int, values: tuple[Any, ...],
                           src_task: int, stream: str) -> None: ...

        def report_error(self, ts: TaskState, exc: BaseException | str,
                         user: bool = False) -> None: ...

    def acker_values(self, ats: TaskState, src: Any, values: list[Any]) -> None:
        """Apply a run of system tuples that arrived for the acker task ``ats`` of this worker
        straight to its :class:`squall.Acker`, as :meth:`flush_acks` does for this worker's own
        acks (none is built as a Tuple or queued: the acker's queue holds nothing they could
        overtake)."""
        acker = ats.instance
        complete = self.complete_tree
        sys_src = self._sys
        if src is sys_src[ACK_ACK]:
            for v in values:
                res = acker.ack(v[0], v[1])
                if res is not None:
                    complete(ats, v[0], res[0], res[1])
        elif src is sys_src[ACK_INIT]:
            for v in values:
                res = acker.init(v[0], v[1], v[2])
                if res is not None:
                    complete(ats, v[0], res[0], res[1])
        elif src is sys_src[ACK_FAIL]:
            for v in values:
                res = acker.fail(v[0])
                if res is not None:
                    complete(ats, v[0], res[0], res[1])
        ats.executed += len(values)

    def ack_tuple(self, ts: TaskState, tup: Tuple) -> None:
        """Ack ``tup``: its XOR contribution is folded per root and sent to the acker once
        per executor batch (XOR is associative, so the acker sees the same totals)."""
        ts.acked += 1
        roots = tup.roots
        if not roots:
            return
        acks = self._acks
        if roots.__class__ is tuple:
            v = tup.id ^ tup.ackval  # type: ignore[operator]
            for r in roots:
                acks[r] = acks.get(r, 0) ^ v
        else:
            for r, e in roots.items():  # type: ignore[attr-defined]
                acks[r] = acks.get(r, 0) ^ e ^ tup.ackval

    def ack_run(self, ts: TaskState, run: TupleRun) -> None:
        """Ack every tuple of a TupleRun whose Tuples were never built: one XOR per root."""
        ts.acked += len(run.values)
        roots = run.roots
        if roots:
            acks = self._acks
            edge = run.edge
            for r in roots:
                acks[r] = acks.get(r, 0) ^ edge

    def flush_acks(self) -> None:
        """Send the folded acks: an acker task in this worker gets them straight (its
        :class:`squall.Acker` called here, on the loop thread, as its executor would), one in
        another worker as ack tuples, all of this flush's in one run."""
        acks = self._acks
        tasks = self.acker_tasks
        n = len(tasks)
        local = self.local_ackers.get
        remote: dict[int, list[tuple[int, int]]] | None = None
        for r, v in acks.items():
            if v:
                t = tasks[r % n]
                ats = local(t)
                if ats is not None:
                    ats.executed += 1
                    res = ats.instance.ack(r, v)
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
            src = self._sys[ACK_ACK]
            send = self.transfer.send_values_run
            for t, pairs in remote.items():
                send(None, t, pairs, 0, src)

    def fail_tree(self, acker_task: int, root: int) -> None:
        """Fail tree ``root`` at ``acker_task`` (straight to its acker in this worker, else as
        a fail tuple). At once, not folded like acks: the acks a pass folds for the same tree
        reach the acker after the fail, as they did when it was sent."""
        ats = self.local_ackers.get(acker_task)
        if ats is None:
            self.deliver_system(None, acker_task, (root, 0), 0, ACK_FAIL)
            return
        ats.executed += 1
        res = ats.instance.fail(root)
        if res is not None:
            self.complete_tree(ats, root, res[0], res[1])

    def init_tree(self, ts: TaskState, acker_task: int, root: int, xor: int) -> None:
        """Tell ``acker_task`` that spout task ``ts`` started tree ``root`` with edges
        ``xor``: straight to its acker in this worker, else as an init tuple."""
        ats = self.local_ackers.get(acker_task)
        if ats is None:
            self.deliver_system(ts, acker_task, (root, xor, ts.task), ts.task, ACK_INIT)
            return
        ats.executed += 1
        res = ats.instance.init(root, xor, ts.task)
        if res is not None:
            self.complete_tree(ats, root, res[0], res[1])

    def fail_tuple(self, ts: TaskState | None, tup: Tuple) -> None:
        self.fail_roots(ts, tup.roots, 1)

    def fail_roots(self, ts: TaskState | None, roots: Any, count: int) -> None:
        """Fail ``count`` tuples that share ``roots`` (one Tuple, or a TupleRun): each tree
        fails once."""
        if ts is not None:
            ts.failed += count
        if not roots or not self.acker_tasks:
            return
        n = len(self.acker_tasks)
        for r in roots:
            self.fail_tree(self.acker_tasks[r % n], r)

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
        here = [i for i, t in enumerate(self.acker_tasks) if t in self.local_ackers]
        if not here or len(here) == n:
            return 64, 1, 0
        return 64 - n.bit_length(), n, here[task % len(here)]

    def track_spout_tuple(self, ts: TaskState, root: int, xor: int, tup_id: Any,
                          stream: str, values: tuple) -> None:
        ts.executor.track(ts, root, tup_id)  # type: ignore[attr-defined]
        self.init_tree(ts, self.acker_tasks[root % len(self.acker_tasks)], root, xor)

    def complete_tree(self, ts: TaskState, root: int, spout_task: int, ok: bool) -> None:
        """Tell ``spout_task`` that tree ``root`` completed (``ok``) or failed: a spout task of
        this worker gets ``(root, ok)`` queued, one in another worker an ack or fail tuple."""
        q = self.spout_queues.get(spout_task)
        if q is not None:
            q.append((root, ok))    # type: ignore[arg-type]
        else:
            self.deliver_system(ts, spout_task, (root,), ts.task, ACK_ACK if ok else ACK_FAIL)

    def ack_untracked(self, ts: TaskState, tup_id: Any) -> None:
        ts.deferred.append(tup_id)  # type: ignore[attr-defined]

    def run_deferred_acks(self, ts: TaskState) -> None:
        deferred = ts.deferred  # type: ignore[attr-defined]
        if deferred:
            ts.deferred = []  # type: ignore[attr-defined]
            call = ts.executor._call  # type: ignore[attr-defined]  # on the spout's thread
            for tup_id in deferred:
                ts.acked += 1
                call(ts, ts.instance.ack, tup_id)
