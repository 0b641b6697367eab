"""The checkpoint path create_topology() wires for stateful bolts, and what it refuses."""
from __future__ import annotations

import pytest

from squall import Bolt, LocalCluster, Spout, StatefulBolt, TopologyBuilder, TopologyError
from squall.stateful.checkpoint import CHECKPOINT


class Words(Spout):
    outputs = ["word"]


class Pass(Bolt):
    outputs = ["word"]

    def process(self, tup):
        self.emit(tup.values)


class Count(StatefulBolt):
    outputs = ["word", "n"]

    def process(self, tup):
        pass


class After(Bolt):
    def process(self, tup):
        pass


def build(conf=None):
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_spout("more", Words)
    b.set_bolt("a", Pass, parallelism=2).shuffle_grouping("words")
    b.set_bolt("b", Pass).shuffle_grouping("a").shuffle_grouping("more")
    b.set_bolt("count", Count, parallelism=3).fields_grouping("b", ["word"])
    b.set_bolt("after", After).shuffle_grouping("count")
    b.set_bolt("aside", After).shuffle_grouping("words")
    return b.create_topology(conf)


def checkpoint_inputs(topology, cid):
    return sorted((i.component, i.grouping) for i in topology.components[cid].inputs
                  if i.stream == CHECKPOINT)


def test_every_bolt_upstream_of_a_stateful_bolt_gets_and_forwards_checkpoints():
    t = build()
    assert t.components[CHECKPOINT].kind == "spout"
    assert CHECKPOINT in t.components[CHECKPOINT].streams
    assert checkpoint_inputs(t, "a") == [(CHECKPOINT, "all")]
    # from a bolt and from a spout: the upstream bolt's forwarded checkpoint and the spout's
    assert checkpoint_inputs(t, "b") == [(CHECKPOINT, "all"), ("a", "all")]
    assert checkpoint_inputs(t, "count") == [("b", "all")]
    assert checkpoint_inputs(t, "after") == [] and checkpoint_inputs(t, "aside") == []
    assert CHECKPOINT in t.components["a"].streams
    # user task ids do not move: system components come after them
    assert t.tasks("a") == [1, 2] and t.tasks(CHECKPOINT) == [t.all_tasks()[-1]]


def test_a_topology_without_stateful_bolts_is_not_changed():
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("a", Pass).shuffle_grouping("words")
    t = b.create_topology()
    assert set(t.components) == {"words", "a"}
    assert list(t.components["a"].streams) == ["default"]


def test_a_stateful_bolt_without_ackers_is_refused_at_create_topology():
    with pytest.raises(TopologyError, match="count.*need ackers.*topology.acker.executors"):
        build({"topology.acker.executors": 0})


def test_a_stateful_bolt_without_ackers_is_refused_at_submit():
    topology = build()
    with LocalCluster() as c:
        with pytest.raises(TopologyError, match="need ackers"):
            c.submit_topology("nope", {"topology.acker.executors": 0}, topology)


def test_a_cycle_on_the_checkpoint_path_is_refused():
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("x", Pass).shuffle_grouping("words").shuffle_grouping("y")
    b.set_bolt("y", Pass).shuffle_grouping("x")
    b.set_bolt("count", Count).shuffle_grouping("y")
    with pytest.raises(TopologyError, match="cycle"):
        b.create_topology()


def test_a_bolt_on_the_path_on_a_thread_of_its_own_is_refused():
    class Blocking(Pass):
        dedicated_thread = True

    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("x", Blocking).shuffle_grouping("words")
    b.set_bolt("count", Count).shuffle_grouping("x")
    with pytest.raises(TopologyError, match="'x' is on the checkpoint path"):
        b.create_topology()


def test_a_windowed_bolt_feeding_a_stateful_bolt_is_refused():
    from squall import Count as CountWindow
    from squall import WindowedBolt

    class Windowed(WindowedBolt):
        outputs = ["word"]
        window = CountWindow(10)

        def process_window(self, window):
            pass

    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("w", Windowed).shuffle_grouping("words")
    b.set_bolt("count", Count).shuffle_grouping("w")
    with pytest.raises(TopologyError, match="'w' is a WindowedBolt on the checkpoint path"):
        b.create_topology()
    b = TopologyBuilder()                       # downstream of a stateful bolt it is fine
    b.set_spout("words", Words)
    b.set_bolt("count", Count).shuffle_grouping("words")
    b.set_bolt("w", Windowed).shuffle_grouping("count")
    b.create_topology()


def test_a_multilang_bolt_feeding_a_stateful_bolt_is_refused_as_one():
    # it runs on a thread of its own, but the user never asked for one: the error says what
    # the bolt is and where to put it, not "dedicated_thread"
    from squall import ShellBolt

    class Upper(ShellBolt):
        command = ["python3", "upper.py"]
        outputs = ["word"]

    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("upper", Upper).shuffle_grouping("words")
    b.set_bolt("count", Count).shuffle_grouping("upper")
    with pytest.raises(TopologyError) as info:
        b.create_topology()
    message = str(info.value)
    assert "'upper' is a multi-lang bolt" in message and "dedicated_thread" not in message
    assert "downstream" in message and "\n" not in message
    b = TopologyBuilder()                       # downstream of a stateful bolt it is fine
    b.set_spout("words", Words)
    b.set_bolt("count", Count).shuffle_grouping("words")
    b.set_bolt("upper", Upper).shuffle_grouping("count")
    b.create_topology()


@pytest.mark.parametrize("stateful_first", [True, False])
@pytest.mark.parametrize("with_process", [False, True])
def test_a_bolt_both_stateful_and_windowed_is_refused_as_such(stateful_first, with_process):
    # with process() too (as a stateful bolt needs), it was told what a windowed bolt may
    # not define
    from squall import Count as CountWindow
    from squall import WindowedBolt

    bases = (StatefulBolt, WindowedBolt) if stateful_first else (WindowedBolt, StatefulBolt)

    def process_window(self, window):
        pass
    body = {"outputs": ["n"], "window": CountWindow(3), "process_window": process_window}
    if with_process:
        body["process"] = lambda self, tup: None
    Sum = type("Sum", bases, body)
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("sum", Sum).shuffle_grouping("words")
    with pytest.raises(TopologyError, match="'sum' is both a StatefulBolt and a WindowedBolt"
                                            ".*WindowedBolt feeding a StatefulBolt"):
        b.create_topology()


def test_a_stateful_bolt_must_define_process():
    class BatchCount(StatefulBolt):
        def process_batch(self, tuples):
            pass

    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("count", BatchCount).shuffle_grouping("words")
    with pytest.raises(TopologyError, match="must define process"):
        b.create_topology()


def test_a_checkpoint_interval_that_is_not_positive_is_refused():
    with pytest.raises(TopologyError, match="interval.ms must be a positive"):
        build({"topology.state.checkpoint.interval.ms": 0})


def test_a_checkpoint_interval_not_below_the_message_timeout_is_refused():
    # inputs are acked when the next checkpoint commits: timed out before it, they would be
    # replayed with their effect already in the state, and counted twice
    slow = {"topology.state.checkpoint.interval.ms": 4000, "topology.message.timeout.secs": 2}
    with pytest.raises(TopologyError, match=r"interval.ms \(4000 ms\) must be below "
                                            r"topology.message.timeout.secs \(2 s\)"):
        build(slow)
    with pytest.raises(TopologyError, match="must be below"):
        build({"topology.state.checkpoint.interval.ms": 30_000})      # the default 30 s
    build({"topology.state.checkpoint.interval.ms": 1999, "topology.message.timeout.secs": 2})
    build({**slow, "topology.enable.message.timeouts": False})    # nothing times out
    topology = build({})
    with LocalCluster() as c:
        with pytest.raises(TopologyError, match="must be below"):
            c.submit_topology("slow", slow, topology)


@pytest.mark.parametrize("key, value, error", [
    ("topology.state.checkpoint.interval.ms", "often", "must be int"),
    ("topology.state.provider.config", 3, "must be dict or null"),
    ("topology.state.provider", "redsi", "did you mean 'redis'|available: memory, redis"),
])
def test_the_state_keys_are_checked(key, value, error):
    from squall import ConfigError, config
    with pytest.raises(ConfigError, match=error):
        config.validate({**config.defaults(), key: value})
