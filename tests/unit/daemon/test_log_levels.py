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
