"""Fixtures for the Spark plugin's tests: one local Spark session for the whole test session.

- ``spark`` (session scope): a SparkSession on ``local[2]`` bound to 127.0.0.1, UI off, two
  shuffle partitions, warehouse and scratch dirs under a temp dir, the driver JVM's JIT at its
  first tier (:data:`JVM_OPTIONS`); stopped after the session.
  Spark starts in ~10 s, so every Spark test shares it. Spout tasks and the metrics report
  find it through ``SparkSession.builder.getOrCreate()``.
- ``parquet_dir`` (session scope): a Parquet dataset of 3,000 rows (``id``, ``word``,
  ``score``) written as 6 files, so reading it gives several partitions; ``parquet_rows``
  (session scope) lists them.
- ``flaky_fetch``: ``flaky_fetch(fails)`` makes the SparkSpouts initialized afterwards (in
  this process) read through a :class:`FlakyFetch` that fails each partition's first
  ``fails`` reads.
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROWS = 3000
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]
#: the driver JVM's options in these tests (as ``dev_zookeeper``'s JVM): its JIT stops at the
#: quick first tier. The tests run small jobs a few times each, which the optimizing tier only
#: slows down on two cores: jobs and session start take 30-40 % less time with it. The tests
#: that start a driver JVM in a process of their own pass the same option in their spark.conf.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from squall.plugins.spark.session import get_session

    base = tmp_path_factory.mktemp("spark")
    session = get_session("local[2]", {
        "spark.ui.enabled": False,
        "spark.sql.shuffle.partitions": 2,
        "spark.sql.session.timeZone": "UTC",
        "spark.default.parallelism": 2,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.warehouse.dir": str(base / "warehouse"),
        "spark.local.dir": str(base / "scratch"),
        "spark.sql.files.maxPartitionBytes": "4k",
        "spark.sql.files.openCostInBytes": "1k",
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
    }, app_name="squall-tests")
    yield session
    session.stop()


def _rows(n: int = ROWS) -> list[tuple[int, str, float]]:
    return [(i, WORDS[i % len(WORDS)], i / 2) for i in range(n)]


@pytest.fixture(scope="session")
def parquet_rows() -> list[tuple[int, str, float]]:
    """The rows of ``parquet_dir``, sorted: ``(id, word, score)``."""
    return _rows()


@pytest.fixture(scope="session")
def parquet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("data") / "numbers.parquet"
    path.mkdir()
    data = _rows()
    per_file = len(data) // 6
    for f in range(6):
        part = data[f * per_file:(f + 1) * per_file]
        table = pa.table({"id": [r[0] for r in part], "word": [r[1] for r in part],
                          "score": [r[2] for r in part]})
        pq.write_table(table, path / f"part-{f}.parquet")
    return path


class FlakyFetch:
    """Wraps the spout's partition fetch to inject Spark failures.

    Each partition is served in pieces of 97 rows (odd attempts) or 61 rows (even attempts), so
    a retry's batches do not line up with what was already handed out. The first ``fails``
    attempts of every partition fail: partition 0 before its first row, the others after
    ``2 * attempt`` pieces (or at their end if they are shorter). :attr:`RETRY` is a fast
    retry policy for tests."""

    RETRY = {"spark.source.retry.backoff.min.secs": 0.001,
             "spark.source.retry.backoff.max.secs": 0.01,
             "spark.source.retry.report.after": 2}

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fails: int) -> None:
        import squall.plugins.spark.fetch as fetch_module
        self.fails = fails
        self.attempts: collections.Counter[int] = collections.Counter()
        self.raised = 0
        real = fetch_module.plan

        def plan(df: Any) -> Any:
            count, fetch, method = real(df)
            return count, lambda p: self.fetch(fetch, p), method
        monkeypatch.setattr(fetch_module, "plan", plan)

    def fetch(self, fetch: Any, p: int) -> Any:
        self.attempts[p] += 1
        attempt = self.attempts[p]
        failing = attempt <= self.fails
        limit = 0 if p == 0 else 2 * attempt
        piece, given = (97 if attempt % 2 else 61), 0
        for batch in fetch(p):
            for start in range(0, batch.num_rows, piece):
                if failing and given >= limit:
                    self.fail(p, attempt)
                yield batch.slice(start, piece)
                given += 1
        if failing:
            self.fail(p, attempt)

    def fail(self, p: int, attempt: int) -> None:
        self.raised += 1
        raise RuntimeError(f"injected failure {attempt} of partition {p}")


@pytest.fixture
def flaky_fetch(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], FlakyFetch]:
    return lambda fails: FlakyFetch(monkeypatch, fails)
