"""ShellBolt: a bolt whose ``process`` runs in a subprocess speaking Storm's multi-lang
protocol.

Threads: the component's own thread (``dedicated_thread``) writes the tuples it takes, in
batches, to the subprocess; the subprocess's reader thread turns its ``emit``/``ack``/``fail``
into the bolt's emits, acks and fails (applied on the worker's loop in the order the
subprocess sent them); a heartbeat thread sends a heartbeat tuple every second or so and
kills a subprocess that has sent nothing for ``topology.subprocess.timeout.secs``.

Tuples written to a subprocess are *in flight* (by the string id the subprocess sees) until
it acks or fails them. When the subprocess dies or is killed, one error is reported, every
tuple in flight fails (so its spout replays it) and a new subprocess starts.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from squall.api.component import Bolt
from squall.api.context import TopologyContext
from squall.api.tuple import Tuple
from squall.errors import MultilangError
from squall.multilang.link import EMIT_ERRORS, ShellLink, code_root
from squall.multilang.process import RESTART_WAIT, ShellProcess
from squall.multilang.protocol import HEARTBEAT_STREAM, HEARTBEAT_TASK, tuple_message

log = logging.getLogger(__name__)
#: the most seconds between two heartbeat tuples
HEARTBEAT_SECS = 1.0
#: the ids of the tick tuples a subprocess gets begin with this (a tuple's id is a number):
#: an emit anchored to one (pystorm anchors what ``process_tick`` emits to the tick) is
#: anchored to nothing, as a tick is tracked by no spout
TICK_ID_PREFIX = "tick-"


class ShellBolt(Bolt):
    """A bolt run by a multi-lang subprocess (pystorm, streamparse components, storm.py, a
    Node or Ruby adapter, ...), one subprocess per task.

    >>> class Split(ShellBolt):
    ...     command = ["python3", "split.py"]
    ...     outputs = ["word"]

    ``command`` is an argv list run with the code package's folder as its working directory
    (the first word may be ``env``). The subprocess acks and fails its tuples itself;
    ``shell_metrics`` names the metrics it may update."""

    command: ClassVar[Sequence[str]] = ()
    shell_metrics: ClassVar[Sequence[str]] = ()
    dedicated_thread: ClassVar[bool] = True
    auto_ack: ClassVar[bool] = False
    auto_anchor: ClassVar[bool] = False
    auto_fail: ClassVar[bool] = False

    _link: ShellLink | None = None

    def shell_command(self, conf: Mapping[str, Any]) -> Sequence[str]:
        """The argv to run (``command`` unless a subclass works it out from ``conf``)."""
        return self.command

    def shell_cwd(self, conf: Mapping[str, Any]) -> str:
        """Where the command runs: the code package's folder (the folder above the module
        defining this class)."""
        return code_root(type(self))

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Launch the subprocess (its first tuples wait for its handshake's answer; a start
        that fails is reported and retried)."""
        self._lock = threading.Lock()
        self._inflight: dict[str, Tuple] = {}
        self._ids = itertools.count(1)
        self._tick_ids = itertools.count(1)
        self._stopping = threading.Event()
        self._link = ShellLink(conf, context, command=self.shell_command(conf),
                               cwd=self.shell_cwd(conf), metric_names=self.shell_metrics,
                               emit=lambda *a, **k: self.emit(*a, **k),
                               report=lambda e: self.report_error(e),
                               on_messages=self._on_messages, on_exit=self._on_exit)
        self._link.host.launch()
        self._heartbeats = threading.Thread(
            target=self._heartbeat, daemon=True,
            name=f"squall-shell-heartbeat-{context.component_id}-{context.task_id}")
        self._heartbeats.start()

    # -- the component's thread ----------------------------------------------------------------
    def process_batch(self, tuples: list[Tuple]) -> None:
        """Write ``tuples`` to the subprocess; fail them if none runs after RESTART_WAIT
        (and a tuple whose values cannot be encoded, with one error)."""
        link = self._link
        assert link is not None
        proc = link.host.ensure(wait=RESTART_WAIT)
        if proc is None:
            for tup in tuples:
                self.fail(tup)
            return
        encode = proc.codec.encode_tuple
        chunks = []
        ids = self._ids
        with self._lock:
            if not proc.alive:          # died since: its exit fails what it had
                for tup in tuples:
                    self.fail(tup)
                return
            inflight = self._inflight
            for tup in tuples:
                tid = str(next(ids))
                try:
                    chunks.append(encode(tid, tup.component, tup.stream, tup.task,
                                         tup.values))
                except (TypeError, ValueError, OverflowError) as exc:
                    self.report_error(MultilangError(
                        f"tuple {tup.values!r:.200} cannot be sent to the subprocess: {exc}"))
                    self.fail(tup)
                    continue
                inflight[tid] = tup
            proc.send(b"".join(chunks))
        proc.wait_room()

    def process_tick(self, tup: Tuple) -> None:
        """Tick tuples go to the subprocess too, with ids of their own (``tick-N``: it acks
        them and may anchor emits to them; nothing tracks them)."""
        link = self._link
        proc = link.host.ensure() if link is not None else None
        if proc is not None:
            proc.send(proc.codec.encode(tuple_message(
                f"{TICK_ID_PREFIX}{next(self._tick_ids)}", tup.component, tup.stream,
                tup.task, tup.values)))

    def cleanup(self) -> None:
        self._stopping.set()
        if self._link is not None:
            self._link.host.stop()

    # -- the reader thread -----------------------------------------------------------------------
    def _on_messages(self, proc: ShellProcess, messages: list[Any]) -> None:
        link = self._link
        assert link is not None
        inflight = self._inflight
        pop = inflight.pop
        ack, fail, emit = self.ack, self.fail, self.emit
        for message in messages:
            try:
                if message.__class__ is not dict:
                    link.logger.error("the subprocess sent %.200r, not a command", message)
                    continue
                command = message.get("command")
                if command == "ack":
                    tup = pop(str(message.get("id")), None)
                    if tup is not None:
                        ack(tup)
                elif command == "emit":
                    given = message.get("anchors") or []
                    if given.__class__ is not list:
                        raise TypeError(f"'anchors' must be a list of tuple ids, got {given!r}")
                    ids = [a for a in map(str, given) if a in inflight]
                    if len(ids) != len(given):
                        self._unknown_anchors(given)
                    anchors = [inflight[a] for a in ids]
                    if message.get("need_task_ids", True) is False and "task" not in message:
                        # the common emit, answered by nothing: straight to the bolt's emit
                        values = message.get("tuple")
                        try:
                            if values.__class__ is not list:
                                raise MultilangError(f"emit without a 'tuple' list: "
                                                     f"{message!r:.200}")
                            emit(values, message.get("stream"), anchors=anchors)
                            continue
                        except EMIT_ERRORS as exc:
                            link.emit_failed(message, exc)
                    elif link.answer_emit(proc, message, anchors, None):
                        continue
                    for a in ids:           # failed now: the subprocess's later ack finds nothing
                        tup = pop(a, None)
                        if tup is not None:
                            fail(tup)
                elif command == "fail":
                    tup = pop(str(message.get("id")), None)
                    if tup is not None:
                        fail(tup)
                elif command != "sync":     # sync: a heartbeat's answer (last_heard is updated)
                    link.common(message, command)
            except Exception as exc:     # a field of the wrong type: one error, go on
                link.malformed(proc, message, exc)

    def _unknown_anchors(self, given: list[Any]) -> None:
        """One error line for an emit anchored to ids no tuple in flight has (acked or
        failed already, or never sent): the emit goes on without them, so a failure
        downstream cannot replay through them (as squall's in-process pystorm bolts report
        it; the worker's error limit per interval applies). Tick ids are dropped silently."""
        unknown = ", ".join(repr(a) for a in map(str, given)
                            if a not in self._inflight and not a.startswith(TICK_ID_PREFIX))
        if not unknown:
            return
        self.report_error(f"MultilangError: an emit anchored to tuple id {unknown:.200}, which "
                          "names no tuple this bolt sent its subprocess and it has not acked "
                          "or failed yet; ignored")

    def _on_exit(self, proc: ShellProcess, reason: str) -> None:
        link = self._link
        assert link is not None
        if not link.host.died(proc):
            return                  # a subprocess that never became current (or stopped)
        with self._lock:
            lost, self._inflight = self._inflight, {}
        if not link.host.stopped:
            self.report_error(MultilangError(
                f"subprocess {link.host.argv} (pid {proc.pid}) {reason}; "
                f"{len(lost)} tuple(s) in flight failed; restarting it"))
        for tup in lost.values():
            self.fail(tup)
        if not link.host.stopped:
            link.host.ensure()

    # -- the heartbeat thread --------------------------------------------------------------------
    def _heartbeat(self) -> None:
        link = self._link
        assert link is not None
        timeout = link.timeout
        every = min(HEARTBEAT_SECS, timeout / 3)
        beat = None
        while not self._stopping.wait(every) and not link.host.stopped:
            proc = link.host.ensure()
            if proc is None:
                continue
            if time.monotonic() - proc.last_heard > timeout:
                proc.kill(f"answered no heartbeat for {timeout:g} s "
                          f"(topology.subprocess.timeout.secs){proc.unfinished()}")
                continue
            if beat is None or beat[0] is not proc.codec:
                beat = (proc.codec, proc.codec.encode(tuple_message(
                    "heartbeat", "__system", HEARTBEAT_STREAM, HEARTBEAT_TASK, ())))
            proc.send(beat[1])
