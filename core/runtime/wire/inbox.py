"""The receiving side: the receive thread that takes message batches from the transport, and
the loop's dispatch of them, by task id, into the queues of this worker's tasks.

A message for a task of this worker is decoded (:mod:`.codec`) and delivered; one for a task
it does not run is forwarded undecoded to the worker that does; a control message (task 0)
goes to the worker's control handler. A message that does not decode, or an entry that does
not check out, is logged and dropped with the rest of its message (an entry is checked whole
before any of its tuples is delivered).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.errors import TransportError
from squall.runtime.streams import SYSTEM, Sources
from squall.runtime.task import LocalTasks
from squall.runtime.wire import codec

if TYPE_CHECKING:
    from squall.runtime.acks import AckLedger
    from squall.runtime.wire.outbox import Outbox

log = logging.getLogger("squall.runtime.transfer")
INBOX_LIMIT = 256    # received messages waiting for the loop before the receive thread pauses
DISPATCH_MESSAGES = 32  # received messages the loop decodes per pass, so executors get turns
DISPATCH_TUPLES = 3200  # ... and tuples (runs hold many): backpressure is checked in between


class Inbox:
    """Messages received for this worker, waiting for the loop (``pending``), and their
    dispatch. ``control(kind, who, value)`` takes the control messages."""

    def __init__(self, *, tasks: LocalTasks, sources: Sources,
                 task_to_component: dict[int, str], acks: AckLedger, outbox: Outbox,
                 serializer: Any, control: Callable[[str, str, Any], None],
                 wake: Callable[[], None]) -> None:
        self.tasks = tasks
        self.sources = sources
        self.comp_of = task_to_component
        self.acks = acks
        self.outbox = outbox
        self.loads = serializer.loads
        self.control = control
        self.wake = wake
        self.pending: deque[tuple[int, bytes]] = deque()
        #: messages taken from the transport (complete_topology's quiet check)
        self.received_batches = 0
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
                pending.extend(msgs)
                self.received_batches += len(msgs)
                self.wake()
                # bounded memory: stop taking from the transport while the loop is behind, so
                # its buffers (and then the senders') fill and backpressure reaches the spouts
                while len(pending) >= INBOX_LIMIT and self._receiving:
                    time.sleep(0.0005)

    def close(self, timeout: float) -> None:
        """Stop receiving and close the bound connection."""
        self._receiving = False
        if self.conn is not None:
            self.conn.close()
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the loop's dispatch -------------------------------------------------------------------
    def dispatch(self) -> None:
        """Deliver up to DISPATCH_MESSAGES waiting messages (fewer once DISPATCH_TUPLES
        tuples were delivered)."""
        pending = self.pending
        budget = DISPATCH_TUPLES
        local = self.tasks.queues
        for _ in range(min(len(pending), DISPATCH_MESSAGES)):
            if budget <= 0:
                break
            task, payload = pending.popleft()
            try:
                if task in local:
                    budget -= self.deliver(task, codec.read_entries(self.loads(payload)))
                elif task == codec.CONTROL:
                    self.control(*codec.read_control(self.loads(payload)))
                elif not self.outbox.forward(task, payload):
                    self.outbox.undeliverable([(task, payload)],
                                              f"no worker is assigned task {task}")
            except Exception as exc:
                log.warning("worker %d dropped a malformed batch of %d bytes for task %r: %s",
                            self.port, len(payload) if isinstance(payload, (bytes, bytearray))
                            else -1, task, exc)

    def deliver(self, task: int, entries: list[list[Any]]) -> int:
        """Deliver one message's entries to ``task`` of this worker; returns the tuples."""
        ts = self.tasks.states[task]
        lazy = task in self.tasks.lazy
        q = ts.queue
        source = self.sources.get
        comp_of = self.comp_of
        n = 0
        for src_task, stream, values, ids, roots in entries:
            src = source(comp_of.get(src_task, SYSTEM), stream)
            n += len(values)
            if ids.__class__ is not list:                               # RUN
                if roots is None and task in self.acks.local:
                    self.acks.acker_values(ts, src, values)
                    continue
                run = codec.run_of(task, src_task, src, values, ids, roots)
                if lazy:
                    q.append(run)
                    ts.run_extra += len(run.values) - 1
                else:
                    q.extend(run.tuples())
            elif ids and ids[0].__class__ is list:                      # RUNS
                runs = codec.runs_of(task, src_task, src, values, ids, roots)
                if lazy:                    # every run to one lazy_batch task: queued at once
                    q.extend(runs)
                    ts.run_extra += len(values) - len(runs)
                else:
                    for run in runs:
                        q.extend(run.tuples())
            else:                                                       # ONES
                q.extend(codec.ones_of(task, src_task, src, values, ids, roots))
        return n
