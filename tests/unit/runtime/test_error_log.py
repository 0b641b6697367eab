"""ErrorLog: errors kept per component (newest 10), reports throttled per interval."""
from __future__ import annotations

import logging
import types

import pytest

from squall.runtime import errors as errors_mod
from squall.runtime.errors import ErrorLog


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    fake = types.SimpleNamespace(monotonic=lambda: now[0], time=lambda: 1.7e9 + now[0])
    monkeypatch.setattr(errors_mod, "time", fake)
    return now


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "squall.errors"]


def test_throttles_reports_per_component(clock: list[float],
                                         caplog: pytest.LogCaptureFixture) -> None:
    """Storm's throttle: past topology.max.error.report.per.interval in an interval an error
    is neither recorded (get_topology_info, ZooKeeper) nor logged, only counted; the count is
    one line when the interval ends."""
    log = ErrorLog({"topology.max.error.report.per.interval": 3,
                    "topology.error.throttle.interval.secs": 10})
    caplog.set_level(logging.ERROR, logger="squall.errors")
    for i in range(20):
        log.record("split", 4, ValueError(f"bad {i}"), "host1", 6700)
    log.record("count", 7, "a message", "host1", 6700)
    got = lines(caplog)
    assert got[:3] == [f"component split task 4: ValueError: bad {i}" for i in range(3)]
    assert "split" in got[3] and "not reported" in got[3]
    assert got[4] == "component count task 7: a message"      # another component is not muted
    assert len(got) == 5
    assert [e["error"] for e in log.recent()["split"]] == [f"ValueError: bad {i}\n"
                                                            for i in range(3)]
    assert len(log.drain()) == 4                               # 3 of split, 1 of count
    assert (log.count, log.suppressed) == (21, 17)

    clock[0] += 10.5                                          # a new interval
    caplog.clear()
    log.record("split", 4, ValueError("after"), "host1", 6700)
    assert lines(caplog) == [
        "component split: 17 more error(s) in 10 s were not reported "
        "(topology.max.error.report.per.interval is 3)",
        "component split task 4: ValueError: after"]
    assert log.count == 22
    assert len(log.recent()["split"]) == 4


def test_interval_end_is_logged_by_drain(clock: list[float],
                                         caplog: pytest.LogCaptureFixture) -> None:
    log = ErrorLog({"topology.max.error.report.per.interval": 1,
                    "topology.error.throttle.interval.secs": 5})
    caplog.set_level(logging.ERROR, logger="squall.errors")
    for i in range(4):
        log.record("b", 1, f"e{i}", "h", 1)
    caplog.clear()
    log.drain()
    assert lines(caplog) == []                                 # the interval is still on
    clock[0] += 6
    log.drain()
    assert lines(caplog) == ["component b: 3 more error(s) in 5 s were not reported "
                             "(topology.max.error.report.per.interval is 1)"]
    caplog.clear()
    log.drain()
    assert lines(caplog) == []                                 # said once


def test_an_exception_is_recorded_once(clock: list[float]) -> None:
    log = ErrorLog({})
    exc = ValueError("twice")
    log.record("b", 1, exc, "h", 1)
    log.record("b", 1, exc, "h", 1)
    assert len(log.recent()["b"]) == 1 and log.count == 1


def test_keeps_newest_ten_and_drains_new_ones(clock: list[float]) -> None:
    log = ErrorLog({"topology.max.error.report.per.interval": 100})
    for i in range(15):
        log.record("split", 4, RuntimeError(f"e{i}"), "h", 1)
    recent = log.recent()["split"]
    assert len(recent) == 10
    assert "RuntimeError: e14" in recent[-1]["error"] and "e5" in recent[0]["error"]
    assert recent[-1]["component"] == "split" and recent[-1]["task"] == 4
    assert recent[-1]["host"] == "h" and recent[-1]["port"] == 1
    assert isinstance(recent[-1]["time_secs"], int)
    drained = log.drain()
    assert [e["error"].strip().splitlines()[-1] for e in drained] == [
        f"RuntimeError: e{i}" for i in range(15)]
    assert log.drain() == []
    assert len(log.recent()["split"]) == 10                    # draining keeps the recent ones


def test_traceback_is_kept(clock: list[float]) -> None:
    log = ErrorLog({})
    try:
        raise KeyError("missing")
    except KeyError as exc:
        log.record("b", 1, exc, "h", 1)
    text = log.recent()["b"][0]["error"]
    assert "Traceback" in text and "KeyError: 'missing'" in text


def test_the_logged_line_carries_the_whole_traceback(clock: list[float],
                                                     caplog: pytest.LogCaptureFixture) -> None:
    log = ErrorLog({})
    caplog.set_level(logging.ERROR, logger="squall.errors")

    def process() -> None:
        raise KeyError("missing")
    try:
        process()
    except KeyError as exc:
        log.record("b", 1, exc, "h", 1)
    (line,) = lines(caplog)
    assert line.startswith("component b task 1: Traceback (most recent call last):")
    assert "in process" in line and line.endswith("KeyError: 'missing'")


def test_a_fatal_error_is_recorded_past_the_throttle_and_marked(clock: list[float]) -> None:
    """The error that ended a worker (one per worker) is never the one throttled away."""
    log = ErrorLog({"topology.max.error.report.per.interval": 2,
                    "topology.error.throttle.interval.secs": 10})
    for i in range(4):
        log.record("split", 4, ValueError(f"bad {i}"), "h", 1)
    log.record("split", 4, "worker stopped: ...", "h", 1, fatal=True)
    recent = log.recent()["split"]
    assert [(e["error"].strip(), e.get("fatal", False)) for e in recent] == [
        ("ValueError: bad 0", False), ("ValueError: bad 1", False),
        ("worker stopped: ...", True)]


def test_a_recent_death_is_the_status_reason() -> None:
    now = 1_000_000.0
    errors = {"split": [{"error": "ValueError: x", "time_secs": now - 2}],
              "count": [{"error": "Traceback ...\nworker stopped: component 'count' (task 3) "
                                  "raised SystemExit: 2", "time_secs": now - 30, "fatal": True,
                         "host": "h1", "port": 6700},
                        {"error": "Traceback ...\nworker stopped: the newest", "fatal": True,
                         "time_secs": now - 12, "host": "h1", "port": 6701}]}
    assert errors_mod.death_reason(errors, now) == \
        "a worker died 12 s ago (h1:6701): worker stopped: the newest"
    assert errors_mod.death_reason(errors, now + errors_mod.DEATH_RECENT_SECS + 13) == ""
    assert errors_mod.death_reason({"split": errors["split"]}, now) == ""


def test_a_huge_error_is_recorded_cut_and_logged_whole(clock: list[float],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    """An error of megabytes (a multi-lang ``error`` quoting a record, an exception whose
    message holds a payload) is recorded as its head and its end with how much was cut, so
    it fits a ZooKeeper value (1,000,000 bytes) as its JSON; the worker's log has it whole."""
    from squall.state.cluster_state import encode
    log = ErrorLog({"topology.max.error.report.per.interval": 100})
    caplog.set_level(logging.ERROR, logger="squall.errors")
    message = "cannot parse record " + "\U0001f600" * (2 << 20) + " at line 7"
    log.record("sh", 3, message, "h", 1)

    def process() -> None:
        raise ValueError("bad payload " + "\u00e9" * (1 << 20) + " ends here")
    try:
        process()
    except ValueError as exc:
        log.record("b", 1, exc, "h", 1)
    short = log.recent()["sh"][0]["error"]
    cut = len(message) - errors_mod.ERROR_TEXT_MAX
    assert short.startswith("cannot parse record \U0001f600") and short.endswith(" at line 7")
    assert f"\n... ({cut} characters cut) ...\n" in short
    trace = log.recent()["b"][0]["error"]
    assert trace.startswith("Traceback (most recent call last):") and "in process" in trace
    assert trace.endswith(" ends here\n") and "characters cut) ...\n" in trace
    for entry in log.drain():
        assert len(entry["error"]) < errors_mod.ERROR_TEXT_MAX + 100
        assert len(encode(entry)) < 1_000_000
    logged = lines(caplog)
    assert logged[0] == f"component sh task 3: {message}"
    assert len(logged[1]) > 1 << 20 and logged[1].endswith(" ends here")


def test_an_error_within_the_limit_is_recorded_whole(clock: list[float]) -> None:
    log = ErrorLog({})
    text = "x" * errors_mod.ERROR_TEXT_MAX
    log.record("b", 1, text, "h", 1)
    assert log.recent()["b"][0]["error"] == text
