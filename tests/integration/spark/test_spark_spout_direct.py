"""SparkSpout driven directly (no topology): split, replay, sources, errors."""
from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from squall import TopologyContext, TopologyError
from squall.plugins.spark import SparkSpout
from squall.plugins.spark.fetch import RetryPolicy, retry_policy
from squall.state.memory import NAMESPACE_KEY, MemoryStateStore
from squall.testing import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.integration,
              pytest.mark.filterwarnings("ignore::FutureWarning")]


class Driven:
    """One SparkSpout task with a recording ``emit``; call :meth:`drain` to read it all."""

    def __init__(self, config: dict[str, Any], task_index: int = 0, tasks: int = 1,
                 fields: tuple[str, ...] = ("id", "word", "score")) -> None:
        ids = list(range(1, tasks + 1))
        self.context = TopologyContext(
            topology_id="t-1", topology_name="t", component_id="rows", task_id=ids[task_index],
            task_to_component=dict.fromkeys(ids, "rows"), this_worker_port=None,
            outputs={"default": fields})
        self.emitted: list[tuple[Any, Any]] = []
        self.errors: list[str] = []
        self.spout = SparkSpout()
        self.spout.emit = self._emit  # type: ignore[method-assign]
        self.spout.report_error = lambda e: self.errors.append(str(e))  # type: ignore
        self.spout.initialize({"spark.master": "local[2]", "squall.state": "memory", **config},
                              self.context)

    def _emit(self, values: Any, stream: str = "default", *, tup_id: Any = None,
              **kw: Any) -> None:
        self.emitted.append((tup_id, tuple(values)))

    def drain(self, timeout: float = 90) -> list[tuple[Any, Any]]:
        # a deadline, not a wait: a Spark job's first read took over 30 s on a loaded 2-core
        # host (CI, 2026-11-30); it takes a few seconds when the host is quiet
        def step() -> bool:
            self.spout.next_tuple()
            return self.spout.exhausted
        wait_until(step, timeout, interval=0.001, message="the spout read its partitions")
        return self.emitted

    def close(self) -> None:
        self.spout.close()


def parquet(path: Path, **extra: Any) -> dict[str, Any]:
    return {"spark.source.format": "parquet", "spark.source.path": str(path), **extra}


def test_every_row_once_with_locating_ids(spark: Any, parquet_dir: Path,
                                          parquet_rows: list[Any]) -> None:
    d = Driven(parquet(parquet_dir))
    try:
        emitted = d.drain()
    finally:
        d.close()
    assert sorted(v for _, v in emitted) == parquet_rows
    ids = [t for t, _ in emitted]
    assert len(set(ids)) == len(parquet_rows)
    assert len({p for p, _ in ids}) > 1            # the dataset spans several partitions
    per_part: dict[int, list[int]] = {}
    for p, i in ids:
        per_part.setdefault(p, []).append(i)
    assert all(v == list(range(len(v))) for v in per_part.values())


def test_acked_rows_leave_memory_failed_rows_replay(spark: Any, parquet_dir: Path) -> None:
    d = Driven(parquet(parquet_dir, **{"spark.source.columns": ["id"]}), fields=("id",))
    try:
        emitted = d.drain()
        failed = [t for t, _ in emitted[::7]]
        for t, _ in emitted:
            if t not in failed:
                d.spout.ack(list(t))               # ids may come back as lists
        assert len(d.spout.inflight) == len(failed)
        for t in failed:
            d.spout.fail(t)
        assert not d.spout.exhausted
        del d.emitted[:]
        d.drain()
        replayed = dict(d.emitted)
        assert sorted(replayed) == sorted(failed)
        assert all(replayed[t] == dict(emitted)[t] for t in failed)
        for t in failed:
            d.spout.ack(t)
        assert d.spout.inflight == {}
    finally:
        d.close()


def test_a_restarted_task_reads_on_from_its_committed_rows(spark: Any, parquet_dir: Path,
                                                           parquet_rows: list[Any]) -> None:
    namespace = f"spark-progress-{uuid.uuid4().hex}"
    holder = MemoryStateStore({NAMESPACE_KEY: namespace})   # the "cluster": outlives tasks
    holder.start()
    conf = parquet(parquet_dir, **{NAMESPACE_KEY: namespace})
    try:
        first = Driven(conf)
        try:
            emitted = first.drain()
            by_part: dict[int, list[int]] = {}
            for (p, r), _ in emitted:
                by_part.setdefault(p, []).append(r)
            assert len(by_part) >= 3
            whole, gap, *rest = sorted(by_part)
            for r in by_part[whole]:                    # read and acked to its end
                first.spout.ack((whole, r))
            for r in list(range(10)) + [12]:            # rows 10 and 11 never acked
                first.spout.ack((gap, r))
        finally:
            first.close()                               # writes the progress
        second = Driven(conf)
        try:
            again = {tid for tid, _ in second.drain()}
        finally:
            second.close()
        assert not any(p == whole for p, _ in again)    # a complete partition is skipped
        assert {r for p, r in again if p == gap} == set(range(10, len(by_part[gap])))
        assert all({r for p, r in again if p == q} == set(by_part[q]) for q in rest)
        # every row is emitted once more at most, and together the two lives emit every row
        assert {tid for tid, _ in emitted} >= again
        third = Driven(conf)
        try:
            third.drain()
            for tid, _ in third.emitted:
                third.spout.ack(tid)
        finally:
            third.close()
        fourth = Driven(conf)
        try:
            assert fourth.drain() == []                 # all acked: nothing left to read
        finally:
            fourth.close()
    finally:
        holder.close()


def test_progress_taken_over_another_source_is_not_taken_up(spark: Any, tmp_path: Path,
                                                            caplog: Any) -> None:
    # a daily load submitted again under the same name (the same progress id) over the next
    # day's files, split the same way: the first day's progress must not skip them
    import pyarrow as pa
    import pyarrow.parquet as pq

    days = {}
    for day, first in (("day1", 0), ("day2", 10_000)):
        days[day] = tmp_path / day
        days[day].mkdir()
        for f in range(3):
            pq.write_table(pa.table({"id": list(range(first + f * 200, first + (f + 1) * 200))}),
                           days[day] / f"part-{f}.parquet")
    namespace = f"spark-progress-{uuid.uuid4().hex}"
    holder = MemoryStateStore({NAMESPACE_KEY: namespace})
    holder.start()
    extra = {NAMESPACE_KEY: namespace, "spark.spout.progress.id": "daily-load/rows"}
    try:
        first = Driven(parquet(days["day1"], **extra), fields=("id",))
        try:
            for tid, _ in first.drain():
                first.spout.ack(tid)                    # all of day 1 done
        finally:
            first.close()
        with caplog.at_level(logging.WARNING, logger="squall.plugins.spark.progress"):
            second = Driven(parquet(days["day2"], **extra), fields=("id",))
        try:
            assert second.spout.reader.partitions, "day 2 was taken as read"
            emitted = second.drain()
            assert sorted(v[0] for _, v in emitted) == list(range(10_000, 10_600))
            for tid, _ in emitted:
                second.spout.ack(tid)
        finally:
            second.close()
        assert "taken over another source" in caplog.text
        third = Driven(parquet(days["day2"], **extra), fields=("id",))   # day 2 again
        try:
            assert third.drain() == []                  # its own progress is taken up
        finally:
            third.close()
    finally:
        holder.close()


def test_two_tasks_split_partitions_disjoint_and_complete(spark: Any, parquet_dir: Path,
                                                          parquet_rows: list[Any]) -> None:
    tasks = [Driven(parquet(parquet_dir), task_index=i, tasks=2) for i in range(2)]
    try:
        got = [t.drain() for t in tasks]
    finally:
        for t in tasks:
            t.close()
    parts = [{tid[0] for tid, _ in g} for g in got]
    assert parts[0] and parts[1] and not parts[0] & parts[1]
    assert all(p % 2 == i for i, ps in enumerate(parts) for p in ps)
    assert sorted(v for g in got for _, v in g) == parquet_rows


def test_filter_fetch_path_reads_the_same_rows(spark: Any, parquet_dir: Path,
                                               parquet_rows: list[Any]) -> None:
    d = Driven(parquet(parquet_dir, **{"spark.spout.fetch": "filter"}))
    try:
        assert sorted(v for _, v in d.drain()) == parquet_rows
    finally:
        d.close()


def test_max_spout_pending_bounds_rows_in_flight(spark: Any, parquet_dir: Path) -> None:
    d = Driven(parquet(parquet_dir, **{"topology.max.spout.pending": 40}))
    try:
        wait_until(lambda: (d.spout.next_tuple(), len(d.emitted) >= 40)[1], 30, interval=0.001)
        d.spout.next_tuple()
        assert len(d.emitted) == 40
    finally:
        d.close()


def test_csv_with_reader_options(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text("name,age\nada,36\nalan,41\n")
    config = {"spark.source.format": "csv", "spark.source.path": str(path),
              "spark.source.options": {"header": True, "inferSchema": True}}
    assert SparkSpout.declare_outputs(config) == ["name", "age"]
    d = Driven(config, fields=("name", "age"))
    try:
        assert sorted(v for _, v in d.drain()) == [("ada", 36), ("alan", 41)]
    finally:
        d.close()


def test_json_with_selected_columns_in_order(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text('{"a": 1, "b": "x", "c": true}\n{"a": 2, "b": "y", "c": false}\n')
    config = {"spark.source.format": "json", "spark.source.path": str(path),
              "spark.source.columns": ["b", "a"]}
    assert SparkSpout.declare_outputs(config) == ["b", "a"]
    d = Driven(config, fields=("b", "a"))
    try:
        assert sorted(v for _, v in d.drain()) == [("x", 1), ("y", 2)]
    finally:
        d.close()


def test_orc_source(spark: Any, tmp_path: Path, parquet_rows: list[Any]) -> None:
    path = tmp_path / "numbers.orc"
    spark.createDataFrame(parquet_rows[:700], "id long, word string, score double") \
        .repartition(3).write.orc(str(path))
    config = {"spark.source.format": "orc", "spark.source.path": str(path)}
    assert SparkSpout.declare_outputs(config) == ["id", "word", "score"]
    d = Driven(config)
    try:
        emitted = d.drain()
    finally:
        d.close()
    assert sorted(v for _, v in emitted) == parquet_rows[:700]
    assert len({t for t, _ in emitted}) == 700


def test_table_and_query_sources(spark: Any, parquet_dir: Path,
                                 parquet_rows: list[Any]) -> None:
    spark.read.parquet(str(parquet_dir)).createOrReplaceTempView("numbers")
    d = Driven({"spark.source.table": "numbers"})
    try:
        assert len(d.drain()) == len(parquet_rows)
    finally:
        d.close()
    query = "SELECT word, count(*) AS n FROM numbers GROUP BY word"
    assert SparkSpout.declare_outputs({"spark.source.query": query}) == ["word", "n"]
    d = Driven({"spark.source.query": query}, fields=("word", "n"))
    try:
        assert sorted(v for _, v in d.drain()) == [(w, len(parquet_rows) // 5) for w in sorted(
            ["alpha", "beta", "gamma", "delta", "epsilon"])]
    finally:
        d.close()


def test_reader_options_apply_to_a_table_and_are_an_error_for_a_view_or_query(
        spark: Any, tmp_path: Path) -> None:
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "a.csv").write_text("word,n\nalpha,1\nbeta,2\n")
    spark.sql(f"CREATE TABLE words_csv (word STRING, n STRING) USING csv "
              f"LOCATION '{tmp_path / 'csv'}'")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW words_view AS SELECT * FROM words_csv")
    try:
        d = Driven({"spark.source.table": "words_csv", "spark.source.options": {"header": True}},
                   fields=("word", "n"))
        try:                   # the header line is a header, not a row
            assert sorted(v for _, v in d.drain()) == [("alpha", "1"), ("beta", "2")]
        finally:
            d.close()
        assert _error({"spark.source.table": "words_view",
                       "spark.source.options": {"header": True}}) == (
            "spark spout: spark.source.options do not apply to table 'words_view', a view "
            "(Spark ignores reader options there); set them where the view is defined")
        assert _error({"spark.source.query": "SELECT * FROM words_csv",
                       "spark.source.options": {"header": True}}).startswith(
            "spark spout: spark.source.options do not apply to spark.source.query")
    finally:
        spark.sql("DROP VIEW IF EXISTS words_view")
        spark.sql("DROP TABLE IF EXISTS words_csv")


def _error(config: dict[str, Any]) -> str:
    with pytest.raises(TopologyError) as info:
        SparkSpout.declare_outputs(config)
    message = str(info.value)
    assert "\n" not in message and "An error occurred while calling" not in message, message
    return message


def test_missing_path_bad_format_bad_column_are_clear_errors(spark: Any, parquet_dir: Path,
                                                             tmp_path: Path) -> None:
    assert _error(parquet(tmp_path / "nope")) == (
        f"spark spout: spark.source.path '{tmp_path / 'nope'}' does not exist")
    # Spark's reason, with its error class, not Py4J's "An error occurred while calling o31.load."
    assert _error({"spark.source.format": "nosuchformat",
                   "spark.source.path": str(parquet_dir)}).startswith(
        f"spark spout: cannot read nosuchformat source '{parquet_dir}': [DATA_SOURCE_NOT_FOUND] "
        "Failed to find the data source: nosuchformat.")
    assert _error({"spark.source.query": "SELECT * FROM no_such_table"}).startswith(
        "spark spout: cannot read query 'SELECT * FROM no_such_table': [TABLE_OR_VIEW_NOT_FOUND] "
        "The table or view `no_such_table` cannot be found.")
    assert _error({"spark.source.table": "no_such_table"}).startswith(
        "spark spout: cannot read table 'no_such_table': [TABLE_OR_VIEW_NOT_FOUND]")
    with pytest.raises(TopologyError, match=r"\['nope'\] not in"):
        Driven(parquet(parquet_dir, **{"spark.source.columns": ["id", "nope"]}),
               fields=("id", "nope"))


def test_a_column_arrow_cannot_carry_is_one_topology_error(spark: Any) -> None:
    with pytest.raises(TopologyError, match=r"^spout 'rows': cannot read query .*"
                       r"UNSUPPORTED_DATA_TYPE_FOR_ARROW_CONVERSION.*cast such columns"):
        Driven({"spark.source.query": "SELECT make_interval(1, 2) AS iv FROM range(3)"},
               fields=("iv",))


def test_spark_conf_must_be_a_mapping_even_with_a_session_running(spark: Any) -> None:
    from squall import ConfigError
    from squall.plugins.spark.session import get_session
    with pytest.raises(ConfigError, match="spark.conf must be a mapping"):
        get_session(None, "nope")                          # type: ignore[arg-type]


def test_a_bad_query_is_one_line_without_pysparks_stack_trace(spark: Any) -> None:
    from pyspark.logger import PySparkLogger
    # pyspark 4 logs each Spark error it raises, JVM stack and all, on a logger of its own
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = PySparkLogger.getLogger("SQLQueryContextLogger")
    logger.addHandler(handler)
    try:
        assert _error({"spark.source.query": "SELECT * FROM no_such_table"}).startswith(
            "spark spout: cannot read query 'SELECT * FROM no_such_table'")
        assert records == []            # squall's one line is the report
        # only squall's own reads are quiet: the user's Spark errors are logged as pyspark does
        with pytest.raises(Exception, match="no_such_table_either"):
            spark.sql("SELECT * FROM no_such_table_either")
        assert [r for r in records if "no_such_table_either" in r.getMessage()]
    finally:
        logger.removeHandler(handler)


def test_a_delta_source_without_delta_lake_says_what_to_install(spark: Any,
                                                               parquet_dir: Path) -> None:
    message = _error({"spark.source.format": "delta", "spark.source.path": str(parquet_dir)})
    assert message.startswith(f"spark spout: cannot read delta source '{parquet_dir}': "
                              "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: delta.")
    for part in ("pip install delta-spark", "spark.jars.packages: io.delta:delta-spark_2.13:",
                 "spark.sql.extensions: io.delta.sql.DeltaSparkSessionExtension",
                 "spark.sql.catalog.spark_catalog: "
                 "org.apache.spark.sql.delta.catalog.DeltaCatalog"):
        assert part in message, message
    # the hint is for delta only: another unknown format gets Spark's reason alone
    assert "delta-spark" not in _error({"spark.source.format": "nosuchformat",
                                        "spark.source.path": str(parquet_dir)})


def test_failed_reads_resume_after_the_rows_handed_out(spark: Any, parquet_dir: Path,
                                                       parquet_rows: list[Any],
                                                       flaky_fetch: Any,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    clean = Driven(parquet(parquet_dir))
    try:
        expected = dict(clean.drain())
    finally:
        clean.close()
    flaky = flaky_fetch(3)
    caplog.set_level(logging.ERROR, logger="squall.plugins.spark.fetch")
    d = Driven(parquet(parquet_dir, **flaky.RETRY))
    try:
        emitted = d.drain()
    finally:
        d.close()
    assert len(flaky.attempts) > 1 and set(flaky.attempts.values()) == {4}
    ids = [t for t, _ in emitted]
    assert len(ids) == len(set(ids)) == len(parquet_rows)        # every row exactly once
    assert dict(emitted) == expected                             # each id locates the same row
    # one error line per failure, naming the partition and the injected cause
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(lines) == flaky.raised
    assert all("\n" not in x and "retrying in" in x for x in lines)
    assert sum("partition 0 failed" in x and "injected failure" in x for x in lines) == 3
    # partition 0 failed 3 times in a row without progress: failures 2 and 3 were reported
    zero = [e for e in d.errors if "partition 0 failed" in e]
    assert len(zero) == 2 and "3 in a row" in zero[-1]


def test_a_partition_that_keeps_failing_is_reported_and_retried_at_max_backoff(
        spark: Any, parquet_dir: Path, parquet_rows: list[Any],
        flaky_fetch: Any) -> None:
    flaky = flaky_fetch(8)
    d = Driven(parquet(parquet_dir, **{**flaky.RETRY, "spark.source.retry.report.after": 3,
                                       "spark.source.retry.backoff.max.secs": 0.05}))
    try:
        wait_until(lambda: (d.spout.next_tuple(), len(d.errors) >= 2)[1], 30, interval=0.001,
                   message="the spout reported the failing partition")
        emitted = d.drain()
    finally:
        d.close()
    assert flaky.attempts[0] == 9
    zero = [e for e in d.errors if "partition 0 failed" in e]
    assert len(zero) == 8 - 3 + 1                                 # every failure from the 3rd
    assert "retrying in 0.05 s" in zero[-1]
    assert sorted(v for _, v in emitted) == parquet_rows


def test_retry_policy_backs_off_and_checks_its_keys() -> None:
    policy = retry_policy({"spark.source.retry.backoff.min.secs": 1,
                           "spark.source.retry.backoff.max.secs": 5,
                           "spark.source.retry.report.after": 4})
    assert [policy.delay(n) for n in range(1, 7)] == [1, 2, 4, 5, 5, 5]
    assert retry_policy({}) == RetryPolicy(0.5, 30.0, 5)
    with pytest.raises(TopologyError, match="report.after must be a positive integer"):
        retry_policy({"spark.source.retry.report.after": 0})
    with pytest.raises(TopologyError, match="max.secs must be a number"):
        retry_policy({"spark.source.retry.backoff.max.secs": "soon"})
    with pytest.raises(TopologyError, match="is above"):
        retry_policy({"spark.source.retry.backoff.min.secs": 9,
                      "spark.source.retry.backoff.max.secs": 2})
