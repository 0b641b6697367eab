"""Metrics in a LocalCluster: built-in counts and latencies, user metrics with their own bucket
sizes, and the stats windows of ``get_topology_info``. Data points are read through a
recording metrics consumer registered like any other."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, ClassVar

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from tests.topology.conftest import info_errors, install_driver
from squall.metrics import CountMetric, MeanReducer, ReducedMetric
from squall.spi.metrics import DataPoint, MetricsConsumer, TaskInfo
from squall.testing import wait_until


class Recording(MetricsConsumer):
    """Keeps every ``(task_info, data_points)`` it is handed, in arrival order."""

    lock = threading.Lock()
    calls: ClassVar[list[tuple[TaskInfo, list[DataPoint]]]] = []

    def handle(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        with Recording.lock:
            Recording.calls.append((task_info, list(data_points)))

    @classmethod
    def points(cls, component: str, name: str) -> list[tuple[TaskInfo, Any]]:
        with cls.lock:
            return [(info, p.value) for info, points in cls.calls if info.component == component
                    for p in points if p.name == name]

    @classmethod
    def total(cls, component: str, name: str) -> float:
        return sum(value for _, value in cls.points(component, name))


@pytest.fixture(autouse=True)
def recording(monkeypatch: pytest.MonkeyPatch) -> type[Recording]:
    """``recording`` is a metrics consumer name for the test's duration."""
    install_driver(monkeypatch, "squall.metrics_consumers", "recording", Recording)
    Recording.calls.clear()
    return Recording


def conf(bucket: int = 1, **extra: Any) -> dict[str, Any]:
    return {"topology.metrics.consumer.register": ["recording"],
            "topology.builtin.metrics.bucket.size.secs": bucket, **extra}


class Numbers(Spout):
    """Emits ``app.n`` tracked tuples ``(i, key)``, or without end when ``app.n`` is 0, at most
    one per ``app.every`` seconds."""

    outputs = ["i", "key"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0
        self.n = int(conf.get("app.n", 0))
        self.every = float(conf.get("app.every", 0))
        self.next = 0.0

    def next_tuple(self) -> None:
        if self.n and self.i >= self.n:
            return
        if self.every:
            now = time.perf_counter()
            if now < self.next:
                return
            self.next = now + self.every
        self.emit([self.i, f"k{self.i % 7}"], tup_id=self.i)
        self.i += 1


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


# -- __process-latency -------------------------------------------------------------------------
HOLD_MS = 60.0


class Holder(Bolt):
    """Acks each tuple itself, once it has held it ``HOLD_MS``: its process latency is at
    least that, its execute latency is what ``process`` takes (next to nothing)."""

    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.held: deque[tuple[float, Any]] = deque()

    def process(self, tup: Any) -> None:
        now = time.perf_counter()
        self.held.append((now, tup))
        while self.held and (now - self.held[0][0]) * 1000.0 >= HOLD_MS:
            self.ack(self.held.popleft()[1])


def test_process_latency_is_receive_to_ack_and_execute_latency_stays_small(
        cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.every": 0.002})
    b.set_bolt("holder", Holder).shuffle_grouping("numbers")
    b.set_bolt("sink", Sink).shuffle_grouping("numbers")
    cluster.submit_topology("latency", conf(), b.create_topology())

    def reported() -> bool:
        return (len(Recording.points("holder", "__process-latency")) >= 2
                and len(Recording.points("sink", "__process-latency")) >= 2)
    wait_until(reported, timeout=20, message=lambda: f"got {Recording.calls[-3:]}")
    for _, value in Recording.points("holder", "__process-latency")[1:]:
        assert value >= HOLD_MS, value
    for _, value in Recording.points("holder", "__execute-latency"):
        assert value < HOLD_MS / 6, value
    # acked automatically at the end of each pass: from the pass's start to its end, which
    # is at least the execute latency and, for a bolt that does nothing, far below HOLD_MS
    sink = Recording.points("sink", "__process-latency")
    assert all(0 < value < HOLD_MS / 6 for _, value in sink), sink
    stats = cluster.get_topology_info("latency")["executors"]
    holder = next(e for e in stats if e["component"] == "holder")
    assert holder["process_latency_ms"] >= HOLD_MS * 0.9
    assert holder["execute_latency_ms"] < HOLD_MS / 6
    assert holder["acked"] > 0


class BatchHolder(Bolt):
    """A multi-lang bolt's shape: tuples by batch on a thread of its own, each acked by the
    bolt once it has held it ``HOLD_MS`` (at a later batch)."""

    auto_ack = False
    dedicated_thread = True

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.held: deque[tuple[float, Any]] = deque()

    def process_batch(self, tuples: list[Any]) -> None:
        now = time.perf_counter()
        self.held.extend((now, t) for t in tuples)
        while self.held and (now - self.held[0][0]) * 1000.0 >= HOLD_MS:
            self.ack(self.held.popleft()[1])


def test_process_latency_of_a_batch_bolt_on_its_thread_that_acks_itself(
        cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.every": 0.002})
    b.set_bolt("holder", BatchHolder).shuffle_grouping("numbers")
    cluster.submit_topology("batch-latency", conf(), b.create_topology())
    wait_until(lambda: len(Recording.points("holder", "__process-latency")) >= 2, timeout=20,
               message=lambda: f"got {Recording.calls[-3:]}")
    for _, value in Recording.points("holder", "__process-latency"):
        assert value >= HOLD_MS, value
    [holder] = [e for e in cluster.get_topology_info("batch-latency")["executors"]
                if e["component"] == "holder"]
    assert holder["acked"] > 0 and holder["process_latency_ms"] >= HOLD_MS * 0.9, holder
    assert holder["threaded"] is True       # the UI's capacity: its time is not the loop's


# -- __transfer-count ----------------------------------------------------------------------------
class Relay(Bolt):
    outputs = ["i", "key"]

    def process(self, tup: Any) -> None:
        self.emit(tup.values)


@pytest.mark.parametrize(("workers", "ackers"), [(1, None), (2, None), (1, 0)])
def test_transfer_count_is_one_per_target_task_local_or_remote(
        cluster: LocalCluster, workers: int, ackers: int | None) -> None:
    n = 300
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": n})
    # every tuple to the one task of "keyed" and to each of the 3 tasks of "everyone"
    b.set_bolt("keyed", Relay).fields_grouping("numbers", ["key"])
    b.set_bolt("everyone", Sink, 3).all_grouping("numbers")
    b.set_bolt("relay", Relay).global_grouping("keyed")     # one target per emit
    # every tuple to one task of "last" and to both tasks of "echo"; "last" emits to nobody
    b.set_bolt("last", Relay, 2).shuffle_grouping("relay")
    b.set_bolt("echo", Sink, 2).all_grouping("relay")
    cluster.submit_topology("transfers", conf(**{"topology.workers": workers,
                                                 "topology.acker.executors": ackers}),
                            b.create_topology())

    def components() -> dict[str, Any] | None:
        info = cluster.get_topology_info("transfers")["components"]
        return info if (info["last"]["executed"] == n and info["echo"]["executed"] == 2 * n
                        and info["numbers"]["acked"] == n) else None
    info = wait_until(components, timeout=30)
    assert (info["numbers"]["emitted"], info["numbers"]["transferred"]) == (n, 4 * n)
    assert (info["keyed"]["emitted"], info["keyed"]["transferred"]) == (n, n)
    assert (info["relay"]["emitted"], info["relay"]["transferred"]) == (n, 3 * n)
    assert (info["last"]["emitted"], info["last"]["transferred"]) == (n, 0)
    assert info["everyone"]["executed"] == 3 * n
    # each worker's own counters: its loop ran, and batches crossed only between two workers
    workers_info = cluster.get_topology_info("transfers")["workers"]
    assert len(workers_info) == workers
    for w in workers_info:
        assert w["loop_passes"] > 0 and w["loop_passes"] >= w["idle_waits"]
        if workers == 1:
            assert (w["sent_batches"], w["sent_bytes"], w["received_batches"]) == (0, 0, 0)
        else:
            assert w["sent_batches"] > 0 and w["sent_bytes"] > w["sent_batches"]
    if workers == 2:
        # a batch still on the wire (an ack, a late flush) is counted sent before it is
        # counted received, and each worker's counters are read at their own moment:
        # the two sums meet once the topology is quiet
        def crossed() -> tuple[int, int]:
            ws = cluster.get_topology_info("transfers")["workers"]
            return (sum(w["sent_batches"] for w in ws), sum(w["received_batches"] for w in ws))

        def met() -> bool:
            sent, received = crossed()      # both sums from one read
            return sent == received
        wait_until(met, timeout=10, message=lambda: f"sent, received batches {crossed()}")
    # the consumer's sums reach the same exact values (each worker sends on its own timer)
    expected = {"numbers": (n, 4 * n), "keyed": (n, n), "relay": (n, 3 * n), "last": (n, 0),
                "everyone": (0, 0)}

    def reported() -> dict[str, tuple[float, float]]:
        return {c: (Recording.total(c, "__emit-count"), Recording.total(c, "__transfer-count"))
                for c in expected}
    wait_until(lambda: reported() == expected and
               Recording.total("everyone", "__execute-count") == 3 * n, timeout=10,
               message=lambda: f"consumer sums {reported()}, expected {expected}")


# -- user metrics --------------------------------------------------------------------------------
class SumReducer:
    def init(self) -> int:
        return 0

    def reduce(self, acc: int, value: int) -> int:
        return acc + value

    def extract(self, acc: int) -> int:
        return acc


class Measured(Bolt):
    """Registers user metrics in ``initialize`` and updates them per tuple."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.seen = context.register_metric("seen", CountMetric())
        self.total = context.register_metric("total", ReducedMetric(SumReducer()))
        self.width = context.register_metric("width", ReducedMetric(MeanReducer()))
        self.fast = context.register_metric("every-1s", CountMetric(), 1)
        self.slow = context.register_metric("every-2s", CountMetric(), 2)

    def process(self, tup: Any) -> None:
        self.seen.incr()
        self.total.update(tup["i"])
        self.width.update(len(tup["key"]))
        self.fast.incr()
        self.slow.incr(2)


@pytest.mark.parametrize("threaded", [False, True])
def test_user_metrics_from_initialize_reach_the_consumer_exactly(cluster: LocalCluster,
                                                                 threaded: bool) -> None:
    """With ``threaded``, the bolt updates its metrics on a thread of its own, and they are
    read and reset there."""
    n = 200
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": n})
    b.set_bolt("measured", Measured, 2, config={
        "topology.executor.dedicated.thread": threaded}).shuffle_grouping("numbers")
    cluster.submit_topology("user", conf(), b.create_topology())
    wait_until(lambda: Recording.total("measured", "seen") == n, timeout=15,
               message=lambda: f"seen: {Recording.points('measured', 'seen')}")
    wait_until(lambda: Recording.total("measured", "total") == sum(range(n)), timeout=5)
    widths = Recording.points("measured", "width")
    assert widths and all(value == 2.0 for _, value in widths), widths   # "k0".."k6"
    # a bucket without updates reports nothing for the mean (None is left out), 0 for counts
    assert all(info.interval_secs == 1 for info, _ in Recording.points("measured", "seen"))
    wait_until(lambda: Recording.total("measured", "every-2s") == 2 * n, timeout=10)


@pytest.mark.parametrize("threaded", [False, True])
def test_a_kill_sends_the_bucket_begun_to_the_consumers(cluster: LocalCluster,
                                                        threaded: bool) -> None:
    """A topology shorter than its metrics bucket: killing it sends every task's points of
    the bucket begun, with the seconds it ran as their interval, and the consumer handles
    them before its cleanup (with ``threaded``, the user metrics are read on the bolt's
    thread)."""
    n = 200
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": n})
    b.set_bolt("measured", Measured, 2, config={
        "topology.executor.dedicated.thread": threaded}).shuffle_grouping("numbers")
    began = time.monotonic()
    cluster.submit_topology("short", conf(bucket=60), b.create_topology())

    def acked() -> bool:
        windows = cluster.get_topology_info("short")["components"]["numbers"].get("windows")
        return bool(windows) and windows[":all-time"]["acked"] == n
    wait_until(acked, timeout=20)
    assert Recording.points("numbers", "__ack-count") == []     # no 60 s bucket came due
    cluster.kill_topology("short")
    ran = time.monotonic() - began
    assert Recording.total("numbers", "__emit-count") == n
    assert Recording.total("numbers", "__ack-count") == n
    assert Recording.total("measured", "__execute-count") == n
    assert Recording.total("measured", "seen") == n                # a user metric, 60 s bucket
    assert Recording.total("measured", "every-1s") == n            # and its own 1 s bucket
    for info, _ in Recording.points("measured", "seen"):
        assert 0 < info.interval_secs <= ran, (info.interval_secs, ran)


WIRE_DELAY_SECS = 0.2


@pytest.mark.parametrize("slow_wire", [False, True])
def test_a_kill_sends_every_workers_bucket_begun(cluster: LocalCluster, slow_wire: bool,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Over several workers: the consumer task runs in one of them, and gets the last points
    of those stopped after it too (each worker sends its own before any stops). With
    ``slow_wire`` each receive of the in-process transport hands over what it took
    ``WIRE_DELAY_SECS`` late, as a receive thread kept from the GIL on a loaded host does:
    the kill waits for those points to arrive before it stops their consumer."""
    if slow_wire:
        from squall.transports.local import LocalReceiver
        recv = LocalReceiver.recv

        def late(self: LocalReceiver, timeout: float | None = None) -> list[Any]:
            messages = recv(self, timeout)
            if messages:
                time.sleep(WIRE_DELAY_SECS)     # the delay under test, not a wait for a state
            return messages
        monkeypatch.setattr(LocalReceiver, "recv", late)
    n = 200
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 2, config={"app.n": n // 2})
    b.set_bolt("measured", Measured, 2).shuffle_grouping("numbers")
    cluster.submit_topology("short2", conf(bucket=60, **{"topology.workers": 2}),
                            b.create_topology())

    def acked() -> bool:
        windows = cluster.get_topology_info("short2")["components"]["numbers"].get("windows")
        return bool(windows) and windows[":all-time"]["acked"] == n
    wait_until(acked, timeout=20)
    cluster.kill_topology("short2")
    assert Recording.total("numbers", "__ack-count") == n
    assert Recording.total("measured", "__execute-count") == n
    assert Recording.total("measured", "seen") == n


def test_each_bucket_size_has_its_own_timer_and_interval(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.every": 0.01})
    b.set_bolt("measured", Measured).shuffle_grouping("numbers")
    # built-in metrics every 60 s: whatever arrives within the test came from the 1 s and
    # 2 s timers of the user metrics
    cluster.submit_topology("buckets", conf(bucket=60), b.create_topology())
    wait_until(lambda: len(Recording.points("measured", "every-2s")) >= 3, timeout=15,
               message=lambda: f"got {[(i.interval_secs, p) for i, p in Recording.calls]}")
    fast = Recording.points("measured", "every-1s")
    slow = Recording.points("measured", "every-2s")
    assert {info.interval_secs for info, _ in fast} == {1}
    assert {info.interval_secs for info, _ in slow} == {2}
    assert len(fast) >= 4
    for reports, secs in ((fast, 1.0), (slow, 2.0)):
        stamps = [info.timestamp for info, _ in reports]
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        assert all(secs * 0.6 < gap < secs * 1.4 for gap in gaps), (secs, gaps)
    with Recording.lock:
        for info, points in Recording.calls:
            names = {p.name for p in points}
            assert names <= ({"every-1s"} if info.interval_secs == 1 else {"every-2s"}), names
            assert not any(name.startswith("__") for name in names)


# -- stats windows -------------------------------------------------------------------------------
def test_stats_windows_in_topology_info_have_exact_counts(cluster: LocalCluster) -> None:
    n = 300
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": n})
    b.set_bolt("sink", Sink, 2).shuffle_grouping("numbers")
    cluster.submit_topology("windows", {}, b.create_topology())

    def windows() -> dict[str, Any] | None:
        comps = cluster.get_topology_info("windows")["components"]
        spout, sink = comps["numbers"].get("windows"), comps["sink"].get("windows")
        if spout and sink and spout[":all-time"]["acked"] == n \
                and sink[":all-time"]["executed"] == n:
            return {"numbers": spout, "sink": sink}
        return None
    got = wait_until(windows, timeout=20)
    for window in ("600", "10800", "86400", ":all-time"):
        spout, sink = got["numbers"][window], got["sink"][window]
        assert (spout["emitted"], spout["transferred"], spout["acked"], spout["failed"]) == \
            (n, n, n, 0), (window, spout)
        assert (sink["executed"], sink["acked"], sink["emitted"], sink["failed"]) == \
            (n, n, 0, 0), (window, sink)
        assert spout["complete_latency_ms"] > 0 and sink["execute_latency_ms"] > 0
        assert sink["process_latency_ms"] >= sink["execute_latency_ms"]
        # percentiles from the latency histograms, with their samples: a spout samples one
        # completion in 16 (19 of 300), too few for a p99; a bolt one pass in 16 tuples
        assert spout["complete_latency_samples"] == (n + 15) // 16, (window, spout)
        assert spout["complete_latency_p50_ms"] > 0 and "complete_latency_p99_ms" not in spout
        assert 1 <= sink["execute_latency_samples"] <= n, (window, sink)
        assert sink["execute_latency_p50_ms"] > 0


class Slow(Bolt):
    """Takes ``app.sleep_ms`` per tuple."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.secs = float(conf["app.sleep_ms"]) / 1000

    def process(self, tup: Any) -> None:
        time.sleep(self.secs)


def test_complete_latency_in_one_worker_covers_the_bolts_time(cluster: LocalCluster) -> None:
    """Spout, bolt and acker in one worker, the bolt's turn of a loop pass before the spout's
    (tasks are numbered by component name): a tree completes within the pass that ran its
    bolt, yet its complete latency is the bolt's time and not 0; and one at a time
    (``max.spout.pending`` 1: the next tree is emitted in the pass its bolt ran in) it is not
    counted twice either."""
    n, sleep_ms = 15, 20
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": n})
    b.set_bolt("busy", Slow, config={"app.sleep_ms": sleep_ms}).shuffle_grouping("numbers")
    cluster.submit_topology("latency", {"topology.workers": 1, "topology.max.spout.pending": 1},
                            b.create_topology())

    def done() -> dict[str, Any] | None:
        comps = cluster.get_topology_info("latency")["components"]
        spout, busy = comps["numbers"].get("windows"), comps["busy"].get("windows")
        if spout and busy and spout[":all-time"]["acked"] == n:
            return {"spout": spout[":all-time"], "busy": busy[":all-time"]}
        return None
    got = wait_until(done, timeout=20)
    complete, execute = got["spout"]["complete_latency_ms"], got["busy"]["execute_latency_ms"]
    assert execute >= sleep_ms * 0.9, got
    assert execute <= complete < 1.5 * execute, got
    assert got["spout"]["complete_latency_p50_ms"] >= sleep_ms / 2, got     # its buckets: ±12 %


# -- user metrics that fail ----------------------------------------------------------------------
class Broken:
    """A user metric whose read raises, or whose value no serializer carries."""

    def __init__(self, how: str) -> None:
        self.how = how

    def get_value_and_reset(self) -> Any:
        if self.how == "raises":
            raise RuntimeError("metric broke")
        return object()


class BadlyMeasured(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.seen = context.register_metric("seen", CountMetric())
        context.register_metric("broken", Broken(conf["app.how"]))

    def process(self, tup: Any) -> None:
        self.seen.incr()


@pytest.mark.parametrize("how, threaded", [("raises", False), ("raises", True),
                                           ("junk", False), ("junk", True)])
def test_a_broken_user_metric_is_reported_and_the_rest_still_reported(
        how: str, threaded: bool) -> None:
    """The worker lives on (a raising metric killed its loop, again after every restart);
    the task's other points, its built-in ones included, reach a consumer in another worker
    (one value the serializer refused lost them all)."""
    n = 300
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"app.n": n})
    b.set_bolt("measured", BadlyMeasured, 2, config={
        "app.how": how, "topology.executor.dedicated.thread": threaded}
        ).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("broken", conf(**{"topology.workers": 2}), b.create_topology())
        wait_until(lambda: Recording.total("measured", "seen") == n
                   and Recording.total("measured", "__execute-count") == n, timeout=20,
                   message=lambda: f"seen {Recording.total('measured', 'seen')}, executed "
                                   f"{Recording.total('measured', '__execute-count')}")
        info = cluster.get_topology_info("broken")
        errors = " ".join(e["error"] for e in info["errors"].get("measured", []))
        said = "get_value_and_reset raised RuntimeError" if how == "raises" else \
            "its value cannot be sent to a metrics consumer"
        assert "metric 'broken' of measured task" in errors and said in errors, errors
        assert cluster.workers("broken") and all(w.is_alive() for w in cluster.workers("broken"))
        assert cluster.get_topology_info("broken")["components"]["numbers"]["acked"] == n


class Stuck(MetricsConsumer):
    """A consumer whose ``handle`` blocks until the test lets it go."""

    entered = threading.Event()
    release = threading.Event()

    def handle(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        Stuck.entered.set()
        Stuck.release.wait(30)


def test_a_consumer_blocked_in_handle_does_not_hold_up_its_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    install_driver(monkeypatch, "squall.metrics_consumers", "stuck", Stuck)
    Stuck.entered.clear()
    Stuck.release.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("sink", Sink).shuffle_grouping("numbers")
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("stuck", {"topology.metrics.consumer.register": ["stuck"],
                                              "topology.builtin.metrics.bucket.size.secs": 1},
                                    b.create_topology())
            assert Stuck.entered.wait(20)
            acked = cluster.get_topology_info("stuck")["components"]["numbers"]["acked"]
            wait_until(lambda: cluster.get_topology_info("stuck")["components"]["numbers"][
                "acked"] > acked + 500, timeout=15, message="the worker waited on the consumer")
            Stuck.release.set()
    finally:
        Stuck.release.set()


# -- a consumer's registration: max.retain.metric.tuples, whitelist, blacklist ------------------
def consumer_queued(cluster: LocalCluster, name: str, component: str) -> int:
    return sum(e["queued"] for e in cluster.get_topology_info(name)["executors"]
               if e["component"] == component)


def test_a_slow_consumer_keeps_at_most_max_retain_metric_tuples_queued(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A consumer slower than its data points (blocked here) keeps the newest
    ``max.retain.metric.tuples`` of them queued, dropping the oldest, and says so; a consumer
    beside it still gets every bucket."""
    install_driver(monkeypatch, "squall.metrics_consumers", "stuck", Stuck)
    Stuck.entered.clear()
    Stuck.release.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, parallelism=2)
    b.set_bolt("sink", Sink, parallelism=4).shuffle_grouping("numbers")
    caplog.set_level("WARNING", logger="squall.runtime.threaded")
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("slow", conf(**{"topology.metrics.consumer.register": [
                {"class": "stuck", "max.retain.metric.tuples": 2}, "recording"]}),
                b.create_topology())
            assert Stuck.entered.wait(20)
            # 6 tasks report every second: four buckets more would have queued 24 tuples
            seen = len(Recording.calls)
            wait_until(lambda: len(Recording.calls) >= seen + 24, timeout=20,
                       message="the other consumer got no more buckets")
            wait_until(lambda: consumer_queued(cluster, "slow", "__metrics_stuck") <= 2,
                       timeout=10, message=lambda: "the blocked consumer holds "
                       f"{consumer_queued(cluster, 'slow', '__metrics_stuck')} tuples")
            said = [r.getMessage() for r in caplog.records
                    if "max.retain.metric.tuples" in r.getMessage()]
            assert said and "__metrics_stuck" in said[0] and "keeping at most 2" in said[0], said
            assert len(said) == 1           # once a minute at most
            Stuck.release.set()
    finally:
        Stuck.release.set()


def test_a_whitelisted_consumer_gets_only_the_metrics_it_names(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("sink", Sink).shuffle_grouping("numbers")
    cluster.submit_topology("white", conf(**{"topology.metrics.consumer.register": [
        {"class": "recording", "whitelist": ["^__ack-count$", "^__execute"]}]}),
        b.create_topology())
    wait_until(lambda: Recording.total("sink", "__ack-count") > 0, timeout=20,
               message="no __ack-count from sink")
    with Recording.lock:
        names = {p.name for _, points in Recording.calls for p in points}
    assert names <= {"__ack-count", "__execute-count", "__execute-latency"}, names


def test_the_prometheus_consumer_serves_its_endpoint_in_a_local_cluster(
        cluster: LocalCluster) -> None:
    """A LocalCluster's workers are on host "local", which names no interface: the consumer
    listens on 127.0.0.1 unless its argument names a host."""
    import urllib.request

    from squall.daemon.ports import free_port
    port = free_port()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("sink", Sink).shuffle_grouping("numbers")
    cluster.submit_topology("prom", conf(**{"topology.metrics.consumer.register": [
        {"class": "prometheus", "argument": {"port": port}}]}), b.create_topology())

    def scraped() -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return str(r.read().decode())
        except OSError:
            return ""
    wait_until(lambda: 'component="sink"' in scraped(), timeout=20,
               message=lambda: f"scraped {scraped()[:300]!r}; errors "
                               f"{cluster.get_topology_info('prom')['errors']}")
    assert "squall_ack_count{" in scraped()


def test_a_prometheus_port_in_use_is_reported_and_the_topology_runs_on(
        cluster: LocalCluster) -> None:
    """Its endpoint is secondary, as a worker's own /metrics is: the consumer's task reports
    the port and runs on without it (its worker failed to start, again and again)."""
    import socket
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        b = TopologyBuilder()
        b.set_spout("numbers", Numbers)
        b.set_bolt("sink", Sink).shuffle_grouping("numbers")
        cluster.submit_topology("busy", conf(**{"app.n": 20, "topology.metrics.consumer.register": [
            "recording", {"class": "prometheus", "argument": {"port": port}}]}),
            b.create_topology())
        wait_until(lambda: Recording.total("sink", "__ack-count") >= 20, timeout=20,
                   message=lambda: f"acked {Recording.total('sink', '__ack-count')}; errors "
                                   f"{cluster.get_topology_info('busy')['errors']}")
        errors = info_errors(cluster, "busy", "__metrics_prometheus")
        assert [e["error"] for e in errors] == [
            f"metrics consumer 'prometheus' cannot start: cannot listen on 127.0.0.1:{port} "
            f"(its argument's host and port): Address already in use; it drops its data "
            f"points and the topology runs on"], errors
