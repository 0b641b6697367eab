"""Reading chosen partitions of a DataFrame into Python rows, off the executor thread.

A :class:`PartitionReader` runs one background thread per spout task. For each partition it
was given, in order, it has Spark compute that partition alone (Spark's executors do the
reading), receives it as Arrow record batches and turns each batch into a list of row tuples,
handed over through a small bounded queue (a few batches of
``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, 10,000 by default), so the spout's
``next_tuple`` never waits for Spark.

Memory is bounded by one partition, not by the dataset: each way of computing a partition
below collects it whole first. A source with large partitions, or one that Spark cannot split
(a single ``.csv.gz`` file is one partition), needs splitting: a ``REPARTITION`` hint in
``spark.source.query`` (``SELECT /*+ REPARTITION(64, id) */ * FROM parquet.`/data/events`
SORT BY id``: by a unique column, and sorted within partitions, so that every read splits and
orders the rows alike and a row id keeps naming one row), or
``spark.sql.files.maxPartitionBytes`` in ``spark.conf`` for splittable files.

Two ways to compute one partition:

- *arrow-rdd* (classic pyspark, the default): the DataFrame's Arrow batch RDD, one Spark job
  per partition, whose result the Spark driver (in the worker's JVM) collects whole, counted
  against ``spark.driver.maxResultSize`` (1 GB by default: a larger partition fails its read),
  then streams to Python batch by batch over pyspark's local socket. It uses pyspark internals
  (``Dataset.toArrowBatchRdd``, ``PythonRDD.runJob``) present in Spark 3.4 to 4.x.
- *filter* (fallback when those internals are missing, e.g. Spark Connect): the DataFrame
  filtered on ``spark_partition_id() == p`` collected as one Arrow table in Python; correct
  but each job scans every partition of the source.

A failed read is retried from the first row not yet handed to the spout, with a bounded
backoff (:class:`RetryPolicy`, the ``spark.source.retry.*`` keys): rows already handed out keep
their ids, and no row is skipped or handed out twice by the reader. A read whose session lost
its driver JVM (killed by the OOM killer, say) would fail forever through the same plan: the
reader's ``recover`` callable (the spout's) then plans the source again on a new session, and
the retry goes through that plan. ``start`` gives a row to
begin each partition at (rows an earlier life of the task had acked: see
:mod:`squall.plugins.spark.progress`); the end of each partition is handed over as a chunk
without rows, so the spout learns how many rows the partition has.
"""
from __future__ import annotations

import collections
import itertools
import logging
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from squall.errors import ConfigError, TopologyError

from squall.plugins.spark.session import first_line, quiet_spark_errors
from squall.plugins.spark.settings import RETRY_KEYS, check_retry

__all__ = ["RETRY_KEYS", "Chunk", "Fetch", "PartitionReader", "Recover", "RetryPolicy", "plan",
           "retry_policy"]

log = logging.getLogger(__name__)
_ids = itertools.count(1)

#: one chunk of rows: (partition, index of its first row in the partition, rows); the end of a
#: partition is a chunk without rows whose index is the partition's row count
Chunk = tuple[int, int, list[tuple[Any, ...]]]
#: fetch(partition) -> iterator of pyarrow.RecordBatch
Fetch = Callable[[int], Iterator[Any]]
#: after a failed read: ``(session, fetch)`` planned anew on a new session when the reader's
#: session lost its driver, None when the session works (the same fetch is retried)
Recover = Callable[[], tuple[Any, Fetch] | None]
_DONE = object()


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
    ``datetime``, ``Decimal``, ``date``, lists, dicts for structs; and dicts for maps, as
    Spark's ``collect`` gives them, where Arrow gives lists of key-value pairs)."""
    columns = []
    for column in batch.columns:
        values = column.to_pylist()
        convert = _map_converter(column.type)
        columns.append(values if convert is None else [convert(v) for v in values])
    return list(zip(*columns, strict=True))


def _map_converter(arrow_type: Any) -> Callable[[Any], Any] | None:
    """A function turning the Python value of ``arrow_type`` (from ``to_pylist``) into one
    with dicts for its maps, at any depth; None for a type without maps (kept as it is)."""
    import pyarrow as pa

    t = pa.types
    if t.is_map(arrow_type):
        key = _map_converter(arrow_type.key_type)
        item = _map_converter(arrow_type.item_type)
        return lambda v: None if v is None else {
            _hashable(k if key is None else key(k)): x if item is None else item(x) for k, x in v}
    if t.is_struct(arrow_type):
        inner = {f.name: c for f in arrow_type for c in [_map_converter(f.type)] if c is not None}
        if not inner:
            return None
        return lambda v: None if v is None else {
            k: inner[k](x) if k in inner else x for k, x in v.items()}
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        element = _map_converter(arrow_type.value_type)
        if element is None:
            return None
        return lambda v: None if v is None else [element(x) for x in v]
    return None


def _hint(exc: BaseException) -> str:
    """What to do about a failure a retry cannot mend (said after its message), else ""."""
    if "spark.driver.maxResultSize" in str(exc):
        return (" (a partition is collected whole by the Spark driver: split the source into "
                "smaller partitions, e.g. a REPARTITION hint in spark.source.query, or raise "
                "spark.driver.maxResultSize in spark.conf)")
    return ""


def _hashable(key: Any) -> Any:
    """A map key as a dict key: a struct's or a list's values as a tuple."""
    if isinstance(key, dict):
        return tuple(_hashable(x) for x in key.values())
    if isinstance(key, list):
        return tuple(_hashable(x) for x in key)
    return key


@dataclass(frozen=True)
class RetryPolicy:
    """How a :class:`PartitionReader` retries a partition whose read failed.

    The ``n``-th consecutive failure of one partition waits ``min_secs * 2 ** (n - 1)`` seconds,
    at most ``max_secs``; from the ``report_after``-th on, every failure is also queued for the
    component's error reporting and the wait is ``max_secs``. Reading rows of the partition
    resets the count."""

    min_secs: float = 0.5
    max_secs: float = 30.0
    report_after: int = 5

    def delay(self, failures: int) -> float:
        if failures >= self.report_after:
            return self.max_secs
        return min(self.max_secs, self.min_secs * 2.0 ** min(failures - 1, 60))


def retry_policy(conf: Mapping[str, Any], component: str = "spark spout") -> RetryPolicy:
    """The :class:`RetryPolicy` of ``conf``'s ``spark.source.retry.*`` keys (defaults for the
    missing ones); raises TopologyError naming a bad key (the rules:
    :func:`squall.plugins.spark.settings.check_retry`)."""
    filled = {key: getattr(RetryPolicy, attr) for key, attr in RETRY_KEYS.items()}
    filled.update({key: conf[key] for key in RETRY_KEYS if conf.get(key) is not None})
    try:
        values = check_retry(filled)
    except ConfigError as exc:
        raise TopologyError(f"{component}: {exc}") from None
    return RetryPolicy(**values)


class PartitionReader:
    """Reads ``partitions`` of a planned DataFrame on a daemon thread; see the module doc.

    :meth:`poll`, :meth:`take_errors` and :meth:`close` are called from the spout's executor
    thread; the reading thread only talks to it through the queue and :attr:`errors`.

    A failed read of a partition (a Spark job failure, a lost connection...) is retried from
    the first row not yet handed out, after the :class:`RetryPolicy`'s backoff; each failure
    logs one error line, and from the policy's ``report_after``-th consecutive failure on its
    message is also queued in :attr:`errors` for the spout to report. Rows are never skipped:
    the reader only counts as exhausted once every partition was read to its end.

    ``recover`` (optional) is called on the reading thread after each failed read, before the
    backoff: when it returns a new ``(session, fetch)`` (the session's driver JVM was lost and
    the source planned again on a new one), the retry and every later read go through it. An
    exception it raises counts with the failure (said in its message); the next failure calls
    it again. Either way the failure's message is queued in :attr:`errors` at once."""

    def __init__(self, spark: Any, fetch: Fetch,
                 partitions: list[int], *, prefetch: int = 2, name: str = "spark-spout",
                 retry: RetryPolicy | None = None, label: str | None = None,
                 start: Mapping[int, int] | None = None,
                 recover: Recover | None = None) -> None:
        self._spark = spark
        self._fetch = fetch
        self._recover = recover
        self.partitions = list(partitions)
        #: per partition, the first row to hand out (rows before it were read in an earlier
        #: life of the task and acked)
        self.start = dict(start or {})
        self.retry = retry or RetryPolicy()
        self.label = label or name      # names the reader in failure messages
        #: messages of failures to report (appended by the reading thread)
        self.errors: collections.deque[str] = collections.deque()
        #: failed reads so far, every partition together
        self.failures = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, prefetch))
        self._stop = threading.Event()
        self._group = f"squall-{name}-{next(_ids)}"
        self.exhausted = not self.partitions
        self._thread = threading.Thread(target=self._run, name=f"squall-{name}-reader",
                                        daemon=True)
        if self.partitions:
            self._thread.start()

    def poll(self) -> Chunk | None:
        """The next chunk if one is ready, else None; never blocks or raises."""
        if self.exhausted:
            return None
        try:
            item = self._queue.get_nowait()
        except queue.Empty:
            return None
        if item is _DONE:
            self.exhausted = True
            return None
        return item  # type: ignore[no-any-return]

    def take_errors(self) -> list[str]:
        """The failure messages queued for reporting since the last call."""
        taken = []
        while self.errors:
            taken.append(self.errors.popleft())
        return taken

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

    def _join_group(self) -> None:
        """Put this thread's Spark jobs in the reader's job group (which ``close`` cancels)."""
        try:
            self._spark.sparkContext.setJobGroup(self._group, "squall spark spout",
                                                 interruptOnCancel=True)
        except Exception:
            log.debug("setJobGroup failed", exc_info=True)

    def _run(self) -> None:
        self._join_group()
        with quiet_spark_errors():    # a failed read is logged as one line by _read
            for p in self.partitions:
                if not self._read(p):
                    return
        self._put(_DONE)

    def _read(self, p: int) -> bool:
        """Hand out every row of partition ``p``, retrying failed reads; False once stopped."""
        handed = self.start.get(p, 0)   # rows of p already queued: a retry starts after them
        failures = 0         # consecutive failed reads of p
        while True:
            try:
                seen = 0     # rows of p this attempt has fetched so far
                for batch in self._fetch(p):
                    if self._stop.is_set():
                        return False
                    n = batch.num_rows
                    if seen + n <= handed:       # empty, or handed out by an earlier attempt
                        seen += n
                        continue
                    if seen < handed:
                        batch = batch.slice(handed - seen)
                    rows = batch_rows(batch)
                    if not self._put((p, handed, rows)):
                        return False
                    handed += len(rows)
                    seen = handed
                    failures = 0
                return self._put((p, handed, []))        # the end of p: it has ``handed`` rows
            except Exception as exc:
                if self._stop.is_set():           # close() cancelled the job
                    return False
                failures += 1
                self.failures += 1
                delay = self.retry.delay(failures)
                reason, recovered = first_line(exc) + _hint(exc), self._recovered()
                if self._stop.is_set():
                    return False
                if recovered:
                    reason += f"; {recovered}"
                message = (f"{self.label}: reading Spark partition {p} failed ({failures} in a "
                           f"row, {handed} of its rows already emitted); retrying in "
                           f"{delay:g} s: {reason}")
                log.error("%s", message)
                log.debug("Spark partition %d read failure", p, exc_info=True)
                if failures >= self.retry.report_after or recovered:
                    self.errors.append(message)
                if self._stop.wait(delay):
                    return False

    def _recovered(self) -> str:
        """After a failed read: let ``recover`` replace a lost session's plan. What it did,
        for the failure's message ("" when the session works)."""
        if self._recover is None:
            return ""
        try:
            fresh = self._recover()
        except Exception as exc:
            return f"planning the read again on a new Spark session failed: {first_line(exc)}"
        if fresh is None:
            return ""
        self._spark, self._fetch = fresh
        self._join_group()
        return "the Spark session had lost its driver JVM; reading on through a new session"
