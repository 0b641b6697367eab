"""``set_resources`` rejects what no scheduler can use (bools, non-numbers, negative, NaN,
infinite or absurd values, unknown keys) with one TopologyError line naming the component."""
from __future__ import annotations

import math
from typing import Any

import pytest

from squall import Bolt, Spout, TopologyBuilder, TopologyError
from squall.scheduling.cluster import details_from_topology


class Src(Spout):
    outputs = ["x"]


class Work(Bolt):
    def process(self, tup: Any) -> None:
        pass


@pytest.mark.parametrize("kwargs, named", [
    ({"cpu": True}, "cpu"), ({"net": False}, "net"), ({"memory_mb": "lots"}, "memory_mb"),
    ({"disk": -1}, "disk"), ({"cpu": math.nan}, "cpu"), ({"memory_mb": math.inf}, "memory_mb"),
    ({"cpu": 10 ** 15}, "cpu"), ({"net": [1]}, "net"),
])
def test_bad_values_are_one_clear_error(kwargs, named):
    b = TopologyBuilder()
    declarer = b.set_spout("src", Src)
    with pytest.raises(TopologyError) as err:
        declarer.set_resources(**kwargs)
    message = str(err.value)
    assert "\n" not in message and message.startswith("component 'src': resource " + named)
    assert repr(next(iter(kwargs.values()))) in message or "too large" in message


def test_good_values_reach_the_scheduler():
    b = TopologyBuilder()
    b.set_spout("src", Src).set_resources(cpu=0.5, memory_mb=1500).set_resources(disk=1)
    b.set_bolt("work", Work).shuffle_grouping("src").set_resources(cpu=2, net=0)
    topology = b.create_topology()
    assert topology.components["src"].resources == {"cpu": 0.5, "memory_mb": 1500, "disk": 1}
    details = details_from_topology("t-1-1", "t", {}, topology, 1)
    assert details.resources_for_component("src").as_dict() == {"cpu": 1, "memory": 2,
                                                                 "net": 1, "disk": 1}
    assert details.resources_for_component("work").as_dict() == {"cpu": 2, "memory": 1,
                                                                  "net": 0, "disk": 0}


def test_a_rejected_call_changes_nothing():
    b = TopologyBuilder()
    declarer = b.set_spout("src", Src).set_resources(cpu=2)
    with pytest.raises(TopologyError):
        declarer.set_resources(memory_mb=512, cpu=True)
    assert b.create_topology().components["src"].resources == {"cpu": 2}


def test_a_components_config_sets_its_resource_defaults():
    """``topology.component.*`` in a component's own config count for that component (over
    the topology conf, under its ``set_resources`` values), and bad ones are refused at
    submit like bad ``set_resources`` values."""
    from squall.daemon.validate import check_resources
    b = TopologyBuilder()
    b.set_spout("src", Src)
    b.set_bolt("heavy", Work, config={"topology.component.memory.mb": 8192,
                                      "topology.component.cpu.slots": 4}).shuffle_grouping("src")
    (b.set_bolt("mixed", Work).shuffle_grouping("src")
     .add_config("topology.component.memory.mb", 4096).set_resources(memory_mb=2048))
    topology = b.create_topology()
    conf = {"topology.component.net.slots": 2}
    details = details_from_topology("t-1-1", "t", conf, topology, 1)
    assert details.resources_for_component("heavy").as_dict() == {"cpu": 4, "memory": 8,
                                                                   "net": 2, "disk": 0}
    assert details.resources_for_component("mixed").as_dict() == {"cpu": 1, "memory": 2,
                                                                   "net": 2, "disk": 0}
    assert details.resources_for_component("src").as_dict() == {"cpu": 1, "memory": 1,
                                                                 "net": 2, "disk": 0}
    check_resources(conf, topology)
    b.set_bolt("bad", Work, config={"topology.component.cpu.slots": -3}).shuffle_grouping("src")
    with pytest.raises(TopologyError, match="component 'bad': "):
        check_resources(conf, b.create_topology())
