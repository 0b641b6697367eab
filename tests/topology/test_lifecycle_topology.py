"""Ticks, errors, process_batch, activation, rebalance and config precedence in LocalCluster."""
from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import Any

import pytest

from squall import Bolt, ConfigError, LocalCluster, Spout, TopologyBuilder, TopologyError
from squall.runtime.loop import TIMER_SECS
from squall.testing import complete_topology, wait_until

LOCK = threading.Lock()
EVENTS: list[Any] = []
TICKS: list[tuple[str, float, bool]] = []
TICKS_FROM: list[tuple[str, str, int, Any]] = []
PROCESSED: list[Any] = []
ACKED: list[Any] = []
FAILED: list[Any] = []
CONFS: dict[str, dict[str, Any]] = {}
CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _clear() -> None:
    for x in (EVENTS, TICKS, TICKS_FROM, PROCESSED, ACKED, FAILED, CONFS, CALLS):
        x.clear()


class Numbers(Spout):
    """Emits 0, 1, 2, ... (ids = values) up to ``app.n`` (default: forever)."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.limit = conf.get("app.n")
        self.i = 0
        CONFS[context.component_id] = dict(conf)

    def next_tuple(self) -> None:
        CALLS["next_tuple"] += 1
        if self.limit is None or self.i < self.limit:
            self.emit([self.i], tup_id=self.i)
            self.i += 1

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)

    def activate(self) -> None:
        with LOCK:
            EVENTS.append("activate")

    def deactivate(self) -> None:
        with LOCK:
            EVENTS.append("deactivate")


class Ticking(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.cid = context.component_id

    def process(self, tup: Any) -> None:
        assert not tup.is_tick
        with LOCK:
            PROCESSED.append((self.cid, tup["n"]))

    def process_tick(self, tup: Any) -> None:
        with LOCK:
            TICKS.append((self.cid, time.monotonic(), tup.is_tick))


def test_ticks_at_configured_frequency(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 5})
    b.set_bolt("ticked", Ticking, config={"topology.tick.tuple.freq.secs": 1}
               ).shuffle_grouping("numbers")
    b.set_bolt("plain", Ticking).shuffle_grouping("numbers")
    start = time.monotonic()
    cluster.submit_topology("ticks", {}, b.create_topology())
    wait_until(lambda: len(TICKS) >= 2, timeout=5)
    times = [t for cid, t, _ in TICKS]
    assert all(cid == "ticked" and is_tick for cid, _, is_tick in TICKS)
    assert 0.8 <= times[0] - start <= 1.6
    assert 0.8 <= times[1] - times[0] <= 1.5
    assert sorted(n for cid, n in PROCESSED if cid == "ticked") == list(range(5))


class TickSource(Bolt):
    def process(self, tup: Any) -> None:
        pass

    def process_tick(self, tup: Any) -> None:
        with LOCK:
            TICKS_FROM.append((tup.component, tup.stream, tup.task, tup.values))


def test_a_tick_comes_from_the_system_task_minus_1(cluster: LocalCluster) -> None:
    # as Storm's: no task of the topology has id -1 (a tick from task 0 looked like one of
    # the first component's tuples to a bolt telling its inputs apart by task)
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 5})
    b.set_bolt("ticked", TickSource, config={"topology.tick.tuple.freq.secs": 0.1}
               ).shuffle_grouping("numbers")
    cluster.submit_topology("tick-source", {}, b.create_topology())
    wait_until(lambda: len(TICKS_FROM) >= 2, timeout=5, message=lambda: repr(TICKS_FROM))
    with LOCK:
        assert set(TICKS_FROM) == {("__system", "__tick", -1, (0.1,))}


def test_a_components_config_of_the_wrong_type_is_refused_at_submit(
        cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 5})
    b.set_bolt("ticked", Ticking, config={"topology.tick.tuple.freq.secs": "often"}
               ).shuffle_grouping("numbers")
    with pytest.raises(ConfigError, match="component 'ticked': config key "
                                          "'topology.tick.tuple.freq.secs' must be"):
        cluster.submit_topology("bad-ticks", {}, b.create_topology())
    assert "bad-ticks" not in cluster.topologies()


@pytest.mark.parametrize("ackers", [0, 1])
def test_ticks_between_tuples_reach_process_tick_only(cluster: LocalCluster, ackers: int) -> None:
    # a spout that never stops: ticks land in a queue full of tuples, with acking on and off
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("ticked", Ticking, config={"topology.tick.tuple.freq.secs": 0.2}
               ).shuffle_grouping("numbers")
    cluster.submit_topology("busy-ticks", {"topology.acker.executors": ackers,
                                           "topology.max.spout.pending": 500},
                            b.create_topology())
    wait_until(lambda: len(TICKS) >= 3 and len(PROCESSED) >= 1000, timeout=10)
    assert all(cid == "ticked" and is_tick for cid, _, is_tick in TICKS)
    assert cluster.get_topology_info("busy-ticks")["errors"].get("ticked", []) == []


class Picky(Bolt):
    """Raises on multiples of 4; processes the rest."""

    def process(self, tup: Any) -> None:
        if tup["n"] % 4 == 0:
            raise ValueError(f"no multiples of four: {tup['n']}")
        with LOCK:
            PROCESSED.append(tup["n"])


def test_exception_fails_tuple_reports_error_and_executor_goes_on(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 20})
    b.set_bolt("picky", Picky).shuffle_grouping("numbers")
    cluster.submit_topology("errors", {}, b.create_topology())
    wait_until(lambda: len(ACKED) + len(FAILED) == 20)
    assert sorted(FAILED) == list(range(0, 20, 4))
    assert sorted(ACKED) == sorted(PROCESSED) == [n for n in range(20) if n % 4]
    info = cluster.get_topology_info("errors")
    errors = info["errors"]["picky"]
    assert 1 <= len(errors) <= 10
    assert "ValueError: no multiples of four" in errors[-1]["error"]
    assert errors[-1]["component"] == "picky"
    assert info["components"]["picky"]["failed"] == 5
    assert all(w.is_alive() for w in cluster.workers("errors"))


class Positional(Bolt):
    """Passes the emit options by position (refused), then by keyword."""

    outputs = ["n"]

    def process(self, tup: Any) -> None:
        for call in (lambda: self.emit([tup["n"]], "default", [tup]),
                     lambda: self.emit([tup["n"]], "default", None, None, None, True),
                     lambda: self.emit_many([[tup["n"]]], "default", [tup])):
            try:
                call()
            except TypeError as exc:
                with LOCK:
                    EVENTS.append(("refused", str(exc)))
        self.emit([tup["n"]], "default", anchors=[tup])


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            PROCESSED.append(tup["n"])


@pytest.mark.parametrize("acking", [False, True])
@pytest.mark.parametrize("sinks,threaded", [(1, False), (2, False), (2, True)])
def test_emit_options_are_keyword_only(cluster: LocalCluster, acking: bool, sinks: int,
                                       threaded: bool) -> None:
    # every emit path (one local target, a fields grouping over two, the acking path, a
    # component on its own thread) refuses options passed by position with a TypeError the
    # component can catch, and goes on
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 10})
    b.set_bolt("positional", Positional, config={
        "topology.executor.dedicated.thread": threaded}).shuffle_grouping("numbers")
    b.set_bolt("sink", Sink, sinks).fields_grouping("positional", ["n"])
    cluster.submit_topology("kw", {"topology.acker.executors": 1 if acking else 0},
                            b.create_topology())
    wait_until(lambda: len(PROCESSED) == 10 and (not acking or len(ACKED) == 10))
    assert sorted(PROCESSED) == list(range(10))
    refused = [msg for kind, msg in (e for e in EVENTS if e[0] == "refused")]
    assert len(refused) == 30
    assert refused.count("emit() takes at most 2 positional arguments (values and stream); "
                         "pass anchors, tup_id, direct_task and need_task_ids by keyword") == 20
    assert refused.count("emit_many() takes at most 2 positional arguments (values_list and "
                         "stream); pass anchors by keyword") == 10
    assert not FAILED


def test_without_ackers_an_exception_fails_only_its_tuple(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 20})
    b.set_bolt("picky", Picky).shuffle_grouping("numbers")
    cluster.submit_topology("errors-untracked", {"topology.acker.executors": 0},
                            b.create_topology())
    wait_until(lambda: cluster.get_topology_info("errors-untracked")["components"]["picky"]
               ["failed"] == 5)
    wait_until(lambda: len(PROCESSED) == 15)
    assert sorted(PROCESSED) == [n for n in range(20) if n % 4]
    info = cluster.get_topology_info("errors-untracked")
    assert "ValueError: no multiples of four" in info["errors"]["picky"][-1]["error"]
    wait_until(lambda: cluster.get_topology_info("errors-untracked")["components"]["picky"]
               ["acked"] == 15)


def test_die_on_error_stops_the_worker(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 20})
    b.set_bolt("picky", Picky).shuffle_grouping("numbers")
    cluster.submit_topology("die", {"topology.worker.die.on.error": True}, b.create_topology())
    worker = cluster.workers("die")[0]
    wait_until(lambda: not worker.is_alive(), timeout=5)
    assert "ValueError" in cluster.get_topology_info("die")["errors"]["picky"][0]["error"]
    # like a supervisor, the cluster replaces the dead worker with a fresh one
    wait_until(lambda: cluster.workers("die")[0] is not worker, timeout=5)
    assert cluster.workers("die")[0].executor_ranges == worker.executor_ranges


def test_a_beat_the_state_store_refuses_is_said_once_and_monitoring_goes_on(
        cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    # a state store taking values of 12 kB: a worker of 40 bolt executors beats more than that
    monkeypatch.setattr("squall.state._paths.MAX_VALUE_BYTES", 12_000)
    caplog.set_level("WARNING", logger="squall.runtime.local_cluster")
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 20})
    b.set_bolt("picky", Picky, parallelism=40).shuffle_grouping("numbers")
    wide = cluster.submit_topology("wide", {}, b.create_topology())
    wait_until(lambda: cluster.state.errors(wide).get("picky"), timeout=10)
    # another topology's dead worker is still replaced, its errors still recorded
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 20})
    b.set_bolt("picky", Picky).shuffle_grouping("numbers")
    die = cluster.submit_topology("die", {"topology.worker.die.on.error": True},
                                  b.create_topology())
    worker = cluster.workers("die")[0]
    wait_until(lambda: cluster.workers("die")[0] is not worker, timeout=10)
    wait_until(lambda: cluster.state.errors(die).get("picky"), timeout=10)
    assert not cluster.state.worker_beats(wide)
    lines = [r.getMessage() for r in caplog.records if "cannot record" in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("cannot record the beat of worker ") and \
        "of topology wide: " in lines[0], lines


def test_cluster_state_in_the_embedded_store(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 20})
    b.set_bolt("picky", Picky, parallelism=2).shuffle_grouping("numbers")
    tid = cluster.submit_topology("stateful", {"topology.workers": 2}, b.create_topology())
    storm = cluster.state.get_storm(tid)
    assert storm is not None
    assert storm["name"] == "stateful" and storm["status"] == "active"
    assert storm["component_executors"] == {"__acker": 2, "numbers": 1, "picky": 2}
    assignment = cluster.state.get_assignment(tid)
    assert assignment is not None
    executors = cluster.get_topology("stateful").all_executors()
    assert sorted(assignment["executor_node_port"]) == sorted(f"[{s}, {e}]" for s, e in executors)
    assert {tuple(v) for v in assignment["executor_node_port"].values()} == {
        ("local", w.port) for w in cluster.workers("stateful")}
    cluster.deactivate("stateful")
    assert cluster.state.get_storm(tid)["status"] == "inactive"
    wait_until(lambda: cluster.state.errors(tid).get("picky"), timeout=10)
    wait_until(lambda: len(cluster.state.worker_beats(tid)) == 2, timeout=10)
    cluster.kill_topology("stateful")
    assert cluster.state.get_storm(tid) is None and cluster.state.get_assignment(tid) is None


class Batch(Bolt):
    """process_batch: raises for a batch holding 'boom'; forwards the rest anchored."""

    outputs = ["n", "word"]

    def process_batch(self, tuples: list[Any]) -> None:
        words = [t["word"] for t in tuples]
        with LOCK:
            EVENTS.append(("batch", [t["n"] for t in tuples], "boom" in words))
        if "boom" in words:
            raise RuntimeError("boom in batch")
        for t in tuples:
            self.emit(list(t.values), anchors=[t])
            self.emit(list(t.values))                      # unanchored copy


class FailWords(Bolt):
    def process(self, tup: Any) -> None:
        if tup["word"] == "fail":
            self.fail(tup)


class Lines(Spout):
    outputs = ["n", "word"]


def test_process_batch_acks_per_tuple_and_fails_all_when_it_raises() -> None:
    b = TopologyBuilder()
    b.set_spout("src", Lines)
    b.set_bolt("batch", Batch).shuffle_grouping("src")
    b.set_bolt("check", FailWords).shuffle_grouping("batch")
    words = ["ok", "fail", "ok", "boom", "ok"] * 40
    rows = [[i, w] for i, w in enumerate(words)]
    result = complete_topology(b.create_topology(), {"src": rows},
                               conf={"topology.transfer.batch.size": 7})
    batches = [e for e in EVENTS if e[0] == "batch"]
    assert sorted(n for _, ns, _ in batches for n in ns) == list(range(200))
    assert max(len(ns) for _, ns, _ in batches) <= 7
    in_raising = {n for _, ns, raised in batches if raised for n in ns}
    failed_downstream = {i for i, w in enumerate(words) if w == "fail"} - in_raising
    assert result.failed == in_raising | failed_downstream
    assert result.acked == set(range(200)) - result.failed
    assert len(result.tuples("batch")) == 2 * (200 - len(in_raising))


def test_deactivate_and_activate(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("ticked", Ticking).shuffle_grouping("numbers")
    cluster.submit_topology("act", {}, b.create_topology())
    wait_until(lambda: EVENTS == ["activate"] and len(ACKED) > 50)
    cluster.deactivate("act")
    assert EVENTS == ["activate", "deactivate"]
    calls = CALLS["next_tuple"]
    for _ in range(3):            # round trips through the worker loop, which keeps running
        cluster.deactivate("act")
        cluster.get_topology_info("act")
    assert CALLS["next_tuple"] == calls
    assert cluster.get_topology_info("act")["status"] == "inactive"
    cluster.activate("act")
    assert EVENTS == ["activate", "deactivate", "activate"]
    wait_until(lambda: CALLS["next_tuple"] > calls + 50)


class Idle(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        CALLS["idle"] += 1


def test_idle_spout_keeps_being_called(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("idle", Idle)
    cluster.submit_topology("idle", {}, b.create_topology())
    wait_until(lambda: CALLS["idle"] > 30, timeout=5)


def test_an_idle_worker_without_an_active_spout_wakes_only_for_its_timers(
        cluster: LocalCluster) -> None:
    # an active spout on the loop is asked again every millisecond; with none (here: the
    # topology deactivated), an idle worker's loop waits for its next timer instead
    b = TopologyBuilder()
    b.set_spout("idle", Idle)
    cluster.submit_topology("quiet", {"topology.workers": 2}, b.create_topology())
    wait_until(lambda: CALLS["idle"] > 30, timeout=5)
    cluster.deactivate("quiet")
    rates = _idle_waits_per_second(cluster.workers("quiet"))
    assert max(rates) <= 1.5 / TIMER_SECS, f"idle waits per second {rates}"


GATE = threading.Event()


class Gated(Bolt):
    """Takes each tuple on a thread of its own once GATE is open, and acks it."""

    dedicated_thread = True

    def process(self, tup: Any) -> None:
        GATE.wait(10)
        self.ack(tup)


def _idle_waits_per_second(workers: list[Any]) -> list[float]:
    passes = [w.passes for w in workers]
    waits = [w.counters()["idle_waits"] for w in workers]
    started = time.monotonic()
    wait_until(lambda: all(w.passes >= p + 40 for w, p in zip(workers, passes)), timeout=10)
    took = time.monotonic() - started
    return [(w.counters()["idle_waits"] - n) / took for w, n in zip(workers, waits)]


@pytest.mark.parametrize("held_by", ["max.spout.pending", "backpressure"])
def test_a_held_spout_does_not_wake_its_idle_worker_every_millisecond(
        cluster: LocalCluster, held_by: str) -> None:
    # a spout that may not emit (max pending trees in flight, or a full queue downstream) is
    # not polled: what lets it go comes with a wake-up (a completion) or the loop's timers (a
    # queue drained on a component's own thread), so its idle worker waits for those
    GATE.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("gated", Gated).shuffle_grouping("numbers")
    conf: dict[str, Any] = ({"topology.max.spout.pending": 3}
                            if held_by == "max.spout.pending" else
                            {"topology.executor.receive.buffer.size": 50,
                             "topology.acker.executors": 0})
    cluster.submit_topology("held", conf, b.create_topology())
    worker, = cluster.workers("held")
    spout = next(ex for ex in worker.executors if ex.component_id == "numbers")
    try:
        wait_until(lambda: spout.waiting_for(time.monotonic()) == held_by, timeout=10)
        rates = _idle_waits_per_second([worker])
        assert max(rates) <= 1.5 / TIMER_SECS, f"idle waits per second {rates}"
        called = CALLS["next_tuple"]
    finally:
        GATE.set()
    # let go, the spout is called again
    wait_until(lambda: CALLS["next_tuple"] > called + 100, timeout=10)


class Tracked(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.task = context.task_id
        with LOCK:
            EVENTS.append(("init", self.task))

    def process(self, tup: Any) -> None:
        with LOCK:
            PROCESSED.append(self.task)

    def cleanup(self) -> None:
        with LOCK:
            EVENTS.append(("cleanup", self.task))


def test_rebalance_changes_executors_not_task_ids(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("tracked", Tracked, parallelism=1).set_num_tasks(4).shuffle_grouping("numbers")
    topo = b.create_topology()
    cluster.submit_topology("reb", {}, topo)
    tasks = cluster.get_topology("reb").tasks("tracked")
    assert tasks == topo.tasks("tracked") and len(tasks) == 4
    assert cluster.get_topology_info("reb")["components"]["tracked"]["executors"] == 1
    wait_until(lambda: len(set(PROCESSED)) == 4)
    cluster.rebalance("reb", executors={"tracked": 3}, wait=1)
    info = cluster.get_topology_info("reb")
    assert info["components"]["tracked"]["executors"] == 3
    assert info["components"]["tracked"]["tasks"] == 4
    assert cluster.get_topology("reb").tasks("tracked") == tasks
    assert sorted(len(range(s, e + 1)) for s, e in cluster.get_topology("reb")
                  .executors("tracked")) == [1, 1, 2]
    for task in tasks:        # each old instance stopped before its replacement started
        mine = [e[0] for e in EVENTS if e[1] == task]
        assert mine == ["init", "cleanup", "init"], (task, mine)
    count = len(PROCESSED)
    wait_until(lambda: len(PROCESSED) > count + 100)       # and tuples flow again
    with pytest.raises(Exception, match="nope"):
        cluster.rebalance("reb", executors={"nope": 2})


def test_max_task_parallelism_caps_the_users_components_not_the_ackers(
        cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, parallelism=3)
    b.set_bolt("tracked", Tracked, parallelism=2).set_num_tasks(6).shuffle_grouping("numbers")
    # a component's own setting beats the topology's, as in Storm
    b.set_bolt("own", Ticking, parallelism=4).shuffle_grouping("numbers").add_config(
        "topology.max.task.parallelism", 3)
    cluster.submit_topology("capped", {"topology.max.task.parallelism": 1,
                                       "topology.acker.executors": 2}, b.create_topology())
    topo = cluster.get_topology("capped")
    assert {c: (len(topo.executors(c)), len(topo.tasks(c)))
            for c in ("numbers", "tracked", "own", "__acker")} == \
        {"numbers": (1, 1), "tracked": (1, 1), "own": (3, 3), "__acker": (2, 2)}
    wait_until(lambda: len(ACKED) > 10, message="no acks")
    assert len(cluster.get_topology_info("capped")["executors"]) == 1 + 1 + 3 + 2
    cluster.rebalance("capped", executors={"tracked": 4})     # capped, not refused
    assert len(cluster.get_topology("capped").executors("tracked")) == 1


class FailsOnRebalance(Bolt):
    """The first initialize after ``BREAK`` is set raises (a rebalance's new instance)."""

    BREAK = threading.Event()

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        if self.BREAK.is_set():
            self.BREAK.clear()
            raise RuntimeError("cannot start now")

    def process(self, tup: Any) -> None:
        with LOCK:
            PROCESSED.append(tup["n"])


def _acking(cluster: LocalCluster, name: str) -> None:
    """Numbers into a FailsOnRebalance bolt, running and acking."""
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("work", FailsOnRebalance).shuffle_grouping("numbers")
    cluster.submit_topology(name, {}, b.create_topology())
    wait_until(lambda: len(ACKED) > 10)


@pytest.mark.parametrize("bad", [0, -1, "2", True, 1.5])
def test_a_bad_rebalance_is_refused_and_the_topology_keeps_running(cluster: LocalCluster,
                                                                  bad: Any) -> None:
    _acking(cluster, "badreb")
    with pytest.raises(TopologyError, match="num_workers must be an integer >= 1"):
        cluster.rebalance("badreb", num_workers=bad)
    info = cluster.get_topology_info("badreb")
    assert info["status"] == "active" and info["num_workers"] == 1
    count = len(ACKED)
    wait_until(lambda: len(ACKED) > count + 50, message="acking stopped")


def test_a_rebalance_whose_new_instances_fail_restarts_the_topology_as_it_was(
        cluster: LocalCluster) -> None:
    _acking(cluster, "failreb")
    FailsOnRebalance.BREAK.set()
    try:
        with pytest.raises(RuntimeError, match="cannot start now"):
            cluster.rebalance("failreb", executors={"work": 2})
    finally:
        FailsOnRebalance.BREAK.clear()
    info = cluster.get_topology_info("failreb")
    assert info["status"] == "active"
    assert info["components"]["work"]["executors"] == 1
    count = len(ACKED)
    wait_until(lambda: len(ACKED) > count + 50, message="acking stopped")


class InitOnce(Spout):
    """Records its initialize (raising where ``app.raise`` names its component) and close."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.cid = context.component_id
        if conf.get("app.raise") == self.cid:
            raise RuntimeError(f"{self.cid} cannot start")
        if conf.get("app.exit") == self.cid:
            sys.exit(3)
        if conf.get("app.interrupt") == self.cid:
            raise KeyboardInterrupt
        with LOCK:
            EVENTS.append(("initialized", self.cid))

    def close(self) -> None:
        with LOCK:
            EVENTS.append(("closed", self.cid))


class InitOnceBolt(Bolt):
    """As InitOnce, for a bolt (cleanup)."""

    outputs = ["n"]
    initialize = InitOnce.initialize

    def process(self, tup: Any) -> None:
        pass

    def cleanup(self) -> None:
        with LOCK:
            EVENTS.append(("closed", self.cid))


@pytest.mark.parametrize("raising", ["source", "first", "second"])
def test_a_failed_submit_cleans_up_only_the_components_whose_initialize_returned(
        raising: str) -> None:
    """A component whose initialize raised (or never ran) gets no close/cleanup: it was
    called on objects initialize never set up, and its error buried the real one."""
    b = TopologyBuilder()
    b.set_spout("source", InitOnce, 2)
    b.set_bolt("first", InitOnceBolt, 2).shuffle_grouping("source")
    b.set_bolt("second", InitOnceBolt).shuffle_grouping("first")
    with LocalCluster() as cluster:
        with pytest.raises(RuntimeError, match=f"{raising} cannot start"):
            cluster.submit_topology("broken", {"app.raise": raising}, b.create_topology())
        assert cluster.topologies() == []
    with LOCK:
        initialized = Counter(cid for what, cid in EVENTS if what == "initialized")
        closed = Counter(cid for what, cid in EVENTS if what == "closed")
    assert raising not in closed, EVENTS
    assert closed == initialized, EVENTS


def _init_once_topology() -> Any:
    b = TopologyBuilder()
    b.set_spout("source", InitOnce, 2)
    b.set_bolt("first", InitOnceBolt, 2).shuffle_grouping("source")
    return b.create_topology()


def test_sys_exit_in_initialize_fails_the_submit_with_one_error_naming_the_component() -> None:
    """Not the end of the caller's program: a TopologyError naming the component, its task and
    the line; the cluster runs on."""
    with LocalCluster() as cluster:
        with pytest.raises(TopologyError, match=(
                r"^topology 'exits' failed to start: component 'first' \(task \d+\) raised "
                r"SystemExit: 3 \(.*test_lifecycle_topology.py, line \d+\)$")):
            cluster.submit_topology("exits", {"app.exit": "first"}, _init_once_topology())
        assert cluster.topologies() == []
        cluster.submit_topology("fine", {}, _init_once_topology())
        assert cluster.topologies() == ["fine"]
    with LOCK:
        initialized = Counter(cid for what, cid in EVENTS if what == "initialized")
        closed = Counter(cid for what, cid in EVENTS if what == "closed")
    assert closed == initialized, EVENTS      # what started of "exits" was cleaned up


def test_a_keyboard_interrupt_from_initialize_is_a_ctrl_c_only_on_the_main_thread() -> None:
    """On the main thread it may be the user's Ctrl-C: it goes on up. On another thread it
    can be no signal: the component raised it, and the submit fails with a TopologyError."""
    with LocalCluster() as cluster:
        with pytest.raises(KeyboardInterrupt):
            cluster.submit_topology("main", {"app.interrupt": "source"},
                                    _init_once_topology())
        raised: list[BaseException] = []

        def submit() -> None:
            try:
                cluster.submit_topology("off", {"app.interrupt": "source"},
                                        _init_once_topology())
            except BaseException as exc:
                raised.append(exc)
        t = threading.Thread(target=submit)
        t.start()
        t.join(30)
        (exc,) = raised
        assert isinstance(exc, TopologyError), repr(exc)
        assert "failed to start: component 'source' (task " in str(exc) and \
            ") raised KeyboardInterrupt (" in str(exc), str(exc)
        assert cluster.topologies() == []


def test_a_shut_down_local_cluster_refuses_a_submit_and_shuts_down_once() -> None:
    cluster = LocalCluster()
    cluster.shutdown()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    with pytest.raises(TopologyError, match="this LocalCluster is shut down"):
        cluster.submit_topology("late", {}, b.create_topology())
    assert cluster.topologies() == []
    cluster.shutdown()                      # again: nothing to do, no error
    assert not [t for t in threading.enumerate() if t.name.startswith("squall-worker")]


class Blocked(Bolt):
    """Blocks in process until RELEASE (the test's end)."""

    RELEASE = threading.Event()

    def process(self, tup: Any) -> None:
        with LOCK:
            EVENTS.append("process")
        self.RELEASE.wait(60)
        with LOCK:
            EVENTS.append("process done")

    def cleanup(self) -> None:
        with LOCK:
            EVENTS.append("cleanup")


def test_leaving_with_a_bolt_blocked_in_process_is_prompt_and_skips_its_cleanup(
        caplog: Any) -> None:
    """The loop does not answer the deactivate: leaving waits LocalCluster's exit bound
    (2 s; it was 10 s, then 1 s more), and does not call cleanup beside the process call
    still running."""
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("blocked", Blocked).shuffle_grouping("numbers")
    Blocked.RELEASE.clear()
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("stuck", {}, b.create_topology())
            wait_until(lambda: "process" in EVENTS)
            start = time.monotonic()
        took = time.monotonic() - start
        assert took < 5, took               # EXIT_SECS, then half a second
        with LOCK:                          # still in process: no cleanup beside it
            assert "cleanup" not in EVENTS and "process done" not in EVENTS, EVENTS
        assert any("the cleanup of blocked" in r.getMessage() for r in caplog.records)
    finally:
        Blocked.RELEASE.set()


def test_complete_topology_warns_of_nothing(caplog: Any) -> None:
    """The keys it gives the spouts it stands in for are its own, not mistyped settings."""
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("work", ShowConf).shuffle_grouping("numbers")
    with caplog.at_level("WARNING"):
        result = complete_topology(b.create_topology(), sources={"numbers": [[1], [2]]})
    assert result.acked == {0, 1}
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


class Logging(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.log("ready", level="debug")

    def process(self, tup: Any) -> None:
        self.log(f"got {tup['n']}", level="warning")


def test_log_is_under_the_component_id_as_multilang_components_log(caplog: Any) -> None:
    """``squall set-log-level TOPO squall.component.<id>=DEBUG`` reaches a native
    component's ``log`` (it logged under its class name)."""
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("chatty", Logging).shuffle_grouping("numbers")
    with caplog.at_level("DEBUG", logger="squall.component.chatty"):
        complete_topology(b.create_topology(), sources={"numbers": [[7]]})
    mine = [(r.name, r.levelname, r.getMessage()) for r in caplog.records
            if r.name.startswith("squall.component.")]
    assert mine == [("squall.component.chatty", "DEBUG", "ready"),
                    ("squall.component.chatty", "WARNING", "got 7")], mine
    caplog.clear()
    with caplog.at_level("INFO", logger="squall.component"):
        Logging().log("alone")          # outside a topology: no id yet, the class name
    assert [r.name for r in caplog.records] == ["squall.component.Logging"]


class ShowConf(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        CONFS[context.component_id] = dict(conf)

    def process(self, tup: Any) -> None:
        pass


def test_config_precedence() -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 1})
    b.set_bolt("own", ShowConf, config={"app.k": "component", "app.c": "component"}
               ).shuffle_grouping("numbers").add_config("app.added", 1)
    b.set_bolt("other", ShowConf).shuffle_grouping("numbers")
    topo = b.create_topology({"app.k": "topology-built", "app.t": "topology-built"})
    with LocalCluster({"app.k": "cluster", "app.cl": "cluster"}) as cluster:
        cluster.submit_topology("conf", {"app.k": "submitted", "app.c": "submitted",
                                         "squall.cli.overrides": {"app.cli": "cli",
                                                                  "app.c": "cli"}}, topo)
        wait_until(lambda: {"own", "other", "numbers"} <= set(CONFS))
    own, other = CONFS["own"], CONFS["other"]
    assert own["app.k"] == "component" and own["app.added"] == 1
    assert own["app.c"] == "cli" and other["app.c"] == "cli"       # -c beats everything
    assert other["app.k"] == "submitted" and "app.added" not in other
    assert other["app.t"] == "topology-built" and other["app.cl"] == "cluster"
    assert own["topology.name"] == "conf" and own["topology.message.timeout.secs"] == 30
    assert CONFS["numbers"]["app.n"] == 1 and "app.n" not in other


# -- how much of a queue one pass takes ---------------------------------------------------------

PASS_TIMES: dict[str, list[float]] = {"probe": [], "slow": []}


class Burst(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.left = conf["test.burst"]

    def next_tuple(self) -> None:
        while self.left:                 # the whole burst in one call: one long queue
            self.left -= 1
            self.emit([self.left])


class Ticker(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        self.emit([0])


class SlowWork(Bolt):
    def process(self, tup: Any) -> None:
        time.sleep(0.002)                 # simulates 2 ms of work per tuple (not a wait)
        PASS_TIMES["slow"].append(time.monotonic())


class Probe(Bolt):
    def process(self, tup: Any) -> None:
        PASS_TIMES["probe"].append(time.monotonic())


def _slow_beside_probe(cluster: LocalCluster, name: str, **conf: Any) -> None:
    """A burst of 600 tuples into a 2 ms bolt, a ticker into a probe beside it, one worker;
    returns once the slow bolt processed the burst (the times are in PASS_TIMES)."""
    for times in PASS_TIMES.values():
        times.clear()
    burst = 600
    b = TopologyBuilder()
    b.set_spout("burst", Burst)
    b.set_spout("ticker", Ticker)
    b.set_bolt("slow", SlowWork).shuffle_grouping("burst")
    b.set_bolt("probe", Probe).shuffle_grouping("ticker")
    cluster.submit_topology(name, {"test.burst": burst, "topology.acker.executors": 0,
                                   "topology.executor.receive.buffer.size": 1_000_000,
                                   **conf}, b.create_topology())
    wait_until(lambda: len(PASS_TIMES["slow"]) >= burst, 30,
               message=lambda: f"slow bolt processed {len(PASS_TIMES['slow'])} of {burst}")


def test_a_slow_bolt_with_a_long_queue_does_not_hold_the_worker(cluster: LocalCluster) -> None:
    """A pass over a long queue takes only a few milliseconds' worth of a slow bolt's tuples,
    so the other executors of the worker keep their turns."""
    _slow_beside_probe(cluster, "pass", **{"topology.transfer.batch.size": 5})
    start, end = PASS_TIMES["slow"][0], PASS_TIMES["slow"][-1]
    probe = [t for t in PASS_TIMES["probe"] if start <= t <= end]
    gaps = [b - a for a, b in zip(probe, probe[1:])]
    assert probe and max(gaps) < 0.4, (
        f"the probe bolt waited {max(gaps, default=end - start):.3f} s for a turn while the "
        f"slow bolt worked through its queue ({end - start:.2f} s)")


def test_a_slow_bolts_pass_keeps_to_its_measured_share_at_the_default_batch(
        cluster: LocalCluster) -> None:
    """At the default transfer batch (100), a pass over a long queue of a 2 ms bolt takes a
    few tuples (PASS_SECONDS' worth), not a whole batch: between two turns of the probe the
    slow bolt processes a handful of tuples (it took 100, 200 ms, before)."""
    _slow_beside_probe(cluster, "share")
    slow, probe = list(PASS_TIMES["slow"]), list(PASS_TIMES["probe"])
    inside = [t for t in probe if slow[10] <= t <= slow[-1]]     # once its cost is measured
    between = [sum(1 for s in slow if a < s <= b) for a, b in zip(inside, inside[1:])]
    assert inside and max(between) <= 20, (
        f"the slow bolt processed up to {max(between, default=len(slow))} tuples between two "
        f"turns of the probe")


@pytest.mark.parametrize("name", ["名前-topo", "with space", "-dash-first", "a/b", "", "x" * 129])
def test_a_local_cluster_refuses_the_topology_names_a_cluster_refuses(
        cluster: LocalCluster, name: str) -> None:
    # a name tested locally must be a name that submits: LocalCluster took any name without
    # a '/', nimbus only ASCII letters, digits, '_', '.' and '-' (128 at most)
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": 1})
    with pytest.raises(TopologyError, match="^invalid topology name "):
        cluster.submit_topology(name, {}, b.create_topology())
    cluster.submit_topology("ok_name.v2-1", {}, b.create_topology())
