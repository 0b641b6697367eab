"""Numeric keys that would leave a topology that never runs are refused at submit: one
ConfigError naming the key (issue #30)."""
from __future__ import annotations

import pytest

from squall import LocalCluster, Spout, TopologyBuilder, config
from squall.errors import ConfigError


@pytest.mark.parametrize("key,value,least", [
    ("topology.max.spout.pending", -1, 1), ("topology.max.spout.pending", 0, 1),
    ("topology.acker.executors", -1, 0), ("topology.workers", 0, 1),
    ("topology.message.timeout.secs", -5, 1), ("nimbus.task.timeout.secs", -1, 0),
    ("topology.executor.receive.buffer.size", 0, 1)])
def test_a_value_below_its_keys_range_is_one_clear_error(key: str, value: int,
                                                         least: int) -> None:
    with pytest.raises(ConfigError, match=rf"{key!r} must be at least {least}.*got {value}"):
        config.validate({**config.defaults(), key: value}, warn=False)


@pytest.mark.parametrize("key,value", [("topology.max.spout.pending", 1),
                                       ("topology.max.spout.pending", None),
                                       ("topology.acker.executors", 0),
                                       ("topology.tick.tuple.freq.secs", 0.5)])
def test_values_in_range_pass(key: str, value: object) -> None:
    config.validate({**config.defaults(), key: value}, warn=False)


class Idle(Spout):
    outputs = ["x"]

    def next_tuple(self) -> None:
        pass


def test_submit_refuses_a_negative_max_spout_pending() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Idle)
    with LocalCluster() as cluster:
        with pytest.raises(ConfigError, match="topology.max.spout.pending"):
            cluster.submit_topology("neg", {"topology.max.spout.pending": -1},
                                    b.create_topology())
        assert cluster.topologies() == []
