"""Sampled emits into the events log: wrappers only where debugging is on, removed when off,
the share sampled, the line written; and topology.debug in a LocalCluster."""
from __future__ import annotations

import logging
import random

import pytest

from squall import Bolt, Spout, TopologyBuilder
from squall.runtime.event_log import EventSampler, settings_of
from squall.runtime.task import TaskState
from squall.testing import complete_topology


class Emitter:
    """A component instance as the runtime leaves it: emit functions installed on it."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []
        self.emit = self._emit
        self.emit_many = self._emit_many

    def _emit(self, values, stream="default", **kw):
        self.sent.append((tuple(values), stream))

    def _emit_many(self, values_list, stream="default", **kw):
        self.sent.extend((tuple(v), stream) for v in values_list)


class Acker:
    """No emit installed on the instance: left alone."""


def tasks() -> dict[int, TaskState]:
    return {1: TaskState("split", 1, Emitter(), {}), 2: TaskState("count", 2, Emitter(), {}),
            3: TaskState("__acker", 3, Acker(), {})}


def events(caplog: pytest.LogCaptureFixture) -> list[list[str]]:
    return [r.getMessage().split("\t") for r in caplog.records if r.name == "squall.events"]


def test_only_debugged_components_are_wrapped_and_unwrapping_restores_them(
        caplog: pytest.LogCaptureFixture) -> None:
    ts = tasks()
    originals = {t: (s.instance.emit, s.instance.emit_many) for t, s in ts.items() if t != 3}
    sampler = EventSampler(ts)
    caplog.set_level(logging.INFO, logger="squall.events")
    sampler.apply({"split": 100.0})
    assert ts[2].instance.emit is originals[2][0]          # count: untouched, costs nothing
    ts[1].instance.emit(["a", 1], "words", anchors=None, tup_id=7)
    ts[1].instance.emit_many([["b"], ["c"]])
    ts[2].instance.emit(["x"])
    got = events(caplog)
    assert [(e[1], e[2], e[3], e[4], e[5]) for e in got] == [
        ("split", "1", "words", "7", "['a', 1]"), ("split", "1", "default", "-", "['b']"),
        ("split", "1", "default", "-", "['c']")]
    assert ts[1].instance.sent == [(("a", 1), "words"), (("b",), "default"),
                                   (("c",), "default")]      # the emits still happen
    sampler.apply({})
    assert (ts[1].instance.emit, ts[1].instance.emit_many) == originals[1]
    assert sampler.sampled() == {}
    sampler.apply({"*": 100.0})                               # every component that emits
    assert set(sampler.sampled()) == {1, 2}


def test_a_share_is_sampled(caplog: pytest.LogCaptureFixture) -> None:
    random.seed(7)
    ts = tasks()
    sampler = EventSampler(ts)
    caplog.set_level(logging.INFO, logger="squall.events")
    sampler.apply({"split": 10.0})
    for i in range(2000):
        ts[1].instance.emit([i])
    assert 120 < len(events(caplog)) < 280
    assert len(ts[1].instance.sent) == 2000


def test_settings_from_conf_and_component_debug() -> None:
    assert settings_of({}, None) == {}
    assert settings_of({"topology.debug": True}, None) == {"*": 100.0}
    assert settings_of({}, {"split": {"enable": True, "samplingpct": 5},
                            "count": {"enable": False}}) == {"split": 5.0, "count": 0.0}
    # squall debug --disable turns off what topology.debug turned on (it kept sampling all)
    assert settings_of({"topology.debug": True}, {"count": {"enable": False}}) == {
        "*": 100.0, "count": 0.0}
    assert settings_of({"topology.debug": True}, {"*": {"enable": False}},
                       {"split": {"topology.debug": True}}) == {"*": 0.0}
    assert settings_of({"topology.debug": True}, {"*": {"enable": False},
                                                  "split": {"enable": True,
                                                            "samplingpct": 5}}) == {
        "*": 0.0, "split": 5.0}
    # a component's own topology.debug where it differs from the topology's
    confs = {"split": {"topology.debug": True}, "count": {}}
    assert settings_of({}, None, confs) == {"split": 100.0}
    assert settings_of({"topology.debug": True}, None,
                       {"split": {"topology.debug": True}, "count": {"topology.debug": False}}
                       ) == {"*": 100.0, "count": 0.0}


class Words(Spout):
    outputs = ["word"]


class Upper(Bolt):
    outputs = ["word"]

    def process(self, tup):
        self.emit([tup.values[0].upper()])


def test_topology_debug_records_every_emit_in_a_local_cluster(
        caplog: pytest.LogCaptureFixture) -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("upper", Upper).shuffle_grouping("words")
    caplog.set_level(logging.INFO, logger="squall.events")
    result = complete_topology(b.create_topology(), sources={"words": [["a"], ["b"]]},
                               conf={"topology.debug": True}, timeout=30)
    assert result.acked == {0, 1}
    upper = sorted(e[5] for e in events(caplog) if e[1] == "upper")
    assert upper == ["['A']", "['B']"]


def test_a_components_own_topology_debug_records_only_its_emits(
        caplog: pytest.LogCaptureFixture) -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("upper", Upper).shuffle_grouping("words").add_config("topology.debug", True)
    caplog.set_level(logging.INFO, logger="squall.events")
    result = complete_topology(b.create_topology(), sources={"words": [["a"], ["b"]]},
                               timeout=30)
    assert result.acked == {0, 1}
    assert sorted(e[5] for e in events(caplog) if e[1] == "upper") == ["['A']", "['B']"]
    assert [e for e in events(caplog) if e[1] != "upper"] == []
