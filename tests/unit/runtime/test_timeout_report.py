"""A spout whose tuple trees time out in numbers is told why and what to set, once a minute
at most; a few timeouts (a worker lost with some trees) are not reported."""
from __future__ import annotations

from squall.runtime.executors.timeout_report import TimeoutReport


def test_trees_timing_out_in_numbers_are_reported_with_what_to_set() -> None:
    watch = TimeoutReport("words", 30.0, 0)
    text = watch.rotated(500, 1000, 30.0)       # 500 timed out, 500 acked since the start
    assert text is not None
    assert text.startswith("spout words: 500 of the 1000 tuple trees it finished in the last "
                           "30 s timed out (topology.message.timeout.secs)")
    assert "set topology.max.spout.pending" in text
    assert "raise topology.message.timeout.secs" in text


def test_a_spout_with_max_pending_set_is_told_to_lower_it() -> None:
    text = TimeoutReport("words", 30.0, 5000).rotated(500, 500, 30.0)
    assert text is not None and "lower topology.max.spout.pending (5000)" in text


def test_a_few_timeouts_or_a_small_share_of_them_are_not_reported() -> None:
    watch = TimeoutReport("words", 30.0, 0)
    assert watch.rotated(99, 99, 30.0) is None               # all of them, but few
    assert watch.rotated(150, 99 + 2000, 60.0) is None       # 150 of 2000: under a tenth
    assert watch.rotated(0, 2099, 90.0) is None


def test_a_spout_is_reported_once_a_minute_at_most() -> None:
    watch = TimeoutReport("words", 10.0, 0)
    finished = 0
    texts = []
    for rotation in range(1, 14):                # 130 s of every tree timing out
        finished += 1000
        texts.append(watch.rotated(1000, finished, 10.0 * rotation))
    assert [i for i, t in enumerate(texts) if t is not None] == [0, 6, 12]
