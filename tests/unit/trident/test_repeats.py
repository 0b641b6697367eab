"""The warnings of a batch that fails every try: the first few of a run in full, then one
line per interval counting the rest; a quiet interval starts a new run."""
from __future__ import annotations

import logging

import pytest

from squall.trident.runtime.repeats import FIRST, RepeatedWarning


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger="test.repeats")
    return caplog


def test_a_run_logs_its_first_lines_then_one_count_per_interval(log):
    clock = Clock()
    w = RepeatedWarning(logging.getLogger("test.repeats"), 10.0, clock=clock)
    for i in range(100):                  # a retry every 0.25 s for 25 s
        w.warning("txid %d failed: try %d", 7, i)
        clock.now += 0.25
    logged = log.messages
    assert logged[:FIRST] == ["txid 7 failed: try 0", "txid 7 failed: try 1",
                              "txid 7 failed: try 2 (more like it: counted, one line every "
                              "10 s)"]
    summaries = logged[FIRST:]
    assert len(summaries) == 2, logged
    assert summaries[0] == "40 more like it in the last 10 s; the latest: txid 7 failed: " \
                           "try 42"
    assert summaries[1].startswith("40 more like it in the last 10 s")


def test_a_quiet_interval_ends_the_run_and_its_count_is_logged(log):
    clock = Clock()
    w = RepeatedWarning(logging.getLogger("test.repeats"), 10.0, clock=clock)
    for i in range(5):
        w.warning("try %d", i)
        clock.now += 1
    clock.now += 20
    w.warning("again")
    assert log.messages == ["try 0", "try 1", "try 2 (more like it: counted, one line every 10 s)",
                      "2 more like it in the last 23 s; the latest: try 4", "again"]
