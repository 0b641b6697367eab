"""PartitionReader without Spark: order, bounded hand-over, failures, close."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from squall import SquallError
from squall.plugins.spark.fetch import PartitionReader, batch_rows
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
        (1, 0, 3), (1, 3, 3), (3, 0, 3), (3, 3, 3)]
    assert chunks[1][2][0] == (110, "p1")
    assert reader.poll() is None


def test_no_partitions_is_exhausted_at_once() -> None:
    assert PartitionReader(fake_spark(), batches, []).exhausted


def test_a_spark_failure_is_raised_once_then_exhausted() -> None:
    def broken(p: int) -> Iterator[pa.RecordBatch]:
        yield from batches(p)
        raise RuntimeError("Path does not exist: file:/gone\n\tat org.apache...")

    reader = PartitionReader(fake_spark(), broken, [0])
    with pytest.raises(SquallError, match="reading Spark partitions failed: Path does not"):
        drain(reader)
    assert reader.exhausted and reader.poll() is None


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
