"""Where a source bolt's batches come from: a batch spout, or DRPC requests.

``rows_for(txid, info)`` gives the batch's rows and metadata (``info``: what the spout's
coordinator said for this txid, for partitioned spouts); a replay of a txid gets the same rows
from a transactional source (a DRPC request stays bound to its txid until it commits).
``committed(txid)`` is called when the txid's commit starts (a partitioned spout records its
batch's metadata in it), ``succeeded(txid)`` once every committer wrote it (``$success``):
only then does a batch spout's ``ack`` or an emitter's ``success`` run, so a commit that fails
and is replayed still finds its batch. Run on the worker's loop thread.
"""
from __future__ import annotations

import logging
from typing import Any

from squall.drpc import local as local_drpc
from squall.drpc.client import Invocations, fail_request, respond, server_addresses
from squall.trident import plan
from squall.trident.runtime.evaluate import Rows, result_json
from squall.trident.runtime.meta import MetaStore
from squall.trident.tuple import TridentCollector

log = logging.getLogger(__name__)


class SpoutSource:
    def __init__(self, node: dict[str, Any]) -> None:
        self.spout = plan.from_json(node["op"])
        #: txids whose commit started and whose success has not come yet
        self.committing: set[int] = set()

    def open(self, conf: dict[str, Any], context: Any) -> None:
        self.spout.open(conf, context)

    def rows_for(self, txid: int, info: Any) -> tuple[Rows, dict[str, Any]]:
        collector = TridentCollector()
        self.spout.emit_batch(txid, collector)
        return collector.out, {}

    def committed(self, txid: int) -> None:
        self.committing.add(txid)

    def succeeded(self, txid: int) -> None:
        # a success lost on its way (untracked) is made up for by the next one: commits
        # happen in txid order
        for t in sorted(t for t in self.committing if t <= txid):
            self.committing.discard(t)
            self.spout.ack(t)

    def close(self) -> None:
        self.spout.close()


#: tries of a DRPC request's batch: when they all failed, the request fails (its caller gets a
#: DRPCError at once) and the txid takes the next request
DRPC_TRIES = 3


class DRPCSource:
    """One waiting request per batch (none: an empty batch), from a LocalDRPC of this
    process (``service``) or from the cluster's DRPC servers (``drpc.servers``). A request
    stays bound to its txid while the batch is replayed, up to :data:`DRPC_TRIES` tries.

    From the servers it holds no more requests than its batches can start
    (``topology.max.spout.pending``), and only while batches start: when none has for a while
    (the topology is deactivated), or when it closes, it gives them back to the servers for
    another topology to serve (see :class:`~squall.drpc.client.Invocations`)."""

    def __init__(self, node: dict[str, Any]) -> None:
        self.function: str = node["params"]["function"]
        self.service: str | None = node["params"]["service"]
        self.requests: dict[int, tuple[list[str], str]] = {}
        #: txid -> the tries of its request's batch so far
        self.tries: dict[int, int] = {}
        self.remote: Invocations | None = None

    def open(self, conf: dict[str, Any], context: Any) -> None:
        if self.service is None:
            if not server_addresses(conf):
                log.warning("DRPC stream %r: no DRPC server to fetch requests from (set "
                            "drpc.servers); it serves none", self.function)
                return
            # a batch takes one request: hold what the batches in flight can start next, and
            # call the task idle after a few batch intervals without one starting
            interval = float(conf.get("topology.trident.batch.emit.interval.millis") or 0)
            self.remote = Invocations(
                conf, self.function,
                capacity=max(1, int(conf.get("topology.max.spout.pending") or 1)),
                idle=max(Invocations.IDLE_SECS, 5 * interval / 1000.0))

    def _take(self) -> tuple[list[str], str] | None:
        """``(where to answer, args)`` of the next request, or ``None``."""
        if self.remote is not None:
            got = self.remote.take()
            return None if got is None else (["remote", got[0], got[1]], got[2])
        if self.service is None:
            return None
        drpc = local_drpc.lookup(self.service)
        request = drpc.take(self.function) if drpc is not None else None
        return None if request is None else (["local", self.service, request[0]], request[1])

    def rows_for(self, txid: int, info: Any) -> tuple[Rows, dict[str, Any]]:
        request = self.requests.get(txid)
        if request is not None:
            self.tries[txid] += 1
            if self.tries[txid] > DRPC_TRIES:
                self._fail(txid, request)
                request = None
        if request is None:
            request = self._take()
            if request is None:
                return [], {}
            self.requests[txid] = request
            self.tries[txid] = 1
        return [(request[1],)], {"drpc": request[0]}

    def _fail(self, txid: int, request: tuple[list[str], str]) -> None:
        del self.requests[txid]
        del self.tries[txid]
        reason = f"its batch failed {DRPC_TRIES} times (the topology's errors say why)"
        log.warning("DRPC %s(%r): %s; failing it", self.function, request[1], reason)
        kind, where, request_id = request[0]
        if kind == "remote":
            fail_request(where, request_id, reason)
            if self.remote is not None:
                self.remote.finished(where, request_id)
            return
        drpc = local_drpc.lookup(where)
        if drpc is not None:
            drpc.fail(request_id, reason)

    def committed(self, txid: int) -> None:
        pass

    def succeeded(self, txid: int) -> None:
        for t in [t for t in self.requests if t <= txid]:
            kind, where, request_id = self.requests.pop(t)[0]
            del self.tries[t]
            if kind == "remote" and self.remote is not None:
                self.remote.finished(where, request_id)

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()


class PartitionedSource:
    """A transactional or opaque partitioned spout's emitter on this task's partitions.

    Per partition, the cluster state store keeps (under ``/trident/<topology>/spouts/<stream>/
    <partition id>``):

    - transactional: ``{txid: metadata}`` of the batches not yet superseded by a commit, so a
      replayed txid re-emits exactly its batch, and a new one starts after the previous;
    - opaque: ``{"txid", "meta", "prev"}``, the last committed batch's metadata (and the one
      before it, for a replay of that same txid after a crash between commit and record).
      A batch starts after the batch before it while that one is in flight in this task
      (a failed txid restarts every later one, so the chain is re-emitted in order).
    """

    def __init__(self, node: dict[str, Any]) -> None:
        self.name: str = node["params"]["name"]
        self.spout = plan.from_json(node["op"])
        self.transactional = self.spout.kind == "transactional"
        self.owned: list[Any] = []
        #: txid -> {partition id: metadata} emitted and not committed yet (opaque)
        self.pending: dict[int, dict[str, Any]] = {}

    def open(self, conf: dict[str, Any], context: Any) -> None:
        self.emitter = self.spout.get_emitter(conf, context)
        self.index, self.tasks = context.task_index, len(
            context.component_tasks(context.component_id))
        self.store = MetaStore(conf, f"/trident/{context.topology_name}/spouts/{self.name}")

    def _mine(self, info: Any) -> list[Any]:
        ordered = self.emitter.get_ordered_partitions(info)
        mine = ordered[self.index::self.tasks]
        if mine != self.owned:
            self.owned = mine
            self.emitter.refresh_partitions(mine)
        return mine

    def rows_for(self, txid: int, info: Any) -> tuple[Rows, dict[str, Any]]:
        collector = TridentCollector()
        emitter = self.emitter
        for partition in self._mine(info):
            pid = emitter.partition_id(partition)
            saved = self.store.get(pid)
            if self.transactional:
                metas: dict[str, Any] = saved or {}
                if str(txid) in metas:
                    emitter.emit_partition_batch(txid, collector, partition, metas[str(txid)])
                    continue
                before = [int(t) for t in metas if int(t) < txid]
                last = metas[str(max(before))] if before else None
                meta = emitter.emit_partition_batch_new(txid, collector, partition, last)
                metas[str(txid)] = meta
                self.store.put(pid, metas)      # before its rows leave this task
            else:
                # after the batch before it: still in flight here, else the last committed
                before = [t for t in self.pending if t < txid and pid in self.pending[t]]
                if before:
                    last = self.pending[max(before)][pid]
                elif saved is not None:
                    last = saved["meta"] if saved["txid"] < txid else saved["prev"]
                else:
                    last = None
                meta = emitter.emit_partition_batch(txid, collector, partition, last)
                self.pending.setdefault(txid, {})[pid] = meta
        return collector.out, {}

    def committed(self, txid: int) -> None:
        if self.transactional:
            for partition in self.owned:
                pid = self.emitter.partition_id(partition)
                metas = self.store.get(pid) or {}
                kept = {t: m for t, m in metas.items() if int(t) >= txid}
                if kept != metas:
                    self.store.put(pid, kept)
        else:
            for pid, meta in (self.pending.pop(txid, None) or {}).items():
                saved = self.store.get(pid)
                prev = None
                if saved is not None:
                    prev = saved["meta"] if saved["txid"] < txid else saved["prev"]
                self.store.put(pid, {"txid": txid, "meta": meta, "prev": prev})
            for t in [t for t in self.pending if t < txid]:
                del self.pending[t]

    def succeeded(self, txid: int) -> None:
        self.emitter.success(txid)

    def close(self) -> None:
        self.emitter.close()
        self.store.close()


def deliver(meta: dict[str, Any], rows: Rows) -> None:
    """Return a DRPC batch's result rows to the caller (the ``return`` node)."""
    target = meta.get("drpc")
    if not target:
        return
    kind, where, request_id = target
    if kind == "remote":
        respond(where, request_id, result_json(rows))
        return
    drpc = local_drpc.lookup(where)
    if drpc is None:
        log.warning("DRPC result for request %s dropped: its LocalDRPC is shut down",
                    request_id)
        return
    drpc.respond(request_id, result_json(rows))


Source = SpoutSource | DRPCSource | PartitionedSource


def make_source(node: dict[str, Any]) -> Source:
    if node["kind"] == "drpc":
        return DRPCSource(node)
    if node["params"].get("partitioned"):
        return PartitionedSource(node)
    return SpoutSource(node)
