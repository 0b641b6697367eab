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

    Every try of a txid gets the same partition info from the coordinator, and a batch whose
    info differs (partitions added, removed, or moved to another task) starts only once every
    batch before it committed. Per partition, the cluster state store keeps (under
    ``/trident/<topology>/spouts/<stream>/<partition id>``) ``{txid: metadata}`` of its
    batches, each written before the batch's rows leave this task:

    - transactional: a replayed txid re-emits exactly its batch; a new one starts after the
      highest earlier txid's. A commit drops the metadata of the txids before it;
    - opaque: every try of a txid starts after the highest earlier txid's batch (whichever
      task emitted it, before or after a restart) and replaces its metadata. A commit keeps
      the batch before it too: a replay of the committed txid (after a crash between its
      commit and the coordinator's record of it) starts after that one.

    A commit prunes the partitions of its batch; once the partitions changed, the first task
    also clears, of every partition not in the committing batch, what it kept for that txid
    or later (batches that cannot commit), keeping its last committed batch for when it
    returns.
    """

    def __init__(self, node: dict[str, Any]) -> None:
        self.name: str = node["params"]["name"]
        self.spout = plan.from_json(node["op"])
        self.transactional = self.spout.kind == "transactional"
        self.owned: list[Any] = []
        #: txid -> (the ids of its batch's partitions, of this task's) not committed yet (all
        #: the ids in the first task only)
        self.batches: dict[int, tuple[frozenset[str], list[str]]] = {}
        #: the partition ids of the last commit the first task saw (``None``: none yet)
        self.committed_ids: frozenset[str] | None = None

    def open(self, conf: dict[str, Any], context: Any) -> None:
        self.emitter = self.spout.get_emitter(conf, context)
        self.index, self.tasks = context.task_index, len(
            context.component_tasks(context.component_id))
        self.store = MetaStore(conf, f"/trident/{context.topology_name}/spouts/{self.name}")

    def _mine(self, ordered: list[Any]) -> list[Any]:
        mine = ordered[self.index::self.tasks]
        if mine != self.owned:
            self.owned = mine
            self.emitter.refresh_partitions(mine)
        return mine

    def _metas(self, pid: str) -> dict[str, Any]:
        """``{txid: metadata}`` kept for partition ``pid`` (txids as strings)."""
        saved = self.store.get(pid)
        if not saved:
            return {}
        if "txid" in saved:     # an opaque record of before: the last commit, and its previous
            metas = {str(saved["txid"]): saved["meta"]}
            if saved.get("prev") is not None and saved["txid"] > 1:
                metas[str(saved["txid"] - 1)] = saved["prev"]
            return metas
        return dict(saved)

    def rows_for(self, txid: int, info: Any) -> tuple[Rows, dict[str, Any]]:
        collector = TridentCollector()
        emitter, key = self.emitter, str(txid)
        ordered = emitter.get_ordered_partitions(info)
        mine: list[str] = []
        for partition in self._mine(ordered):
            pid = emitter.partition_id(partition)
            mine.append(pid)
            metas = self._metas(pid)
            if self.transactional and key in metas:
                emitter.emit_partition_batch(txid, collector, partition, metas[key])
                continue
            before = [int(t) for t in metas if int(t) < txid]
            last = metas[str(max(before))] if before else None
            if self.transactional:
                meta = emitter.emit_partition_batch_new(txid, collector, partition, last)
            else:
                meta = emitter.emit_partition_batch(txid, collector, partition, last)
            if key not in metas or metas[key] != meta:
                metas[key] = meta
                self.store.put(pid, metas)      # before its rows leave this task
        every = (frozenset(emitter.partition_id(p) for p in ordered) if self.index == 0
                 else frozenset())
        self.batches[txid] = (every, mine)
        return collector.out, {}

    def committed(self, txid: int) -> None:
        batch = self.batches.pop(txid, None)
        for t in [t for t in self.batches if t < txid]:
            del self.batches[t]
        # after a restart of this task: the partitions it owns now (a later batch's, with
        # the same partitions: they change only after ``txid`` committed)
        mine = batch[1] if batch is not None else [self.emitter.partition_id(p)
                                                   for p in self.owned]
        for pid in mine:
            metas = self._metas(pid)
            since = txid
            if not self.transactional:
                since = max((int(t) for t in metas if int(t) < txid), default=txid)
            kept = {t: m for t, m in metas.items() if int(t) >= since}
            if kept != metas:
                self.store.put(pid, kept)
        if batch is not None and self.index == 0 and batch[0] != self.committed_ids:
            self._clear_others(txid, batch[0])
            self.committed_ids = batch[0]

    def _clear_others(self, txid: int, ids: frozenset[str]) -> None:
        """Of each partition not in ``txid``'s batch, keep only its last committed batch."""
        for pid in self.store.names():
            if pid in ids:
                continue
            metas = self._metas(pid)
            before = [int(t) for t in metas if int(t) < txid]
            kept = {str(max(before)): metas[str(max(before))]} if before else {}
            if kept == metas:
                continue
            orphans = sorted(int(t) for t in metas if int(t) >= txid)
            if orphans:
                log.info("trident spout %s: partition %s is not in txid %d; dropping its "
                         "metadata of txids %s", self.name, pid, txid, orphans)
            if kept:
                self.store.put(pid, kept)
            else:
                self.store.delete(pid)

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
