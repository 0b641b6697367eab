"""The master batch coordinator: batches in flight, commits in txid order, restarts."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from squall import drivers
from squall.trident import TransactionalSpout, plan
from squall.trident.partitioned import PartitionCoordinator
from squall.trident.runtime.coordinator import TridentCoordinator


class Context:
    topology_name = "coord-test"

    def __init__(self, topology_id: str = "coord-test-1-1") -> None:
        self.topology_id = topology_id


#: the partitions each test's source has now, by the namespace of the test's store
PARTITIONS: dict[str, list[str]] = {}


class ListCoordinator(PartitionCoordinator):
    def __init__(self, tag: str) -> None:
        self.tag = tag

    def get_partitions_for_batch(self) -> Any:
        return list(PARTITIONS[self.tag])


class ListSpout(TransactionalSpout):
    outputs = ["item"]

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def get_coordinator(self, conf: dict[str, Any], context: Any) -> Any:
        return ListCoordinator(self.tag)


def _coordinator(namespace: str, pending: int = 3, interval_ms: int = 0,
                 partitioned: bool = False, topology_id: str = "coord-test-1-1",
                 outlives: bool = True) -> tuple[TridentCoordinator, list[Any]]:
    c = TridentCoordinator()
    emitted: list[Any] = []
    c.emit = lambda values, stream="default", **kw: emitted.append(  # type: ignore[method-assign]
        (stream, values[0], kw.get("tup_id"), *values[2:]))
    spouts = ([{"name": "s", "spout": plan.to_json(ListSpout(namespace), "spout")}]
              if partitioned else [])
    c.initialize({"squall.state": "memory", "squall.state.memory.namespace": namespace,
                  "topology.max.spout.pending": pending,
                  "topology.trident.batch.emit.interval.millis": interval_ms,
                  "trident.coordinator": {"key": "s", "partitioned": spouts, "streams": ["s"],
                                          "outlives": outlives}}, Context(topology_id))
    return c, emitted


def _spin(c: TridentCoordinator, n: int = 5) -> None:
    for _ in range(n):
        c.next_tuple()


def test_commits_strictly_in_txid_order_and_failures_restart_later_batches() -> None:
    c, emitted = _coordinator(uuid.uuid4().hex)
    _spin(c)
    batches = [e for e in emitted if e[0] == "$batch"]
    assert [b[1] for b in batches] == [1, 2, 3]            # max.spout.pending batches at once
    ids = {b[1]: b[2] for b in batches}
    c.ack(ids[2])                                          # 2 is done before 1: no commit yet
    _spin(c)
    assert not [e for e in emitted if e[0] == "$commit"]
    c.ack(ids[1])
    _spin(c)
    commits = [e for e in emitted if e[0] == "$commit"]
    assert [e[1] for e in commits] == [1]                  # one commit at a time, txid 1
    assert not [e for e in emitted if e[0] == "$success"]
    c.ack(commits[0][2])                                   # every committer wrote txid 1
    assert emitted[-1] == ("$success", 1, None)            # untracked, before commit 2
    _spin(c)
    commits = [e for e in emitted if e[0] == "$commit"]
    assert [e[1] for e in commits] == [1, 2]
    c.fail(ids[3])                                         # 3 fails: replayed, new attempt
    c.ack(commits[1][2])
    emitted.clear()
    _spin(c)
    again = [e for e in emitted if e[0] == "$batch"]
    assert [e[1] for e in again][:1] == [3] and again[0][2] != ids[3]
    c.ack(ids[3])                                          # the old attempt's ack is ignored
    _spin(c)
    assert not [e for e in emitted if e[0] == "$commit"]
    c.close()


def test_a_restarted_coordinator_continues_after_the_committed_txid() -> None:
    namespace = uuid.uuid4().hex
    c, emitted = _coordinator(namespace, pending=1)
    _spin(c)
    c.ack(emitted[-1][2])
    _spin(c)
    c.ack(emitted[-1][2])                                  # txid 1 committed
    first_attempt = emitted[0][2][2]
    keep, _ = _coordinator(namespace)                      # holds the namespace's tree
    c.close()
    c2, emitted2 = _coordinator(namespace, pending=1)
    _spin(c2)
    assert emitted2[0][:2] == ("$batch", 2)
    assert emitted2[0][2][2] > first_attempt
    c2.close()
    keep.close()


@pytest.mark.parametrize("outlives", [True, False])
def test_a_run_after_a_kill_resumes_only_when_a_state_outlived_the_topology(
        outlives: bool) -> None:
    """A record the run before left (as it was killed) is resumed by a new run of the
    topology when one of the group's states outlives it (Redis); when none does (memory),
    the new run drops it and its spouts' metadata and starts at txid 1."""
    namespace = uuid.uuid4().hex
    conf = {"squall.state": "memory", "squall.state.memory.namespace": namespace}
    store = drivers.driver("state", conf)
    store.start()                                          # holds the namespace's tree
    c, emitted = _coordinator(namespace, pending=1, topology_id="coord-test-1-1",
                              outlives=outlives)
    _spin(c)
    c.ack(emitted[-1][2])
    _spin(c)
    c.ack(emitted[-1][2])                                  # txid 1 committed
    store.put("/trident/coord-test/spouts/s/p0", b'{"1": {"offset": 3}}')
    c.close()
    again, emitted_again = _coordinator(namespace, pending=1, topology_id="coord-test-1-1",
                                        outlives=outlives)
    _spin(again)
    assert emitted_again[0][:2] == ("$batch", 2)           # a restart of the same run
    again.close()
    c2, emitted2 = _coordinator(namespace, pending=1, topology_id="coord-test-2-9",
                                outlives=outlives)
    _spin(c2)
    assert emitted2[0][:2] == ("$batch", 2 if outlives else 1)
    assert store.exists("/trident/coord-test/spouts/s") is outlives
    c2.close()
    store.close()


def test_the_emit_interval_spaces_new_batches() -> None:
    c, emitted = _coordinator(uuid.uuid4().hex, pending=3, interval_ms=60_000)
    _spin(c, 20)
    assert [e[1] for e in emitted] == [1]          # room for 3, but one per interval
    c.close()


def _batches(emitted: list[Any]) -> list[tuple[int, Any]]:
    """(txid, partition info) of each ``$batch`` emitted."""
    return [(e[1], e[3]["s"]) for e in emitted if e[0] == "$batch"]


def test_a_restarted_coordinator_replays_a_txid_with_the_partitions_it_had() -> None:
    namespace = uuid.uuid4().hex
    PARTITIONS[namespace] = ["p1"]
    keep, _ = _coordinator(namespace)                      # holds the namespace's tree
    c, emitted = _coordinator(namespace, pending=1, partitioned=True)
    _spin(c)
    assert _batches(emitted) == [(1, ["p1"])]
    PARTITIONS[namespace] = ["p2"]                         # while txid 1 is in flight
    c.close()                                              # its worker is killed
    c2, emitted2 = _coordinator(namespace, pending=1, partitioned=True)
    _spin(c2)
    assert _batches(emitted2) == [(1, ["p1"])]             # the same rows again
    c2.ack(emitted2[-1][2])
    _spin(c2)
    c2.ack(emitted2[-1][2])                                # txid 1 committed
    _spin(c2)
    assert _batches(emitted2) == [(1, ["p1"]), (2, ["p2"])]
    c2.close()
    c3, emitted3 = _coordinator(namespace, pending=1, partitioned=True)
    _spin(c3)
    assert _batches(emitted3) == [(2, ["p2"])]             # txid 1's partitions forgotten
    c3.close()
    keep.close()


def test_a_batch_with_other_partitions_starts_once_the_batches_in_flight_committed() -> None:
    namespace = uuid.uuid4().hex
    PARTITIONS[namespace] = ["p1", "p2"]
    c, emitted = _coordinator(namespace, pending=3, partitioned=True)
    c.next_tuple()
    c.next_tuple()
    assert _batches(emitted) == [(1, ["p1", "p2"]), (2, ["p1", "p2"])]
    PARTITIONS[namespace] = ["a0", "p1", "p2"]             # p1 and p2 change task
    _spin(c)
    assert len(_batches(emitted)) == 2                     # room for one more, but it waits
    ids = {e[1]: e[2] for e in emitted if e[0] == "$batch"}
    c.ack(ids[1])
    c.ack(ids[2])
    _spin(c)
    c.ack([e for e in emitted if e[0] == "$commit"][-1][2])    # txid 1 committed
    _spin(c)
    assert len(_batches(emitted)) == 2
    c.ack([e for e in emitted if e[0] == "$commit"][-1][2])    # txid 2 committed
    _spin(c)
    assert _batches(emitted)[2:] == [(t, ["a0", "p1", "p2"]) for t in (3, 4, 5)]
    c.close()
