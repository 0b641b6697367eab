"""Reading chosen partitions of a DataFrame into Python rows, off the executor thread.

A :class:`PartitionReader` runs one background thread per spout task. For each partition it
was given, in order, it has Spark compute that partition alone (Spark's executors do the
reading), receives it as Arrow record batches and turns each batch into a list of row tuples,
handed over through a small bounded queue: memory stays at a few batches
(``spark.sql.execution.arrow.maxRecordsPerBatch`` rows each, 10,000 by default) whatever the
dataset's size, and the spout's ``next_tuple`` never waits for Spark.

Two ways to compute one partition:

- *arrow-rdd* (classic pyspark, the default): the DataFrame's Arrow batch RDD, one Spark job
  per partition, streamed to Python over pyspark's local socket. It uses pyspark internals
  (``Dataset.toArrowBatchRdd``, ``PythonRDD.runJob``) present in Spark 3.4 to 4.x.
- *filter* (fallback when those internals are missing, e.g. Spark Connect): the DataFrame
  filtered on ``spark_partition_id() == p`` collected as Arrow; correct but each job scans
  every partition of the source.
"""
from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from squall.errors import SquallError

from squall.plugins.spark.session import first_line

__all__ = ["Chunk", "PartitionReader", "plan"]

log = logging.getLogger(__name__)
_ids = itertools.count(1)

#: one chunk of rows: (partition, index of its first row in the partition, rows)
Chunk = tuple[int, int, list[tuple[Any, ...]]]
_DONE = object()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def plan(df: Any) -> tuple[int, Callable[[int], Iterator[Any]], str]:
    """``(number of partitions, fetch(partition) -> iterator of pyarrow.RecordBatch, method)``.

    Runs on the caller's thread; blocks while Spark plans the query (no full scan)."""
    import pyarrow as pa

    schema = _arrow_schema(df)
    try:
        from pyspark.serializers import NoOpSerializer
        from pyspark.util import _load_from_socket

        sc = df.sparkSession.sparkContext
        jrdd = df._jdf.toArrowBatchRdd().toJavaRDD()
        count = int(jrdd.getNumPartitions())
        run_job = sc._jvm.PythonRDD.runJob
        jsc = sc._jsc.sc()
    except Exception as exc:   # internals missing or changed: the slower public path
        log.info("Spark spout: Arrow batch RDD unavailable (%s); reading partitions through "
                 "a partition-id filter", first_line(exc))
        return _filter_plan(df)

    def fetch(p: int) -> Iterator[Any]:
        sock_info = run_job(jsc, jrdd, [p])
        with _load_from_socket(sock_info, NoOpSerializer()) as stream:
            for payload in stream:
                yield pa.ipc.read_record_batch(pa.py_buffer(payload), schema)

    return count, fetch, "arrow-rdd"


def _filter_plan(df: Any) -> tuple[int, Callable[[int], Iterator[Any]], str]:
    from pyspark.sql.functions import spark_partition_id

    count = int(df.rdd.getNumPartitions())

    def fetch(p: int) -> Iterator[Any]:
        table = _to_arrow(df.where(spark_partition_id() == p))
        yield from table.to_batches()

    return count, fetch, "filter"


def _to_arrow(df: Any) -> Any:
    if hasattr(df, "toArrow"):          # pyspark >= 4.0
        return df.toArrow()
    import pyarrow as pa
    return pa.Table.from_batches(df._collect_as_arrow(empty_list_if_zero_records=False))


def _arrow_schema(df: Any) -> Any:
    """The Arrow schema Spark uses for ``df`` (from an empty collection: no scan)."""
    return _to_arrow(df.limit(0)).schema


def batch_rows(batch: Any) -> list[tuple[Any, ...]]:
    """Rows of a pyarrow RecordBatch as tuples of Python values (Arrow's conversions:
    ``datetime``, ``Decimal``, ``date``, lists, dicts for structs)."""
    return list(zip(*[column.to_pylist() for column in batch.columns], strict=True))


class PartitionReader:
    """Reads ``partitions`` of a planned DataFrame on a daemon thread; see the module doc.

    :meth:`poll` and :meth:`close` are called from the spout's executor thread; the reading
    thread only talks to it through the queue. A Spark failure is re-raised by :meth:`poll`
    as :class:`squall.SquallError` once, after which the reader counts as exhausted."""

    def __init__(self, spark: Any, fetch: Callable[[int], Iterator[Any]],
                 partitions: list[int], *, prefetch: int = 2, name: str = "spark-spout") -> None:
        self._spark = spark
        self._fetch = fetch
        self.partitions = list(partitions)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, prefetch))
        self._stop = threading.Event()
        self._group = f"squall-{name}-{next(_ids)}"
        self.exhausted = not self.partitions
        self._thread = threading.Thread(target=self._run, name=f"squall-{name}-reader",
                                        daemon=True)
        if self.partitions:
            self._thread.start()

    def poll(self) -> Chunk | None:
        """The next chunk if one is ready, else None; never blocks."""
        if self.exhausted:
            return None
        try:
            item = self._queue.get_nowait()
        except queue.Empty:
            return None
        if item is _DONE:
            self.exhausted = True
            return None
        if isinstance(item, _Failure):
            self.exhausted = True
            raise SquallError(f"reading Spark partitions failed: {first_line(item.exc)}"
                              ) from item.exc
        return item  # type: ignore[no-any-return]

    def close(self, timeout: float = 10.0) -> None:
        """Stop reading: cancel the running Spark job and wait up to ``timeout`` seconds."""
        self._stop.set()
        if not self._thread.is_alive():
            return
        try:
            self._spark.sparkContext.cancelJobGroup(self._group)
        except Exception:   # the session may already be stopped
            log.debug("cancelling Spark job group %s failed", self._group, exc_info=True)
        self._thread.join(timeout)

    # -- the reading thread ------------------------------------------------------------------
    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            try:
                self._spark.sparkContext.setJobGroup(self._group, "squall spark spout",
                                                     interruptOnCancel=True)
            except Exception:
                log.debug("setJobGroup failed", exc_info=True)
            for p in self.partitions:
                index = 0
                for batch in self._fetch(p):
                    if self._stop.is_set():
                        return
                    if not batch.num_rows:
                        continue
                    rows = batch_rows(batch)
                    if not self._put((p, index, rows)):
                        return
                    index += len(rows)
            self._put(_DONE)
        except Exception as exc:   # handed to the executor thread, raised from poll()
            if not self._stop.is_set():
                log.debug("Spark partition reader failed", exc_info=True)
                self._put(_Failure(exc))
