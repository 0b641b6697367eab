"""System tuples are not the user's traffic: a bolt's tick tuples and the checkpoint tuples of
a stateful topology reach the bolt (``process_tick``, the checkpoint's actions) but count in
none of the component's executed, acked, failed, emitted or transferred tuples, nor in its
execute latency. Those counts are what ``get_topology_info``, the UI, ``squall list`` /
``monitor`` and the metrics consumers' ``__execute-count`` ... show."""
from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

import pytest

from squall import Bolt, LocalCluster, Spout, StatefulBolt, TopologyBuilder
from squall.testing import wait_until

N = 20


class Twenty(Spout):
    """Emits ``N`` tracked tuples ``(i,)``, then nothing."""

    outputs = ["n"]
    acked: ClassVar[set[int]] = set()

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < N:
            self.emit([self.i], tup_id=self.i)
            self.i += 1

    def ack(self, tup_id: Any) -> None:
        Twenty.acked.add(tup_id)


class Ticking(Bolt):
    """Counts its ticks. Each takes 80 ms, which must not show in the execute latency (less
    than the tick interval, so a thread's pass over its queue ends after each)."""

    ticks: ClassVar[int] = 0
    lock = threading.Lock()

    def process(self, tup: Any) -> None:
        pass

    def process_tick(self, tup: Any) -> None:
        time.sleep(0.08)
        with Ticking.lock:
            Ticking.ticks += 1


class TickingOnItsThread(Ticking):
    dedicated_thread = True


class TickingBatches(Ticking):
    process = Bolt.process         # type: ignore[assignment]

    def process_batch(self, tuples: Any) -> None:
        pass


class TickingLazyBatches(TickingBatches):
    lazy_batch = True


@pytest.fixture(autouse=True)
def _reset() -> None:
    Twenty.acked.clear()
    Ticking.ticks = 0


def ticks_since(start: int, more: int) -> bool:
    with Ticking.lock:
        return Ticking.ticks >= start + more


@pytest.mark.parametrize("bolt", [Ticking, TickingOnItsThread, TickingBatches,
                                  TickingLazyBatches],
                         ids=["loop", "own-thread", "batch", "lazy-batch"])
@pytest.mark.parametrize("ackers", [None, 0], ids=["ackers", "no-ackers"])
def test_tick_tuples_count_in_no_user_count(cluster: LocalCluster, bolt: type[Ticking],
                                            ackers: int | None) -> None:
    b = TopologyBuilder()
    b.set_spout("src", Twenty)
    b.set_bolt("idle", bolt).shuffle_grouping("src").add_config(
        "topology.tick.tuple.freq.secs", 0.1)
    cluster.submit_topology("ticks", {"topology.acker.executors": ackers},
                            b.create_topology())

    def idle() -> dict[str, Any]:
        return cluster.get_topology_info("ticks")["components"]["idle"]

    wait_until(lambda: idle()["acked"] == N, timeout=20,
               message=lambda: f"idle acked {idle()['acked']} of {N}")
    with Ticking.lock:
        start = Ticking.ticks
    wait_until(lambda: ticks_since(start, 5), timeout=20, message="no tick tuples arrive")
    comp = idle()
    assert (comp["executed"], comp["acked"], comp["failed"]) == (N, N, 0), comp
    if ackers is None:
        assert Twenty.acked == set(range(N))
    # 80 ms a tick, next to nothing a tuple: the ticks' time is not in the execute latency
    # (it was over 16 ms a tuple with them)
    for ex in cluster.get_topology_info("ticks")["executors"]:
        if ex["component"] == "idle":
            assert ex["execute_latency_ms"] < 8, ex


class Split(Bolt):
    outputs = ["n"]

    def process(self, tup: Any) -> None:
        self.emit([tup.values[0]])
        self.emit([tup.values[0] + 100])


class Store(StatefulBolt):
    """Stores what it gets and never emits (its checkpoint stream is squall's)."""

    outputs = ["n"]

    def init_state(self, state: Any) -> None:
        self.state = state

    def process(self, tup: Any) -> None:
        self.state.put(tup.values[0], 1)


class TickingStore(Store):
    ticks: ClassVar[int] = 0

    def process_tick(self, tup: Any) -> None:
        TickingStore.ticks += 1


def test_checkpoint_tuples_count_in_no_user_count(cluster: LocalCluster) -> None:
    TickingStore.ticks = 0
    b = TopologyBuilder()
    b.set_spout("src", Twenty)
    b.set_bolt("split", Split, parallelism=2).shuffle_grouping("src")
    b.set_bolt("store", TickingStore, parallelism=2).shuffle_grouping("split").add_config(
        "topology.tick.tuple.freq.secs", 0.1)
    cluster.submit_topology("ckpt", {"topology.state.checkpoint.interval.ms": 100},
                            b.create_topology())

    def info() -> dict[str, Any]:
        return cluster.get_topology_info("ckpt")

    wait_until(lambda: Twenty.acked == set(range(N)), timeout=30,
               message=lambda: f"acked {sorted(Twenty.acked)}")
    # checkpoints keep flowing through split and store (each one emitted, acked, and for
    # store prepared and committed) after the last input committed
    checkpoint = info()["components"]["__checkpoint"]["emitted"]
    wait_until(lambda: info()["components"]["__checkpoint"]["emitted"] >= checkpoint + 6,
               timeout=20, message="no further checkpoints")
    assert TickingStore.ticks
    comps = info()["components"]
    got = {cid: {k: comps[cid][k] for k in ("executed", "acked", "failed", "emitted",
                                            "transferred")} for cid in ("split", "store")}
    assert got == {
        "split": {"executed": N, "acked": N, "failed": 0, "emitted": 2 * N,
                  "transferred": 2 * N},
        "store": {"executed": 2 * N, "acked": 2 * N, "failed": 0, "emitted": 0,
                  "transferred": 0}}


class SettlingItsTicks(Bolt):
    """Acks (or fails, ``app.tick`` "fail") each tick tuple it gets, as Storm bolts do; acks
    its data tuples itself when ``auto_ack`` is off."""

    ticks: ClassVar[int] = 0

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.settle = self.fail if conf.get("app.tick") == "fail" else self.ack

    def process(self, tup: Any) -> None:
        if not self.auto_ack:
            self.ack(tup)

    def process_tick(self, tup: Any) -> None:
        self.settle(tup)
        SettlingItsTicks.ticks += 1


class SettlingItsTicksItself(SettlingItsTicks):
    auto_ack = False


class SettlingItsTicksOnItsThread(SettlingItsTicks):
    dedicated_thread = True


@pytest.mark.parametrize("bolt", [SettlingItsTicks, SettlingItsTicksItself,
                                  SettlingItsTicksOnItsThread],
                         ids=["auto-ack", "acks-itself", "own-thread"])
@pytest.mark.parametrize("settle", ["ack", "fail"])
@pytest.mark.parametrize("ackers", [None, 0], ids=["ackers", "no-ackers"])
def test_a_bolts_ack_or_fail_of_a_tick_counts_nothing(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture, bolt: type[SettlingItsTicks],
        settle: str, ackers: int | None) -> None:
    # a tick is in no tree: acking or failing it (as Storm bolts do) is allowed, silent,
    # and the bolt's acked and failed counts are of its data tuples only
    SettlingItsTicks.ticks = 0
    b = TopologyBuilder()
    b.set_spout("src", Twenty)
    b.set_bolt("settles", bolt).shuffle_grouping("src").add_config(
        "topology.tick.tuple.freq.secs", 0.05)
    cluster.submit_topology("settles", {"topology.acker.executors": ackers,
                                        "app.tick": settle}, b.create_topology())

    def comp() -> dict[str, Any]:
        return cluster.get_topology_info("settles")["components"]["settles"]

    wait_until(lambda: comp()["executed"] == N and SettlingItsTicks.ticks >= 5, timeout=20,
               message=lambda: f"executed {comp()['executed']}, {SettlingItsTicks.ticks} ticks")
    start = SettlingItsTicks.ticks
    wait_until(lambda: SettlingItsTicks.ticks >= start + 3, timeout=20, message="no more ticks")
    got = comp()
    assert (got["executed"], got["acked"], got["failed"]) == (N, N, 0), got
    if ackers is None:
        wait_until(lambda: Twenty.acked == set(range(N)), timeout=20)
    assert not [r for r in caplog.records if "acked or failed already" in r.getMessage()]
    assert not cluster.get_topology_info("settles")["errors"]


class StoreSettlingItsTicks(Store):
    """A stateful bolt that acks (or fails, ``app.tick`` "fail") each tick it gets."""

    ticks: ClassVar[int] = 0

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.settle = self.fail if conf.get("app.tick") == "fail" else self.ack

    def process_tick(self, tup: Any) -> None:
        self.settle(tup)
        StoreSettlingItsTicks.ticks += 1


@pytest.mark.parametrize("settle", ["ack", "fail"])
def test_a_stateful_bolts_ack_or_fail_of_a_tick_keeps_its_state_and_counts_nothing(
        cluster: LocalCluster, settle: str) -> None:
    # a failed tick dropped the state's changes since the last checkpoint (its inputs were
    # then failed and replayed), an acked one counted as an acked input
    StoreSettlingItsTicks.ticks = 0
    b = TopologyBuilder()
    b.set_spout("src", Twenty)
    b.set_bolt("store", StoreSettlingItsTicks).shuffle_grouping("src").add_config(
        "topology.tick.tuple.freq.secs", 0.05)
    cluster.submit_topology("stateticks", {"topology.state.checkpoint.interval.ms": 100,
                                           "app.tick": settle}, b.create_topology())

    def comp() -> dict[str, Any]:
        return cluster.get_topology_info("stateticks")["components"]["store"]

    wait_until(lambda: Twenty.acked == set(range(N)) and StoreSettlingItsTicks.ticks >= 5,
               timeout=30, message=lambda: f"acked {sorted(Twenty.acked)}, "
                                           f"{StoreSettlingItsTicks.ticks} ticks")
    start = StoreSettlingItsTicks.ticks
    wait_until(lambda: StoreSettlingItsTicks.ticks >= start + 3, timeout=20,
               message="no more ticks")
    got = comp()
    assert (got["executed"], got["acked"], got["failed"]) == (N, N, 0), got
    assert not cluster.get_topology_info("stateticks")["errors"]
