"""The sending side: tuples for tasks of other workers, batched per destination worker.

Tuples for a remote task join the open run (:class:`~.codec.OpenRun`) of that task in the
outbox of its worker; an outbox is encoded (one message per task, :func:`.codec.encode`) and
handed to the transport when a run is full, when the loop has nothing else to do, or once it
has waited ``topology.batch.flush.interval.millis`` (a busy loop's short passes would
otherwise send a small batch each; 0 sends at the end of every pass; unset, the interval
follows how many of the topology's workers share this host's cores: :func:`flush_interval`).
Anything that cannot be delivered fails back to the acker (``lost``) so the spouts replay it.
Everything runs on the worker's loop thread.

A transport that declares ``max_frame_bytes`` gets no batch over it: a larger one is sent as
several (:meth:`Outbox._send_bounded`), and a tuple that alone would not fit fails and is
reported like a value the serializer refuses.

Credits: the outbox counts what it sends to each remote task and keeps to what the task's
worker granted (:mod:`.credits`); a task sent up to its grant is *saturated*, and backpressure
blocks the executors that emit to it, as for a congested task. A worker that grants nothing
more for long while tasks of it are saturated is reported (:mod:`.stalls`).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from squall.api.tuple import Source, Tuple, TupleRun
from squall.errors import SerializationError, SquallError
from squall.runtime.wire import codec
from squall.runtime.wire.codec import OpenRun
from squall.runtime.wire.credits import Windows
from squall.runtime.wire.peers import LimitedLog
from squall.runtime.wire.refusals import Refusals, Report
from squall.runtime.wire.stalls import Stalls
from squall.transports.closing import close_all
from squall.transports.framing import HEADER

log = logging.getLogger("squall.runtime.transfer")
#: a run of single tuples for one remote task is sent once it holds this many batches' worth
#: (``topology.transfer.batch.size`` tuples each): runs are cheap to grow, sends are not
RUN_BATCHES = 10
Key = tuple[str, int]
#: what an outbox holds, in emit order: (task, open run or TupleRun or forwarded payload)
Item = tuple[int, Any]
#: the flush interval, in seconds, of a worker whose topology runs more workers on its host
#: than the host has cores, when ``topology.batch.flush.interval.millis`` is unset: there a
#: loop waits for a core anyway, and each pass's small batches cost a wake-up of the
#: receiver's threads each (eight workers on 2 cores, per-tuple word count with acking:
#: 4.975 -> 4.42 us CPU per word, 4 alternated pairs)
OVERSUBSCRIBED_FLUSH_SECS = 0.005
#: bytes a frame takes per message beyond its payload (task id and length)
MESSAGE_ROOM = 8


def flush_interval(millis: Any, workers_here: int, cores: int) -> float:
    """The outbox's flush interval in seconds: ``topology.batch.flush.interval.millis`` when
    set; unset (None), 0 while the topology's workers on this host (``workers_here``) are no
    more than its ``cores``, else :data:`OVERSUBSCRIBED_FLUSH_SECS`."""
    if millis is not None:
        return max(0.0, float(millis) / 1000.0)
    return OVERSUBSCRIBED_FLUSH_SECS if workers_here > max(1, cores) else 0.0


def _close(opened: dict[int, OpenRun], task: int) -> None:
    """Take ``task``'s open run of single tuples out of ``opened`` and clear its ``open`` (an
    emit path that kept it stops appending to it)."""
    run = opened.pop(task, None)
    if run is not None:
        run.open = False


def _close_all(opened: dict[int, OpenRun]) -> None:
    """:func:`_close` every run of ``opened``."""
    for run in opened.values():
        run.open = False
    opened.clear()


class Outbox:
    """Per destination worker: the runs waiting to be sent, and the connection.

    ``lost(roots)`` is called with the root ids of tracked tuples that could not be
    delivered (the worker fails their trees); ``unassigned(task, src_task, source)`` for a
    tuple sent to a task no worker runs, before it is failed back (a grouping may have
    chosen a task that is none of its targets); ``unencodable(source, error, count, field)``
    once per source and cause of a batch's tuples whose values the serializer refused or
    the transport cannot carry (:data:`.refusals.Report`; those runs are failed, the rest of
    the batch is sent); ``windows`` keeps what each remote task's worker granted (unlimited
    if None); ``stalls`` reports the workers that accept nothing (None: never reported)."""

    def __init__(self, *, transport: Any, serializer: Any, topology_id: str,
                 local_tasks: list[int], batch_size: int, flush_interval: float,
                 lost: Callable[[set[int]], None], capacity: int = 1 << 30,
                 windows: Windows | None = None, stalls: Stalls | None = None,
                 unencodable: Report = lambda src, exc, count, field: None,
                 unassigned: Callable[[int, int, Source], None] =
                 lambda task, src_task, src: None) -> None:
        self.transport = transport
        self.dumps = serializer.dumps
        self.loads = serializer.loads
        self.topology_id = topology_id
        self.local_tasks = set(local_tasks)
        self.batch_size = batch_size
        #: a run is sent once it holds this many tuples (else when the loop ends its pass);
        #: at most a quarter of a receive queue's ``capacity``, so the one entry a receiving
        #: queue may take beyond its high watermark keeps it under twice its capacity
        self.run_cap = min(RUN_BATCHES * batch_size, max(batch_size, capacity // 4))
        self.flush_interval = flush_interval
        self.lost = lost
        self.address: Key = ("", 0)
        self.task_to_worker: dict[int, Key] = {}
        self.outbox_of_task: dict[int, list[Item]] = {}
        self.outboxes: dict[Key, list[Item]] = {}
        # the run each remote task's tuples are being folded into, until its outbox is sent;
        # a run of anchored runs is kept under the key ``-task``, so the single-tuple paths,
        # which look up ``task``, never join it
        self.open_of_task: dict[int, dict[int, OpenRun]] = {}
        self.open_of_key: dict[Key, dict[int, OpenRun]] = {}
        self.conns: dict[Key, Any] = {}
        #: the largest batch the transport takes (its ``max_frame_bytes``; None: no limit)
        self.max_frame: int | None = getattr(transport, "max_frame_bytes", None)
        #: deliveries that failed (refusals the caller reported are not counted), and their
        #: warnings: one per reason (a worker sent to, ...) per minute
        self.send_failures = 0
        self.send_log = LimitedLog(log)
        #: task messages (one task's batch of entries each) handed to the transport, and their
        #: bytes (complete_topology's quiet check compares them with what others received)
        self.sent_batches = 0
        self.sent_bytes = 0
        #: outboxes holding entries: when flush_all first saw them so (loop clock)
        self.waiting_since: dict[Key, float] = {}
        #: per remote task: tuples sent, and what its worker granted (see .credits)
        self.windows = windows if windows is not None else Windows(1 << 62, lambda: None)
        #: the workers that accepted nothing for long while tuples waited for them (the loop
        #: watches while ``stalls.stuck`` holds any)
        self.stalls = stalls if stalls is not None else Stalls(float("inf"))
        self.unencodable = unencodable
        self.unassigned = unassigned

    def set_address(self, host: str, port: int) -> None:
        """Where this worker is reached (named in its control messages)."""
        self.address = (host, port)

    def reaches(self, task: int) -> bool:
        """Whether ``task`` runs in a worker this outbox sends to."""
        return task in self.outbox_of_task

    def peers(self) -> frozenset[Key]:
        return frozenset(self.outboxes)

    def is_peer(self, key: Key) -> bool:
        """Whether ``key`` is another worker of the assignment."""
        return key in self.outboxes

    # -- the emit paths' entry points -----------------------------------------------------------
    def send_tuple(self, task: int, tup: Tuple | TupleRun) -> None:
        """Queue a Tuple (or a TupleRun) for a remote task."""
        opened = self.open_of_task.get(task)
        if opened is None:
            self.unassigned(task, tup.task, tup.src)
            self.undeliverable([(task, tup)], f"no worker is assigned task {task}",
                               reason="unassigned")
            return
        run = opened.get(task)
        cls = tup.__class__
        if cls is not Tuple and tup.roots is not None:
            # a tracked TupleRun: its own entry (one edge for the whole run), order kept
            _close(opened, task)
            opened.pop(-task, None)
            out = self.outbox_of_task[task]
            out.append((task, tup))
            if len(out) >= self.batch_size:
                self.flush(self.task_to_worker[task], out)
            return
        if cls is not Tuple or (tup.id is None and tup.roots is None):   # type: ignore[union-attr]
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
            run.add_roots(tup.roots)
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def _open(self, opened: dict[int, OpenRun], task: int, src_task: int, src: Source,
              tracked: bool) -> OpenRun:
        """Start the run ``task``'s next tuples join, at the end of its outbox."""
        opened.pop(-task, None)         # anchored runs after these tuples start a new entry
        _close(opened, task)
        run = opened[task] = OpenRun(src_task, src, tracked)
        self.outbox_of_task[task].append((task, run))
        return run

    def send_values(self, task: int, values: tuple[Any, ...], src_task: int,
                    src: Source) -> OpenRun | None:
        """``send_tuple`` of an untracked tuple, without building it when it joins an open
        run (the common case: a bolt's emits to the same remote task). Returns the run it
        joined while that stays open (see :meth:`open_run`)."""
        opened = self.open_of_task.get(task)
        run = opened.get(task) if opened is not None else None
        if run is None or run.ids is not None or run.task != src_task or run.src is not src:
            self.send_tuple(task, Tuple(values, src_task, src))
            return self.open_run(task)
        run.values.append(values)
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])
            return None
        return run

    def send_tracked(self, task: int, values: tuple[Any, ...], src_task: int, src: Source,
                     tid: int, roots: tuple[int, ...]) -> None:
        """``send_tuple`` of a tracked tuple, without building it when it joins an open
        tracked run (a bolt's anchored emits to the same remote task)."""
        opened = self.open_of_task.get(task)
        run = opened.get(task) if opened is not None else None
        if run is None or run.ids is None or run.task != src_task or run.src is not src:
            self.send_tuple(task, Tuple(values, src_task, src, tid, roots))
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

    def open_run(self, task: int) -> OpenRun | None:
        """The run ``task``'s next single tuples join, if one is open.

        An untracked emit fast path keeps the run :meth:`send_values` returned and, while its
        ``open`` holds, appends its next values for ``task`` to ``run.values`` itself, calling
        :meth:`flush_task` once the run holds ``run_cap``: the outbox clears ``open``
        whenever another entry follows the run in ``task``'s outbox or the run is sent, so
        emit order and the run's source stay as if every tuple had come through here."""
        opened = self.open_of_task.get(task)
        return opened.get(task) if opened is not None else None

    def flush_task(self, task: int) -> None:
        """Send the outbox that holds ``task``'s tuples (its open run reached ``run_cap``)."""
        self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def send_anchored(self, task: int, values: list[Any], src_task: int, src: Source,
                      edge: int, roots: tuple[int, ...]) -> None:
        """Queue an anchored run (``values`` sharing ``roots`` and one ``edge``) for a remote
        task without building its TupleRun: consecutive ones from one source task and stream
        travel as one RUNS entry."""
        opened = self.open_of_task.get(task)
        if opened is None:
            self.send_tuple(task, TupleRun(values, src_task, src, roots, edge))
            return
        run = self._anchored(opened, task, src_task, src, False)
        run.values.extend(values)
        run.ids.append([edge, len(values)])         # type: ignore[union-attr]
        run.add_roots(roots)
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def send_trees(self, task: int, values: list[Any], src_task: int, src: Source,
                   ids: list[int], roots: list[int]) -> None:
        """Queue tuples of several trees (``ids[i]`` and ``roots[i]`` the edge and the one
        root of ``values[i]``) for a remote task without building their TupleRun: those of
        consecutive calls from one source task and stream travel as one TREES entry."""
        opened = self.open_of_task.get(task)
        if opened is None:
            self.send_tuple(task, TupleRun.by_tree(values, src_task, src, ids, roots))
            return
        run = self._anchored(opened, task, src_task, src, True)
        run.values.extend(values)
        run.ids.extend(ids)                         # type: ignore[union-attr]
        run.roots.extend(roots)                     # type: ignore[union-attr]
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def _anchored(self, opened: dict[int, OpenRun], task: int, src_task: int, src: Source,
                  by_tree: bool) -> OpenRun:
        """The open run of anchored runs (RUNS) or of tuples by tree (TREES) that ``task``'s
        next ones from ``src_task`` on ``src`` join: kept under ``-task``, started anew at
        the end of its outbox unless the last one is of that kind and source."""
        run = opened.get(-task)
        if run is None or run.task != src_task or run.src is not src or \
                run.by_tree is not by_tree:
            _close(opened, task)        # single tuples after it start a new entry
            run = opened[-task] = OpenRun(src_task, src, True, by_tree)
            self.outbox_of_task[task].append((task, run))
        return run

    def send_values_run(self, task: int, values: list[Any], src_task: int,
                        src: Source) -> None:
        """Queue an untracked run's values, without building its TupleRun when they join an
        open run (a bolt's consecutive ``emit_many`` calls to the same remote task)."""
        opened = self.open_of_task.get(task)
        run = opened.get(task) if opened is not None else None
        if run is None or run.ids is not None or run.task != src_task or run.src is not src:
            self.send_tuple(task, TupleRun(values, src_task, src))
            return
        run.values.extend(values)
        if len(run.values) >= self.run_cap:
            self.flush(self.task_to_worker[task], self.outbox_of_task[task])

    def forward(self, task: int, payload: bytes) -> bool:
        """Pass a received task message on, undecoded, to the worker that runs ``task`` now
        (after what this outbox holds for that worker); False if no worker does."""
        key = self.task_to_worker.get(task)
        out = self.outbox_of_task.get(task)
        if key is None or out is None:
            return False
        self.flush(key, out)
        self._send(key, [(task, payload)], [(task, payload)])
        return True

    # -- sending -----------------------------------------------------------------------------
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
        """Entries waiting in the outboxes."""
        return sum(len(o) for o in self.outboxes.values())

    def flush(self, key: Key, out: list[Item]) -> None:
        batch = out[:]
        out.clear()
        self.waiting_since.pop(key, None)
        opened = self.open_of_key.get(key)
        if opened:
            _close_all(opened)
        try:
            messages = codec.encode(batch, self.dumps)
        except Exception:   # SerializationError, or a serializer plugin's bug: find the runs
            batch = self._encodable(batch)
            messages = codec.encode(batch, self.dumps)
            if not messages:    # every run refused
                return
        limit = self.max_frame
        if limit is not None and HEADER.size + sum(
                MESSAGE_ROOM + len(p) for _, p in messages) > limit:
            batch = self._send_bounded(key, batch, messages, limit)
        else:
            self._send(key, messages, batch)
        sent_to = self.windows.sent_to
        now = time.monotonic()
        full = False
        for task, item in batch:
            # forwarded messages were counted by their first sender; the acks this worker's
            # tasks fold (source task 0, see AckLedger.flush) feed an acker directly, not a
            # queue, and their receiver could not tell whom to grant
            if item.__class__ is not bytes and item.task and sent_to(
                    task, 1 if item.__class__ is Tuple else len(item.values), now):
                full = True
        if full:
            self.windows.changed()

    def _encodable(self, batch: list[Item]) -> list[Item]:
        """The runs of ``batch`` the serializer accepts. The others' trees fail (their
        spouts decide on replay) and each cause of their refusal is reported once per
        source (:class:`.refusals.Refusals`: how many tuples, which field)."""
        good: list[Item] = []
        refused: list[Item] = []
        causes = Refusals(self.dumps, find_fields=True)
        dumps, entry = self.dumps, codec.entry
        for task, run in batch:
            try:
                dumps([entry(run)])
                good.append((task, run))
                continue
            except Exception:   # told apart piece by piece below
                pass
            for piece in codec.pieces(run):
                try:
                    dumps([entry(piece)])
                except Exception as exc:
                    refused.append((task, piece))
                    causes.add(piece, exc)
                else:
                    good.append((task, piece))
        causes.report(self.unencodable)
        self.undeliverable(refused, "values the serializer cannot encode", quiet=True)
        return good

    def _send_bounded(self, key: Key, batch: list[Item], messages: codec.Messages,
                      limit: int) -> list[Item]:
        """Send ``batch``, whose ``messages`` make a batch over the transport's ``limit``, as
        several batches under it, in order: a task's message that fits goes whole, a larger
        one is cut between its runs, a run that alone does not fit into the pieces of
        :func:`.codec.pieces` (a tuple; an anchored run, whose one edge cannot be cut), and
        the pieces are joined again into messages that fit. A piece that alone does not fit
        fails, reported once per source and cause (``unencodable``, with how many tuples).
        Returns what was handed to the transport (a rare path: the values are encoded again,
        run by run)."""
        room = limit - HEADER.size - MESSAGE_ROOM       # the most one payload may hold
        dumps, entry = self.dumps, codec.entry
        items_of: dict[int, list[Item]] = {}
        for item in batch:
            items_of.setdefault(item[0], []).append(item)
        parts: list[tuple[int, bytes, list[Item]]] = []     # messages that fit, in order
        refused: list[Item] = []
        causes = Refusals(dumps, find_fields=False)     # the tuple as a whole is too large
        for task, payload in messages:
            if len(payload) <= room:
                parts.append((task, payload, items_of[task]))
                continue
            units: list[tuple[Item, bytes]] = []        # runs that fit, and their payloads
            for _, run in items_of[task]:
                data = dumps([entry(run)])
                if len(data) <= room:
                    units.append(((task, run), data))
                    continue
                for piece in codec.pieces(run):
                    data = dumps([entry(piece)])
                    if len(data) <= room:
                        units.append(((task, piece), data))
                        continue
                    refused.append((task, piece))
                    causes.add(piece, SerializationError(
                        f"{_tuples(piece)} serialized to {len(data)} bytes, more than "
                        f"transport {getattr(self.transport, 'name', '?')!r} carries in "
                        f"one batch ({limit} bytes)"))
            parts.extend(self._joined(task, units, room))
        if refused:
            causes.report(self.unencodable)
            self.undeliverable(refused, "values the transport cannot carry", quiet=True)
        frame: codec.Messages = []
        items: list[Item] = []
        size = HEADER.size
        for task, payload, its in parts:
            if frame and size + MESSAGE_ROOM + len(payload) > limit:
                self._send(key, frame, items)
                frame, items, size = [], [], HEADER.size
            frame.append((task, payload))
            items.extend(its)
            size += MESSAGE_ROOM + len(payload)
        if frame:
            self._send(key, frame, items)
        return [item for _, _, its in parts for item in its]

    def _joined(self, task: int, units: list[tuple[Item, bytes]],
                room: int) -> list[tuple[int, bytes, list[Item]]]:
        """``task``'s runs (each with its payload alone, which fits in ``room``) as few
        messages as fit, in order: consecutive runs whose payloads add up to ``room`` at most
        are encoded again as one message (kept apart if that one turns out larger)."""
        out: list[tuple[int, bytes, list[Item]]] = []
        group: list[tuple[Item, bytes]] = []
        size = 0
        for unit in [*units, None]:
            if group and (unit is None or size + len(unit[1]) > room):
                data = group[0][1] if len(group) == 1 else \
                    self.dumps([codec.entry(item[1]) for item, _ in group])
                if len(data) <= room:
                    out.append((task, data, [item for item, _ in group]))
                else:
                    out.extend((task, d, [item]) for item, d in group)
                group, size = [], 0
            if unit is not None:
                group.append(unit)
                size += len(unit[1])
        return out

    def credit(self, who: Key, incarnation: str, grants: Any, now: float) -> None:
        """Worker ``who``'s grants (see :meth:`.credits.Windows.credit`)."""
        self.windows.credit(who, incarnation, grants, self.task_to_worker.get, now)

    def expire_windows(self, now: float) -> None:
        """Probe the saturated tasks of workers that have said nothing for a long while, and
        report the workers that have granted nothing for long while tuples wait for them
        (:mod:`.stalls`). Called with the loop's timers while a task is saturated or a
        reported worker still accepts nothing."""
        owner = self.task_to_worker.get
        self.windows.expire(now, owner)
        self.stalls.check(now, self.windows, owner, self.address)

    def send_control(self, key: Key, kind: str, value: Any) -> None:
        """Tell one worker something about this one."""
        who = f"{self.address[0]}:{self.address[1]}"
        self._send(key, codec.control(kind, who, value, self.dumps), [])

    def _send(self, key: Key, messages: codec.Messages, batch: list[Item]) -> None:
        conn = self.conns.get(key)
        try:
            if conn is None:
                conn = self.conns[key] = self.transport.connect(self.topology_id, *key)
            conn.send(messages)
            self.sent_batches += len(messages)
            self.sent_bytes += sum(len(p) for _, p in messages)
        except SquallError as exc:
            self.undeliverable(batch, f"sending to worker {key[0]}:{key[1]} failed: {exc}",
                               reason=("send", key))

    def undeliverable(self, batch: list[Item], why: str, quiet: bool = False,
                      reason: Any = None) -> None:
        """Fail the tracked tuples of ``batch`` back to their acker so the spouts replay
        them (a tree fails once, however many of its tuples were here). ``why`` is logged,
        once per ``reason`` (default: ``why`` itself) a minute, the failures held back in
        between counted in the next line; not at all when ``quiet``: the caller reported
        the cause already."""
        if not quiet:
            self.send_failures += 1
            count = sum(1 if t.__class__ is Tuple else
                        1 if t.__class__ is bytes else len(t.values) for _, t in batch)
            self.send_log.warning(why if reason is None else reason,
                                  "%s; %d tuple(s) failed back for replay", why, count)
        failed: set[int] = set()
        for _, item in batch:
            if item.__class__ is bytes:         # a forwarded message: read its roots
                try:
                    failed |= codec.roots_in(codec.read_entries(self.loads(item)))
                except (SquallError, ValueError):
                    pass
                continue
            if item.src.stream.startswith("__ack"):
                continue
            if item.__class__ is OpenRun:
                if item.by_tree:
                    failed.update(item.roots)
                    continue
                for roots in item.roots or ():
                    failed.update(roots or ())
            elif item.roots:
                failed.update(item.roots)
        if failed:
            self.lost(failed)

    def broadcast_control(self, kind: str, value: Any) -> None:
        """Tell every other worker of the topology (not only those sent to so far) something
        about this one."""
        who = f"{self.address[0]}:{self.address[1]}"
        for key in list(self.outboxes):
            self._send(key, codec.control(kind, who, value, self.dumps), [])

    # -- assignment ----------------------------------------------------------------------------
    def set_assignment(self, task_to_worker: dict[int, tuple[str, int]]) -> list[Key]:
        """Take a new task -> worker map; returns the workers no longer sent to (their
        waiting tuples failed back, their connections closed)."""
        me = self.address
        before = self.task_to_worker
        self.task_to_worker = {int(t): (str(h), int(p)) for t, (h, p) in task_to_worker.items()}
        for opened in self.open_of_key.values():    # a task's next tuples look it up anew
            _close_all(opened)
        mine = self.local_tasks
        keys = {w for t, w in self.task_to_worker.items() if t not in mine and w != me}
        for key in keys:
            self.outboxes.setdefault(key, [])
            self.open_of_key.setdefault(key, {})
        self.outbox_of_task = {t: self.outboxes[w] for t, w in self.task_to_worker.items()
                               if w in keys and t not in mine}
        self.open_of_task = {t: self.open_of_key[w] for t, w in self.task_to_worker.items()
                             if w in keys and t not in mine}
        self.windows.set_peers(len(keys))
        moved = [t for t in self.windows.sent if t not in self.outbox_of_task
                 or before.get(t) != self.task_to_worker.get(t)]
        if sum(self.windows.drop(t) for t in moved):
            self.windows.changed()
        gone = []
        for key in list(self.outboxes):
            if key not in keys:
                gone.append(key)
                stale = self.outboxes.pop(key)
                self.open_of_key.pop(key, None)
                self.waiting_since.pop(key, None)
                self.undeliverable(stale, f"worker {key[0]}:{key[1]} is no longer assigned",
                                   reason=("gone", key))
                self.stalls.forget(key, time.monotonic())
                conn = self.conns.pop(key, None)
                if conn is not None:
                    conn.close()
        return gone

    def close(self) -> None:
        conns = list(self.conns.values())
        self.conns.clear()
        close_all(conns)        # side by side: one linger for all slow peers, not one each


def _tuples(piece: OpenRun | TupleRun) -> str:
    """What a piece of a run holds, in words."""
    n = len(piece.values)
    return "a tuple" if n == 1 else f"a run of {n} tuples anchored together"
