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
    assert rec == {"loggers": {"a": {"level": "DEBUG", "expires": 1030, "timeout": 30},
                               "b": {"level": "ERROR", "expires": 1030, "timeout": 30}}}
    rec = merge_request(rec, {"a": "RESET", "c": "INFO"}, 0, now=1010)
    assert rec == {"loggers": {"b": {"level": "ERROR", "expires": 1030, "timeout": 30},
                               "c": {"level": "INFO", "expires": 0}}}
    assert merge_request(rec, {}, 0, now=2000) == {"loggers": {"c": {"level": "INFO",
                                                                     "expires": 0}}}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_worker_applies_then_reverts_on_expiry(logger: logging.Logger) -> None:
    clock = Clock()
    levels = LogLevels(clock)
    levels.apply(None, now=999)                      # the worker runs
    rec = merge_request(None, {logger.name: "DEBUG"}, 30, now=1000)
    levels.apply(rec, now=1001)
    assert logger.level == logging.DEBUG and levels.active() == {logger.name: "DEBUG"}
    clock.now += 29
    levels.apply(rec, now=1030)
    assert logger.level == logging.DEBUG
    clock.now += 2
    levels.apply(rec, now=1032)                      # expired: back to its own level
    assert logger.level == logging.WARNING and levels.active() == {}


@pytest.mark.parametrize("skew", [-3600, 3600])
def test_a_request_lasts_its_timeout_whatever_the_workers_clock_says(
        logger: logging.Logger, skew: float) -> None:
    # a worker host ahead of nimbus's by more than the timeout ignored the request; one
    # behind kept it that much longer
    clock = Clock()
    levels = LogLevels(clock)
    levels.apply(None, now=1000 + skew)              # the worker runs
    rec = merge_request(None, {logger.name: "DEBUG"}, 30, now=1000)
    levels.apply(rec, now=1001 + skew)
    assert logger.level == logging.DEBUG
    clock.now += 29
    levels.apply(rec, now=1030 + skew)
    assert logger.level == logging.DEBUG
    clock.now += 2
    levels.apply(rec, now=1032 + skew)
    assert logger.level == logging.WARNING


def test_a_worker_started_after_a_request_keeps_only_what_is_left_of_it(
        logger: logging.Logger) -> None:
    clock = Clock()
    rec = merge_request(None, {logger.name: "DEBUG"}, 30, now=1000)
    late = LogLevels(clock)
    late.apply(rec, now=1100)                        # started after it expired: not applied
    assert logger.level == logging.WARNING
    levels = LogLevels(clock)
    levels.apply(rec, now=1020)                      # 10 s of it left
    assert logger.level == logging.DEBUG
    clock.now += 11
    levels.apply(rec, now=1031)
    assert logger.level == logging.WARNING


def test_worker_reverts_when_the_request_is_removed(logger: logging.Logger) -> None:
    levels = LogLevels()
    levels.apply(merge_request(None, {logger.name: "ERROR"}, 0, now=1), now=2)
    assert logger.level == logging.ERROR
    levels.apply(merge_request(None, {logger.name: "INFO"}, 0, now=3), now=4)
    assert logger.level == logging.INFO
    levels.apply(None, now=5)                        # topology's record gone or reset
    assert logger.level == logging.WARNING


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def worker_root() -> Iterator[_Lines]:
    """The root logger as a worker has it (INFO), with what reaches its handler."""
    root = logging.getLogger()
    saved = root.level
    lines = _Lines()
    root.addHandler(lines)
    root.setLevel(logging.INFO)
    yield lines
    root.removeHandler(lines)
    root.setLevel(saved)


def test_every_change_of_level_is_in_the_log_even_one_that_silences_it(
        worker_root: _Lines) -> None:
    """`set-log-level NAME ROOT=WARNING` left no line: it was logged at INFO after the change
    that drops INFO; a worker at WARNING told DEBUG said so only once back."""
    levels = LogLevels()
    levels.apply(merge_request(None, {"ROOT": "WARNING"}, 0, now=1), now=2)
    assert logging.getLogger().level == logging.WARNING
    levels.apply(None, now=3)
    assert worker_root.lines == ["log level of ROOT set to WARNING",
                                 "log level of ROOT back to INFO"]
    logging.getLogger().setLevel(logging.WARNING)    # worker.log.level: WARNING
    worker_root.lines.clear()
    levels.apply(merge_request(None, {"ROOT": "DEBUG"}, 0, now=4), now=5)
    levels.apply(None, now=6)
    assert worker_root.lines == ["log level of ROOT set to DEBUG",
                                 "log level of ROOT back to WARNING"]


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
