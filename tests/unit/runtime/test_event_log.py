"""Sampled emits into the events log: wrappers only where debugging is on, removed when off,
the share sampled, the line written; and topology.debug in a LocalCluster."""
from __future__ import annotations

import logging
import random
import subprocess
import sys
import textwrap

import pytest

from squall import Bolt, Spout, TopologyBuilder
from squall.runtime.event_log import EventSampler, settings_of, show_events
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


def test_stream_none_is_recorded_as_the_default_stream(
        caplog: pytest.LogCaptureFixture) -> None:
    ts = tasks()
    caplog.set_level(logging.INFO, logger="squall.events")
    EventSampler(ts).apply({"split": 100.0})
    ts[1].instance.emit(["a"], stream=None)
    ts[1].instance.emit(["b"], None)
    ts[1].instance.emit_many([["c"]], stream=None)
    ts[1].instance.emit_many([["d"]], None)
    assert [(e[3], e[5]) for e in events(caplog)] == [
        ("default", "['a']"), ("default", "['b']"), ("default", "['c']"), ("default", "['d']")]


def hierarchy() -> tuple[logging.Logger, logging.Logger]:
    """A logging tree of its own, as a program starts it (root at WARNING, no handlers):
    its root and its ``squall.events``."""
    root = logging.RootLogger(logging.WARNING)
    return root, logging.Manager(root).getLogger("squall.events")


class Kept(logging.Handler):
    def __init__(self, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_events_reach_stderr_where_no_logging_is_configured_and_once_only_after(
        capsys: pytest.CaptureFixture[str]) -> None:
    root, events_logger = hierarchy()
    show_events(events_logger)
    show_events(events_logger)                    # once
    assert len(events_logger.handlers) == 1
    events_logger.info("%s", "first")
    assert capsys.readouterr().err == "squall.events: first\n"
    mine = Kept()                                 # the program configures logging later
    root.addHandler(mine)
    events_logger.info("%s", "second")
    assert capsys.readouterr().err == "" and mine.lines == ["second"]


def test_a_configured_logging_is_left_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    root, events_logger = hierarchy()
    mine = Kept()
    root.addHandler(mine)                         # basicConfig() at WARNING: not shown
    show_events(events_logger)
    assert events_logger.handlers == [] and events_logger.level == logging.NOTSET
    events_logger.info("%s", "hidden")
    assert mine.lines == [] and capsys.readouterr().err == ""
    root2, events2 = hierarchy()
    root2.addHandler(Kept(logging.WARNING))       # a handler that would not show INFO
    show_events(events2)
    events2.info("%s", "shown")
    assert capsys.readouterr().err == "squall.events: shown\n"


def test_topology_debug_in_a_script_without_logging_prints_the_emits() -> None:
    """A plain script (no logging configured, no pytest handlers): the lines reach stderr."""
    script = textwrap.dedent("""
        import time
        from squall import Bolt, LocalCluster, Spout, TopologyBuilder
        got = []
        class S(Spout):
            outputs = ["n"]
            def initialize(self, conf, ctx):
                self.i = 0
            def next_tuple(self):
                if self.i < 2:
                    self.emit([self.i], tup_id=self.i)
                    self.i += 1
        class B(Bolt):
            def process(self, tup):
                got.append(tup.values)
        b = TopologyBuilder()
        b.set_spout("s", S)
        b.set_bolt("b", B).shuffle_grouping("s")
        with LocalCluster() as c:
            c.submit_topology("dbg", {"topology.debug": True}, b.create_topology())
            deadline = time.monotonic() + 30
            while len(got) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [ln.split("\t") for ln in out.stderr.splitlines()
             if ln.startswith("squall.events: ")]
    assert sorted((e[1], e[3], e[4], e[5]) for e in lines) == [
        ("s", "default", "0", "[0]"), ("s", "default", "1", "[1]")]


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


class AnchorsSeen(Emitter):
    """Records the anchors each emit got, as a list."""

    def _emit(self, values, stream="default", **kw):
        self.sent.append((tuple(values), list(kw["anchors"])))


def test_anchors_given_as_an_iterator_are_logged_and_still_emitted(
        caplog: pytest.LogCaptureFixture) -> None:
    # the log read the generator, and the emit got it empty (unanchored)
    from squall.api.tuple import Source, Tuple
    ts = {1: TaskState("split", 1, AnchorsSeen(), {})}
    caplog.set_level(logging.INFO, logger="squall.events")
    EventSampler(ts).apply({"split": 100.0})
    src = Source("s", "default", ("v",))
    a, b = Tuple((1,), 1, src, 5, (9,)), Tuple((2,), 1, src, 6, (9,))
    ts[1].instance.emit(["x"], anchors=(t for t in [a, b]))
    assert [e[4] for e in events(caplog)] == ["5,6"]
    assert ts[1].instance.sent == [(("x",), [a, b])]
