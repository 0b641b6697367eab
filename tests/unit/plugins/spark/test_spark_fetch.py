"""PartitionReader without Spark: order, bounded hand-over, failures, close."""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
from squall.plugins.spark.fetch import PartitionReader, RetryPolicy, batch_rows
from squall.testing import wait_until


class FakeContext:
    def __init__(self) -> None:
        self.cancelled: list[str] = []

    def setJobGroup(self, group: str, description: str, interruptOnCancel: bool) -> None:
        pass

    def cancelJobGroup(self, group: str) -> None:
        self.cancelled.append(group)


def fake_spark() -> Any:
    return SimpleNamespace(sparkContext=FakeContext())


def batches(p: int) -> Iterator[pa.RecordBatch]:
    for b in range(2):
        ids = [p * 100 + b * 10 + i for i in range(3)]
        yield pa.record_batch({"id": ids, "tag": [f"p{p}"] * 3})
    yield pa.record_batch({"id": pa.array([], pa.int64()), "tag": pa.array([], pa.string())})


def drain(reader: PartitionReader) -> list[Any]:
    chunks: list[Any] = []

    def step() -> bool:
        item = reader.poll()
        if item is not None:
            chunks.append(item)
        return reader.exhausted
    wait_until(step, 10, interval=0.001)
    return chunks


def test_chunks_come_in_partition_order_with_row_offsets() -> None:
    reader = PartitionReader(fake_spark(), batches, [1, 3])
    chunks = drain(reader)
    assert [(p, start, len(rows)) for p, start, rows in chunks] == [
        (1, 0, 3), (1, 3, 3), (1, 6, 0), (3, 0, 3), (3, 3, 3), (3, 6, 0)]   # ends: no rows
    assert chunks[1][2][0] == (110, "p1")
    assert reader.poll() is None


def test_a_start_row_skips_what_an_earlier_life_read() -> None:
    reader = PartitionReader(fake_spark(), batches, [1, 3], start={1: 4, 3: 6})
    chunks = drain(reader)
    assert [(p, start, rows) for p, start, rows in chunks] == [
        (1, 4, [(111, "p1"), (112, "p1")]), (1, 6, []), (3, 6, [])]


def test_no_partitions_is_exhausted_at_once() -> None:
    assert PartitionReader(fake_spark(), batches, []).exhausted


def flaky(fails: int, after: int = 1) -> Any:
    """``batches`` that fail the first ``fails`` reads of each partition after ``after``
    batches (``after`` 0: before any); every failure is counted in ``attempts``."""
    attempts: dict[int, int] = {}

    def fetch(p: int) -> Iterator[pa.RecordBatch]:
        attempts[p] = attempts.get(p, 0) + 1
        for i, batch in enumerate(batches(p)):
            if attempts[p] <= fails and i == after:
                raise RuntimeError(f"Job aborted: lost executor {attempts[p]}\n\tat org.apache")
            yield batch
    fetch.attempts = attempts  # type: ignore[attr-defined]
    return fetch


FAST = RetryPolicy(min_secs=0.001, max_secs=0.005, report_after=3)


def test_a_failed_read_resumes_after_the_rows_handed_out(caplog: Any) -> None:
    fetch = flaky(fails=2, after=1)
    caplog.set_level(logging.ERROR, logger="squall.plugins.spark.fetch")
    reader = PartitionReader(fake_spark(), fetch, [1, 3], retry=FAST, label="spout 'rows' task 7")
    chunks = drain(reader)
    # every row exactly once, at its offset, although each partition was read three times
    assert [(p, start, len(rows)) for p, start, rows in chunks] == [
        (1, 0, 3), (1, 3, 3), (1, 6, 0), (3, 0, 3), (3, 3, 3), (3, 6, 0)]   # ends: no rows
    assert fetch.attempts == {1: 3, 3: 3}
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == ("spout 'rows' task 7: reading Spark partition 1 failed (1 in a row, 3 "
                        "of its rows already emitted); retrying in 0.001 s: Job aborted: lost "
                        "executor 1")
    assert len(lines) == 4 and reader.failures == 4
    assert reader.take_errors() == []               # 2 in a row is below report_after


def test_a_partition_failing_again_and_again_is_reported_and_never_dropped() -> None:
    fetch = flaky(fails=6, after=0)
    reader = PartitionReader(fake_spark(), fetch, [0, 1], retry=FAST)
    chunks = drain(reader)
    assert [(p, start) for p, start, _ in chunks] == [(0, 0), (0, 3), (0, 6),
                                                       (1, 0), (1, 3), (1, 6)]
    errors = reader.take_errors()
    # from the 3rd failure in a row on, each one is queued for the component's error report
    assert [e.split("(")[1].split(" in a row")[0] for e in errors] == ["3", "4", "5", "6"] * 2
    assert all("retrying in 0.005 s" in e for e in errors)


def test_a_lost_driver_is_replaced_and_the_read_goes_on_through_the_new_plan() -> None:
    # the driver JVM dies after the first batch of partition 1: every read through its plan
    # fails from then on (the old Java RDD and socket belong to the dead gateway)
    dead = threading.Event()

    def old_plan(p: int) -> Iterator[pa.RecordBatch]:
        for batch in batches(p):
            if dead.is_set():
                raise ConnectionRefusedError(111, "Connection refused")
            yield batch
            dead.set()

    new_spark = fake_spark()
    joined: list[str] = []
    new_spark.sparkContext.setJobGroup = lambda group, *a, **kw: joined.append(group)
    recovered: list[int] = []

    def recover() -> Any:               # the spout's: None while the session works
        if not dead.is_set() or recovered:
            return None
        recovered.append(1)
        return new_spark, batches

    reader = PartitionReader(fake_spark(), old_plan, [1, 3], retry=FAST, recover=recover,
                             label="spout 'rows' task 7")
    chunks = drain(reader)
    assert [(p, start, len(rows)) for p, start, rows in chunks] == [
        (1, 0, 3), (1, 3, 3), (1, 6, 0), (3, 0, 3), (3, 3, 3), (3, 6, 0)]
    assert recovered == [1] and joined == [reader._group]   # the new session's jobs: its group
    errors = reader.take_errors()       # reported at once, below report_after
    assert len(errors) == 1 and "lost its driver JVM; reading on through a new session" in \
        errors[0] and "3 of its rows already emitted" in errors[0]
    reader.close()
    assert new_spark.sparkContext.cancelled == []           # the new session is the one used


def test_a_failing_recovery_counts_with_the_failure_and_is_tried_again() -> None:
    calls: list[int] = []

    def recover() -> Any:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("cannot start a Spark session on master 'local[1]': no memory")
        return fake_spark(), batches

    def down(p: int) -> Iterator[pa.RecordBatch]:
        raise ConnectionRefusedError(111, "Connection refused")
        yield

    reader = PartitionReader(fake_spark(), down, [0], retry=FAST, recover=recover)
    chunks = drain(reader)
    assert [(p, start) for p, start, _ in chunks] == [(0, 0), (0, 3), (0, 6)]
    errors = reader.take_errors()       # each one reported at once, below report_after
    assert len(calls) == 3 and len(errors) == 3
    assert all("a new Spark session failed: cannot start a Spark session" in e
               for e in errors[:2])
    assert "reading on through a new session" in errors[2]


def test_backoff_doubles_up_to_the_max_and_stays_there_once_reported() -> None:
    policy = RetryPolicy(min_secs=0.5, max_secs=3, report_after=5)
    assert [policy.delay(n) for n in range(1, 8)] == [0.5, 1, 2, 3, 3, 3, 3]
    assert RetryPolicy(min_secs=0.1, max_secs=9, report_after=2).delay(2) == 9


def test_close_during_a_backoff_stops_the_reader() -> None:
    def down(p: int) -> Iterator[pa.RecordBatch]:
        raise RuntimeError("cluster down")
        yield

    reader = PartitionReader(fake_spark(), down, [0],
                             retry=RetryPolicy(min_secs=60, max_secs=60, report_after=1))
    wait_until(lambda: reader.failures == 1, 5)
    reader.close(timeout=5)
    assert not reader._thread.is_alive() and not reader.exhausted


def test_the_reader_holds_only_a_few_chunks_and_close_stops_it() -> None:
    produced = threading.Semaphore(0)

    def endless(p: int) -> Iterator[pa.RecordBatch]:
        while True:
            produced.release()
            yield pa.record_batch({"id": [1]})

    spark = fake_spark()
    reader = PartitionReader(spark, endless, [0], prefetch=2)
    wait_until(lambda: reader._queue.full(), 5)
    reader.close()
    assert not reader._thread.is_alive()
    assert spark.sparkContext.cancelled == [reader._group]
    count = 0
    while produced.acquire(blocking=False):
        count += 1
    assert count <= 4                 # 2 queued, 1 blocked in put, 1 being read


def test_batch_rows_converts_columns_to_row_tuples() -> None:
    rb = pa.record_batch({"a": [1, 2], "b": ["x", None]})
    assert batch_rows(rb) == [(1, "x"), (2, None)]


def test_batch_rows_gives_maps_as_dicts_at_any_depth() -> None:
    # as Spark's collect does: {"k": 1}, where Arrow's to_pylist gives [("k", 1)]
    m = pa.map_(pa.string(), pa.int64())
    rb = pa.record_batch({
        "m": pa.array([[("k", 1), ("j", 2)], None, []], type=m),
        "lm": pa.array([[[("a", 1)]], [None], None], type=pa.list_(m)),
        "sm": pa.array([{"x": [("b", 2)], "y": 1}, {"x": None, "y": 2}, None],
                       type=pa.struct([("x", m), ("y", pa.int64())])),
        "mm": pa.array([[("o", [("i", 3)])], [], None], type=pa.map_(pa.string(), m)),
        "plain": [[1], [], None]})
    assert batch_rows(rb) == [
        ({"k": 1, "j": 2}, [{"a": 1}], {"x": {"b": 2}, "y": 1}, {"o": {"i": 3}}, [1]),
        (None, [None], {"x": None, "y": 2}, {}, []),
        ({}, None, None, None, None)]


def test_a_partition_too_large_for_the_driver_says_how_to_split_it() -> None:
    def too_big(p: int) -> Iterator[pa.RecordBatch]:
        raise RuntimeError("Job aborted due to stage failure: Total size of serialized results "
                           "of 1 tasks (6.1 MiB) is bigger than spark.driver.maxResultSize "
                           "(1024.0 KiB)")
        yield

    reader = PartitionReader(fake_spark(), too_big, [0],
                             retry=RetryPolicy(min_secs=60, max_secs=60, report_after=1))
    wait_until(lambda: reader.errors, 5)
    reader.close(timeout=5)
    [message] = reader.take_errors()
    assert message.endswith("(a partition is collected whole by the Spark driver: split the "
                            "source into smaller partitions, e.g. a REPARTITION hint in "
                            "spark.source.query, or raise spark.driver.maxResultSize in "
                            "spark.conf)")
