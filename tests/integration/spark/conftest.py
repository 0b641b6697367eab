"""Fixtures for the Spark plugin's tests: one local Spark session for the whole test session.

- ``spark`` (session scope): a SparkSession on ``local[2]`` bound to 127.0.0.1, UI off, two
  shuffle partitions, warehouse and scratch dirs under a temp dir; stopped after the session.
  Spark starts in ~10 s, so every Spark test shares it. Spout tasks and the metrics report
  find it through ``SparkSession.builder.getOrCreate()``.
- ``parquet_dir`` (session scope): a Parquet dataset of 3,000 rows (``id``, ``word``,
  ``score``) written as 6 files, so reading it gives several partitions; ``parquet_rows``
  (session scope) lists them.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROWS = 3000
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


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
