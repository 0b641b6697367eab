"""Bad input to a running topology or to its declaration: one clear error, recorded in the
topology's errors where it happens at run time, and the topology keeps running with nothing
acknowledged lost."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from squall import (
    Bolt, ConfigError, Grouping, LocalCluster, SingleTargetGrouping, Spout, Stream,
    TopologyBuilder, TopologyError,
)
from squall.testing import complete_topology, wait_until

from tests.topology.conftest import info_errors

LOCK = threading.Lock()
#: spout tuple ids acked and failed, what emit raised, tuples each bolt task got
ACKED: list[Any] = []
FAILED: list[Any] = []
RAISED: list[BaseException] = []
GOT: list[tuple[str, Any]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    for seen in (ACKED, FAILED, RAISED, GOT):
        seen.clear()


class Recorded(Spout):
    """A spout that records the ids of its trees acked and failed (ACKED, FAILED)."""

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


class Numbers(Recorded):
    """Emits 0..5 once each, tracked by their value; keeps what its emit raised."""
    outputs = ["v"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < 6:
            i = self.i
            self.i += 1
            try:
                self.emit([i], tup_id=i)
            except Exception as exc:
                RAISED.append(exc)


class Take(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            GOT.append((self.context.component_id, tup.values[0]))


class OddOnes(Grouping):
    """Even values to the first target; odd ones as ``mode`` says."""

    def __init__(self, mode: str = "raise") -> None:
        self.mode = mode

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        self.targets = list(target_tasks)
        self.neighbour = (context.component_tasks("other") or [None])[0]

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        if values[0] % 2 == 0:
            return [self.targets[0]]
        if self.mode == "foreign":
            return [999]
        if self.mode == "neighbour":        # another subscriber's task, in this worker
            return [self.neighbour]
        if self.mode == "generator":        # no list: read, it would be used up
            return (t for t in self.targets[:1])   # type: ignore[return-value]
        if self.mode == "float":            # equal to a target, but no int task id
            return [float(self.targets[0])]     # type: ignore[list-item]
        raise KeyError("oops")


def odd_ones_topology(mode: str) -> Any:
    b = TopologyBuilder()
    b.set_spout("src", Numbers)
    b.set_bolt("other", Take).shuffle_grouping("src")     # subscribes before the custom one
    b.set_bolt("r", Take, 2).custom_grouping("src", OddOnes(mode))
    return b.create_topology()


def settled() -> bool:
    with LOCK:
        return len(ACKED) + len(FAILED) >= 6


def test_a_grouping_that_raises_is_one_error_and_fails_the_spout_tuple(
        cluster: LocalCluster) -> None:
    """The emit raises a TopologyError naming the component, stream and grouping class (not
    the grouping's bare KeyError), recorded once in the topology's errors though the spout
    caught it; the tuple, which the first subscriber had already received, is failed to the
    spout at once (not left to the message timeout)."""
    cluster.submit_topology("badgroup", {"topology.message.timeout.secs": 600},
                            odd_ones_topology("raise"))
    wait_until(settled, timeout=20, message=lambda: f"acked {ACKED} failed {FAILED}")
    assert sorted(ACKED) == [0, 2, 4] and sorted(FAILED) == [1, 3, 5]
    assert len(RAISED) == 3 and all(isinstance(e, TopologyError) for e in RAISED)
    text = str(RAISED[0])
    assert "'src'" in text and "'default'" in text and "OddOnes" in text and "oops" in text
    errors = wait_until(lambda: info_errors(cluster, "badgroup", "src"), timeout=10)
    assert len(errors) == 3
    assert "OddOnes" in errors[0]["error"] and "'default'" in errors[0]["error"]
    assert cluster.get_topology_info("badgroup")["status"] == "active"


def test_without_ackers_a_grouping_that_raises_fails_the_spout_tuple(
        cluster: LocalCluster) -> None:
    """Without ackers a spout's tup_id is acked once its emit is done; an emit that raised
    is not done, so its tup_id is failed instead (not acked, not forgotten)."""
    cluster.submit_topology("badgroup0", {"topology.acker.executors": 0},
                            odd_ones_topology("raise"))
    wait_until(settled, timeout=20, message=lambda: f"acked {ACKED} failed {FAILED}")
    assert sorted(ACKED) == [0, 2, 4] and sorted(FAILED) == [1, 3, 5]
    assert len(RAISED) == 3


class OddOne(SingleTargetGrouping):
    """OddOnes("raise") as a single-target grouping: the emit fast paths choose through it."""

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        self.targets = list(target_tasks)

    def choose_one(self, values: Sequence[Any]) -> int:
        if values[0] % 2 == 0:
            return self.targets[0]
        raise KeyError("oops")


@pytest.mark.parametrize("ackers", [None, 0], ids=["acking", "no-ackers"])
def test_a_single_target_grouping_that_raises_fails_the_spout_tuple(
        cluster: LocalCluster, ackers: int | None) -> None:
    """The spout's one subscriber: its emit takes the fast path, which fails the tuple as
    the general path does (it was neither acked nor failed) and raises the same error."""
    b = TopologyBuilder()
    b.set_spout("src", Numbers)
    b.set_bolt("r", Take, 2).custom_grouping("src", OddOne())
    conf: dict[str, Any] = {"topology.message.timeout.secs": 600}
    if ackers is not None:
        conf["topology.acker.executors"] = ackers
    cluster.submit_topology("badone", conf, b.create_topology())
    wait_until(settled, timeout=20, message=lambda: f"acked {ACKED} failed {FAILED}")
    assert sorted(ACKED) == [0, 2, 4] and sorted(FAILED) == [1, 3, 5]
    assert len(RAISED) == 3 and all(isinstance(e, TopologyError) for e in RAISED)
    assert "OddOne" in str(RAISED[0]) and "oops" in str(RAISED[0])


class Relay(Bolt):
    """Re-emits what it gets to a stream whose one subscriber has a raising grouping."""
    outputs = ["v"]

    def process(self, tup: Any) -> None:
        self.emit([tup.values[0]])


@pytest.mark.parametrize("grouping", [OddOnes, OddOne])
def test_a_grouping_that_raises_in_a_bolt_fails_its_input(cluster: LocalCluster,
                                                          grouping: type) -> None:
    """As in Storm, the error escapes the bolt's process: its input tuple fails (so the
    spout replays), and the error, naming the grouping, is recorded once. A single-target
    grouping (OddOne) takes the bolt's fast emit path."""
    b = TopologyBuilder()
    b.set_spout("src", Numbers)
    b.set_bolt("relay", Relay).shuffle_grouping("src")
    b.set_bolt("r", Take, 2).custom_grouping("relay", grouping())
    cluster.submit_topology("badgroup2", {"topology.message.timeout.secs": 600},
                            b.create_topology())
    wait_until(settled, timeout=20, message=lambda: f"acked {ACKED} failed {FAILED}")
    assert sorted(ACKED) == [0, 2, 4] and sorted(FAILED) == [1, 3, 5]
    errors = wait_until(lambda: info_errors(cluster, "badgroup2", "relay"), timeout=10)
    assert len(errors) == 3
    assert all(grouping.__name__ in e["error"] and "'relay'" in e["error"] for e in errors)


@pytest.mark.parametrize("mode", ["foreign", "neighbour"])
def test_a_grouping_choosing_no_target_is_recorded(cluster: LocalCluster, mode: str) -> None:
    """A task id outside the grouping's targets (one no worker runs, or another
    subscriber's task in this worker) is never delivered: the emit raises as for a grouping
    that raises, the tuple fails for replay, and the error, naming the grouping and the
    task, is in the topology's errors."""
    cluster.submit_topology("foreign", {"topology.message.timeout.secs": 600},
                            odd_ones_topology(mode))
    wait_until(settled, timeout=20, message=lambda: f"acked {ACKED} failed {FAILED}")
    assert sorted(FAILED) == [1, 3, 5] and len(RAISED) == 3
    with LOCK:
        assert sorted(GOT) == [("other", v) for v in range(6)] + [("r", 0), ("r", 2), ("r", 4)]
    errors = wait_until(lambda: info_errors(cluster, "foreign", "src"), timeout=10)
    assert "OddOnes" in errors[0]["error"] and "not one of its targets" in errors[0]["error"]
    if mode == "foreign":
        assert "999" in errors[0]["error"]


@pytest.mark.parametrize("mode, said", [
    ("generator", "choose_tasks returned a value of type generator, not a list of task ids"),
    ("float", "(a float, not an int), which is not one of its targets"),
])
def test_a_choice_that_is_no_list_of_int_task_ids_fails_the_tuple(
        cluster: LocalCluster, mode: str, said: str) -> None:
    """README (Groupings): a grouping that returns no list of task ids is the grouping's
    error, and so is a task id equal to a target but no int (it would poison its batch to
    another worker). The tuple fails for replay: it is never acked without being delivered
    (a generator) nor delivered in one worker what another worker refuses (2.0)."""
    cluster.submit_topology("nolist", {"topology.message.timeout.secs": 600},
                            odd_ones_topology(mode))
    wait_until(settled, timeout=20, message=lambda: f"acked {ACKED} failed {FAILED}")
    assert sorted(ACKED) == [0, 2, 4] and sorted(FAILED) == [1, 3, 5]
    assert len(RAISED) == 3 and all(said in str(e) and "OddOnes" in str(e) for e in RAISED)
    with LOCK:
        assert sorted(v for c, v in GOT if c == "r") == [0, 2, 4]


class NoChoice(SingleTargetGrouping):
    """A single-target grouping whose choose_one returns None for odd values."""

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        self.targets = list(target_tasks)

    def choose_one(self, values: Sequence[Any]) -> Any:
        return self.targets[0] if values[0] % 2 == 0 else None


@pytest.mark.parametrize("ackers", [None, 0], ids=["acking", "no-ackers"])
def test_a_single_target_grouping_choosing_none_fails_the_bolts_input(
        cluster: LocalCluster, ackers: int | None) -> None:
    """A bolt's fast emit path: None is no task id; the error names the grouping (not an
    AttributeError from inside the runtime) and the bolt's input fails."""
    b = TopologyBuilder()
    b.set_spout("src", Numbers)
    b.set_bolt("relay", Relay).shuffle_grouping("src")
    b.set_bolt("r", Take, 2).custom_grouping("relay", NoChoice())
    conf: dict[str, Any] = {"topology.message.timeout.secs": 600}
    if ackers is not None:
        conf["topology.acker.executors"] = ackers
    cluster.submit_topology("nochoice", conf, b.create_topology())
    errors = wait_until(lambda: (info_errors(cluster, "nochoice", "relay") or [])[2:] and
                        info_errors(cluster, "nochoice", "relay"), timeout=20)
    assert all("NoChoice" in e["error"] and "chose task None" in e["error"] for e in errors)
    wait_until(lambda: len(GOT) >= 3, timeout=10)
    with LOCK:
        assert sorted(GOT) == [("r", 0), ("r", 2), ("r", 4)]
    if ackers is None:
        wait_until(settled, timeout=20, message=lambda: f"acked {ACKED} failed {FAILED}")
        assert sorted(ACKED) == [0, 2, 4] and sorted(FAILED) == [1, 3, 5]


def test_direct_task_on_a_stream_not_declared_direct_is_the_emits_own_error(
        cluster: LocalCluster) -> None:
    """Not a grouping's failure: the emit raises the plain error, as for an undeclared
    stream, and nothing is recorded against the subscriber's grouping."""
    class Direct(Spout):
        outputs = ["v"]

        def initialize(self, conf: dict[str, Any], context: Any) -> None:
            self.done = False

        def next_tuple(self) -> None:
            if not self.done:
                self.done = True
                try:
                    self.emit([1], tup_id=1, direct_task=2)
                except Exception as exc:
                    RAISED.append(exc)

    b = TopologyBuilder()
    b.set_spout("src", Direct)
    b.set_bolt("sink", Take, 2).shuffle_grouping("src")
    cluster.submit_topology("notdirect", {}, b.create_topology())
    wait_until(lambda: RAISED, timeout=10)
    assert str(RAISED[0]) == ("component 'src': direct_task given on stream 'default', "
                              "which is not declared direct=True")


class DirectMisuse(Recorded):
    """Tracked emits on its direct stream ``d``: id 0 without direct_task, id 1 to a task
    that does not subscribe, id 2 right; then id 3 on ``default`` (to a bolt that misuses
    its own direct stream the same way). Keeps what its emits raised."""
    outputs = [Stream(["v"], name="d", direct=True), Stream(["v"])]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.sink = context.component_tasks("sink")
        self.done = False

    def next_tuple(self) -> None:
        if self.done:
            return
        self.done = True
        for i, kw in enumerate(({}, {"direct_task": 999}, {"direct_task": self.sink[-1]})):
            try:
                self.emit([i], "d", tup_id=i, **kw)
            except TopologyError as exc:
                RAISED.append(exc)
        self.emit([3], tup_id=3)


class DirectRelay(Bolt):
    """Emits on its direct stream without direct_task (keeps the error), then rightly."""
    outputs = [Stream(["v"], direct=True)]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.sink = context.component_tasks("sink")

    def process(self, tup: Any) -> None:
        try:
            self.emit(list(tup.values))
        except TopologyError as exc:
            RAISED.append(exc)
        self.emit(list(tup.values), direct_task=self.sink[0])


@pytest.mark.parametrize("ackers", [1, 0], ids=["acking", "no-ackers"])
def test_a_direct_emit_without_direct_task_only_raises(cluster: LocalCluster,
                                                       ackers: int) -> None:
    """As the emit's other misuses: the error alone, before any tree starts, so the spout
    does not also get fail(tup_id) (a spout that re-queues what its emit refused would
    replay it twice); a bolt that catches it has its input acked as usual."""
    b = TopologyBuilder()
    b.set_spout("src", DirectMisuse)
    b.set_bolt("relay", DirectRelay).shuffle_grouping("src")
    b.set_bolt("sink", Take, 2).direct_grouping("src", "d").direct_grouping("relay")
    cluster.submit_topology("directmisuse", {"topology.acker.executors": ackers},
                            b.create_topology())
    wait_until(lambda: sorted(ACKED) == [2, 3] and len(GOT) == 2, timeout=20,
               message=lambda: f"acked {ACKED} failed {FAILED} got {GOT}")
    # one acker: a fail sent for 0 or 1 would have reached the spout before 3's ack
    assert FAILED == []
    assert sorted(GOT) == [("sink", 2), ("sink", 3)]
    assert [str(e).split(" (")[0] for e in RAISED] == [
        "component 'src': stream 'd' is direct; emit with direct_task=",
        "component 'src': direct_task 999 is not a task of a component subscribed to stream "
        "'d'",
        "component 'relay': stream 'default' is direct; emit with direct_task="]


def test_stream_none_in_a_grouping_means_the_default_stream() -> None:
    b = TopologyBuilder()
    b.set_spout("src", Numbers)
    b.set_bolt("a", Take).shuffle_grouping("src", stream=None)
    b.set_bolt("b", Take).fields_grouping("src", ["v"], stream=None)
    b.set_bolt("c", Take).custom_grouping("src", OddOnes("foreign"), stream=None)
    topo = b.create_topology()
    assert {inp.stream for c in "abc" for inp in topo.components[c].inputs} == {"default"}
    result = complete_topology(topo, {"src": [[0], [2]]})
    assert result.acked == {0, 1}
    assert sorted(GOT) == [("a", 0), ("a", 2), ("b", 0), ("b", 2), ("c", 0), ("c", 2)]


def test_an_empty_stream_name_is_refused() -> None:
    with pytest.raises(TopologyError, match="stream name is empty"):
        Stream(["a"], name="")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_tick_frequency_is_refused(cluster: LocalCluster, value: float) -> None:
    b = TopologyBuilder()
    b.set_spout("src", Numbers)
    b.set_bolt("r", Take).shuffle_grouping("src")
    with pytest.raises(ConfigError, match="topology.tick.tuple.freq.secs.*finite"):
        cluster.submit_topology("ticks", {"topology.tick.tuple.freq.secs": value},
                                b.create_topology())
    with pytest.raises(ConfigError, match="'r'.*topology.tick.tuple.freq.secs.*finite"):
        b2 = TopologyBuilder()
        b2.set_spout("src", Numbers)
        b2.set_bolt("r", Take, config={"topology.tick.tuple.freq.secs": value}) \
            .shuffle_grouping("src")
        cluster.submit_topology("ticks", {}, b2.create_topology())


@pytest.mark.parametrize("count", ["2", True, 0, 1.5])
def test_rebalance_refuses_a_count_that_is_no_int(cluster: LocalCluster, count: Any) -> None:
    b = TopologyBuilder()
    b.set_spout("src", Numbers)
    b.set_bolt("b", Take, 2).shuffle_grouping("src")
    cluster.submit_topology("rb", {}, b.create_topology())
    with pytest.raises(TopologyError, match="component 'b'.*executors"):
        cluster.rebalance("rb", executors={"b": count})
    info = cluster.get_topology_info("rb")
    assert info["components"]["b"]["executors"] == 2 and info["status"] == "active"


class Raises(Bolt):
    def process(self, tup: Any) -> None:
        raise RuntimeError(f"bad {tup.values[0]}")


def test_errors_past_the_limit_per_interval_are_not_recorded(cluster: LocalCluster) -> None:
    """topology.max.error.report.per.interval limits what is recorded (Storm's throttle),
    not only the log lines."""
    b = TopologyBuilder()
    b.set_spout("src", Numbers)
    b.set_bolt("r", Raises).shuffle_grouping("src")
    cluster.submit_topology("throttle", {"topology.max.error.report.per.interval": 2,
                                         "topology.error.throttle.interval.secs": 600},
                            b.create_topology())
    wait_until(lambda: len(FAILED) == 6, timeout=20, message=lambda: f"failed {FAILED}")
    errors = info_errors(cluster, "throttle", "r")
    assert [e["error"].strip().splitlines()[-1] for e in errors] == [
        "RuntimeError: bad 0", "RuntimeError: bad 1"]
