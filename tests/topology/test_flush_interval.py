"""``topology.batch.flush.interval.millis``: a busy worker sends what it holds for another
worker once it has waited that long (or the batch is full), not after every loop pass; a worker
with nothing else to do sends at once. Unset, the interval is 0 unless the topology's workers
on a host outnumber its cores."""
from __future__ import annotations

import threading
import time
from typing import Any

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.runtime.wire.outbox import OVERSUBSCRIBED_FLUSH_SECS, flush_interval
from squall.runtime.worker import usable_cores
from squall.testing import wait_until

LOCK = threading.Lock()
GOT: list[int] = []


class Steady(Spout):
    """Emits one number per ``next_tuple`` until ``test.count``, then nothing."""
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i, self.count = 0, conf["test.count"]

    def next_tuple(self) -> None:
        if self.i < self.count:
            self.emit([self.i])
            self.i += 1


class Collect(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            GOT.append(tup["n"])


def _topology(collectors: int = 1) -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", Steady)
    # global grouping and 2 workers: the spout's worker (the lower task) sends every tuple to
    # the bolt's (lowest) task's worker, which LocalCluster places on another port
    b.set_bolt("collect", Collect, collectors).global_grouping("numbers")
    return b.create_topology()


def _conf(count: int, interval_ms: int) -> dict[str, Any]:
    return {"topology.workers": 2, "topology.acker.executors": 0, "test.count": count,
            "topology.batch.flush.interval.millis": interval_ms}


def _sender(cluster: LocalCluster, name: str) -> Any:
    workers = cluster.workers(name)
    return max(workers, key=lambda w: w.outbox.sent_batches)


def test_a_busy_worker_sends_at_most_one_batch_per_interval_unless_full() -> None:
    GOT.clear()
    count, interval_ms = 30_000, 50
    with LocalCluster() as cluster:
        cluster.submit_topology("flush", _conf(count, interval_ms), _topology())
        start = time.monotonic()
        wait_until(lambda: len(GOT) == count, timeout=30,
                   message=lambda: f"{len(GOT)} of {count} arrived")
        elapsed = time.monotonic() - start
        sender = _sender(cluster, "flush")
        full = count // sender.outbox.run_cap     # batches sent because a run was full
        bound = elapsed / (interval_ms / 1000.0) + full + 3
        # the spout keeps its worker busy, so with a flush every pass there would be one
        # batch per pass (thousands); with the interval, a few per 50 ms at most
        assert sender.outbox.sent_batches <= bound, (sender.outbox.sent_batches, bound)
    assert GOT == list(range(count))


def test_an_idle_worker_sends_at_once_whatever_the_interval() -> None:
    GOT.clear()
    with LocalCluster() as cluster:
        # one tuple, then the spout's worker has nothing to do: it must not hold the tuple for
        # the (one minute) interval
        cluster.submit_topology("idle", _conf(1, 60_000), _topology())
        wait_until(lambda: GOT == [0], timeout=10, message=lambda: f"got {GOT}")


def test_interval_zero_sends_every_pass() -> None:
    GOT.clear()
    count = 5_000
    with LocalCluster() as cluster:
        cluster.submit_topology("zero", _conf(count, 0), _topology())
        wait_until(lambda: len(GOT) == count, timeout=30,
                   message=lambda: f"{len(GOT)} of {count} arrived")
        sender = _sender(cluster, "zero")
        # the spout emits about one batch (100 tuples) per pass, and each pass sends it
        assert sender.outbox.sent_batches > count // sender.outbox.run_cap + 10
    assert GOT == list(range(count))


def test_unset_a_worker_holds_batches_only_while_its_hosts_cores_are_outnumbered() -> None:
    # more of the topology's workers on this host than it has cores: they wait for a core
    # anyway, so each holds what it sends up to OVERSUBSCRIBED_FLUSH_SECS; as many as the cores
    # (or fewer): sent every pass, as with 0
    cores = usable_cores()
    for workers, expected in ((cores + 1, OVERSUBSCRIBED_FLUSH_SECS),
                              (min(2, cores), 0.0)):
        GOT.clear()
        conf = _conf(2_000, 0)
        del conf["topology.batch.flush.interval.millis"]
        conf["topology.workers"] = workers
        with LocalCluster() as cluster:
            cluster.submit_topology("auto", conf, _topology(collectors=workers))
            wait_until(lambda: len(GOT) == 2_000, timeout=30,
                       message=lambda: f"{len(GOT)} of 2000 arrived")
            assert [w.outbox.flush_interval for w in cluster.workers("auto")] == \
                [expected] * workers
        assert GOT == list(range(2_000))


def test_the_interval_a_topology_sets_holds_however_many_workers_share_the_cores() -> None:
    assert flush_interval(0, 12, 2) == 0.0
    assert flush_interval(20, 1, 16) == 0.02
    assert flush_interval(None, 3, 2) == OVERSUBSCRIBED_FLUSH_SECS
    assert flush_interval(None, 2, 2) == flush_interval(None, 1, 2) == 0.0
