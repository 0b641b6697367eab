"""Topology to_json / from_json: the form a topology travels in (no pickling)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder, TopologyError
from squall.api.topology import Topology


class Lines(Spout):
    outputs = [Stream(["line"]), Stream(["id", "x"], name="side", direct=True)]


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        pass


class Count(Bolt):
    def process(self, tup: Any) -> None:
        pass


class Modulo(Grouping):
    """A custom grouping with JSON-able state."""

    def __init__(self, modulus: int = 1) -> None:
        self.modulus = modulus

    def choose_tasks(self, task_id: int, values: Any) -> list[int]:
        return [self.target_tasks[hash(values[0]) % self.modulus]]


def build() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", Lines, 2, config={"spout.k": "v"}).set_num_tasks(4)
    b.set_bolt("split", Split, 3).shuffle_grouping("lines").set_resources(cpu=2, memory_mb=512)
    b.set_bolt("count", Count, 2).fields_grouping("split", ["word"]).direct_grouping(
        "lines", "side")
    b.set_bolt("custom", Count).custom_grouping("split", Modulo(3)).custom_grouping(
        "lines", "shuffle")
    return b.create_topology({"topology.workers": 2})


def test_round_trip_through_json_text() -> None:
    topo = build()
    text = json.dumps(topo.to_json())
    back = Topology.from_json(json.loads(text))
    assert back.to_json() == topo.to_json()
    assert back.conf == {"topology.workers": 2}
    assert back.components["lines"].cls is Lines and back.components["count"].cls is Count
    assert back.components["lines"].streams == topo.components["lines"].streams
    assert back.components["lines"].streams["side"].direct
    assert back.components["split"].resources == {"cpu": 2, "memory_mb": 512}
    assert back.components["lines"].config["spout.k"] == "v"
    for cid in topo.components:
        assert back.tasks(cid) == topo.tasks(cid)
        assert back.executors(cid) == topo.executors(cid)
    assert back.task_to_component == topo.task_to_component


def test_custom_grouping_instance_travels_as_class_and_state() -> None:
    topo = build()
    data = topo.to_json()
    custom = next(c for c in data["components"] if c["id"] == "custom")
    by_source = {i["component"]: i["custom"] for i in custom["inputs"]}
    assert by_source["lines"] == "shuffle"
    assert by_source["split"]["class"].endswith(":Modulo")
    assert by_source["split"]["state"] == {"modulus": 3}
    back = Topology.from_json(json.loads(json.dumps(data)))
    grouping = next(i.custom for i in back.components["custom"].inputs if i.component == "split")
    assert isinstance(grouping, Modulo) and grouping.modulus == 3


def test_from_json_without_resolving_classes() -> None:
    data = build().to_json()
    data["components"][0]["ref"] = "no_such_module_xyz:Nothing"
    back = Topology.from_json(data, resolve=False)
    assert all(c.cls is None for c in back.components.values())
    with pytest.raises(TopologyError, match="no_such_module_xyz:Nothing"):
        Topology.from_json(data)


def test_a_custom_grouping_instance_stays_json_without_resolving_classes() -> None:
    # nimbus reads topologies without the user's code on its path
    data = build().to_json()
    custom = next(c for c in data["components"] if c["id"] == "custom")
    split = next(i for i in custom["inputs"] if i["component"] == "split")
    split["custom"]["class"] = "no_such_module_xyz:Modulo"
    back = Topology.from_json(data, resolve=False)
    assert back.to_json() == data
    with pytest.raises(TopologyError, match="no_such_module_xyz"):
        Topology.from_json(data)


def test_with_parallelism_keeps_task_ids() -> None:
    topo = build()
    changed = topo.with_parallelism({"lines": 4, "count": 1})
    assert changed.tasks("lines") == topo.tasks("lines")
    assert len(changed.executors("lines")) == 4 and len(changed.executors("count")) == 1
    assert changed.task_to_component == topo.task_to_component
    assert topo.components["lines"].parallelism == 2          # the original is unchanged
    with pytest.raises(TopologyError, match="'nope'"):
        topo.with_parallelism({"nope": 2})
    with pytest.raises(TopologyError, match="'count'"):
        topo.with_parallelism({"count": 0})


class ByTable(Grouping):
    """A custom grouping whose constructor takes arguments."""

    def __init__(self, table: dict[str, int], hot: Any = ()) -> None:
        self.table = table
        self.hot = hot

    def choose_tasks(self, task_id: int, values: Any) -> list[int]:
        if values[0] in self.hot:
            return list(self.target_tasks)
        return [self.target_tasks[self.table[values[0]]]]


def test_a_grouping_whose_constructor_takes_arguments_is_rebuilt_as_it_was() -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("count", Count, 3).custom_grouping("lines", ByTable({"a": 2, "b": 0}, ["c"]))
    back = Topology.from_json(json.loads(json.dumps(b.create_topology().to_json())))
    grouping = back.components["count"].inputs[0].custom
    assert isinstance(grouping, ByTable)
    assert (grouping.table, grouping.hot) == ({"a": 2, "b": 0}, ["c"])
    grouping.target_tasks = [1, 2, 3]
    assert [grouping.choose_tasks(9, [k]) for k in "abc"] == [[3], [1], [1, 2, 3]]


@pytest.mark.parametrize("table, hot, said", [
    ({0: 2}, (), "attribute 'table' holds a dict key 0 that is not a str"),
    ({"a": 2}, frozenset({"c"}), "attribute 'hot' holds a frozenset"),
    ({"a": [1, {2: 3}]}, (), "attribute 'table' holds a dict key 2"),
])
def test_a_grouping_instance_that_json_would_change_is_refused_where_it_is_given(
        table: Any, hot: Any, said: str) -> None:
    # a LocalCluster would route with the object itself, a cluster's workers with what JSON
    # brought back of it: an int key as a str, a set dropped
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    with pytest.raises(TopologyError, match=r"^component 'count': grouping ByTable: "
                                            + said.replace("(", r"\(")):
        b.set_bolt("count", Count).custom_grouping("lines", ByTable(table, hot))
