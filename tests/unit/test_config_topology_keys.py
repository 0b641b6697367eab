"""Keys read once for the whole topology (``squall.config.TOPOLOGY_KEYS``) are refused in a
component's own config, with one ConfigError naming the component and the key, wherever a
topology is checked: ``create_topology``, ``validate_component`` (``squall submit``) and the
submit hooks (nimbus's check, LocalCluster, ``squall local``, ``complete_topology``), which
also see topologies not made by the builder."""
from __future__ import annotations

from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder, config
from squall.errors import ConfigError
from squall.plugin_manager import validate_topology
from squall.testing import complete_topology


class Numbers(Spout):
    outputs = ["n"]


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


def refusal(component: str, key: str) -> str:
    return (f"component {component!r}: config key {key!r} applies to the whole topology and "
            f"cannot be set in a component's config; set it in the topology's conf")


@pytest.mark.parametrize("key,value", [
    # the spout timed its trees out by its own value, the ackers by the topology's: work
    # done was failed and replayed (a longer timeout), or never completed (timeouts off)
    ("topology.message.timeout.secs", 20),
    ("topology.enable.message.timeouts", False),
    ("topology.acker.executors", 0),
    ("topology.workers", 2),
    ("topology.transfer.batch.size", 10),
    ("topology.executor.receive.buffer.size", 1024),
    ("topology.builtin.metrics.bucket.size.secs", 5),
    ("topology.serializer.register", {}),
    ("squall.transport", "zmq"),
    ("squall.serializer", "json"),
    ("squall.transport.send.buffer.messages", 100),
    ("squall.transport.zmq.hwm", 10),           # a transport's own option
])
def test_a_topology_wide_key_in_a_components_config_is_one_error(key: str,
                                                                  value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        config.validate_component("count", {key: value, "app.words": 3}, warn=False)
    assert str(err.value) == refusal("count", key)


def test_several_topology_wide_keys_are_named_in_one_error() -> None:
    with pytest.raises(ConfigError) as err:
        config.validate_component("s", {"topology.workers": 2,
                                        "topology.message.timeout.secs": 20}, warn=False)
    assert str(err.value) == (
        "component 's': config keys 'topology.message.timeout.secs', 'topology.workers' "
        "apply to the whole topology and cannot be set in a component's config; set them "
        "in the topology's conf")


def test_per_component_keys_stay_allowed() -> None:
    allowed = {"topology.tick.tuple.freq.secs": 1, "topology.max.spout.pending": 10,
               "topology.debug": True, "topology.max.task.parallelism": 2,
               "topology.executor.dedicated.thread": True,
               "topology.sleep.spout.wait.strategy.time.ms": 5,
               "topology.multilang.serializer": "msgpack", "topology.tasks": 2}
    assert config.validate_component("c", allowed, warn=False) == []


def test_every_topology_wide_key_is_a_known_key() -> None:
    assert config.TOPOLOGY_KEYS <= set(config.defaults())


def spout_timeout_builder() -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"topology.message.timeout.secs": 20})
    b.set_bolt("sink", Sink).shuffle_grouping("numbers")
    return b


def test_create_topology_refuses_it() -> None:
    with pytest.raises(ConfigError) as err:
        spout_timeout_builder().create_topology()
    assert str(err.value) == refusal("numbers", "topology.message.timeout.secs")


@pytest.fixture
def spout_timeout_topology(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A topology holding the key, as one made without the builder's check would (the
    submit hooks check every topology, however it was made)."""
    import squall.api.builder
    with monkeypatch.context() as patch:
        patch.setattr(squall.api.builder, "check_topology_keys", lambda *a: None)
        topology = spout_timeout_builder().create_topology()
    return lambda: topology


def test_the_submit_hooks_refuse_it(spout_timeout_topology: Any) -> None:
    # what nimbus runs on a submitted package (squall.daemon.validate) and LocalCluster on
    # submit_topology
    with pytest.raises(ConfigError) as err:
        validate_topology(spout_timeout_topology(), config.defaults())
    assert str(err.value) == refusal("numbers", "topology.message.timeout.secs")


def test_a_local_cluster_and_complete_topology_refuse_it(spout_timeout_topology: Any) -> None:
    with LocalCluster() as cluster:
        with pytest.raises(ConfigError, match="^" + refusal("numbers", "topology.message."
                                                                       "timeout.secs")):
            cluster.submit_topology("timeouts", {"topology.message.timeout.secs": 2},
                                    spout_timeout_topology())
        assert cluster.topologies() == []
    with pytest.raises(ConfigError, match="component 'numbers': config key "
                                          "'topology.message.timeout.secs' applies"):
        complete_topology(spout_timeout_topology(), {"numbers": [[1]]}, timeout=10)
