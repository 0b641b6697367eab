"""Numeric keys that would leave a topology that never runs are refused at submit: one
ConfigError naming the key (issue #30)."""
from __future__ import annotations

import pytest

from squall import LocalCluster, Spout, TopologyBuilder, config
from squall.errors import ConfigError


@pytest.mark.parametrize("key,value,least", [
    ("topology.max.spout.pending", -1, 1), ("topology.max.spout.pending", 0, 1),
    ("topology.acker.executors", -1, 0), ("topology.workers", 0, 1),
    ("topology.message.timeout.secs", -5, 1), ("supervisor.worker.shutdown.sleep.secs", -1, 0),
    ("topology.executor.receive.buffer.size", 0, 1),
    # 0 became 60 (the default) without a word
    ("topology.builtin.metrics.bucket.size.secs", 0, 1),
    ("topology.builtin.metrics.bucket.size.secs", -10, 1),
    ("storm.zookeeper.retry.times", -1, 0), ("storm.zookeeper.retry.interval", -100, 0)])
def test_a_value_below_its_keys_range_is_one_clear_error(key: str, value: int,
                                                         least: int) -> None:
    with pytest.raises(ConfigError, match=rf"{key!r} must be at least {least}.*got {value}"):
        config.validate({**config.defaults(), key: value}, warn=False)


@pytest.mark.parametrize("key,value", [("topology.max.spout.pending", 1),
                                       ("topology.max.spout.pending", None),
                                       ("topology.acker.executors", 0),
                                       ("topology.tick.tuple.freq.secs", 0.5),
                                       ("storm.zookeeper.retry.times", 0)])
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


# the transports' options: each plugin checks its own keys (squall_validate_config), the
# core checks squall.transport.send.buffer.messages; one line naming the key and the range
@pytest.mark.parametrize("key,value,allowed", [
    ("squall.transport.zmq.linger.ms", -5, "from 0 to 2147483647"),
    ("squall.transport.zmq.hwm", -3, r"from 0 to 2147483647 \(or null\)"),
    ("squall.transport.zmq.hwm", 2**31, r"from 0 to 2147483647 \(or null\)"),
    ("squall.transport.nng.linger.ms", -1, "at least 0"),
    ("squall.transport.nng.send.buffer", 0, r"from 1 to 8192 \(or null\)"),
    ("squall.transport.nng.send.buffer", 9000, r"from 1 to 8192 \(or null\)"),
    ("squall.transport.grpc.linger.ms", -1, "at least 0"),
    ("squall.transport.send.buffer.messages", -1, r"at least 1 \(or null\)"),
    ("squall.transport.send.buffer.messages", 0, r"at least 1 \(or null\)"),
])
def test_a_transport_option_out_of_range_is_one_error_naming_key_and_range(
        key: str, value: int, allowed: str) -> None:
    with pytest.raises(ConfigError, match=rf"^config key {key!r} must be {allowed}, "
                                          rf"got {value}$"):
        config.validate({**config.defaults(), key: value}, warn=False)
    # a topology's own keys (what `squall submit` checks before sending) are refused alike
    with pytest.raises(ConfigError, match=rf"{key!r} must be {allowed}"):
        config.validate({key: value}, warn=False)
    # a component's own config (set_bolt(config=...)) may not set it at all: each worker's
    # transport reads the topology's
    with pytest.raises(ConfigError, match=rf"^component 'count': config key {key!r} applies "
                                          r"to the whole topology"):
        config.validate_component("count", {key: value}, warn=False)


def test_grpc_checks_its_message_size_with_its_other_options() -> None:
    with pytest.raises(ConfigError, match="max.message.mb must be a number above 0 and below "
                                          "2048"):
        config.validate({"squall.transport.grpc.max.message.mb": 0}, warn=False)
    with pytest.raises(ConfigError, match="component 'count': config key 'squall.transport."
                                          "grpc.max.message.mb' applies to the whole"):
        config.validate_component("count", {"squall.transport.grpc.max.message.mb": 0})


@pytest.mark.parametrize("key,value", [
    ("squall.transport.zmq.hwm", 0),            # zmq's "no limit"
    ("squall.transport.zmq.linger.ms", 0), ("squall.transport.nng.send.buffer", 1),
    ("squall.transport.nng.send.buffer", 8192), ("squall.transport.nng.send.buffer", None),
    ("squall.transport.send.buffer.messages", 1),
    ("squall.transport.send.buffer.messages", 100000)])
def test_transport_options_in_range_pass(key: str, value: object) -> None:
    config.validate({**config.defaults(), key: value}, warn=False)


def test_submit_to_a_local_cluster_refuses_a_transport_option_out_of_range() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Idle)
    with LocalCluster() as cluster:
        with pytest.raises(ConfigError, match="'squall.transport.zmq.linger.ms' must be"):
            cluster.submit_topology("t", {"squall.transport.zmq.linger.ms": -5},
                                    b.create_topology())


# timeouts and heartbeats the daemons read as `float(conf.get(key) or DEFAULT)`: 0 became the
# default without a word (supervisor.worker.timeout.secs: 0 killed a frozen worker after 30 s)
@pytest.mark.parametrize("key", [
    "nimbus.task.timeout.secs", "nimbus.task.launch.secs", "supervisor.worker.timeout.secs",
    "supervisor.worker.start.timeout.secs", "worker.heartbeat.frequency.secs",
    "task.heartbeat.frequency.secs", "supervisor.heartbeat.frequency.secs",
    "storm.zookeeper.session.timeout", "storm.zookeeper.connection.timeout"])
@pytest.mark.parametrize("value", [0, -1])
def test_a_timeout_or_heartbeat_of_zero_or_less_is_refused(key: str, value: int) -> None:
    with pytest.raises(ConfigError, match=rf"^config key {key!r} must be above 0, "
                                          rf"got {value}$"):
        config.validate({**config.defaults(), key: value}, warn=False)


@pytest.mark.parametrize("beat,timeout,every,limit", [
    ("worker.heartbeat.frequency.secs", "supervisor.worker.timeout.secs", 8, 5),
    ("worker.heartbeat.frequency.secs", "supervisor.worker.timeout.secs", 5, 5),
    ("task.heartbeat.frequency.secs", "nimbus.task.timeout.secs", 10, 6)])
def test_a_heartbeat_not_below_the_timeout_watching_it_is_one_error_naming_both(
        beat: str, timeout: str, every: int, limit: int) -> None:
    conf = {**config.defaults(), beat: every, timeout: limit}
    with pytest.raises(ConfigError, match=rf"^config key {beat!r} \({every}\) must be below "
                                          rf"{timeout!r} \({limit}\): "):
        config.validate(conf, warn=False)
    config.validate({**conf, beat: limit - 1}, warn=False)


def test_heartbeat_pairs_are_checked_where_something_watches_them() -> None:
    # the cluster tests' short timeouts pass
    config.validate({**config.defaults(), "supervisor.worker.timeout.secs": 5,
                     "worker.heartbeat.frequency.secs": 1, "nimbus.task.timeout.secs": 6,
                     "task.heartbeat.frequency.secs": 1}, warn=False)
    # a topology's own conf holds one key of a pair: nimbus checks it merged with its own
    config.validate({"task.heartbeat.frequency.secs": 40}, warn=False)
    # a LocalCluster has no supervisor or nimbus process watching beats
    config.validate({**config.defaults(), "squall.state": "memory",
                     "supervisor.worker.timeout.secs": 1}, warn=False)


def test_nimbus_refuses_a_topology_whose_task_heartbeat_is_not_below_its_task_timeout() -> None:
    from squall.daemon.nimbus_topologies import TopologyLifecycle
    nimbus_conf = {**config.defaults(), "nimbus.task.timeout.secs": 6}
    lifecycle = TopologyLifecycle(nimbus_conf, state=None, code=None,  # type: ignore[arg-type]
                                  scheduling=None, require_leader=lambda: None,  # type: ignore[arg-type]
                                  wake=lambda: None)
    with pytest.raises(ConfigError, match=r"'task.heartbeat.frequency.secs' \(6\) must be "
                                          r"below 'nimbus.task.timeout.secs' \(6\)"):
        lifecycle.submit("t", {"task.heartbeat.frequency.secs": 6}, {}, b"")


# topology.*, worker.* and task.* keys that were accepted and then did something else: each
# is one ConfigError naming the key, at submit (or when a daemon starts)
@pytest.mark.parametrize("key,value,message", [
    # every worker crashed setting its root logger to it
    ("worker.log.level", "FOO", r"'worker.log.level' must be one of DEBUG, INFO, WARNING, "
                                r"ERROR, CRITICAL, got 'FOO'"),
    # every worker crashed binding its /metrics port (OverflowError)
    ("worker.metrics.port.offset", 70000, r"'worker.metrics.port.offset' plus the highest "
                                          r"'supervisor.slots.ports' \(6703\) must be at "
                                          r"most 65535, got 70000"),
    # the worker's own port, which its transport listens on: never bound
    ("worker.metrics.port.offset", 0, r"must be at least 1 \(or null\), got 0"),
    # the worker failed building its outbox ("x"), or -1 meant 0
    ("topology.batch.flush.interval.millis", "x", r"must be int or null, got str 'x'"),
    ("topology.batch.flush.interval.millis", [5], r"must be int or null, got list \[5\]"),
    ("topology.batch.flush.interval.millis", -1, r"must be at least 0 \(or null\), got -1"),
    # read as `value or default`: 0 became 5, 10 and 60
    ("topology.max.error.report.per.interval", 0, r"must be at least 1, got 0"),
    ("topology.error.throttle.interval.secs", 0, r"must be above 0, got 0"),
    ("topology.backpressure.stall.report.secs", 0, r"must be above 0, got 0"),
    # 0 left the interpreter alone, undocumented (null says so now)
    ("topology.worker.thread.switch.interval.ms", 0, r"must be above 0 \(or null\), got 0"),
    # no ticks at all
    ("topology.tick.tuple.freq.secs", 0, r"must be above 0 \(or null\), got 0"),
    ("topology.isolated.hosts", [1, 2], r"'topology.isolated.hosts' must list strings, got "
                                        r"int 1"),
])
def test_a_topology_or_worker_key_that_would_not_do_what_it_says_is_refused(
        key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config.validate({**config.defaults(), key: value}, warn=False)


@pytest.mark.parametrize("key,value", [
    ("worker.log.level", "debug"), ("worker.log.level", "WARN"),
    ("worker.metrics.port.offset", 100), ("topology.batch.flush.interval.millis", 0),
    ("topology.batch.flush.interval.millis", None),
    ("topology.worker.thread.switch.interval.ms", None),   # defaults.yaml: leave it alone
    ("topology.tick.tuple.freq.secs", None), ("topology.isolated.hosts", ["host-1"])])
def test_those_keys_take_what_they_document(key: str, value: object) -> None:
    config.validate({**config.defaults(), key: value}, warn=False)


def test_a_metrics_port_offset_is_checked_against_the_highest_slot_port() -> None:
    conf = {**config.defaults(), "supervisor.slots.ports": [6700, 60000, 6701]}
    with pytest.raises(ConfigError, match=r"'worker.metrics.port.offset' plus the highest "
                                          r"'supervisor.slots.ports' \(60000\) must be at "
                                          r"most 65535, got 6000$"):
        config.validate({**conf, "worker.metrics.port.offset": 6000}, warn=False)
    config.validate({**conf, "worker.metrics.port.offset": 5535}, warn=False)


@pytest.mark.parametrize("high,low,message", [
    (0.9, 2.0, r"'topology.backpressure.low.watermark' \(2.0\) must be from 0 to "
               r"'topology.backpressure.high.watermark' \(0.9\)"),
    (0.0, 0.0, r"'topology.backpressure.high.watermark' must be above 0 and at most 1 "),
    (50.0, 0.9, r"'topology.backpressure.high.watermark' must be above 0 and at most 1 .*"
                r"got 50.0"),
    (0.9, -0.5, r"'topology.backpressure.low.watermark' \(-0.5\) must be from 0"),
])
def test_backpressure_watermarks_are_shares_of_the_queue_low_not_above_high(
        high: float, low: float, message: str) -> None:
    conf = {**config.defaults(), "topology.backpressure.high.watermark": high,
            "topology.backpressure.low.watermark": low}
    with pytest.raises(ConfigError, match=message):
        config.validate(conf, warn=False)


@pytest.mark.parametrize("high,low", [(0.9, 0.9), (1, 0), (0.5, 0.25)])
def test_backpressure_watermarks_in_range_pass(high: float, low: float) -> None:
    config.validate({**config.defaults(), "topology.backpressure.high.watermark": high,
                     "topology.backpressure.low.watermark": low}, warn=False)


def test_submit_refuses_a_tick_frequency_of_0_in_a_components_config() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Idle, config={"topology.tick.tuple.freq.secs": 0})
    with LocalCluster() as cluster:
        with pytest.raises(ConfigError, match=r"component 's': config key "
                                              r"'topology.tick.tuple.freq.secs' must be above 0"):
            cluster.submit_topology("ticks", {}, b.create_topology())
        assert cluster.topologies() == []


def test_a_metrics_port_offset_alone_is_at_most_65535() -> None:
    conf = {k: v for k, v in config.defaults().items() if k != "supervisor.slots.ports"}
    with pytest.raises(ConfigError, match=r"^config key 'worker.metrics.port.offset' must be "
                                          r"at most 65535, got 65536$"):
        config.validate({**conf, "worker.metrics.port.offset": 65536}, warn=False)


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_a_metrics_port_offset_onto_another_slot_is_refused(offset: int) -> None:
    # slot 6700's /metrics took slot 6700 + offset, whose worker then never started
    with pytest.raises(ConfigError, match=rf"^config key 'worker.metrics.port.offset' "
                                          rf"\({offset}\) puts the /metrics endpoint of slot "
                                          rf"6700's worker on port {6700 + offset}, which "
                                          rf"'supervisor.slots.ports' lists too"):
        config.validate({**config.defaults(), "worker.metrics.port.offset": offset},
                        warn=False)
    config.validate({**config.defaults(), "worker.metrics.port.offset": 4}, warn=False)


def test_ports_one_daemon_listens_on_twice_are_refused_naming_both_keys() -> None:
    conf = {**config.defaults(), "supervisor.slots.ports": [7000, 7001], "logviewer.port": 7001}
    with pytest.raises(ConfigError, match=r"^config key 'logviewer.port' \(7001\) is also in "
                                          r"'supervisor.slots.ports'"):
        config.validate(conf, warn=False)
    conf["logviewer.port"] = 7100
    with pytest.raises(ConfigError, match=r"'worker.metrics.port.offset' \(100\) puts the "
                                          r"/metrics endpoint of slot 7000's worker on port "
                                          r"7100, which is 'logviewer.port'"):
        config.validate({**conf, "worker.metrics.port.offset": 100}, warn=False)
    with pytest.raises(ConfigError, match=r"^config keys 'drpc.port' and 'drpc.http.port' are "
                                          r"both 3800"):
        config.validate({**conf, "drpc.port": 3800, "drpc.http.port": 3800}, warn=False)
    # 0 (any free port) meets nothing; daemons of their own may share a number
    config.validate({**conf, "logviewer.port": 0, "drpc.port": 0, "drpc.http.port": 0,
                     "nimbus.port": 7000, "ui.port": 7001}, warn=False)
