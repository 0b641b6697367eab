"""Moving tuples between workers: outbound batches, the receive thread, inbound dispatch.

Tuples for a remote task join the outbox of that task's worker; an outbox is serialized once
and handed to the transport when it is full, when the loop has nothing else to do, or once it
has waited ``topology.batch.flush.interval.millis`` (a busy loop's short passes would
otherwise send a small batch each; 0 sends at the end of every pass). The wire
form of a batch is a list of entries ``[dest_task, src_task, stream, values, id, roots]``;
``dest_task == 0`` marks a worker-to-worker control entry (backpressure), and a negative
``dest_task`` a run of tuples for task ``-dest_task`` from one source task on one stream,
stored by column:

* ``[-dest, src_task, stream, [values, ...], edge, roots]`` with an int ``edge``: a
  ``TupleRun`` (one ``emit_many`` call: shared ``roots``, one edge for the run), or, with
  ``edge`` 0 and ``roots`` None, consecutive untracked tuples;
* ``[-dest, src_task, stream, [values, ...], [id, ...], [roots, ...]]``: consecutive tracked
  tuples, each with its own id and roots; a roots entry ``0`` means "the same roots as the
  tuple before" (a bolt's emits anchored to one input share them);
* ``[-dest, src_task, stream, [values, ...], [[edge, count], ...], [roots, ...]]``: consecutive
  anchored runs (a ``TupleRun`` each: ``emit_many`` calls anchored to one input apiece, as a
  batch bolt makes them), run after run: each ``[edge, count]`` takes the next ``count``
  values, with its ``roots`` entry (``0``: the run before's roots).

Individual tuples are folded into runs as they are queued (:meth:`Transfer.send_remote`), so a
batch of single emits costs the serializer one list per tuple instead of an entry each.
Anything that cannot be delivered fails back to the acker so spouts replay it. What arrives
is decoded and delivered by the :class:`~squall.runtime.inbound.Inbound` side. Everything
except :meth:`recv_loop` runs on the worker's loop thread.
"""
from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple, TupleRun
from squall.errors import SquallError
from squall.runtime.inbound import CONTROL, Inbound
from squall.runtime.tasks import TaskState

if TYPE_CHECKING:
    from squall.runtime.worker import Worker

log = logging.getLogger(__name__)
#: a run of single tuples for one remote task is sent once it holds this many batches' worth
#: (``topology.transfer.batch.size`` tuples each): runs are cheap to grow, sends are not
RUN_BATCHES = 10
Key = tuple[str, int]


_NOTHING = object()


class _Run:
    """Outbound: tuples from one source task on one stream for one remote task, in the order
    they were emitted, sent as one wire run (``ids``/``roots`` are None when untracked). A
    run of anchored runs (``ids`` holding ``[edge, count]`` pairs) is kept open under the
    key ``-task``, so the single-tuple paths, which look up ``task``, never join it."""

    __slots__ = ("ids", "last_roots", "roots", "src", "task", "values")

    def __init__(self, task: int, src: Any, tracked: bool) -> None:
        self.task = task
        self.src = src
        self.values: list[Any] = []
        self.ids: list[Any] | None = [] if tracked else None
        self.roots: list[Any] | None = [] if tracked else None
        self.last_roots: Any = _NOTHING      # the roots the last non-0 roots entry holds


class Transfer(Inbound):
    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.transport = worker.transport
        self.serializer = worker.serializer
        self.batch_size = worker.batch_size
        # a run is sent once it holds this many tuples (else when the loop ends its pass)
        self.run_cap = RUN_BATCHES * worker.batch_size
        self.task_to_worker: dict[int, Key] = {}
        self.outbox_of_task: dict[int, list[tuple[int, Any]]] = {}
        self.outboxes: dict[Key, list[tuple[int, Any]]] = {}
        # the run each remote task's tuples are being folded into, until its outbox is sent
        self.open_of_task: dict[int, dict[int, _Run]] = {}
        self.open_of_key: dict[Key, dict[int, _Run]] = {}
        self.conns: dict[Key, Any] = {}
        self.inbox: deque[bytes] = deque()
        self.remote_throttle: dict[str, bool] = {}
        #: other workers' tasks -> their last reported load (squall.runtime.load)
        self.remote_load: dict[int, float] = {}
        self.send_failures = 0
        self.recv_conn: Any = None
        #: batches handed to the transport / taken from it (complete_topology's quiet check)
        self.sent_batches = self.received_batches = 0
        self.sent_bytes = 0
        interval = worker.conf.get("topology.batch.flush.interval.millis")
        self.flush_interval = max(0.0, float(interval or 0)) / 1000.0
        #: outboxes holding entries: when flush_all first saw them so (loop clock)
        self.waiting_since: dict[Key, float] = {}

    # -- outbound ------------------------------------------------------------------------------
    def send_remote(self, ts: TaskState | None, task: int, tup: Tuple) -> None:
        opened = self.open_of_task.get(task)
        if opened is None:
            self.undeliverable([(task, tup)], f"no worker is assigned task {task}")
            return
        run = opened.get(task)
        cls = tup.__class__
        if cls is not Tuple and tup.roots is not None:
            # a tracked TupleRun: its own entry (one edge for the whole run), order kept
            if run is not None:
                del opened[task]
            opened.pop(-task, None)
            out = self.outbox_of_task[task]
            out.append((task, tup))
            if len(out) >= self.batch_size:
                self.flush(self.task_to_worker[task], out)
            return
        if cls is not Tuple or (tup.id is None and tup.roots is None):
            # untracked: a single tuple's values, or an untracked TupleRun's, join the open run
            if run is None or run.ids is not None or run.task != tup.task \
                    or run.src is not tup.src:
                run = self._open(opened, task, tup.task, tup.src, False)
            if cls is Tuple:
                run.values.append(tup.values)
            else:
                run.values.extend(tup.values)
        else:
            if run is None or run.ids is None or run.task != tup.task or run.src is not tup.src:
                run = self._open(opened, task, tup.task, tup.src, True)
            run.values.append(tup.values)
            run.ids.append(tup.id)              # type: ignore[union-attr]
            roots = tup.roots
            if roots is run.last_roots:
                run.roots.append(0)             # type: ignore[union-attr]  # same as before
            else:
                run.roots.append(roots)         # type: ignore[union-attr]
                run.last_roots = roots
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def _open(self, opened: dict[int, _Run], task: int, src_task: int, src: Any,
              tracked: bool) -> _Run:
        """Start the run ``task``'s next tuples join, at the end of its outbox."""
        opened.pop(-task, None)         # anchored runs after these tuples start a new entry
        run = opened[task] = _Run(src_task, src, tracked)
        self.outbox_of_task[task].append((task, run))
        return run

    def send_values(self, ts: TaskState | None, task: int, values: tuple[Any, ...],
                    src_task: int, src: Any) -> None:
        """``send_remote`` of an untracked tuple, without building it when it joins an open
        run (the common case: a bolt's emits to the same remote task)."""
        opened = self.open_of_task.get(task)
        run = opened.get(task) if opened is not None else None
        if run is None or run.ids is not None or run.task != src_task or run.src is not src:
            self.send_remote(ts, task, Tuple(values, src_task, src))
            return
        run.values.append(values)
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def send_tracked(self, ts: TaskState | None, task: int, values: tuple[Any, ...],
                     src_task: int, src: Any, tid: int, roots: tuple[int, ...]) -> None:
        """``send_remote`` of a tracked tuple, without building it when it joins an open
        tracked run (a bolt's anchored emits to the same remote task)."""
        opened = self.open_of_task.get(task)
        run = opened.get(task) if opened is not None else None
        if run is None or run.ids is None or run.task != src_task or run.src is not src:
            self.send_remote(ts, task, Tuple(values, src_task, src, tid, roots))
            return
        run.values.append(values)
        run.ids.append(tid)
        if roots is run.last_roots:
            run.roots.append(0)             # type: ignore[union-attr]  # same as before
        else:
            run.roots.append(roots)         # type: ignore[union-attr]
            run.last_roots = roots
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def send_anchored(self, task: int, values: list[Any], src_task: int, src: Any, edge: int,
                      roots: tuple[int, ...]) -> None:
        """Queue an anchored run (``values`` sharing ``roots`` and one ``edge``) for a remote
        task without building its TupleRun: consecutive ones from one source task and stream
        travel as one wire entry, by column."""
        opened = self.open_of_task.get(task)
        if opened is None:
            self.send_remote(None, task, TupleRun(values, src_task, src, roots, edge))
            return
        run = opened.get(-task)
        if run is None or run.task != src_task or run.src is not src:
            opened.pop(task, None)      # single tuples after this run start a new entry
            run = opened[-task] = _Run(src_task, src, True)
            self.outbox_of_task[task].append((task, run))
        run.values.extend(values)
        run.ids.append([edge, len(values)])         # type: ignore[union-attr]
        if roots is run.last_roots:
            run.roots.append(0)                     # type: ignore[union-attr]
        else:
            run.roots.append(roots)                 # type: ignore[union-attr]
            run.last_roots = roots
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def send_values_run(self, ts: TaskState | None, task: int, values: list[Any],
                        src_task: int, src: Any) -> None:
        """``send_run`` of an untracked run's values, without building its TupleRun when they
        join an open run (a bolt's consecutive ``emit_many`` calls to the same remote task)."""
        opened = self.open_of_task.get(task)
        run = opened.get(task) if opened is not None else None
        if run is None or run.ids is not None or run.task != src_task or run.src is not src:
            self.send_remote(ts, task, TupleRun(values, src_task, src))  # type: ignore[arg-type]
            return
        run.values.extend(values)
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def send_run(self, ts: TaskState | None, task: int, run: TupleRun) -> None:
        """Queue a TupleRun for a remote task: one wire entry for all its tuples."""
        self.send_remote(ts, task, run)  # type: ignore[arg-type]

    def flush_all(self, now: float | None = None) -> None:
        """Send every outbox that holds entries (``now`` None), or only those that have waited
        ``flush_interval`` since a call with ``now`` first saw them holding some."""
        interval = self.flush_interval
        if now is None or not interval:
            for key, out in self.outboxes.items():
                if out:
                    self.flush(key, out)
            return
        waiting = self.waiting_since
        for key, out in self.outboxes.items():
            if out:
                since = waiting.get(key)
                if since is None:
                    waiting[key] = now
                elif now - since >= interval:
                    self.flush(key, out)

    def pending(self) -> int:
        return len(self.inbox) + sum(len(o) for o in self.outboxes.values())

    def flush(self, key: Key, out: list[tuple[int, Any]]) -> None:
        batch = out[:]
        out.clear()
        self.waiting_since.pop(key, None)
        opened = self.open_of_key.get(key)
        if opened:
            opened.clear()
        entries = [[-task, t.task, t.src.stream, t.values,
                    0 if t.ids is None else t.ids, t.roots]
                   if t.__class__ is _Run else
                   [-task, t.task, t.src.stream, t.values, t.edge, t.roots]
                   for task, t in batch]
        self.send_entries(key, entries, batch)

    def send_entries(self, key: Key, entries: list[Any], batch: list[tuple[int, Tuple]]) -> None:
        conn = self.conns.get(key)
        try:
            if conn is None:
                conn = self.conns[key] = self.transport.connect(self.worker.topology_id, *key)
            payload = self.serializer.dumps(entries)
            conn.send([(0, payload)])
            self.sent_batches += 1
            self.sent_bytes += len(payload)
        except SquallError as exc:
            self.undeliverable(batch, f"sending to worker {key[0]}:{key[1]} failed: {exc}")

    def undeliverable(self, batch: list[tuple[int, Any]], why: str) -> None:
        """Fail tracked tuples back to their acker so the spouts replay them."""
        self.send_failures += 1
        count = sum(1 if t.__class__ is Tuple else len(t.values) for _, t in batch)
        if self.send_failures == 1 or self.send_failures % 1000 == 0:
            log.warning("%s; %d tuple(s) failed back for replay", why, count)
        worker = self.worker
        ackers = worker.acker_tasks
        failed: set[int] = set()
        for _, tup in batch:
            if tup.src.stream.startswith("__ack"):
                continue
            if tup.__class__ is _Run:
                for roots in tup.roots or ():
                    failed.update(roots or ())
            elif tup.roots:
                failed.update(tup.roots)
        for r in failed:        # a tree fails once, however many of its tuples were here
            task = ackers[r % len(ackers)]
            if task in worker.queues or task in self.outbox_of_task:
                worker.fail_tree(task, r)

    def broadcast_throttle(self, on: bool) -> None:
        self.broadcast_control("throttle", on)

    def broadcast_control(self, kind: str, value: Any) -> None:
        """Tell every other worker of the topology (not only those sent to so far) something
        about this one, in the six-element entry shape dispatch_inbox unpacks."""
        me = f"{self.worker.host}:{self.worker.port}"
        for key in list(self.outboxes):
            self.send_entries(key, [[CONTROL, kind, me, value, None, None]], [])

    # -- assignment ----------------------------------------------------------------------------
    def set_assignment(self, task_to_worker: dict[int, tuple[str, int]]) -> None:
        worker = self.worker
        me = (worker.host, worker.port)
        before = self.task_to_worker
        self.task_to_worker = {int(t): (str(h), int(p)) for t, (h, p) in task_to_worker.items()}
        # a task that moved is measured afresh by its new worker
        self.remote_load = {t: v for t, v in self.remote_load.items()
                            if self.task_to_worker.get(t) == before.get(t)}
        mine = set(worker.local_task_ids)
        keys = {w for t, w in self.task_to_worker.items() if t not in mine and w != me}
        for key in keys:
            self.outboxes.setdefault(key, [])
        self.outbox_of_task = {t: self.outboxes[w] for t, w in self.task_to_worker.items()
                               if w in keys and t not in mine}
        for key in keys:
            self.open_of_key.setdefault(key, {})
        self.open_of_task = {t: self.open_of_key[w] for t, w in self.task_to_worker.items()
                             if w in keys and t not in mine}
        for key in list(self.outboxes):
            if key not in keys:
                stale = self.outboxes.pop(key)
                self.open_of_key.pop(key, None)
                self.waiting_since.pop(key, None)
                self.undeliverable(stale, f"worker {key[0]}:{key[1]} is no longer assigned")
                conn = self.conns.pop(key, None)
                if conn is not None:
                    conn.close()
                self.remote_throttle.pop(f"{key[0]}:{key[1]}", None)

    def close(self) -> None:
        for conn in self.conns.values():
            try:
                conn.close()
            except Exception:
                log.debug("closing a connection failed", exc_info=True)
        self.conns.clear()
        if self.recv_conn is not None:
            self.recv_conn.close()
