"""Every stream grouping, end to end through complete_topology and LocalCluster."""
from __future__ import annotations

import enum
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import pytest

from squall import (
    Bolt, Grouping, LocalCluster, SingleTargetGrouping, Spout, Stream, TopologyBuilder,
    TopologyError,
)
from squall.api.groupings import fields_hash
from squall.testing import complete_topology, wait_until
from squall.testing.contracts.serializer import Point

#: (component, receiving task, values) of every tuple a Record bolt saw
SEEN: list[tuple[str, int, tuple[Any, ...]]] = []
#: what Router.emit(need_task_ids=True) returned, per input tuple
RETURNED: list[tuple[Any, Any]] = []
#: (receiving task, its worker port, source task) for LocalRecord
LOCAL: list[tuple[int, int, int]] = []
PORT_OF_TASK: dict[int, int] = {}
#: which of a ByN grouping's methods the runtime called, over every emitting task
ASKED: Counter[str] = Counter()
LOCK = threading.Lock()


@pytest.fixture(autouse=True)
def _clear() -> None:
    SEEN.clear()
    RETURNED.clear()
    LOCAL.clear()
    PORT_OF_TASK.clear()
    ASKED.clear()


class Words(Spout):
    outputs = ["word", "n"]


class Record(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.cid, self.task = context.component_id, context.task_id

    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN.append((self.cid, self.task, tuple(tup.values)))


def received(component: str) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for cid, task, values in SEEN:
        if cid == component:
            out[task].append(values)
    return out


def rows(n: int, distinct: int = 10) -> list[list[Any]]:
    return [[f"w{i % distinct}", i] for i in range(n)]


def run_one(grouping: str, *args: Any, bolt_tasks: int = 3, n: int = 300,
            conf: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Any, list[int]]:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    declarer = b.set_bolt("sink", Record, bolt_tasks)
    getattr(declarer, f"{grouping}_grouping")("words", *args, **kwargs)
    topo = b.create_topology()
    result = complete_topology(topo, {"words": rows(n)}, conf)
    assert result.acked == set(range(n)) and not result.failed
    return result, topo.tasks("sink")


def test_shuffle_spreads_evenly() -> None:
    # round-robin exactly: the load-aware shuffle (the default) moves shares away from a task
    # whose queue a busy host let fill (101, 99, 100 under load), as it should
    _, tasks = run_one("shuffle", conf={"topology.disable.loadaware.messaging": True})
    got = received("sink")
    assert sorted(got) == tasks
    assert [len(got[t]) for t in tasks] == [100, 100, 100]


def test_fields_same_word_same_task() -> None:
    _, tasks = run_one("fields", ["word"], bolt_tasks=3)
    got = received("sink")
    owner: dict[str, set[int]] = defaultdict(set)
    for task, values in got.items():
        for word, _ in values:
            owner[word].add(task)
    assert len(owner) == 10
    for word, where in owner.items():
        assert where == {tasks[fields_hash([word]) % len(tasks)]}, word
    assert len(got) >= 2, "10 words should reach more than one of 3 tasks"


def test_all_every_task_gets_a_copy() -> None:
    _, tasks = run_one("all", n=50)
    got = received("sink")
    assert sorted(got) == tasks
    for t in tasks:
        assert sorted(got[t]) == sorted(tuple(r) for r in rows(50))


def test_global_lowest_task_only() -> None:
    _, tasks = run_one("global", bolt_tasks=4, n=60)
    got = received("sink")
    assert list(got) == [min(tasks)] and len(got[min(tasks)]) == 60


def test_none_delivers_each_tuple_once() -> None:
    _, tasks = run_one("none", n=200)
    got = received("sink")
    assert sorted(v for vals in got.values() for v in vals) == sorted(tuple(r) for r in rows(200))
    assert set(got) <= set(tasks)


def test_local_or_shuffle_in_one_worker_spreads() -> None:
    _, tasks = run_one("local_or_shuffle")
    got = received("sink")
    assert sorted(got) == tasks and sum(map(len, got.values())) == 300


def test_partial_key_at_most_two_tasks_per_key() -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("sink", Record, 4).partial_key_grouping("words", ["word"])
    topo = b.create_topology()
    data = [["hot", i] if i % 2 else [f"k{i % 20}", i] for i in range(400)]
    complete_topology(topo, {"words": data})
    owner: dict[str, set[int]] = defaultdict(set)
    for task, values in received("sink").items():
        for word, _ in values:
            owner[word].add(task)
    assert sum(len(v) for v in received("sink").values()) == 400
    assert all(1 <= len(t) <= 2 for t in owner.values()), owner
    assert len(owner["hot"]) == 2


class Highest(Grouping):
    """Sends everything to the highest target task."""

    def choose_tasks(self, task_id: int, values: Any) -> list[int]:
        return [max(self.target_tasks)]


def test_custom_grouping_instance_and_entry_point_name() -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("mine", Record, 3).custom_grouping("words", Highest())
    b.set_bolt("named", Record, 3).custom_grouping("words", "shuffle")
    topo = b.create_topology()
    complete_topology(topo, {"words": rows(90)})
    assert {t: len(v) for t, v in received("mine").items()} == {max(topo.tasks("mine")): 90}
    assert sorted(len(v) for v in received("named").values()) == [30, 30, 30]


class ByN(SingleTargetGrouping):
    """Field ``n`` modulo the number of targets; counts how it is asked."""

    def choose_one(self, values: Sequence[Any]) -> int:
        with LOCK:
            ASKED["choose_one"] += 1
        return self.target_tasks[values[1] % len(self.target_tasks)]

    def choose_many(self, values_list: Sequence[Sequence[Any]]) -> list[int]:
        with LOCK:
            ASKED["choose_many"] += 1
        return [self.target_tasks[v[1] % len(self.target_tasks)] for v in values_list]

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        with LOCK:
            ASKED["choose_tasks"] += 1
        return [self.target_tasks[values[1] % len(self.target_tasks)]]


def test_custom_single_target_grouping_takes_the_fast_path() -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("sink", Record, 3).custom_grouping("words", ByN())
    topo = b.create_topology()
    complete_topology(topo, {"words": rows(90)})
    tasks = topo.tasks("sink")
    assert {t: sorted(n for _, n in v) for t, v in received("sink").items()} == {
        t: list(range(i, 90, 3)) for i, t in enumerate(tasks)}
    assert ASKED["choose_one"] + ASKED["choose_many"] > 0
    assert ASKED["choose_tasks"] == 0, ASKED


class Router(Bolt):
    """Sends each word to a chosen task of ``sink`` on a direct stream; reports what emit
    returned; also emits on a shuffled stream with need_task_ids."""

    outputs = [Stream(["word", "n"], name="to", direct=True), Stream(["word"], name="spread")]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.targets = context.component_tasks("sink")

    def process(self, tup: Any) -> None:
        target = self.targets[tup["n"] % len(self.targets)]
        got = self.emit(list(tup.values), "to", direct_task=target, need_task_ids=True)
        spread = self.emit([tup["word"]], "spread", need_task_ids=True)
        plain = self.emit([tup["word"]], "spread")
        with LOCK:
            RETURNED.append((target, got))
            RETURNED.append(("spread", spread))
            RETURNED.append(("plain", plain))


def test_direct_grouping_and_need_task_ids() -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("router", Router, 2).shuffle_grouping("words")
    b.set_bolt("sink", Record, 3).direct_grouping("router", "to")
    b.set_bolt("spread", Record, 2).shuffle_grouping("router", "spread")
    topo = b.create_topology()
    result = complete_topology(topo, {"words": rows(60)})
    assert result.acked == set(range(60))
    sink = topo.tasks("sink")
    for task, values in received("sink").items():
        assert all(sink[n % 3] == task for _, n in values)
    assert sum(len(v) for v in received("sink").values()) == 60
    direct = [(t, g) for t, g in RETURNED if isinstance(t, int)]
    assert len(direct) == 60 and all(g == [t] for t, g in direct)
    spread = [g for t, g in RETURNED if t == "spread"]
    assert all(len(g) == 1 and g[0] in topo.tasks("spread") for g in spread)
    assert all(g is None for t, g in RETURNED if t == "plain")
    assert sum(len(v) for v in received("spread").values()) == 120


class DirectSpout(Spout):
    outputs = [Stream(["n"], direct=True)]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.targets = context.component_tasks("sink")
        self.bad = context.component_tasks("bad")
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < 30:
            got = self.emit([self.i], direct_task=self.targets[-1], tup_id=self.i,
                            need_task_ids=True)
            with LOCK:
                RETURNED.append((self.i, got))
        elif self.i == 30:       # one tuple for the other subscriber of the direct stream
            self.emit([self.i], direct_task=self.bad[0])
        else:
            return
        self.i += 1


class BadEmitter(Bolt):
    """Misuses direct emits; records the errors it gets."""

    outputs = [Stream(["n"], name="direct", direct=True), Stream(["n"])]

    def process(self, tup: Any) -> None:
        for call in (lambda: self.emit([1], "direct"),                    # no direct_task
                     lambda: self.emit([1], "direct", direct_task=99999),  # not a sink task
                     lambda: self.emit([1], direct_task=1),                # stream not direct
                     lambda: self.emit([1], "nope")):                      # undeclared stream
            try:
                call()
            except TopologyError as exc:
                with LOCK:
                    RETURNED.append(("error", str(exc)))


def test_spout_direct_emit_and_misuse_errors(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("spout", DirectSpout)
    b.set_bolt("sink", Record, 3).direct_grouping("spout")
    b.set_bolt("bad", BadEmitter).direct_grouping("spout")
    b.set_bolt("sink2", Record).direct_grouping("bad", "direct").shuffle_grouping("bad")
    topo = b.create_topology()
    cluster.submit_topology("direct", {}, topo)
    wait_until(lambda: sum(1 for t, _ in RETURNED if t == "error") >= 4, 10)
    wait_until(lambda: len(received("sink").get(max(topo.tasks("sink")), [])) == 30, 10)
    assert set(received("sink")) == {max(topo.tasks("sink"))}
    spout_returns = [g for t, g in RETURNED if isinstance(t, int)]
    assert spout_returns[:30] == [[max(topo.tasks("sink"))]] * 30
    errors = [m for t, m in RETURNED if t == "error"][:4]
    assert "direct_task" in errors[0] and "'direct'" in errors[0]
    assert "99999" in errors[1]
    assert "not declared direct" in errors[2]
    assert "'nope'" in errors[3]


class Relay(Bolt):
    """Forwards each word twice on the default stream (once asking for the task ids) and
    once on a named stream."""

    outputs = [Stream(["word", "n"]), Stream(["word"], name="side")]

    def process(self, tup: Any) -> None:
        got = self.emit(tup.values, need_task_ids=True)
        self.emit(list(tup.values))
        self.emit([tup["word"]], "side")
        with LOCK:
            RETURNED.append((tup["word"], got))


@pytest.mark.parametrize("sink_tasks", [1, 3])
def test_bolt_without_ackers_routes_default_and_named_streams(sink_tasks: int) -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("relay", Relay, 2).shuffle_grouping("words")
    b.set_bolt("sink", Record, sink_tasks).fields_grouping("relay", ["word"])
    b.set_bolt("side", Record).shuffle_grouping("relay", "side")
    topo = b.create_topology()
    complete_topology(topo, {"words": rows(90)}, conf={"topology.acker.executors": 0})
    sink = topo.tasks("sink")
    got = received("sink")
    assert sum(len(v) for v in got.values()) == 180
    for task, values in got.items():
        assert all(sink[fields_hash([w]) % len(sink)] == task for w, _ in values)
    assert all(ids == [sink[fields_hash([w]) % len(sink)]] for w, ids in RETURNED)
    assert len(RETURNED) == 90
    assert sorted(v for vs in received("side").values() for v in vs) == sorted(
        (f"w{i % 10}",) for i in range(90))


KEYS: list[Any] = ["a", 1, True, 1.0, "b", b"a", None, 0, False, "", "a"]


class KeyRelay(Bolt):
    """Forwards each input's key, anchored (when acking), to a fields-grouped sink."""

    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.emit([KEYS[tup["n"] % len(KEYS)]])


class KeyRecord(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.task = context.task_id

    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN.append(("sink", self.task, (tup["word"],)))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("ackers", [0, 1])
def test_fields_grouping_from_a_bolt_follows_the_stable_hash_for_every_key_type(
        workers: int, ackers: int) -> None:
    """Equal keys of different types (1, True, 1.0) hash differently and each goes where the
    stable hash says, however often it repeats, with or without ackers, local or remote."""
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("relay", KeyRelay, 2).shuffle_grouping("words")
    b.set_bolt("sink", KeyRecord, 3).fields_grouping("relay", ["word"])
    topo = b.create_topology()
    n = 220
    result = complete_topology(topo, {"words": rows(n)},
                               conf={"topology.acker.executors": ackers,
                                     "topology.workers": workers})
    if ackers:
        assert result.acked == set(range(n)) and not result.failed
    sink = topo.tasks("sink")
    got = received("sink")
    assert sum(len(v) for v in got.values()) == n
    seen_types = set()
    for task, values in got.items():
        for (key,) in values:
            seen_types.add((type(key), key))
            assert task == sink[fields_hash([key]) % len(sink)], (key, task)
    assert {t for t, _ in seen_types} == {str, int, bool, float, bytes, type(None)}


class Animal(enum.StrEnum):
    COW = "cow"
    PIG = "pig"
    HEN = "hen"
    DOG = "dog"
    CAT = "cat"
    OWL = "owl"


class Forward(Bolt):
    """Re-emits the value it got: as emitted in the spout's worker, as decoded in the
    other."""

    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.emit([tup["word"]])


POINT_CONF = {"topology.serializer.register": {
    "squall.testing.contracts.serializer:Point": [
        "squall.testing.contracts.serializer:point_to_list",
        "squall.testing.contracts.serializer:point_from_list"]}}


@pytest.mark.parametrize("keys", [list(Animal), [Point(i, -i) for i in range(6)]],
                         ids=["str-enum", "registered-type"])
def test_a_key_reaches_one_task_whether_or_not_it_crossed_workers(keys: list[Any]) -> None:
    """A StrEnum arrives from another worker as a plain str, a registered type as an equal
    new object: each key still reaches one task."""
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("relay", Forward, 2).all_grouping("words")      # one relay task a worker
    b.set_bolt("sink", Record, 4).fields_grouping("relay", ["word"])
    result = complete_topology(b.create_topology(),
                               {"words": [[k, i] for i, k in enumerate(keys * 3)]},
                               conf={"topology.workers": 2, **POINT_CONF})
    assert result.acked == set(range(len(keys) * 3)) and not result.failed
    owner: dict[str, set[int]] = defaultdict(set)
    for task, values in received("sink").items():
        for (key,) in values:
            owner[str((key.x, key.y)) if isinstance(key, Point) else str(key)].add(task)
    assert len(owner) == len(keys)
    assert all(len(tasks) == 1 for tasks in owner.values()), dict(owner)
