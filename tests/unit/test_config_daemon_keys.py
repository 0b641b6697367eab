"""The daemons' keys are refused at validation with one line naming the key when the daemon
could not do what they say: periods no loop can wait, the UI's sampling, the DRPC server's
sizes, the addresses a process reaches the cluster through, a transport's bind host."""
from __future__ import annotations

import pytest

from squall import ConfigError, config

YEAR = 365 * 24 * 3600


@pytest.mark.parametrize("key,value,most", [
    # the daemon passed validation and its loop thread died (OverflowError) while it ran on
    ("nimbus.monitor.freq.secs", 10**10, YEAR),
    ("supervisor.monitor.frequency.secs", 10**10, YEAR),
    ("supervisor.heartbeat.frequency.secs", 10**10, YEAR),
    ("ui.sample.secs", 1e10, YEAR),
    ("topology.message.timeout.secs", YEAR + 1, YEAR),
    ("storm.zookeeper.session.timeout", YEAR * 1000 + 1, YEAR * 1000),     # milliseconds
    ("topology.state.checkpoint.interval.ms", 10**12, YEAR * 1000),
    ("spark.spout.progress.interval.secs", 1e10, YEAR),                   # a plugin's
])
def test_a_duration_above_a_year_is_one_error_naming_the_key(key: str, value: float,
                                                             most: int) -> None:
    with pytest.raises(ConfigError, match=rf"^config key {key!r} must be at most {most} "
                                          rf"\(a year\), got {value!r}$"):
        config.validate({**config.defaults(), key: value}, warn=False)
    # in a component's own config too, unless the key is the whole topology's (refused there)
    refused = "applies to the whole topology" if key in config.TOPOLOGY_KEYS else \
        rf"must be at most {most}"
    with pytest.raises(ConfigError, match=rf"^component 'c': config key {key!r} {refused}"):
        config.validate_component("c", {key: value}, warn=False)


def test_a_year_passes_and_units_come_from_the_name() -> None:
    config.validate({**config.defaults(), "nimbus.monitor.freq.secs": YEAR,
                     "storm.zookeeper.connection.timeout": YEAR * 1000,
                     "topology.max.replication.wait.time.sec": -1}, warn=False)
    assert config.duration_unit("drpc.fetch.lease.secs") == 1.0
    assert config.duration_unit("storm.zookeeper.retry.interval") == 0.001
    assert config.duration_unit("topology.batch.flush.interval.millis") == 0.001
    assert config.duration_unit("drpc.max.message.bytes") is None


@pytest.mark.parametrize("key,value,message", [
    # -1: the UI asked nimbus for every topology in a busy loop; 0 silently became 5
    ("ui.sample.secs", -1, "must be above 0, got -1"),
    ("ui.sample.secs", 0, "must be above 0, got 0"),
    # 0 silently became 120, -5 became 2
    ("ui.history.size", 0, "must be at least 2, got 0"),
    ("ui.history.size", -5, "must be at least 2, got -5"),
    ("ui.history.size", 1, "must be at least 2, got 1"),
    # refused only when `squall drpc` started
    ("drpc.fetch.lease.secs", 0, "must be above 0, got 0"),
    ("drpc.max.message.bytes", 0, "must be above 0, got 0"),
])
def test_the_ui_and_drpc_servers_numbers(key: str, value: int, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"^config key {key!r} {message}$"):
        config.validate({**config.defaults(), key: value}, warn=False)


@pytest.mark.parametrize("key,value,message", [
    ("storm.zookeeper.root", "squall", r"must be an absolute path \(such as '/squall'\)"),
    # an empty list meant localhost without a word
    ("storm.zookeeper.servers", [], "must list at least one host, got"),
    ("nimbus.seeds", [], "must list at least one host, got"),
    ("drpc.servers", ["h:notaport"], "must list 'host' or 'host:port' entries"),
    ("drpc.servers", ["h:99999"], "must list 'host' or 'host:port' entries"),
    ("drpc.servers", ["ok", ":3772"], "must list 'host' or 'host:port' entries"),
])
def test_the_addresses_a_process_reaches_the_cluster_through(key: str, value: object,
                                                             message: str) -> None:
    with pytest.raises(ConfigError, match=rf"^config key {key!r} {message}"):
        config.validate({**config.defaults(), key: value}, warn=False)


def test_good_addresses_pass() -> None:
    config.validate({**config.defaults(), "storm.zookeeper.root": "/a/b",
                     "drpc.servers": ["h", "h:3772", "10.0.0.1:1"],
                     "nimbus.seeds": ["n1", "n2"]}, warn=False)


@pytest.mark.parametrize("name", ["zmq", "nng", "grpc"])
@pytest.mark.parametrize("host", ["", "  "])
def test_an_empty_bind_host_is_refused(name: str, host: str) -> None:
    # zmq and grpc failed in every worker, nng listened on every interface
    key = f"squall.transport.{name}.bind.host"
    with pytest.raises(ConfigError, match=rf"^config key {key!r} must be a host name or "
                                          rf"address to bind \('0.0.0.0': every interface\)"):
        config.validate({**config.defaults(), key: host}, warn=False)
    with pytest.raises(ConfigError, match=rf"^component 'c': config key {key!r}"):
        config.validate_component("c", {key: host}, warn=False)
    config.validate({**config.defaults(), key: "0.0.0.0"}, warn=False)


def test_period_secs_checks_what_a_daemon_waits_on() -> None:
    assert config.period_secs({}, "nimbus.monitor.freq.secs") == 10.0     # the default
    assert config.period_secs({"ui.sample.secs": 0.5}, "ui.sample.secs") == 0.5
    for bad in (0, -1, 1e10, float("nan"), "5", True):
        with pytest.raises(ConfigError, match=r"^config key 'ui.sample.secs' must be a number "
                                              r"of seconds above 0 and at most 31536000"):
            config.period_secs({"ui.sample.secs": bad}, "ui.sample.secs")
