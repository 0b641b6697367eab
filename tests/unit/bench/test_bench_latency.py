"""``bench.latency`` measures a paced level's latency from the time each sentence was due on
the schedule (a stall delays the emits too, and latency from the emit would leave the stall's
wait out), and marks a level whose rate was not reached."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench import latency
from bench.latency import Row, table
from squall.api.target import load_module

TOPOLOGY = Path(latency.__file__).resolve().parent / "topologies" / "latency.py"


class Context:
    component_id = "sentences"
    task_index = 0

    def component_tasks(self, component: str) -> list[int]:
        return [1]


@pytest.fixture
def spout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Any], list[float]]:
    """The latency topology's spout on a clock the test moves, paced at 10 sentences/s;
    (spout, what it emitted, the clock)."""
    module = load_module(str(TOPOLOGY))
    clock = [100.0]
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    control = tmp_path / "control.json"
    control.write_text(json.dumps({"rate": 10, "p": 1.0}))
    s = module.Stamped()
    s.initialize({"bench.control": str(control), "bench.corpus": "fixed"}, Context())
    emitted: list[Any] = []
    s.emit = lambda values, **kw: emitted.append(values)
    return s, emitted, clock


def test_a_paced_sentence_is_stamped_with_its_due_time(
        spout: tuple[Any, list[Any], list[float]]) -> None:
    s, emitted, clock = spout
    s.next_tuple()                          # reads the rate; the first is due now
    clock[0] = 101.0                        # a stall: ten sentences fell due meanwhile
    for _ in range(20):
        s.next_tuple()
    assert len(emitted) == 10
    dues = [values[1] for values in emitted]
    assert dues == pytest.approx([100.0 + i / 10 for i in range(10)])
    assert {values[2] for values in emitted} == {101.0}     # all emitted late, at 101
    # the latency from the due time keeps the stall's wait: 1 s for the first sentence
    assert 101.0 - dues[0] == pytest.approx(1.0)


def row(label: str, target: float | None, sentences: float) -> Row:
    return Row(label, target, sentences, sentences * 10, (1.0, 9.0, 20.0), 1_000, None, 2.0,
               4.0)


def test_a_level_more_than_3_percent_short_is_not_reached() -> None:
    assert row("90 %", 54_447, 43_097).reached is False
    assert row("90 %", 54_447, 53_000).reached is True      # 2.7 % short
    assert row("unpaced", None, 43_097).reached is True
    text = table([row("unpaced", None, 60_000), row("50 %", 30_248, 30_255),
                  row("90 %", 54_447, 43_097)], False)
    lines = text.splitlines()
    assert lines[-1].startswith("| 90 % (not reached) | 54,447 (not reached) | 43,097 |")
    assert lines[-2].startswith("| 50 % | 30,248 | 30,255 |")


def test_the_table_labels_both_latencies() -> None:
    head = table([row("50 %", 30_248, 30_255)], True).splitlines()[0]
    assert "| p50 ms | p99 ms | p99.9 ms | p99 ms, emit-stamped |" in head
    assert table([row("50 %", 30_248, 30_255)], True).splitlines()[2].startswith(
        "| 50 % | 30,248 | 30,255 | 302,550 | 1.00 | 9.00 | 20.00 | 4.00 | 1,000 |")


def test_samples_are_read_as_triples(tmp_path: Path) -> None:
    from array import array
    a = array("d", [1.0, 0.010, 0.002, 2.0, 0.020, 0.004, 9.0, 0.5, 0.1])
    (tmp_path / "lat-1.bin").write_bytes(a.tobytes() + b"\0" * 5)      # a write under way
    got = latency.Samples(tmp_path).window(0.5, 2.5, 1)
    assert got == [(1.0, pytest.approx(10.0), pytest.approx(2.0)),
                   (2.0, pytest.approx(20.0), pytest.approx(4.0))]


def test_each_window_reads_what_the_files_gained_and_keeps_what_arrived_after_it(
        tmp_path: Path) -> None:
    """Windows in a row: a sample read with one window but arriving after it is in the next,
    a sample whose write was under way is read once whole, and none is read twice."""
    from array import array
    path = tmp_path / "lat-1.bin"
    first = array("d", [1.0, 0.001, 0.001, 3.0, 0.003, 0.003, 4.5, 0.0045, 0.0045]).tobytes()
    path.write_bytes(first + array("d", [6.0]).tobytes())       # a sample half written
    samples = latency.Samples(tmp_path)
    assert [t for t, _, _ in samples.window(0.5, 4.0, 1)] == [1.0, 3.0]
    with open(path, "ab") as f:
        f.write(array("d", [0.006, 0.006, 9.0, 0.009, 0.009]).tobytes())
    # 4.5 was read with the first window, 6.0 was half there then; 9.0 ends the second
    got = samples.window(4.2, 8.0, 1)
    assert [(t, round(due, 3)) for t, due, _ in got] == [(4.5, 4.5), (6.0, 6.0)]
    with open(path, "ab") as f:
        f.write(array("d", [12.0, 0.012, 0.012]).tobytes())
    assert [t for t, _, _ in samples.window(8.5, 11.0, 1)] == [9.0]
