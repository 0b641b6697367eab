"""The benchmarks' commands refuse what they cannot run with one line (exit 2) before
starting anything, and report a run that failed instead of dropping it."""
from __future__ import annotations

import pytest

from bench import compare, distributed, latency, scale
from bench.distributed import CASE_NAMES, paired
from bench.overrides import parse


def test_distributed_refuses_an_unknown_case(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        distributed.main(["--cases", "2-per-tuple-off", "2-pertuple-off"])
    assert exc.value.code == 2
    assert "invalid choice: '2-pertuple-off'" in capsys.readouterr().err


def test_distributed_names_every_case() -> None:
    assert CASE_NAMES == ["1-per-tuple-off", "1-per-tuple-on", "1-batch-off", "1-batch-on",
                          "2-per-tuple-off", "2-per-tuple-on", "2-batch-off", "2-batch-on"]


def test_a_paired_run_that_exits_is_reported() -> None:
    def fails() -> int:
        raise SystemExit("bench: timed out waiting for the first tuple")

    def breaks() -> int:
        raise KeyError("id")

    results, errors = paired({"this": lambda: 7, "other": fails, "third": breaks})
    assert results == {"this": 7}
    assert errors == {"other": "bench: timed out waiting for the first tuple",
                      "third": "KeyError: 'id'"}


@pytest.mark.parametrize(("main", "argv", "why"), [
    (distributed.main, ["-c", "topology.acker.executors=0"], "the case's acking"),
    (latency.main, ["-c", "topology.acker.executors=0"], "--acking"),
    (scale.main, ["-c", "bench.count.grouping=local"], "--count-grouping"),
    (scale.main, ["-c", "topology.workers=3"], "--workers"),
])
def test_conf_may_not_set_what_the_cases_set(main: object, argv: list[str], why: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)  # type: ignore[operator]
    assert exc.value.code == 2
    assert f"is set by {why}" in capsys.readouterr().err


def test_compare_refuses_a_ref_that_names_no_commit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        compare.main(["no-such-ref-of-squall", "--pairs", "1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "'no-such-ref-of-squall' names no commit of this repository" in err
    assert "Traceback" not in err


def test_compare_refuses_a_clashing_conf(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        compare.main([".", "--ref-conf", "topology.acker.executors=0"])
    assert exc.value.code == 2
    assert "--ref-conf topology.acker.executors is set by" in capsys.readouterr().err


def test_overrides_of_what_a_case_sets_are_refused_in_one_line() -> None:
    owned = {"topology.acker.executors": "--acking", "bench.tracked": "--acking"}
    assert parse(["topology.max.spout.pending=500", "x=[1, 2]"], owned) == {
        "topology.max.spout.pending": 500, "x": [1, 2]}
    with pytest.raises(ValueError) as exc:
        parse(["bench.tracked=false", "topology.acker.executors=0"], owned, "--ref-conf")
    assert str(exc.value) == (
        "--ref-conf topology.acker.executors is set by --acking; it cannot be overridden; "
        "--ref-conf bench.tracked is set by --acking; it cannot be overridden")
    with pytest.raises(ValueError, match="bad override 'x=\\['"):
        parse(["x=["], owned)
