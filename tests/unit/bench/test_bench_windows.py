"""A measured window of ``bench.scale`` / ``bench.distributed`` is a measurement only if the
cluster it measured stayed the same: a worker that died and was started again in it fails
the case instead of giving figures that mix its two lives."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from bench.distributed import WindowSpoiled, beat_rates
from bench.scale import Result, _window, proc_stat, ratios, report, squall_title


def beat(seq: int, executed: int, passes: int) -> dict[str, Any]:
    return {"seq": seq, "executors": {"[3, 3]": {"component": "count", "kind": "bolt",
                                                 "executed": executed}},
            "worker": {"loop_passes": passes, "sent_batches": passes // 2}}


def test_beat_rates_of_one_life_are_per_second() -> None:
    rates = beat_rates({"n-1": (10.0, beat(4, 1_000, 50))}, {"n-1": (12.0, beat(6, 5_000, 90))})
    assert rates[("n-1", "count")] == 2_000
    assert rates[("n-1", "loop_passes")] == 20


def test_a_total_going_down_fails_the_window() -> None:
    # the worker restarted: its totals start again from nothing (seq not in the beat)
    b1, b2 = beat(0, 900_000, 5_000), beat(0, 40_000, 300)
    del b1["seq"], b2["seq"]
    with pytest.raises(WindowSpoiled, match="n-1 restarted.*count total went down"):
        beat_rates({"n-1": (10.0, b1)}, {"n-1": (12.0, b2)})


def test_a_beat_seq_going_back_fails_the_window() -> None:
    with pytest.raises(WindowSpoiled, match=r"n-1 restarted.*seq went from 40 to 2"):
        beat_rates({"n-1": (10.0, beat(40, 1_000, 50))}, {"n-1": (12.0, beat(2, 5_000, 90))})


def test_a_worker_beating_at_one_end_only_fails_the_window() -> None:
    with pytest.raises(WindowSpoiled, match="workers that beat changed"):
        beat_rates({"n-1": (10.0, beat(4, 1, 1))}, {"n-2": (12.0, beat(6, 5, 9))})


def test_a_process_that_ended_or_started_in_the_window_fails_it() -> None:
    kinds = {1: "nimbus", 2: "supervisor", 3: "workers", 4: "workers"}
    with pytest.raises(WindowSpoiled, match=r"ended: 3 \(workers\); started: 9"):
        _window(1e6, 0.0, 5.0, {1: 1.0, 2: 1.0, 3: 9.0}, {1: 1.5, 2: 1.5, 9: 0.5}, kinds,
                None, None)
    with pytest.raises(WindowSpoiled, match=r"ended: 4 \(workers\)"):
        _window(1e6, 0.0, 5.0, {1: 1.0, 4: 3.0}, {1: 1.5}, kinds, None, None)
    ok = _window(1e6, 0.0, 5.0, {1: 1.0, 3: 9.0}, {1: 1.5, 3: 12.0}, kinds, None, None)
    assert ok.cpu_s == pytest.approx(3.5)
    assert ok.parts == {"nimbus": pytest.approx(0.5), "workers": pytest.approx(3.0)}


def test_a_window_that_counted_nothing_fails() -> None:
    """A stalled run (bytewax's twelve processes on two cores once counted no word in 5 s)
    is no measurement: its CPU per word was printed as CPU ÷ 1e-9."""
    kinds = {1: "bytewax"}
    with pytest.raises(WindowSpoiled, match=r"nothing was counted in the 5\.0 s window"):
        _window(0.0, 0.0, 5.0, {1: 1.0}, {1: 6.0}, kinds, None, None)


def test_a_reaped_child_adds_nothing_to_its_parent() -> None:
    """CPU is the process's own (utime + stime): a reaped child's lifetime CPU (cutime,
    cstime) would land on its parent, as a dead worker's did on the supervisor."""
    me = os.getpid()
    before = proc_stat(me)
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nwhile time.process_time() < 0.5: pass"])
    _, status, usage = os.wait4(child.pid, 0)        # reaps it: its CPU joins our cutime
    child.returncode = os.waitstatus_to_exitcode(status)
    after = proc_stat(me)
    assert before is not None and after is not None
    used = usage.ru_utime + usage.ru_stime
    assert used >= 0.4
    assert after[1] - before[1] < used / 2


def test_proc_stat_reads_a_live_process() -> None:
    st = proc_stat(os.getpid())
    assert st is not None and st[0] == os.getppid() and st[1] > 0


def _rows(rate: float, cost: float) -> dict[int, list[Result]]:
    return {1: [Result(rate, cost * rate * 5e-6, rate * 5)]}


def test_local_count_grouping_says_so_and_gives_no_ratio_to_word_counts() -> None:
    squall = {("per-tuple", "off"): _rows(2e6, 0.6), ("batch", "on"): _rows(1e6, 0.8)}
    bw, floor = _rows(4e5, 3.0), {"per-tuple": _rows(3e6, 0.4)}
    text = report(squall, bw, floor, "local")
    titles = [line for line in text.splitlines() if line.startswith("squall")]
    assert titles == ["squall, per-tuple, acking off, count grouping local (not a word count)",
                      "squall, batch, acking on, count grouping local (not a word count)"]
    assert "squall / bytewax, words/s" not in text
    assert "squall / floor per-tuple, words/s" not in text
    assert "bytewax 0.21.1" in text and "floor, per-tuple" in text
    assert "no squall / bytewax or squall / floor ratios" in text


def test_fields_count_grouping_gives_the_ratios() -> None:
    squall = {("per-tuple", "off"): _rows(2e6, 0.6)}
    text = report(squall, _rows(4e5, 3.0), {"per-tuple": _rows(3e6, 0.4)}, "fields")
    assert squall_title("per-tuple", "off", "fields") == "squall, per-tuple, acking off"
    assert ratios("squall / bytewax, words/s (and µs CPU per word)", squall,
                  _rows(4e5, 3.0)) in text
    assert "squall / floor per-tuple" in text
    assert "not a word count" not in text


def test_sigterm_stops_the_whole_run_not_one_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case's failure (a ``SystemExit`` from a wait among them) fails that case only; the
    SIGTERM handler's exit must stop the run, so that its clusters are cleaned up at once."""
    import signal

    from bench import host, scale
    calls: list[bool] = []

    def terminated(workers: int, batch: bool, acking: bool, *args: Any) -> Result:
        calls.append(acking)
        scale._terminate(signal.SIGTERM, None)
        raise AssertionError("not reached")

    monkeypatch.setattr(scale, "run_local", terminated)
    monkeypatch.setattr(host, "line", lambda: "host")
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as exc:
            scale.main(["--in-process", "--no-bytewax", "--workers", "1", "--forms",
                        "per-tuple", "--acking", "off", "on"])
    finally:
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])
    assert exc.value.code == 143
    assert calls == [False]
