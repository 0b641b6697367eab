"""A window of ``bench.latency`` is a measurement only if the cluster stayed the same in it, as
for ``bench.scale``: a worker that died and was started again (a process of the cluster ended
or started, a worker's beat total or ``seq`` went down) fails the window instead of giving
percentiles and rates that mix two worker lives; the level is shown as failed, with no figure,
and the run exits 1."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import latency
from bench.distributed import WindowSpoiled

NIMBUS, SUPERVISOR = 10, 11


def beat(seq: int, emitted: int, executed: int) -> dict[str, Any]:
    return {"seq": seq, "executors": {
        "[1, 1]": {"component": "sentences", "kind": "spout", "emitted": emitted,
                   "acked": 0},
        "[3, 3]": {"component": "count", "kind": "bolt", "executed": executed}}}


def beats(seq: int, emitted: int, executed: int, at: float) -> dict[str, Any]:
    return {name: (at, beat(seq, emitted, executed)) for name in ("n-1", "n-2")}


def processes(*workers: int) -> dict[int, str]:
    return {NIMBUS: "nimbus", SUPERVISOR: "sup0", **dict.fromkeys(workers, "workers")}


def test_beats_of_one_life_give_the_rates() -> None:
    got = latency.beat_rates(beats(4, 1_000, 9_000, 10.0), beats(6, 3_000, 29_000, 12.0))
    assert got == (pytest.approx(2_000), pytest.approx(20_000), None)


def test_a_worker_restarted_between_its_beats_fails_the_window() -> None:
    with pytest.raises(WindowSpoiled, match=r"n-1 restarted.*seq went from 40 to 2"):
        latency.beat_rates(beats(40, 90_000, 900_000, 10.0), beats(2, 3_000, 29_000, 12.0))
    before, after = beats(0, 90_000, 900_000, 10.0), beats(0, 3_000, 29_000, 12.0)
    for _, b in (*before.values(), *after.values()):
        del b["seq"]
    with pytest.raises(WindowSpoiled, match="restarted.*total went down"):
        latency.beat_rates(before, after)


class FakeBeats:
    """The worker beats a window reads, in turn."""

    def __init__(self, script: Iterator[dict[str, Any]]) -> None:
        self.script = script

    def next(self, workers: int) -> dict[str, Any]:
        return next(self.script)

    def close(self) -> None:
        pass


def test_a_process_that_ended_or_started_in_the_window_fails_it(tmp_path: Path) -> None:
    seen = iter([processes(30, 31), processes(31, 32)])
    b = FakeBeats(iter([beats(4, 1_000, 9_000, 10.0), beats(6, 3_000, 29_000, 12.0)]))
    with pytest.raises(WindowSpoiled, match=r"ended: 30 \(workers\); started: 32 \(workers\)"):
        latency.measure(b, lambda: next(seen), tmp_path, "50 %", 100.0, 0, 0)  # type: ignore[arg-type]


def test_a_level_whose_window_saw_a_restart_is_failed_and_the_run_exits_1(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Unpaced measures; at 50 % a worker process is replaced in the window; at 90 % a
    worker's beats start again from nothing."""
    class Client:
        def topology_info(self, name: str) -> dict[str, Any]:
            return {"id": "wc-1"}

    class Cluster:
        def __init__(self, tmp: Path, *args: Any) -> None:
            self.conf: dict[str, Any] = {}
            self.daemons = {NIMBUS: "nimbus", SUPERVISOR: "sup0"}

        def client(self) -> Client:
            return Client()

        def squall(self, *args: str) -> None:
            pass

        def close(self) -> None:
            pass

    class ZooKeeper:
        def __init__(self, data_dir: str) -> None:
            pass

        def __enter__(self) -> ZooKeeper:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    script = iter([beats(4, 1_000, 10_000, 10.0), beats(6, 21_000, 210_000, 12.0),   # unpaced
                   beats(8, 22_000, 220_000, 14.0), beats(10, 32_000, 320_000, 16.0),  # 50 %
                   beats(12, 33_000, 330_000, 18.0), beats(1, 900, 9_000, 20.0)])  # 90 %
    seen = iter([processes(30, 31), processes(30, 31),      # unpaced
                 processes(30, 31), processes(31, 32),      # 50 %: worker 30 replaced
                 processes(31, 32), processes(31, 32)])     # 90 %
    monkeypatch.setattr(latency, "Cluster", Cluster)
    monkeypatch.setattr(latency, "Beats", lambda conf, topology: FakeBeats(script))
    monkeypatch.setattr(latency, "cluster_processes", lambda daemons: next(seen))
    monkeypatch.setattr(latency, "supervisors_up", lambda client: 1)
    monkeypatch.setattr(latency, "counted", lambda client: 1)
    monkeypatch.setattr(latency.Samples, "window",
                        lambda self, t1, t2, tasks: [(t1, 1.0, 0.5)] * 10)
    monkeypatch.setattr(latency, "stop_workers", lambda tmp: None)
    monkeypatch.setattr(latency, "DevZooKeeper", ZooKeeper)
    monkeypatch.setattr(latency, "machine", lambda: "host")
    with pytest.raises(SystemExit) as exc:
        latency.main(["--acking", "off", "--levels", "50", "90", "--seconds", "0.01",
                      "--warmup", "0"])
    assert exc.value.code not in (0, None)
    assert "2 window(s) failed" in str(exc.value.code)
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| rate")}
    assert set(rows) == {"unpaced", "50 % (failed)", "90 % (failed)"}
    assert "| 20,000 | 200,000 |" in rows["unpaced"]    # sentences/s, words/s: two workers
    assert "ended: 30 (workers); started: 32 (workers)" in rows["50 % (failed)"]
    assert "restarted" in rows["90 % (failed)"]
    for failed in ("50 % (failed)", "90 % (failed)"):
        cells = [c.strip() for c in rows[failed].split("|")[4:-1]]
        assert not any(cells), rows[failed]                     # no figure at all
    assert "  50 % (failed): the cluster's processes changed" in out


def test_a_failed_row_gives_its_reason_in_the_table_s_columns() -> None:
    ok = latency.Row("50 % #1", 100.0, 100.0, 1_000.0, (1.0, 2.0, 3.0), 10, None, 0.5, 1.5)
    bad = latency.Failed("50 % #2", 100.0, "worker n-1 restarted during the window")
    for acking in (False, True):
        lines = latency.table([ok, bad], acking).splitlines()
        assert lines[-1].startswith("| 50 % #2 (failed) | 100 | failed: worker n-1 restarted")
        assert {line.count("|") for line in lines} == {lines[0].count("|")}
