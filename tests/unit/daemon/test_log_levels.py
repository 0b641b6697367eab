"""Run-time log levels: requests merged by nimbus, applied and reverted by workers."""
from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from squall.daemon.log_levels import LogLevels, merge_request, parse_assignment
from squall.errors import ConfigError


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    lg = logging.getLogger("squall.test.levels")
    lg.setLevel(logging.WARNING)
    yield lg
    lg.setLevel(logging.NOTSET)


def test_parse_assignment() -> None:
    assert parse_assignment("squall.worker=debug") == ("squall.worker", "DEBUG")
    assert parse_assignment("ROOT=warn") == ("ROOT", "WARNING")
    assert parse_assignment("x=reset") == ("x", "RESET")
    for bad in ("squall.worker", "=DEBUG", "x=LOUD"):
        with pytest.raises(ConfigError, match="LOGGER=LEVEL|level must be"):
            parse_assignment(bad)


def test_parse_assignment_names_any_component_logger() -> None:
    # it split at the first '=' and stripped the name: a component id with '=' or with
    # spaces at its ends could not be named
    assert parse_assignment("squall.component.a=b=DEBUG") == ("squall.component.a=b",
                                                              "DEBUG")
    assert parse_assignment("squall.component.k=v= warn") == ("squall.component.k=v",
                                                              "WARNING")
    assert parse_assignment("squall.component.pad =info") == ("squall.component.pad ",
                                                              "INFO")
    with pytest.raises(ConfigError, match="level must be"):
        parse_assignment("squall.component.a=DEBUG=x")


def test_merge_sets_expiry_and_reset_removes() -> None:
    rec = merge_request(None, {"a": "DEBUG", "b": "ERROR"}, 30, now=1000)
    assert rec == {"loggers": {"a": {"level": "DEBUG", "expires": 1030},
                               "b": {"level": "ERROR", "expires": 1030}}}
    rec = merge_request(rec, {"a": "RESET", "c": "INFO"}, 0, now=1010)
    assert rec == {"loggers": {"b": {"level": "ERROR", "expires": 1030},
                               "c": {"level": "INFO", "expires": 0}}}
    assert merge_request(rec, {}, 0, now=2000) == {"loggers": {"c": {"level": "INFO",
                                                                     "expires": 0}}}


def test_worker_applies_then_reverts_on_expiry(logger: logging.Logger) -> None:
    levels = LogLevels()
    rec = merge_request(None, {logger.name: "DEBUG"}, 30, now=1000)
    levels.apply(rec, now=1001)
    assert logger.level == logging.DEBUG and levels.active() == {logger.name: "DEBUG"}
    levels.apply(rec, now=1029)
    assert logger.level == logging.DEBUG
    levels.apply(rec, now=1031)                      # expired: back to its own level
    assert logger.level == logging.WARNING and levels.active() == {}


def test_worker_reverts_when_the_request_is_removed(logger: logging.Logger) -> None:
    levels = LogLevels()
    levels.apply(merge_request(None, {logger.name: "ERROR"}, 0, now=1), now=2)
    assert logger.level == logging.ERROR
    levels.apply(merge_request(None, {logger.name: "INFO"}, 0, now=3), now=4)
    assert logger.level == logging.INFO
    levels.apply(None, now=5)                        # topology's record gone or reset
    assert logger.level == logging.WARNING


def test_nimbus_records_levels_and_debug_and_refuses_bad_requests(tmp_path) -> None:
    from squall import drivers
    from squall.daemon.nimbus_code import CodeStore
    from squall.daemon.nimbus_schedule import Scheduling
    from squall.daemon.nimbus_topologies import TopologyLifecycle
    from squall.errors import NotAliveError
    from squall.state.cluster_state import ClusterState
    conf = {"squall.state": "memory", "squall.scheduler": "even",
            "storm.local.dir": str(tmp_path)}
    store = drivers.driver("state", conf)
    store.start()
    try:
        state = ClusterState(store, conf)
        state.setup()
        code = CodeStore(tmp_path / "nimbus", conf)
        code.prepare()
        scheduling = Scheduling(conf, state, drivers.driver("scheduler", conf), code)
        lifecycle = TopologyLifecycle(conf, state, code, scheduling, lambda: None,
                                      lambda: None)
        state.set_storm("wc-1-1", {"name": "wc", "status": "active", "launch_time": 1})
        lifecycle.set_log_levels("wc", {"squall.worker": "DEBUG"}, 30)
        record = state.get_log_config("wc-1-1")
        assert record["loggers"]["squall.worker"]["level"] == "DEBUG"
        assert record["loggers"]["squall.worker"]["expires"] > 0
        lifecycle.set_log_levels("wc", {"squall.worker": "RESET"}, 0)
        assert state.get_log_config("wc-1-1") == {"loggers": {}}
        for levels, timeout in (({"x": "LOUD"}, 0), ({}, 0), ({"x": "INFO"}, -1)):
            with pytest.raises(ConfigError):
                lifecycle.set_log_levels("wc", levels, timeout)
        with pytest.raises(NotAliveError):
            lifecycle.set_log_levels("nope", {"x": "INFO"}, 0)

        lifecycle.set_debug("wc", "split", True, 10)
        lifecycle.set_debug("wc", "", True, 100)
        assert state.get_storm("wc-1-1")["component_debug"] == {
            "split": {"enable": True, "samplingpct": 10.0},
            "*": {"enable": True, "samplingpct": 100.0}}
        # a --disable is recorded: it must also turn off what topology.debug turned on
        lifecycle.set_debug("wc", "split", False, 0)
        assert state.get_storm("wc-1-1")["component_debug"] == {
            "split": {"enable": False}, "*": {"enable": True, "samplingpct": 100.0}}
        lifecycle.set_debug("wc", "", False, 0)             # every component: all off
        assert state.get_storm("wc-1-1")["component_debug"] == {"*": {"enable": False}}
        for pct in (0, 101):
            with pytest.raises(ConfigError, match="sampling percentage"):
                lifecycle.set_debug("wc", "split", True, pct)
    finally:
        store.close()
