"""The receiving side of :class:`squall.runtime.transfer.Transfer` (a mixin of it): the
receive thread that takes raw batches from the transport, and the loop's decoding of them
into the queues of this worker's tasks. The wire form is described in
:mod:`squall.runtime.transfer`. A batch that does not decode is logged and dropped; an entry
that does not check out is logged and dropped with the rest of its batch (a run is checked
whole before any of its tuples is delivered).
"""
from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple, TupleRun
from squall.errors import TransportError
from squall.runtime.load import parse_report

if TYPE_CHECKING:
    from squall.runtime.tasks import TaskState
    from squall.runtime.worker import Worker

log = logging.getLogger("squall.runtime.transfer")
CONTROL = 0          # destination "task" of worker-to-worker control entries
INBOX_LIMIT = 256    # received batches waiting for the loop before the receive thread pauses
DISPATCH_BATCHES = 32  # received batches the loop decodes per pass, so executors get turns
DISPATCH_TUPLES = 3200  # ... and tuples (runs hold many): backpressure is checked in between


def _roots(roots: Any) -> tuple[int, ...] | None:
    """A received roots entry as root ids (None: untracked); ValueError if it is not one."""
    if roots is None:
        return None
    if roots.__class__ in (list, tuple) and list(map(type, roots)).count(int) == len(roots):
        return tuple(roots)
    raise ValueError(f"roots {roots!r:.60} are not a list of ints")


def _id(tid: Any) -> int | None:
    """A received tuple id or run edge (None: untracked); ValueError if it is not an int."""
    if tid is None or tid.__class__ is int:
        return tid
    raise ValueError(f"id {tid!r:.60} is not an int")


class Inbound:
    worker: Worker
    transport: Any
    recv_conn: Any
    serializer: Any
    inbox: deque[Any]
    received_batches: int
    remote_throttle: dict[str, bool]
    remote_load: dict[int, float]

    if TYPE_CHECKING:       # the Transfer's, used here
        def send_remote(self, ts: TaskState | None, task: int, tup: Tuple) -> None: ...

        def send_run(self, ts: TaskState | None, task: int, run: TupleRun) -> None: ...

    # -- inbound -------------------------------------------------------------------------------
    def bind(self) -> int:
        worker = self.worker
        self.recv_conn = self.transport.bind(worker.topology_id, worker.port)
        return getattr(self.recv_conn, "port", worker.port) or worker.port

    def recv_loop(self) -> None:
        """The receive thread: waits on the transport, hands raw batches to the loop."""
        worker = self.worker
        conn = self.recv_conn
        while worker.running:
            try:
                msgs = conn.recv(timeout=0.1)
            except TransportError as exc:
                log.warning("receive failed on port %d: %s", worker.port, exc)
                continue
            except Exception:
                if not worker.running:
                    return
                log.exception("receive thread error on port %d", worker.port)
                continue
            if msgs:
                self.inbox.extend(payload for _, payload in msgs)
                self.received_batches += len(msgs)
                worker.wake()
                # bounded memory: stop taking from the transport while the loop is behind, so
                # its buffers (and then the senders') fill and backpressure reaches the spouts
                while len(self.inbox) >= INBOX_LIMIT and worker.running:
                    time.sleep(0.0005)

    def dispatch_inbox(self) -> None:
        inbox = self.inbox
        loads = self.serializer.loads
        worker = self.worker
        queues = worker.queues
        source = worker.source
        comp_of = worker.topology.task_to_component
        local_ackers = worker.local_ackers
        budget = DISPATCH_TUPLES
        for _ in range(min(len(inbox), DISPATCH_BATCHES)):
            if budget <= 0:
                break
            payload = inbox.popleft()
            try:
                entries = loads(payload)
                budget -= len(entries)
                for dest, src_task, stream, values, tid, roots in entries:
                    if dest <= CONTROL:
                        if dest == CONTROL:
                            self.control(src_task, stream, values)
                            continue
                        budget -= len(values) - 1
                        src = source(comp_of.get(src_task, "__system"), stream)
                        if tid.__class__ is list:       # by column
                            if tid and tid[0].__class__ is list:    # anchored runs
                                self._runs_arrived(-dest, src_task, src, values, tid, roots)
                            else:                                   # tracked tuples
                                self._tracked_arrived(-dest, src_task, src, values, tid,
                                                      roots)
                        elif roots is None and -dest in local_ackers:
                            worker.acker_values(local_ackers[-dest], src, values)
                        else:
                            self._run_arrived(-dest, TupleRun(
                                list(map(tuple, values)), src_task, src, _roots(roots),
                                _id(tid) or 0))
                        continue
                    roots = _roots(roots)
                    tid = _id(tid)
                    if roots and tid is None:
                        raise ValueError(f"a tuple for task {dest} with roots but no id")
                    tup = Tuple(tuple(values), src_task,
                                source(comp_of.get(src_task, "__system"), stream), tid, roots)
                    q = queues.get(dest)
                    if q is not None:
                        q.append(tup)
                    else:
                        self.send_remote(None, dest, tup)
            except Exception as exc:
                log.warning("worker %d dropped a malformed batch of %d bytes: %s", worker.port,
                            len(payload) if isinstance(payload, (bytes, bytearray)) else -1, exc)

    def _run_arrived(self, dest: int, run: TupleRun) -> None:
        lazy = self.worker.lazy_tasks.get(dest)
        if lazy is not None:
            lazy.queue.append(run)
            lazy.run_extra += len(run.values) - 1
            return
        q = self.worker.queues.get(dest)
        if q is not None:
            q.extend(run.tuples())
        else:
            self.send_run(None, dest, run)

    def _runs_arrived(self, dest: int, src_task: int, src: Any, values: list[Any],
                      pairs: list[Any], roots: list[Any]) -> None:
        """Anchored runs by column: each ``[edge, count]`` pair takes the next ``count``
        values; checked whole before any run is delivered."""
        if roots.__class__ is not list or len(pairs) != len(roots):
            raise ValueError(f"runs for task {dest}: {len(pairs)} runs, roots {roots!r:.60}")
        if roots[0].__class__ is int:
            raise ValueError(f"runs for task {dest}: the first run's roots refer back")
        total = 0
        for pair in pairs:
            if (pair.__class__ is not list or len(pair) != 2 or pair[0].__class__ is not int
                    or pair[1].__class__ is not int or pair[1] < 1):
                raise ValueError(f"runs for task {dest}: {pair!r:.60} is not [edge, count]")
            total += pair[1]
        if total != len(values):
            raise ValueError(f"runs for task {dest}: counts add up to {total}, "
                             f"{len(values)} values")
        vals = list(map(tuple, values))
        runs = []
        at = 0
        prev: tuple[int, ...] | None = None
        for (edge, n), r in zip(pairs, roots):
            if r.__class__ is not int:      # 0: the same roots as the run before
                if r.__class__ is list and len(r) == 1 and r[0].__class__ is int:
                    prev = (r[0],)          # one root: _roots' answer, without the call
                else:
                    prev = _roots(r)
            runs.append(TupleRun(vals[at:at + n], src_task, src, prev, edge))
            at += n
        lazy = self.worker.lazy_tasks.get(dest)
        if lazy is not None:                # every run to one lazy_batch task: queued at once
            lazy.queue.extend(runs)
            lazy.run_extra += len(vals) - len(runs)
            return
        for run in runs:
            self._run_arrived(dest, run)

    def _tracked_arrived(self, dest: int, src_task: int, src: Any, values: list[Any],
                         ids: list[Any], roots: list[Any]) -> None:
        if not len(values) == len(ids) == len(roots):
            raise ValueError(f"run for task {dest}: {len(values)} values, {len(ids)} ids, "
                             f"{len(roots)} roots")
        if roots and roots[0].__class__ is int:
            raise ValueError(f"run for task {dest}: the first tuple's roots refer back")
        if list(map(type, ids)).count(int) != len(ids):
            raise ValueError(f"run for task {dest}: an id that is not an int")
        tuples: list[Tuple] = []
        append = tuples.append
        new = object.__new__        # see Tuple: built without __init__
        prev: tuple[int, ...] | None = None
        for v, i, r in zip(values, ids, roots):
            if r.__class__ is not int:      # 0: the same roots as the tuple before
                if r.__class__ is list and len(r) == 1 and r[0].__class__ is int:
                    prev = (r[0],)          # as in _runs_arrived
                else:
                    prev = _roots(r)
            tup = new(Tuple)
            tup.values = tuple(v)
            tup.task = src_task
            tup.src = src
            tup.id = i
            tup.roots = prev
            tup.ackval = 0
            append(tup)
        q = self.worker.queues.get(dest)
        if q is not None:
            q.extend(tuples)
        else:
            for tup in tuples:
                self.send_remote(None, dest, tup)

    def control(self, kind: Any, who: Any, on: Any) -> None:
        if kind == "throttle":
            self.remote_throttle[str(who)] = bool(on)
        elif kind == "load":
            try:
                self.remote_load.update(parse_report(on))
            except ValueError as exc:
                log.warning("worker %d ignored a load report from %.60r: %s", self.worker.port,
                            who, exc)
