"""``bench.wordcount`` (and so ``bench.compare`` and ``bench.instructions``) measures only runs
that did the work: every word counted once (every sentence acked once, acking on) within a
deadline, a larger size taking longer than a smaller one, and the case it names."""
from __future__ import annotations

from typing import Any

import pytest

from bench import wordcount
from bench.wordcount import RunFailed, check_run, marginal, marginal_rates, run_once


@pytest.mark.parametrize(("words", "acked", "why"), [
    (1_001, 100, "1,001 words counted for 1,000 .extra words"),
    (999, 100, "999 words counted for 1,000 .words lost"),
    (1_000, 99, "99 sentences acked for 100"),
    (1_000, 101, "101 sentences acked for 100"),
])
def test_a_run_with_a_wrong_count_fails(words: int, acked: int, why: str) -> None:
    with pytest.raises(RunFailed, match=why):
        check_run(100, True, words, acked)


def test_an_exact_run_passes() -> None:
    check_run(100, True, 1_000, 100)
    check_run(100, False, 1_000, 0)          # acking off: no acks to count


@pytest.mark.parametrize(("small", "big"), [
    ((0.50, 0.40), (0.45, 0.60)),            # wall: the larger size took less (a negative rate)
    ((0.50, 0.40), (0.50, 0.60)),            # wall: no longer (a division by zero)
    ((0.50, 0.40), (0.90, 0.30)),            # CPU: less
])
def test_a_pair_whose_larger_size_took_no_longer_is_rejected(
        small: tuple[float, float], big: tuple[float, float]) -> None:
    with pytest.raises(RunFailed, match="took no longer"):
        marginal_rates((2_000, 4_000), small, big)


def test_a_good_pair_gives_the_marginal_rates() -> None:
    assert marginal_rates((2_000, 4_000), (0.5, 0.4), (0.6, 0.5)) == pytest.approx(
        (200_000, 200_000))


@pytest.fixture
def fake_runs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``run_once`` replaced: each call is recorded, and answers the next queued timing
    (a size's own, 10 µs a sentence, once the queue is empty)."""
    calls: list[Any] = []
    queued: list[tuple[float, float]] = []

    def fake(n: int, batch: bool, acking: bool, **kw: Any) -> tuple[float, float]:
        calls.append((n, batch, acking))
        return queued.pop(0) if queued else (n * 1e-5, n * 1e-5)

    monkeypatch.setattr(wordcount, "run_once", fake)
    monkeypatch.setattr(wordcount, "_warmed", set())
    calls.append(queued)         # the test queues timings through calls[0]
    return calls


def test_each_case_warms_up_once_per_process_untimed(fake_runs: list[Any]) -> None:
    marginal((2_000, 4_000), False, False)
    marginal((2_000, 4_000), False, False)
    marginal((2_000, 4_000), True, True)
    assert fake_runs[1:] == [(2_000, False, False),                       # warm-up
                             (2_000, False, False), (4_000, False, False),
                             (2_000, False, False), (4_000, False, False),
                             (2_000, True, True),                         # the other case's
                             (2_000, True, True), (4_000, True, True)]


def test_a_rejected_pair_is_run_again(fake_runs: list[Any],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    fake_runs[0].extend([(0.0, 0.0), (0.5, 0.4), (0.3, 0.5)])      # warm-up, a bad pair
    assert marginal((2_000, 4_000), False, False) == pytest.approx((1e6, 1e6))
    assert "pair rejected, running it again" in capsys.readouterr().err
    assert len(fake_runs) - 1 == 5


def test_a_case_fails_after_bad_pairs_only(fake_runs: list[Any]) -> None:
    fake_runs[0].extend([(0.0, 0.0)] + [(0.5, 0.4), (0.3, 0.5)] * 3)
    with pytest.raises(RunFailed, match="in 3 pairs out of 3"):
        marginal((2_000, 4_000), False, False)


@pytest.mark.timeout(120)
def test_a_run_that_cannot_finish_fails_at_its_deadline() -> None:
    # ten million sentences cannot be counted in half a second: the run must give up
    # there, not wait for ever for words that never come
    with pytest.raises(RunFailed, match=r"not done within 0.5 s: [\d,]+ of 100,000,000 words"):
        run_once(10_000_000, False, False, timeout=0.5)


def test_a_real_run_counts_exactly() -> None:
    wall, cpu = run_once(200, False, True)
    assert wall > 0 and cpu > 0
    assert wordcount.counted() == 2_000


@pytest.mark.parametrize("key", ["topology.acker.executors", "bench.tracked",
                                 "bench.sentences", "bench.spout.many"])
def test_conf_may_not_set_what_the_case_sets(key: str) -> None:
    with pytest.raises(ValueError, match=f"-c {key} is set by"):
        run_once(10, False, True, conf={key: 0})


def test_the_command_refuses_a_clashing_conf(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        wordcount.main(["-c", "topology.acker.executors=0", "--cases", "per-tuple-on"])
    assert exc.value.code == 2
    assert "-c topology.acker.executors is set by the case's acking" in capsys.readouterr().err


def test_the_command_refuses_an_unknown_case(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        wordcount.main(["--cases", "per-tuple-of"])
    assert exc.value.code == 2
    assert "invalid choice: 'per-tuple-of'" in capsys.readouterr().err
