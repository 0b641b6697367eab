"""SparkSpout: feed a topology from anything Spark can read.

>>> from squall import TopologyBuilder
>>> from squall.plugins.spark import SparkSpout
>>> b = TopologyBuilder()
>>> _ = b.set_spout("rows", SparkSpout, parallelism=2, config={
...     "spark.source.table": "events", "spark.source.columns": ["user", "amount"]})

Configuration (component config; see :mod:`squall.plugins.spark.source` for the source keys):

- ``spark.source.format`` + ``spark.source.path``, or ``spark.source.table``, or
  ``spark.source.query``; ``spark.source.options``; ``spark.source.columns``.
- ``spark.master`` (default ``local[*]``): the Spark cluster of the session the spout creates
  when its worker process has none yet; ``spark.conf``: extra Spark settings for that session.
- ``spark.spout.emit.batch`` (default 500): the most rows one ``next_tuple`` call emits.
- ``spark.spout.fetch`` (default ``auto``): ``filter`` forces the slower public-API way of
  reading one partition (see :mod:`squall.plugins.spark.fetch`).
- ``spark.source.retry.backoff.min.secs`` (default 0.5), ``spark.source.retry.backoff.max.secs``
  (default 30), ``spark.source.retry.report.after`` (default 5): when reading a partition fails
  (a Spark job failure, a lost executor...), the task logs one error line and reads the
  partition again from its first row not yet emitted, after a backoff doubling from min to max
  per consecutive failure; from the ``report.after``-th consecutive failure of one partition
  on, each failure is also reported as the component's error and retried every max seconds.
  Rows are never dropped: the spout keeps retrying until the partition is read. When the
  worker's Spark driver JVM is gone (the OOM killer picked it, it crashed), the task drops
  that session, plans its source again on a new one and reads on from its first row not yet
  emitted (reported once as the component's error; :mod:`squall.plugins.spark.planning`).

Tables and queries across processes: a spout task reads through the SparkSession of its own
worker process, which squall creates there with ``spark.master`` and ``spark.conf``. In a
``LocalCluster`` that is the submitting process's session, so its temporary views and tables
are there; on a cluster each worker is a separate process with its own session, where a
temporary view of the submitting process does not exist, and neither does a table saved with
Spark's default in-memory catalog (its files are under ``spark.sql.warehouse.dir``, but the
catalog entry lived in the session that wrote it). There, ``spark.source.table`` needs a
catalog every worker's session reaches, set through ``spark.conf``: a Hive metastore service
(``spark.sql.catalogImplementation: hive``, ``spark.hadoop.hive.metastore.uris:
thrift://...``) or a catalog plugin (``spark.sql.catalog.NAME: ...``). A
``spark.source.query`` runs in each worker's session too; it can read files directly
(``SELECT * FROM parquet.`/data/events` ``) without any catalog. ``spark.source.options``
applies to a path or a data source table; with a query or a view it is an error.

Output fields: ``spark.source.columns`` if set. Otherwise :meth:`SparkSpout.declare_outputs`
starts a local Spark session *at build time* and reads the source's schema (schema only, no
scan); set ``spark.source.columns`` to build topologies without starting Spark.

Partitions and tuple ids: task ``i`` of ``n`` reads the DataFrame's partitions ``p`` with
``p % n == i``, one partition at a time, and emits each row with ``tup_id=(p, r)`` (partition,
0-based row index within it). Rows stay in memory until acked; a failed row is re-emitted
with the same id. With acking off (``topology.acker.executors: 0``) rows are emitted without
a tuple id: nothing can fail, so nothing is kept (and ``ack`` is not called). When its
partitions are read and nothing waits for replay, ``next_tuple`` returns without emitting.

Progress (with acking on): each partition's committed row count (every row before it
acked) is kept in the cluster's state store under ``spark.spout.progress.id`` (default
``<topology name>/<component id>``) and written every ``spark.spout.progress.interval.secs``
(default 1) and when the task closes; a task that starts, after a crash, a move or a new
submit with the same id, reads each partition from its committed row and skips partitions
read and acked to their end (:mod:`squall.plugins.spark.progress`). Rows acked after the last
write are emitted again after a crash (at least once). ``spark.spout.progress: false`` reads
everything from the start every time. Counts taken over another source (other source
settings, or another set of input files: the source's fingerprint,
:func:`squall.plugins.spark.source.fingerprint`) or when the source was split into another
number of partitions are ignored, with a warning: those partitions are read from the start.

Values are Arrow's Python conversions (``datetime``, ``Decimal``..., dicts for structs and,
as Spark's ``collect`` gives them, for maps): with a remote serializer, cast such columns in
``spark.source.query`` if it cannot carry them. Memory is bounded by one partition, which is
collected whole before its rows are handed over (:mod:`squall.plugins.spark.fetch`): split a
source with large partitions.
Rows come in partition order; re-reading a source gives the same ids only if Spark splits it
the same way (true for files; not for sources whose partitioning is random).
"""
from __future__ import annotations

import collections
import logging
import time
from collections.abc import Mapping
from typing import Any

from squall.api.component import Spout
from squall.api.context import TopologyContext
from squall.api.tuple import Stream
from squall.errors import ConfigError, TopologyError

from squall.plugins.spark import settings
from squall.plugins.spark.progress import Progress, ProgressStore
from squall.plugins.spark.source import SourceSpec, load_dataframe, parse_source

__all__ = ["SparkSpout"]

log = logging.getLogger(__name__)


class SparkSpout(Spout):
    """Emits the rows of a Spark DataFrame; see the module docstring for the contract.

    Every method runs on the task's executor thread. ``initialize`` blocks while Spark starts
    (if needed) and plans the source; it raises TopologyError for a bad source. The reading
    itself happens on a background thread (:class:`~squall.plugins.spark.fetch.PartitionReader`),
    so ``next_tuple`` only emits what is ready and never waits for Spark.
    """

    #: imported when it starts reading; without them a topology using it is refused at
    #: submit, naming ``squall[spark]``
    squall_requires = ("pyspark", "pyarrow")

    @classmethod
    def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
        spec = parse_source(config)
        if spec.columns is not None:
            return list(spec.columns)
        from squall.plugins.spark.session import get_session
        spark = get_session(config.get("spark.master"), config.get("spark.conf"))
        return list(load_dataframe(spark, spec).columns)

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        from squall.plugins.spark.fetch import PartitionReader, retry_policy
        from squall.plugins.spark.planning import SourcePlan

        self.context = context
        name = f"spout {context.component_id!r}"
        spec: SourceSpec = parse_source(conf, name)
        retry = retry_policy(conf, name)
        try:                               # what validation checked, before Spark starts
            self.emit_batch = settings.emit_batch(conf)
            keep_progress = settings.progress_enabled(conf)
            save_every = settings.progress_interval(conf)
            progress_id = settings.progress_id(conf)
        except ConfigError as exc:
            raise TopologyError(f"{name}: {exc}") from None
        source = SourcePlan(conf, spec, name=name, app_name=f"squall-{context.topology_name}",
                            fields=_declared_fields(context))
        fetch = source.plan()
        self.spark = source.spark
        count = source.count
        tasks = context.component_tasks(context.component_id)
        n, me = len(tasks), context.task_index
        mine = [p for p in range(count) if p % n == me]
        self.max_pending = int(conf.get("topology.max.spout.pending") or 0)
        self.tracking = conf.get("topology.acker.executors", None) != 0
        self.progress: Progress | None = None
        self.progress_store: ProgressStore | None = None
        start: dict[int, int] = {}
        if self.tracking and keep_progress:
            self.progress_store = _open_progress(
                conf, progress_id or f"{context.topology_name}/{context.component_id}",
                count, source.fingerprint)
            self.progress = self.progress_store.load(mine)
            start = self.progress.committed
            mine = [p for p in mine if p not in self.progress.complete]
            self.save_every = save_every
            self.next_save = time.monotonic() + self.save_every
        self.reader = PartitionReader(self.spark, fetch, mine, retry=retry,
                                      name=context.component_id,
                                      label=f"{name} task {context.task_id}", start=start,
                                      recover=source.recover)
        self.inflight: dict[tuple[int, int], tuple[Any, ...]] = {}
        self.replay: collections.deque[tuple[int, int]] = collections.deque()
        self.chunk: list[tuple[Any, ...]] = []
        self.chunk_part = self.chunk_pos = self.chunk_base = 0
        from squall.metrics.api import CountMetric
        self.rows_read = context.register_metric("spark-rows-read", CountMetric())
        log.info("%s task %d: %d of %d partitions of %s (%s)", name, context.task_id,
                 len(mine), count, spec.describe(), source.method)

    @property
    def exhausted(self) -> bool:
        """Every assigned row was emitted and no failed row waits for replay."""
        return (self.reader.exhausted and self.chunk_pos >= len(self.chunk)
                and not self.replay)

    def next_tuple(self) -> None:
        if self.reader.errors:             # the reader keeps failing: report it, go on
            for message in self.reader.take_errors():
                self.report_error(message)
        if self.progress is not None and time.monotonic() >= self.next_save:
            self._save()
        budget = self.emit_batch
        if self.max_pending:
            budget = min(budget, self.max_pending - len(self.inflight))
            if budget <= 0:
                return
        emit = self.emit
        inflight = self.inflight
        replay = self.replay
        while replay and budget > 0:
            tup_id = replay.popleft()
            values = inflight.get(tup_id)
            if values is not None:
                emit(values, tup_id=tup_id)
                budget -= 1
        if budget <= 0:
            return
        if self.chunk_pos >= len(self.chunk) and not self._next_chunk():
            return
        chunk, pos, part, base = self.chunk, self.chunk_pos, self.chunk_part, self.chunk_base
        end = min(len(chunk), pos + budget)
        if self.tracking:
            for i in range(pos, end):
                values = chunk[i]
                tup_id = (part, base + i)
                inflight[tup_id] = values
                emit(values, tup_id=tup_id)
        else:                              # no ackers: nothing can fail, nothing to keep
            for values in chunk[pos:end]:
                emit(values)
        self.chunk_pos = end
        self.rows_read.incr(end - pos)

    def _next_chunk(self) -> bool:
        while True:
            item = self.reader.poll()
            if item is None:
                return False
            part, base, rows = item
            if rows:
                break
            if self.progress is not None:          # the end of a partition: its row count
                self.progress.ended(part, base)
        self.chunk_part, self.chunk_base, self.chunk = item
        self.chunk_pos = 0
        return True

    def ack(self, tup_id: Any) -> None:
        key = _key(tup_id)
        if self.inflight.pop(key, None) is not None and self.progress is not None:
            self.progress.ack(*key)

    def _save(self) -> None:
        assert self.progress is not None and self.progress_store is not None
        self.next_save = time.monotonic() + self.save_every
        changed = self.progress.take_changed()
        if changed and not self.progress_store.save(changed):
            self.progress.changed.update(changed)       # handed in again next time

    def fail(self, tup_id: Any) -> None:
        key = _key(tup_id)
        if key in self.inflight:
            self.replay.append(key)

    def close(self) -> None:
        """Stop the reading thread; the shared SparkSession stays up for other tasks."""
        reader = getattr(self, "reader", None)
        if reader is not None:
            reader.close()
        store = getattr(self, "progress_store", None)
        if store is not None:
            self._save()
            store.close()
            self.progress_store = None


def _key(tup_id: Any) -> tuple[int, int]:
    """Tuple ids come back as given; a list (after a serializer round trip) is accepted too."""
    return tup_id if tup_id.__class__ is tuple else (int(tup_id[0]), int(tup_id[1]))


def _open_progress(conf: Mapping[str, Any], progress_id: str, partitions: int,
                   source: str) -> ProgressStore:
    """The progress of this source, kept under ``progress_id`` in the cluster's state store
    (see :mod:`squall.plugins.spark.progress`)."""
    from squall import drivers
    from squall.security.credentials import for_runtime
    store = drivers.driver("state", for_runtime(conf))   # the worker's ZooKeeper identity
    store.start()
    return ProgressStore(store, progress_id, partitions, source)


def _declared_fields(context: TopologyContext) -> tuple[str, ...] | None:
    try:
        return tuple(context.output_fields("default"))
    except (KeyError, AttributeError):
        return None
