"""Window settings: Storm's component keys over class attributes, what create_topology
refuses (with one clear TopologyError), the late stream it declares, and the config types."""
from __future__ import annotations

from typing import Any

import pytest

from squall import Bolt, ConfigError, Count, Duration, Spout, Stream, TopologyBuilder, \
    TopologyError, WindowedBolt
from squall import config as squall_config
from squall.windowing import WindowSpec
from squall.windowing.topology import check_timeouts


class Events(Spout):
    outputs = ["word", "ts"]


class Other(Spout):
    outputs = ["x"]


class Sums(WindowedBolt):
    outputs = ["total"]
    window = Duration(seconds=10)
    slide = Duration(seconds=5)

    def process_window(self, window: Any) -> None:
        pass


class Late(Sums):
    timestamp_field = "ts"
    late_stream = "late"


def build(cls: type, conf: dict[str, Any] | None = None, component: dict[str, Any] | None = None,
          extra_input: bool = False) -> Any:
    b = TopologyBuilder()
    b.set_spout("events", Events)
    d = b.set_bolt("w", cls, config=component).shuffle_grouping("events")
    if extra_input:
        b.set_spout("other", Other)
        d.shuffle_grouping("other")
    return b.create_topology(conf)


def test_class_attributes_and_their_defaults():
    ws = WindowSpec.of("w", Late, {})
    assert (ws.length, ws.slide, ws.timestamp_field, ws.late_stream) == (
        Duration(seconds=10), Duration(ms=5000), "ts", "late")
    assert (ws.max_lag_ms, ws.watermark_ms) == (0, 1000)      # Storm's defaults
    tumbling = type("T", (Sums,), {"slide": None})
    assert WindowSpec.of("w", tumbling, {}).slide == Duration(seconds=10)


def test_storm_component_keys_override_the_class_attributes():
    ws = WindowSpec.of("w", Sums, {"topology.bolts.window.length.count": 100,
                                   "topology.bolts.sliding.interval.count": 10})
    assert (ws.length, ws.slide, ws.timestamp_field) == (Count(100), Count(10), None)
    ws = WindowSpec.of("w", Late, {
        "topology.bolts.window.length.duration.ms": 700,
        "topology.bolts.sliding.interval.duration.ms": 70,
        "topology.bolts.tuple.timestamp.field.name": None,       # null: the class decides
        "topology.bolts.late.tuple.stream": "behind",
        "topology.bolts.tuple.timestamp.max.lag.ms": 250,
        "topology.bolts.watermark.event.interval.ms": 20})
    assert (ws.length, ws.slide, ws.timestamp_field) == (Duration(ms=700), Duration(ms=70),
                                                          "ts")
    assert (ws.late_stream, ws.max_lag_ms, ws.watermark_ms) == ("behind", 250, 20)
    ws = WindowSpec.of("w", Sums, {"topology.bolts.tuple.timestamp.field.name": "when"})
    assert ws.timestamp_field == "when" and ws.event_time


@pytest.mark.parametrize("cls,config,message", [
    (WindowedBolt, {}, "window must be Count"),
    (Sums, {"topology.bolts.window.length.count": "5"}, "must be a positive integer"),
    (Sums, {"topology.bolts.window.length.count": 0}, "must be a positive integer"),
    (Sums, {"topology.bolts.window.length.count": 5,
            "topology.bolts.window.length.duration.ms": 5}, "not both"),
    (Sums, {"topology.bolts.late.tuple.stream": "late"}, "late stream needs event time"),
])
def test_bad_settings_are_one_topology_error(cls: type, config: dict[str, Any],
                                             message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        WindowSpec.of("w", cls, config)


def test_count_and_duration_refuse_nonsense():
    with pytest.raises(TopologyError, match="positive number of tuples"):
        Count(0)
    with pytest.raises(TopologyError, match="non-negative"):
        Duration(seconds=-1)
    assert Duration(seconds=1, ms=500).ms == 1500


@pytest.mark.parametrize("kwargs,message", [
    ({"seconds": float("inf")}, "Duration seconds must be a finite non-negative number, got inf"),
    ({"seconds": float("nan")}, "Duration seconds must be a finite non-negative number, got nan"),
    ({"ms": float("inf")}, "Duration ms must be a finite non-negative number, got inf"),
    ({"ms": float("-inf")}, "Duration ms must be a finite non-negative number, got -inf"),
    ({"seconds": 1e308}, "Duration of 1e+308 seconds and 0 ms is too long to count in ms"),
])
def test_duration_refuses_what_is_not_a_finite_number_of_ms(kwargs: dict[str, float],
                                                              message: str) -> None:
    # one TopologyError like a negative value's, not Python's OverflowError or ValueError
    with pytest.raises(TopologyError) as err:
        Duration(**kwargs)
    assert str(err.value) == message


def test_create_topology_refuses_a_window_that_outlives_the_message_timeout():
    with pytest.raises(TopologyError, match=r"window plus slide \(15000 ms\) does not fit in "
                                            r"topology.message.timeout.secs \(10 s\)"):
        build(Sums, {"topology.message.timeout.secs": 10})
    build(Sums, {"topology.message.timeout.secs": 15})
    with pytest.raises(TopologyError, match="does not fit"):       # the default is 30 s
        build(Sums, component={"topology.bolts.window.length.duration.ms": 26_000})
    # count windows wait for tuples, not time: no limit
    build(Sums, {"topology.message.timeout.secs": 1},
          component={"topology.bolts.window.length.count": 10_000,
                     "topology.bolts.sliding.interval.count": 10})


class Minute(Sums):
    window = Duration(seconds=60)
    slide = None


@pytest.mark.parametrize("conf", [{"topology.enable.message.timeouts": False},
                                  {"topology.acker.executors": 0}])
def test_a_long_duration_window_is_accepted_when_nothing_times_out(
        conf: dict[str, Any]) -> None:
    # no tuple times out, so nothing bounds how long a window holds its tuples
    topology = build(Minute, conf)
    check_timeouts(topology, {**squall_config.defaults(), **conf})      # at submit
    with pytest.raises(TopologyError, match=r"\(120000 ms\) does not fit"):
        check_timeouts(topology, squall_config.defaults())


@pytest.mark.parametrize("key,value", [("topology.message.timeout.secs", 300),
                                       ("topology.enable.message.timeouts", False)])
def test_a_windowed_bolts_own_message_timeout_is_refused_at_build(key: str,
                                                                  value: Any) -> None:
    # the window's check read the merged conf: a bolt's own 300 s let a 2-minute window
    # through while its spout and ackers timed its tuples out after the topology's 3 s
    with pytest.raises(ConfigError, match=rf"^component 'w': config key '{key}' applies to "
                                          r"the whole topology"):
        build(Minute, {"topology.message.timeout.secs": 3}, component={key: value})


class Tens(Sums):
    window = Count(10)
    slide = None


@pytest.mark.parametrize("component,count", [
    ({}, 20),                                               # tumbling: length + slide
    ({"topology.bolts.sliding.interval.count": 2}, 12),
    ({"topology.bolts.sliding.interval.duration.ms": 100}, 10),     # the count alone
    ({"topology.bolts.window.length.duration.ms": 100,
      "topology.bolts.sliding.interval.count": 15}, 15),
])
def test_create_topology_refuses_a_window_counting_more_than_max_spout_pending(
        component: dict[str, Any], count: int) -> None:
    """A window waiting for more tuples than a spout task may have in flight fills only with
    timed-out replays: refused, as Storm refuses it, naming both values."""
    with pytest.raises(TopologyError) as err:
        build(Tens, {"topology.max.spout.pending": count - 1}, component=component)
    assert str(err.value).startswith(
        f"windowed bolt 'w': window plus slide ({count} tuples) is more than "
        f"topology.max.spout.pending ({count - 1}): ")
    build(Tens, {"topology.max.spout.pending": count}, component=component)
    # in the component's config too; no limit set, or no ackers (the limit does nothing)
    with pytest.raises(TopologyError, match="max.spout.pending"):
        build(Tens, component={**component, "topology.max.spout.pending": count - 1})
    build(Tens, component=component)
    build(Tens, {"topology.max.spout.pending": 1, "topology.acker.executors": 0},
          component=component)
    # duration windows and slides wait for time, not tuples
    build(Sums, {"topology.max.spout.pending": 1})


@pytest.mark.parametrize("component,length,slide", [
    ({"topology.bolts.window.length.count": 5}, Count(5), Duration(ms=5000)),
    ({"topology.bolts.sliding.interval.count": 2}, Duration(seconds=10), Count(2)),
    ({"topology.bolts.window.length.count": 5,
      "topology.bolts.sliding.interval.count": 2}, Count(5), Count(2)),
])
def test_event_time_takes_count_windows_and_slides(component: dict[str, Any],
                                                   length: Count | Duration,
                                                   slide: Count | Duration) -> None:
    ws = WindowSpec.of("w", Late, component)
    assert (ws.length, ws.slide, ws.timestamp_field) == (length, slide, "ts")
    build(Late, component=component)
    # and the count is held to max spout pending as on processing time
    count = sum(v.n for v in (length, slide) if isinstance(v, Count))
    with pytest.raises(TopologyError, match=rf"window plus slide \({count} tuples\) is more "
                                            r"than topology.max.spout.pending"):
        build(Late, {"topology.max.spout.pending": count - 1}, component=component)
    build(Late, {"topology.max.spout.pending": count}, component=component)


def test_the_late_stream_is_declared_with_the_input_fields():
    topo = build(Late)
    assert topo.components["w"].streams["late"] == Stream(["word", "ts"], name="late")
    b = TopologyBuilder()
    b.set_spout("events", Events)
    b.set_bolt("w", Late).shuffle_grouping("events")

    class Sink(Bolt):
        def process(self, tup: Any) -> None:
            pass
    b.set_bolt("sink", Sink).shuffle_grouping("w", "late")       # others may subscribe
    b.create_topology()
    with pytest.raises(TopologyError, match="inputs have different fields"):
        build(Late, extra_input=True)


class EventTs(Sums):
    timestamp_field = "ts"


def test_create_topology_refuses_a_timestamp_field_an_input_stream_lacks():
    # every tuple would fail at run time: refused at build, naming the inputs' fields
    when = type("When", (Sums,), {"timestamp_field": "when"})
    with pytest.raises(TopologyError, match=r"windowed bolt 'w': timestamp field 'when' .* "
                                            r"not a field of events:default; its input "
                                            r"streams' fields: events:default \['word', "
                                            r"'ts'\]"):
        build(when)
    with pytest.raises(TopologyError, match="timestamp field 'tss'"):
        build(Sums, component={"topology.bolts.tuple.timestamp.field.name": "tss"})
    with pytest.raises(TopologyError, match="timestamp field 'tss'"):
        build(Sums, {"topology.bolts.tuple.timestamp.field.name": "tss"})
    with pytest.raises(TopologyError, match=r"'ts' .* not a field of other:default; .*"
                                            r"other:default \['x'\]"):
        build(EventTs, extra_input=True)
    build(EventTs)
    build(Sums, component={"topology.bolts.tuple.timestamp.field.name": "word"})
    # another windowed bolt's late stream (declared after this bolt) has its input's fields
    b = TopologyBuilder()
    b.set_spout("events", Events)
    b.set_bolt("behind", EventTs).shuffle_grouping("w", "late")
    b.set_bolt("w", Late).shuffle_grouping("events")
    b.create_topology()


def test_a_windowed_bolt_must_use_process_window():
    class Both(Sums):
        def process(self, tup: Any) -> None:
            pass

    class Neither(WindowedBolt):
        window = Count(2)
    with pytest.raises(TopologyError, match="defines process or process_batch"):
        build(Both)
    with pytest.raises(TopologyError, match="defines no process_window"):
        build(Neither)
    threaded = type("Threaded", (Sums,), {"dedicated_thread": True})
    with pytest.raises(TopologyError, match="not on a thread of their own"):
        build(threaded)


def test_the_keys_are_type_checked_in_config():
    known = squall_config.defaults()
    assert known["topology.bolts.window.length.count"] is None
    squall_config.validate({"topology.bolts.window.length.count": 10,
                            "topology.bolts.late.tuple.stream": "late"}, warn=False)
    with pytest.raises(ConfigError, match="topology.bolts.sliding.interval.duration.ms"):
        squall_config.validate({"topology.bolts.sliding.interval.duration.ms": "1s"})
    with pytest.raises(ConfigError, match="topology.bolts.tuple.timestamp.field.name"):
        squall_config.validate({"topology.bolts.tuple.timestamp.field.name": 3})
