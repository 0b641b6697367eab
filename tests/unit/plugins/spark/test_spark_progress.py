"""SparkSpout's progress without Spark: committed counts and their store."""
from __future__ import annotations

import json
import logging
from typing import Any

from squall.plugins.spark.progress import Progress, ProgressStore
from squall.state.memory import MemoryStateStore


def test_acks_commit_only_rows_without_a_gap_before_them() -> None:
    progress = Progress()
    for row in (1, 2, 4):
        progress.ack(7, row)
    assert progress.committed.get(7, 0) == 0          # row 0 is not acked yet
    progress.ack(7, 0)
    assert progress.committed[7] == 3                 # 0, 1, 2; 3 is missing
    progress.ack(7, 3)
    assert progress.committed[7] == 5
    progress.ack(7, 1)                                # a replayed row acked twice
    assert progress.committed[7] == 5
    assert progress.take_changed() == {7: (5, False)}
    assert progress.take_changed() == {}


def test_a_partition_is_complete_once_read_to_its_end_and_acked() -> None:
    progress = Progress({3: 2})
    progress.ended(3, 4)
    assert 3 not in progress.complete
    progress.ack(3, 3)
    progress.ack(3, 2)
    assert 3 in progress.complete and progress.take_changed() == {3: (4, True)}
    empty = Progress()
    empty.ended(5, 0)                                 # an empty partition
    assert 5 in empty.complete


def test_the_store_keeps_counts_per_source_and_ignores_another_split(caplog: Any) -> None:
    store = MemoryStateStore({})
    store.start()
    try:
        ps = ProgressStore(store, "topo/rows", partitions=4, source="day1")
        assert ps.save({0: (10, False), 2: (7, True)})
        loaded = ProgressStore(store, "topo/rows", partitions=4, source="day1").load([0, 1, 2])
        assert loaded.committed == {0: 10, 2: 7} and loaded.complete == {2}
        assert ProgressStore(store, "topo/other", partitions=4,
                             source="day1").load([0, 2]).committed == {}
        raw = store.get("/spark-spout/topo%2Frows/p0")
        assert raw is not None and json.loads(raw) == {"rows": 10, "complete": False,
                                                       "partitions": 4, "source": "day1"}
        with caplog.at_level(logging.WARNING):
            resplit = ProgressStore(store, "topo/rows", partitions=5,
                                    source="day1").load([0, 1, 2])
        assert resplit.committed == {} and "another number of partitions" in caplog.text
    finally:
        store.close()


def test_counts_taken_over_another_source_are_ignored_with_one_warning(caplog: Any) -> None:
    # a topology submitted again under the same name (the same progress id) over other data
    store = MemoryStateStore({})
    store.start()
    try:
        assert ProgressStore(store, "daily/rows", partitions=3, source="day1").save(
            {0: (200, True), 1: (200, True), 2: (150, False)})
        store.put("/spark-spout/daily%2Frows/p3", json.dumps(      # written before fingerprints
            {"rows": 5, "complete": False, "partitions": 3}).encode())
        with caplog.at_level(logging.WARNING):
            day2 = ProgressStore(store, "daily/rows", partitions=3,
                                 source="day2").load([0, 1, 2, 3])
        assert day2.committed == {} and day2.complete == set()
        lines = [r.getMessage() for r in caplog.records if "another source" in r.getMessage()]
        assert len(lines) == 1 and "4 partition(s)" in lines[0]
        again = ProgressStore(store, "daily/rows", partitions=3, source="day1").load([0, 1, 2])
        assert again.committed == {0: 200, 1: 200, 2: 150} and again.complete == {0, 1}
    finally:
        store.close()


def test_a_failed_write_is_one_line_and_the_counts_are_handed_in_again(caplog: Any) -> None:
    store = MemoryStateStore({})
    store.start()
    ps = ProgressStore(store, "t/c", partitions=1, source="s")
    store.close()                                     # the store is gone
    with caplog.at_level(logging.ERROR):
        assert not ps.save({0: (3, False)})
        assert not ps.save({0: (4, False)})
    assert caplog.text.count("saving spark spout progress") == 1
