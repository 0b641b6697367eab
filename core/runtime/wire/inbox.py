"""The receiving side: the receive thread that takes message batches from the transport, and
the loop's dispatch of them, by task id, into the queues of this worker's tasks.

A message for a task of this worker is decoded (:mod:`.codec`), checked whole
(:func:`.codec.check_entries`: source, stream subscribed by the task, arity, ids and roots)
and delivered; one for a task it does not run is forwarded undecoded to the worker that does;
a control message (task 0) goes to the worker's control handler. A message that does not
decode or check out is dropped whole (nothing of it is delivered): bytes from outside never
reach a component. One that decoded is logged once per sending worker per minute, and the
trees of its tuples fail at once; one that did not decode names no sender and no tree (both
are inside what did not decode): it is logged once per minute, and its trees fail when they
time out.

A task's queue is filled only up to ``room`` tuples (the backpressure high watermark): entries
for a task whose queue is that full wait here, in order, and are delivered as it drains, so a
queue holds at most ``room`` plus one entry (at most a run: see the outbox's run cap).
Backpressure counts what waits here as the task's (``held``). What arrives from each other
worker is counted for its credits (:mod:`.credits`): the inbox's :class:`~.credits.Grants`
grants each sender room as the task takes tuples.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.errors import TransportError
from squall.runtime import osthread
from squall.runtime.streams import SYSTEM, Sources
from squall.runtime.task import LocalTasks
from squall.runtime.wire import codec
from squall.runtime.wire.credits import Grants
from squall.runtime.wire.peers import LimitedLog

if TYPE_CHECKING:
    from squall.runtime.acks import AckLedger
    from squall.runtime.wire.outbox import Outbox

log = logging.getLogger("squall.runtime.transfer")
#: what a message that did not decode decoded to
_UNDECODED = object()
#: bytes of received messages waiting for the loop before the receive thread pauses (counted
#: in bytes, not messages: a message's size falls as the words spread over more workers)
INBOX_BYTES = 2 << 20
#: received messages the loop decodes in one pass (what the receive thread queued by then)
DISPATCH_MESSAGES = 64
#: tuples the loop delivers to queues in one pass (runs hold many), so executors get turns and
#: backpressure is checked in between; what is past it waits for the next pass
DISPATCH_TUPLES = 3200


class Inbox:
    """Messages received for this worker, waiting for the loop (``pending``), and their
    dispatch. ``control(kind, who, value)`` takes the control messages."""

    def __init__(self, *, tasks: LocalTasks, sources: Sources,
                 task_to_component: dict[int, str], acks: AckLedger, outbox: Outbox,
                 serializer: Any, control: Callable[[str, str, Any], None],
                 wake: Callable[[], None], room: int, incarnation: str,
                 accepts: dict[int, codec.Accepts] | None = None) -> None:
        self.tasks = tasks
        #: what each task of this worker takes from the wire (None: not checked, for tests
        #: that feed entries by hand)
        self.accepts = accepts
        self.sources = sources
        self.comp_of = task_to_component
        self.acks = acks
        self.outbox = outbox
        self.loads = serializer.loads
        self.control = control
        self.wake = wake
        self.pending: deque[tuple[int, bytes]] = deque()
        #: payload bytes put in ``pending`` (by the receive thread) and taken from it (by the
        #: loop); each has one writer, so their difference needs no lock
        self.received_bytes = 0
        self.taken_bytes = 0
        #: the receive thread waits for the loop to take what it received (INBOX_BYTES)
        self.receive_paused = False
        #: tuples a task's queue is filled up to before its entries wait (``waiting``)
        self.room = room
        #: entries waiting for their task's queue to drain, and their tuples, by task
        self.waiting: dict[int, deque[list[Any]]] = {}
        self.held: dict[int, int] = {}
        #: what arrived from each other worker, and what each was granted (its credits)
        self.grants = Grants(tasks, self.held, room, incarnation)
        #: messages taken from the transport (complete_topology's quiet check)
        self.received_batches = 0
        #: messages dropped because they did not decode or check out
        self.dropped = 0
        self.limited_log = LimitedLog(log)
        self.conn: Any = None
        self.port = 0
        self._receiving = False
        self._thread: threading.Thread | None = None

    # -- the receive thread ------------------------------------------------------------------
    def bind(self, transport: Any, topology_id: str, port: int) -> int:
        """Bind ``port`` (0: any) and start the receive thread; returns the port bound."""
        self.conn = transport.bind(topology_id, port)
        self.port = getattr(self.conn, "port", port) or port
        self._receiving = True
        self._thread = threading.Thread(target=self._receive, daemon=True,
                                        name=f"squall-recv-{self.port}")
        self._thread.start()
        return self.port

    def _receive(self) -> None:
        """Wait on the transport; hand what arrives to the loop."""
        osthread.set_name("squall-recv")
        conn = self.conn
        pending = self.pending
        while self._receiving:
            try:
                msgs = conn.recv(timeout=0.1)
            except TransportError as exc:
                log.warning("receive failed on port %d: %s", self.port, exc)
                continue
            except Exception:
                if not self._receiving:
                    return
                log.exception("receive thread error on port %d", self.port)
                continue
            if msgs:
                size = 0
                for _, payload in msgs:
                    size += len(payload)
                self.received_bytes += size
                pending.extend(msgs)
                self.received_batches += len(msgs)
                self.wake()
                # bounded memory: stop taking from the transport while the loop is behind, so
                # its buffers (and then the senders') fill and backpressure reaches the spouts
                if self.backlog() >= INBOX_BYTES:
                    self.receive_paused = True
                    while self.backlog() >= INBOX_BYTES and self._receiving:
                        time.sleep(0.0005)
                    self.receive_paused = False

    def backlog(self) -> int:
        """Bytes received and not yet taken by the loop."""
        return self.received_bytes - self.taken_bytes

    def close(self, timeout: float) -> None:
        """Stop receiving and close the bound connection."""
        self._receiving = False
        if self.conn is not None:
            self.conn.close()
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the loop's dispatch -------------------------------------------------------------------
    def dispatch(self) -> int:
        """Deliver what waited for queues that drained, then decode up to DISPATCH_MESSAGES
        received messages and deliver their entries (up to DISPATCH_TUPLES tuples in all; the
        rest wait); returns the tuples delivered."""
        done = self._release() if self.waiting else 0
        pending = self.pending
        budget = DISPATCH_TUPLES - done
        local = self.tasks.queues
        accepts = self.accepts
        check = codec.check_entries
        comp_of = self.comp_of
        arrive = self.grants.arrive
        # the messages taken are decoded whole, so backpressure sees at once what waits for
        # each task; past the pass's budget, entries wait
        taken = 0
        undecoded = _UNDECODED
        for _ in range(min(len(pending), DISPATCH_MESSAGES)):
            task, payload = pending.popleft()
            taken += len(payload)
            obj: Any = undecoded
            try:
                if task in local:
                    obj = self.loads(payload)
                    entries = codec.read_entries(obj)
                    if accepts is not None:
                        check(task, entries, accepts[task], comp_of, len(entries) > 1)
                    owner = self.outbox.task_to_worker.get
                    for entry in entries:
                        arrive(owner(entry[0]), task, entry[2][0])
                    if budget > 0:
                        n = self._offer(task, entries)
                        budget -= n
                        done += n
                    else:
                        self._wait(task, entries)
                elif task == codec.CONTROL:
                    obj = self.loads(payload)
                    self.control(*codec.read_control(obj))
                elif not self.outbox.forward(task, payload):
                    self.outbox.undeliverable([(task, payload)],
                                              f"no worker is assigned task {task}",
                                              reason="unassigned")
            except Exception as exc:
                self._malformed(task, len(payload), obj, exc)
        self.taken_bytes += taken
        return done

    def _malformed(self, task: Any, size: int, obj: Any, exc: Exception) -> None:
        """A message of ``size`` bytes for ``task`` that did not decode (``obj`` is
        _UNDECODED) or check out: dropped whole. One that decoded is logged once per sending
        worker (as its first entry names it) per minute, and the trees its entries name fail
        at once (nothing of it was delivered); one that did not is logged once a minute,
        with the serializer's error: the serializer cannot read what its peer wrote (a
        decoder of ``topology.serializer.register`` that raises, a serializer plugin's bug)
        or the bytes are not a worker's. Its source and roots are inside what did not
        decode, so its trees fail only when they time out."""
        self.dropped += 1
        where = f"task {task!r:.20}" if task == codec.CONTROL or task not in self.comp_of \
            else f"task {task} ({self.comp_of[task]})"
        if obj is _UNDECODED and (task == codec.CONTROL or task in self.tasks.queues):
            self.limited_log.warning(
                ("undecodable",), "worker %d cannot decode a message of %d bytes for %s; it "
                "is dropped whole and the trees of its tuples fail when they time out: %s",
                self.port, size, where, exc)
            return
        entries = [e for e in obj if e.__class__ is list and len(e) == 5] \
            if obj.__class__ is list and task != codec.CONTROL else []     # (or not decoded)
        sender: Any = self.outbox.task_to_worker.get(entries[0][0]) if entries and \
            entries[0][0].__class__ is int and self.outbox is not None else None
        self.limited_log.warning(
            ("malformed", sender), "worker %d dropped a malformed batch of %d bytes for %s "
            "(sender %s): %s", self.port, size, where,
            "unknown" if sender is None else f"{sender[0]}:{sender[1]}", exc)
        roots = codec.roots_in(entries)
        if roots and self.acks is not None:
            self.acks.fail_lost(roots)

    def _offer(self, task: int, entries: list[list[Any]]) -> int:
        """Deliver ``entries`` while ``task``'s queue has room; the rest wait, in order.
        Returns the tuples delivered."""
        ts = self.tasks.states[task]
        waiting = self.waiting.get(task)
        if waiting is None and len(ts.queue) + ts.run_extra < self.room:
            if len(entries) == 1:       # the common case: one run per message
                return self.deliver(task, entries)
            done = 0
            for i, entry in enumerate(entries):
                if len(ts.queue) + ts.run_extra >= self.room:
                    self._wait(task, entries[i:])
                    break
                done += self.deliver(task, [entry])
            return done
        self._wait(task, entries)
        return 0

    def _wait(self, task: int, entries: list[list[Any]]) -> None:
        waiting = self.waiting.get(task)
        if waiting is None:
            waiting = self.waiting[task] = deque()
        waiting.extend(entries)
        self.held[task] = self.held.get(task, 0) + sum(e[2][0] for e in entries)

    def _release(self) -> int:
        """Deliver waiting entries to the queues that have room again."""
        done = 0
        states = self.tasks.states
        room = self.room
        for task in list(self.waiting):
            ts = states[task]
            waiting = self.waiting[task]
            while waiting and len(ts.queue) + ts.run_extra < room:
                entry = waiting.popleft()
                self.held[task] -= entry[2][0]
                try:
                    done += self.deliver(task, [entry])
                except Exception as exc:
                    self._malformed(task, -1, [entry], exc)
            if not waiting:
                del self.waiting[task]
                del self.held[task]
        return done

    def held_total(self) -> int:
        """Tuples waiting here for their tasks' queues."""
        return sum(self.held.values())

    def deliver(self, task: int, entries: list[list[Any]]) -> int:
        """Deliver entries to ``task`` of this worker, whatever its queue holds; returns the
        tuples. Each entry is built whole before it is queued and counted, so one that does
        not build (ValueError) leaves nothing of itself delivered; a message of several
        entries was checked deep by :meth:`dispatch` first, so none of them fails midway."""
        ts = self.tasks.states[task]
        lazy = task in self.tasks.lazy
        q = ts.queue
        source = self.sources.get
        comp_of = self.comp_of
        n = 0
        for src_task, stream, block, ids, roots in entries:
            count = block[0]
            if not count:
                continue
            src = source(comp_of.get(src_task, SYSTEM), stream)
            if ids.__class__ is not list:                               # RUN
                if roots is None and task in self.acks.local:
                    self.acks.acker_values(ts, src, codec.rows(block))
                else:
                    run = codec.run_of(src_task, src, block, ids, roots)
                    if lazy:
                        q.append(run)
                        ts.run_extra += count - 1
                    else:
                        q.extend(run.tuples())
            elif ids and ids[0].__class__ is list:                      # RUNS
                runs = codec.runs_of(task, src_task, src, block, ids, roots)
                if lazy:                    # every run to one lazy_batch task: queued at once
                    q.extend(runs)
                    ts.run_extra += count - len(runs)
                else:
                    for run in runs:
                        q.extend(run.tuples())
            elif roots.__class__ is list and roots and roots[0].__class__ is int:   # TREES
                run = codec.trees_of(task, src_task, src, block, ids, roots)
                if lazy:
                    q.append(run)
                    ts.run_extra += count - 1
                else:
                    q.extend(run.tuples())
            else:                                                       # ONES
                q.extend(codec.ones_of(task, src_task, src, block, ids, roots))
            n += count
        return n
