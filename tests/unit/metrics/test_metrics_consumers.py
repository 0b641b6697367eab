"""The `log` metrics consumer and the metrics consumer bolt."""
from __future__ import annotations

import logging
import sys
from typing import ClassVar

import pytest
from squall import (
    DataPoint, LocalCluster, MetricsConsumer, Spout, TaskInfo, TopologyBuilder, config, drivers,
)
from squall.api.context import TopologyContext
from squall.api.tuple import Source, Tuple
from squall.errors import ConfigError, PluginLoadError, PluginNotFoundError
from squall.metrics.consumer_bolt import (
    CONSUMER_KEY,
    METRICS_FIELDS,
    METRICS_STREAM,
    MetricsConsumerBolt,
    consumer_components,
    decode_metrics,
    metrics_values,
)
from squall.metrics.consumers import LoggingMetricsConsumer
from squall.plugin_manager import validate_topology

INFO = TaskInfo(topology="wc-1-1", component="split", task=6, worker_host="node1",
                worker_port=6703, timestamp=1732262400.5, interval_secs=60.0)
POINTS = [DataPoint("__emit-count", {"default": 100}), DataPoint("words", 7)]
LINES = ["1732262400\tnode1:6703\t6:split\t__emit-count\t{\"default\":100}",
         "1732262400\tnode1:6703\t6:split\twords\t7"]


def context() -> TopologyContext:
    return TopologyContext(topology_id="wc-1-1", topology_name="wc",
                           component_id="__metrics_log", task_id=9,
                           task_to_component={9: "__metrics_log", 6: "split"},
                           this_worker_port=6703)


def metrics_tuple(values) -> Tuple:
    return Tuple(values, 6, Source("split", METRICS_STREAM, METRICS_FIELDS))


# -- LoggingMetricsConsumer --------------------------------------------------------------------
def test_log_consumer_is_the_log_entry_point():
    assert drivers.load("squall.metrics_consumers", "log") is LoggingMetricsConsumer


def test_log_consumer_writes_one_line_per_data_point(caplog):
    consumer = LoggingMetricsConsumer()
    consumer.prepare({}, None, context())
    with caplog.at_level(logging.INFO, logger="squall.metrics"):
        consumer.handle(INFO, POINTS)
    assert [r.getMessage() for r in caplog.records if r.name == "squall.metrics"] == LINES
    consumer.cleanup()


def test_log_consumer_appends_to_a_file(tmp_path):
    path = tmp_path / "sub" / "metrics.log"
    for _ in range(2):
        consumer = LoggingMetricsConsumer()
        consumer.prepare({}, {"file": str(path)}, context())
        consumer.handle(INFO, POINTS)
        consumer.cleanup()
    assert path.read_text().splitlines() == LINES * 2


def test_log_consumer_rejects_a_bad_argument():
    with pytest.raises(ConfigError, match=r"no argument or \{file: PATH\}"):
        LoggingMetricsConsumer().prepare({}, {"path": "x"}, context())


# -- helpers for the runtime -------------------------------------------------------------------
def test_metrics_values_round_trip():
    values = metrics_values(INFO, POINTS)
    assert values == [
        {"topology": "wc-1-1", "component": "split", "task": 6, "worker_host": "node1",
         "worker_port": 6703, "timestamp": 1732262400.5, "interval_secs": 60.0},
        [["__emit-count", {"default": 100}], ["words", 7]]]
    assert decode_metrics(values) == (INFO, POINTS)


@pytest.mark.parametrize("values", [
    [], [{"topology": "t"}, []], [{}, [["a", 1]]], [dict(metrics_values(INFO, [])[0]), [["a"]]],
    "xy",
])
def test_decode_rejects_malformed_values(values):
    with pytest.raises(ValueError):
        decode_metrics(values)


def test_consumer_components_from_the_registration():
    conf = {"topology.metrics.consumer.register": [
        "log", {"class": "log", "argument": {"file": "m.log"}, "parallelism.hint": 2},
        {"class": "spark", "argument": {"path": "/d"}}]}
    assert consumer_components(conf) == [
        ("__metrics_log", {CONSUMER_KEY: {"class": "log", "argument": None}}, 1),
        ("__metrics_log#2", {CONSUMER_KEY: {"class": "log", "argument": {"file": "m.log"}}}, 2),
        ("__metrics_spark", {CONSUMER_KEY: {"class": "spark", "argument": {"path": "/d"}}}, 1),
    ]
    assert consumer_components({}) == []


def test_consumer_components_hand_storms_entry_keys_to_the_consumer_tasks():
    conf = {"topology.metrics.consumer.register": [
        {"class": "log", "max.retain.metric.tuples": 5, "whitelist": ["^__ack", "latency"]},
        {"class": "log", "blacklist": ["^__receive$"], "parallelism.hint": 2}]}
    assert consumer_components(conf) == [
        ("__metrics_log", {CONSUMER_KEY: {"class": "log", "argument": None,
                                          "max.retain.metric.tuples": 5,
                                          "whitelist": ["^__ack", "latency"]}}, 1),
        ("__metrics_log#2", {CONSUMER_KEY: {"class": "log", "argument": None,
                                            "blacklist": ["^__receive$"]}}, 2),
    ]


BAD_ENTRIES = [
    ({"argument": 1}, "mapping with a 'class' key"),
    ({"class": "log", "parallelism.hint": 0}, "positive integer"),
    ({"class": "log", "parallelism.hints": 3},
     r"entry for 'log': unknown key 'parallelism.hints' \(did you mean 'parallelism.hint'\?\); "
     r"an entry takes class, argument, parallelism.hint, max.retain.metric.tuples, whitelist, "
     r"blacklist"),
    ({"class": "log", "max.retain.metric.tuple": 3},
     r"unknown key 'max.retain.metric.tuple' \(did you mean 'max.retain.metric.tuples'\?\)"),
    ({"class": "log", "expandMapType": True}, "unknown key 'expandMapType'"),
    ({"class": "log", "max.retain.metric.tuples": -1}, "at least 0"),
    ({"class": "log", "max.retain.metric.tuples": "10"}, "at least 0"),
    ({"class": "log", "whitelist": ["a"], "blacklist": ["b"]}, "not both"),
    ({"class": "log", "whitelist": "__ack-count"}, "whitelist must be a list"),
    ({"class": "log", "blacklist": ["ok", "(unclosed"]},
     r"blacklist entry '\(unclosed' is not a regular expression"),
]


@pytest.mark.parametrize("entry, match", BAD_ENTRIES)
def test_consumer_components_rejects_bad_entries(entry, match):
    with pytest.raises(ConfigError, match=match):
        consumer_components({"topology.metrics.consumer.register": [entry]})


@pytest.mark.parametrize("entry, match", BAD_ENTRIES[1:])
def test_validate_refuses_a_bad_entry_before_submit(entry, match):
    conf = {**config.defaults(), "topology.metrics.consumer.register": ["log", entry]}
    with pytest.raises(ConfigError, match=match):
        config.validate(conf, warn=False)


def test_validate_accepts_storms_entry_keys():
    config.validate({**config.defaults(), "topology.metrics.consumer.register": [
        {"class": "log", "argument": None, "parallelism.hint": 1,
         "max.retain.metric.tuples": 0, "whitelist": [], "blacklist": ["^__receive$"]}]},
        warn=False)


# -- MetricsConsumerBolt -----------------------------------------------------------------------
class Recording(MetricsConsumer):
    instances: ClassVar[list[Recording]] = []

    def __init__(self):
        self.calls = []
        self.prepared = None
        self.cleaned = False
        Recording.instances.append(self)

    def prepare(self, conf, argument, context):
        self.prepared = (conf.get("k"), argument, context.component_id)

    def handle(self, task_info, data_points):
        if any(p.name == "boom" for p in data_points):
            raise RuntimeError("consumer bug")
        self.calls.append((task_info, data_points))

    def cleanup(self):
        self.cleaned = True


@pytest.fixture
def recording(monkeypatch):
    real = drivers.load

    def load(group, name):
        if (group, name) == ("squall.metrics_consumers", "recording"):
            return Recording
        return real(group, name)

    monkeypatch.setattr(drivers, "load", load)
    Recording.instances.clear()
    return Recording


class ErrorCatchingBolt(MetricsConsumerBolt):
    def __init__(self):
        self.errors = []

    def report_error(self, exc_or_msg):
        self.errors.append(str(exc_or_msg))


def test_bolt_feeds_the_consumer_and_survives_its_errors(recording):
    bolt = ErrorCatchingBolt()
    bolt.initialize({"k": 1, CONSUMER_KEY: {"class": "recording", "argument": [1]}}, context())
    consumer = recording.instances[0]
    assert consumer.prepared == (1, [1], "__metrics_log")
    bolt.process(metrics_tuple(metrics_values(INFO, POINTS)))
    bolt.process(metrics_tuple(metrics_values(INFO, [DataPoint("boom", 1)])))
    bolt.process(metrics_tuple([{"task": 1}, []]))
    bolt.process(metrics_tuple(metrics_values(INFO, POINTS[1:])))
    assert consumer.calls == [(INFO, POINTS), (INFO, POINTS[1:])]
    assert len(bolt.errors) == 2
    assert "'recording' failed in handle: RuntimeError('consumer bug')" in bolt.errors[0]
    assert "malformed metrics tuple from split" in bolt.errors[1]
    bolt.cleanup()
    assert consumer.cleaned


NAMED = [DataPoint(n, 1) for n in ("__ack-count", "__emit-count", "__receive",
                                     "__execute-latency", "my-latency", "words")]


@pytest.mark.parametrize("key, patterns, kept", [
    # regular expressions searched in the name, as Storm's FilterByMetricName
    ("whitelist", ["^__ack-count$", "latency"], ["__ack-count", "__execute-latency",
                                                 "my-latency"]),
    ("blacklist", ["^__"], ["my-latency", "words"]),
    ("blacklist", ["count", "^__receive$"], ["__execute-latency", "my-latency", "words"]),
    ("whitelist", [], [n.name for n in NAMED]),         # an empty list filters nothing
])
def test_bolt_hands_the_consumer_only_the_data_points_its_lists_let_through(
        recording, key, patterns, kept):
    bolt = ErrorCatchingBolt()
    bolt.initialize({CONSUMER_KEY: {"class": "recording", key: patterns}}, context())
    consumer = recording.instances[0]
    bolt.process(metrics_tuple(metrics_values(INFO, NAMED)))
    bolt.process(metrics_tuple(metrics_values(INFO, NAMED[::-1])))
    assert [[p.name for p in points] for _, points in consumer.calls] == [kept, kept[::-1]]
    assert bolt.errors == []


def test_bolt_skips_handle_when_no_data_point_passes(recording):
    bolt = ErrorCatchingBolt()
    bolt.initialize({CONSUMER_KEY: {"class": "recording", "whitelist": ["^nothing$"]}},
                    context())
    bolt.process(metrics_tuple(metrics_values(INFO, NAMED)))
    assert recording.instances[0].calls == []


@pytest.mark.parametrize("spec, limit", [
    ({"class": "log"}, 100), ({"class": "log", "max.retain.metric.tuples": 7}, 7),
    ({"class": "log", "max.retain.metric.tuples": 0}, 0)])
def test_bolt_asks_its_executor_to_keep_max_retain_metric_tuples(spec, limit):
    assert MetricsConsumerBolt.squall_queue_limit({CONSUMER_KEY: spec}) == (
        limit, "max.retain.metric.tuples")


def test_bolt_runs_the_log_consumer_into_a_file(tmp_path):
    path = tmp_path / "metrics.log"
    bolt = MetricsConsumerBolt()
    bolt.initialize({CONSUMER_KEY: {"class": "log", "argument": {"file": str(path)}}}, context())
    bolt.process(metrics_tuple(metrics_values(INFO, POINTS)))
    bolt.cleanup()
    assert path.read_text().splitlines() == LINES


def test_bolt_with_an_unknown_consumer_names_the_available_ones():
    with pytest.raises(PluginNotFoundError, match="'lgo' \\(did you mean 'log'\\?\\).*log"):
        MetricsConsumerBolt().initialize({CONSUMER_KEY: {"class": "lgo"}}, context())


def test_bolt_without_its_conf_key_is_a_config_error():
    with pytest.raises(ConfigError, match=CONSUMER_KEY):
        MetricsConsumerBolt().initialize({}, context())


class _Idle(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


def test_a_consumer_whose_library_is_missing_is_refused_at_submit(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    # the spark consumer without squall[spark] was accepted, then failed on every bucket and
    # wrote nothing
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    drivers.refresh()
    b = TopologyBuilder()
    b.set_spout("s", _Idle)
    conf = {"topology.metrics.consumer.register": [
        {"class": "spark", "argument": {"path": str(tmp_path / "m")}}]}
    refused = (r"^squall.metrics_consumers 'spark' could not be loaded: No module named "
               r"'pyarrow'; install it with: pip install 'squall\[spark\]'$")
    try:
        with pytest.raises(PluginLoadError, match=refused):
            validate_topology(b.create_topology(), conf)     # as nimbus checks a submit
        with LocalCluster() as cluster:
            with pytest.raises(PluginLoadError, match=refused):
                cluster.submit_topology("t", conf, b.create_topology())
            assert cluster.topologies() == []
    finally:
        drivers.refresh()


def test_a_prometheus_consumer_of_more_than_one_task_is_refused_at_submit() -> None:
    # every task bound the same port on its host: all but one failed ("Address already in
    # use") and their tasks' series never reached the endpoint
    b = TopologyBuilder()
    b.set_spout("s", _Idle)
    entry = {"class": "prometheus", "argument": {"port": 0}}
    validate_topology(b.create_topology(), {
        "topology.metrics.consumer.register": [{**entry, "parallelism.hint": 1}]})
    with pytest.raises(ConfigError, match=r"^metrics consumer 'prometheus': it serves one "
                       r"port, so its parallelism.hint must be 1, got 2$"):
        validate_topology(b.create_topology(), {
            "topology.metrics.consumer.register": [{**entry, "parallelism.hint": 2}]})


class _NotAConsumer:
    def handle(self, task_info, data_points) -> None:
        pass


class _NoHandle(MetricsConsumer):
    pass


@pytest.mark.parametrize("cls, why", [
    (_NotAConsumer, "is not a squall.MetricsConsumer subclass"),
    (_NoHandle, "does not define handle"),
])
def test_a_consumer_class_that_is_no_consumer_is_refused_at_submit(
        monkeypatch: pytest.MonkeyPatch, cls: type, why: str) -> None:
    # its tasks failed with a raw AttributeError ('_NotAConsumer' object has no attribute
    # 'prepare') or TypeError (can't instantiate abstract class)
    real = drivers.load
    monkeypatch.setattr(drivers, "load", lambda group, name: cls if name == "odd" else
                        real(group, name))
    b = TopologyBuilder()
    b.set_spout("s", _Idle)
    with pytest.raises(PluginLoadError, match=rf"^squall.metrics_consumers 'odd' names "
                       rf"{__name__}:{cls.__qualname__}, which {why}$"):
        validate_topology(b.create_topology(),
                          {"topology.metrics.consumer.register": [{"class": "odd"}]})
