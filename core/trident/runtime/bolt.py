"""``TridentBolt``: one bolt of a compiled Trident topology (see :mod:`..compile`).

A task collects a batch's pieces: one per upstream task and input stream, or the ``$batch``
tuple from the coordinator for a source bolt. When it has them all it runs its operations
once over the batch (:mod:`.evaluate`), sends one piece to every task of every downstream bolt
(anchored to the pieces it got, so the batch's tuple tree completes only when every bolt is
done with it) and acks its inputs. A committer (a bolt with a ``persist`` node) keeps what it
will write until the coordinator's ``$commit`` for that txid and attempt arrives, then writes
and acks it; a commit it cannot honour (its batch was lost with a restart, or replaced by a
newer attempt) is failed, and the coordinator replays the txid.

An exception in an operation fails the batch: the task fails the pieces it holds and every
later piece of that attempt, and reports the error once. Pieces of an attempt older than the
newest seen for a txid are failed at once. Runs on the worker's loop thread.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from squall.api.component import Bolt
from squall.api.groupings import fields_hash
from squall.api.tuple import Stream, Tuple
from squall.serializers.types import ValueTypes
from squall.trident.keys import equal_as_routed
from squall.trident.runtime.evaluate import Evaluator, Rows, batch_task, projector
from squall.trident.runtime.repeats import RepeatedWarning
from squall.trident.runtime.sources import deliver, make_source

log = logging.getLogger(__name__)

PIECE_FIELDS = ["txid", "attempt", "rows", "meta"]


class _Batch:
    """One txid's attempt in one task."""

    __slots__ = ("attempt", "commit_tup", "failed", "held", "meta", "prepared", "processed",
                 "received", "rows", "slots")

    def __init__(self, attempt: int) -> None:
        self.attempt = attempt
        self.held: list[Tuple] = []
        self.slots: dict[int, list[Rows]] = {}
        self.rows: dict[int, Rows] = {}
        self.prepared: dict[int, Any] = {}
        self.meta: dict[str, Any] = {}
        self.received = 0
        self.failed = False
        self.processed = False
        self.commit_tup: Tuple | None = None


class _Output:
    __slots__ = ("how", "key", "node", "post", "stream", "targets", "types")

    def __init__(self, d: Mapping[str, Any], targets: list[int], post: bool,
                 types: ValueTypes) -> None:
        self.stream: str = d["stream"]
        self.node: int = d["node"]
        self.how: str = d["how"]
        self.key = projector(d["index"])
        self.targets = targets
        self.post = post
        self.types = types          # the topology's registered types hash as they travel

    def split(self, rows: Rows, txid: int) -> list[Rows]:
        """The rows for each target task, in ``targets`` order."""
        n = len(self.targets)
        if n == 1 or self.how == "broadcast":
            return [rows] * n
        if self.how == "global":
            return [rows] + [[] for _ in range(n - 1)]
        if self.how == "batch_global":
            task = batch_task(txid, n)
            return [rows if i == task else [] for i in range(n)]
        if self.how == "fields":
            parts: list[Rows] = [[] for _ in range(n)]
            types = self.types
            keys = list(map(self.key, rows))
            if equal_as_routed(keys):         # (not 1 and True, or NaNs, say)
                target: dict[Any, Rows] = {}  # keys repeat within a batch: hash each once
                for k, r in zip(keys, rows):
                    try:
                        part = target[k]
                    except KeyError:
                        part = target[k] = parts[fields_hash(k, types) % n]
                    part.append(r)
            else:
                for k, r in zip(keys, rows):
                    parts[fields_hash(k, types) % n].append(r)
            return parts
        return [rows[i::n] for i in range(n)]


class TridentBolt(Bolt):
    auto_ack = False
    auto_anchor = False
    auto_fail = False

    @classmethod
    def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
        plan = config.get("trident.plan") or {}
        return [Stream(PIECE_FIELDS, name=o["stream"], direct=True)
                for o in plan.get("outputs", [])]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        plan = conf["trident.plan"]
        nodes = {n["id"]: n for n in plan["nodes"]}
        self.sources = {nid: make_source(nodes[nid]) for nid in plan["sources"]}
        self.names = {nid: nodes[nid]["params"]["name"] for nid in plan["sources"]}
        for source in self.sources.values():
            source.open(conf, context)
        self.inputs: dict[str, dict[str, Any]] = plan["inputs"]
        self.expected = 1 if self.sources else sum(
            len(context.component_tasks(i["component"])) for i in self.inputs.values())
        self.late: bool = plan["late"]
        self.committer: bool = plan["committer"]
        self.evaluator = Evaluator(plan["nodes"], deliver)
        post = {n.id for n in self.evaluator.post}
        types = ValueTypes(conf)
        self.outputs = [_Output(o, context.component_tasks(o["component"]), o["node"] in post,
                                types) for o in plan["outputs"]]
        self.evaluator.prepare(conf, context)
        self.batches: dict[int, _Batch] = {}
        #: the warnings of failed batches and commits (a batch failing every try repeats them)
        self.retries = RepeatedWarning(
            log, float(conf.get("topology.error.throttle.interval.secs", 10)))

    def cleanup(self) -> None:
        self.evaluator.cleanup()
        for source in self.sources.values():
            source.close()

    def process(self, tup: Tuple) -> None:
        stream = tup.stream
        if stream == "$batch":
            self._on_batch(tup)
        elif stream == "$commit":
            self._on_commit(tup)
        elif stream == "$success":
            self._on_success(tup)
        else:
            self._on_piece(tup)

    # -- batches -----------------------------------------------------------------------------
    def _batch_for(self, txid: int, attempt: int) -> _Batch | None:
        """This attempt's batch record (a newer attempt replaces an older one); ``None`` for
        an attempt older than the newest seen."""
        b = self.batches.get(txid)
        if b is not None:
            if attempt < b.attempt:
                return None
            if attempt > b.attempt:
                self._drop(b)
                b = None
        if b is None:
            b = self.batches[txid] = _Batch(attempt)
        return b

    def _drop(self, b: _Batch) -> None:
        for t in b.held:
            self.fail(t)
        b.held = []
        if b.commit_tup is not None:
            self.fail(b.commit_tup)
            b.commit_tup = None

    def _on_batch(self, tup: Tuple) -> None:
        txid, attempt, info = tup.values
        b = self._batch_for(txid, attempt)
        if b is None:
            self.fail(tup)
            return
        b.held.append(tup)
        try:
            for nid, source in self.sources.items():
                b.rows[nid], meta = source.rows_for(txid, info.get(self.names[nid]))
                b.meta.update(meta)
        except Exception as exc:
            self._failed(txid, b, exc)
            return
        b.received = 1
        self._finish(txid, b)

    def _on_piece(self, tup: Tuple) -> None:
        inp = self.inputs.get(tup.stream)
        if inp is None:
            self.ack(tup)
            return
        txid, attempt, rows, meta = tup.values
        b = self._batch_for(txid, attempt)
        if b is None or b.failed:
            self.fail(tup)
            return
        if rows and type(rows[0]) is not tuple:     # lists, when it crossed workers
            rows = [tuple(r) for r in rows]
        slots = b.slots.get(inp["node"])
        if slots is None:
            slots = b.slots[inp["node"]] = [[] for _ in range(inp["slots"])]
        slots[inp["slot"]].extend(rows)
        if meta:
            b.meta.update(meta)
        if self.late and not inp["phase"]:
            self.ack(tup)               # its batch completes before the commit we wait for
        else:
            b.held.append(tup)
        b.received += 1
        if b.received == self.expected:
            self._finish(txid, b)

    def _finish(self, txid: int, b: _Batch) -> None:
        try:
            self.evaluator.process(b.rows, b.slots, txid, b.meta, b.prepared)
            self._emit(txid, b, False, b.held)
        except Exception as exc:
            self._failed(txid, b, exc)
            return
        for t in b.held:
            self.ack(t)
        b.held = []
        b.slots = {}
        b.processed = True
        if not self.committer:
            del self.batches[txid]
            return
        b.rows = {}
        if b.commit_tup is not None:
            self._commit(txid, b, b.commit_tup)

    def _failed(self, txid: int, b: _Batch, exc: Exception) -> None:
        self.retries.warning("trident %s: batch txid %d failed (it will be replayed): %r",
                             self.context.component_id, txid, exc)
        self.report_error(exc)
        b.failed = True
        self._drop(b)

    def _emit(self, txid: int, b: _Batch, post: bool, anchors: list[Tuple]) -> None:
        emit, meta, attempt = self.emit, b.meta, b.attempt
        for out in self.outputs:
            if out.post is not post:
                continue
            for task, part in zip(out.targets, out.split(b.rows.get(out.node, []), txid)):
                emit([txid, attempt, part, meta], out.stream, anchors=anchors, direct_task=task)

    # -- commits -----------------------------------------------------------------------------
    def _on_commit(self, tup: Tuple) -> None:
        txid, attempt = tup.values[0], tup.values[1]
        try:
            for source in self.sources.values():
                source.committed(txid)
        except Exception as exc:    # e.g. the state store is unreachable: replay the txid
            self.retries.warning("trident %s: recording the commit of txid %d failed: %r",
                                 self.context.component_id, txid, exc)
            self.report_error(exc)
            self.fail(tup)
            return
        if not self.committer:
            self.ack(tup)
            return
        b = self.batches.get(txid)
        if self.late and (b is None or b.attempt < attempt):
            # its pieces are made by this commit: a record left by an older attempt (one
            # that failed) gives way, or every later attempt would fail here for ever
            b = self._batch_for(txid, attempt)
        if b is None or b.attempt != attempt or b.failed:
            self.fail(tup)          # lost with a restart, or another attempt: replay the txid
            return
        if not b.processed:
            b.commit_tup = tup
            return
        self._commit(txid, b, tup)

    def _on_success(self, tup: Tuple) -> None:
        """Every committer wrote ``txid``: the sources may forget it."""
        txid = tup.values[0]
        try:
            for source in self.sources.values():
                source.succeeded(txid)
        except Exception as exc:
            log.warning("trident %s: the spout's success of txid %d raised: %r",
                        self.context.component_id, txid, exc)
            self.report_error(exc)
        self.ack(tup)

    def _commit(self, txid: int, b: _Batch, tup: Tuple) -> None:
        b.commit_tup = None
        del self.batches[txid]
        try:
            self.evaluator.commit(b.rows, b.prepared, txid, b.meta)
            self._emit(txid, b, True, [tup])
        except Exception as exc:
            self.retries.warning("trident %s: commit of txid %d failed (it will be "
                                 "replayed): %r", self.context.component_id, txid, exc)
            self.report_error(exc)
            self.fail(tup)
            return
        self.ack(tup)
        for stale in [t for t in self.batches if t < txid]:
            self._drop(self.batches.pop(stale))
