"""Processing-time windows (count and duration), driven by a fake clock: each window is
evaluated once, in order, with the right tuples, and a tuple leaves (is handed back to be
acked) only after the last window that holds it."""
from __future__ import annotations

from typing import Any

import pytest

from squall import Count, Duration
from squall.windowing import Window, WindowSpec
from squall.windowing.processing import ProcessingWindows


class Recorder:
    """The executor's side: records evaluations and expiries, in one event log."""

    def __init__(self, fail_at: set[int] | None = None) -> None:
        self.windows: list[Window] = []
        self.log: list[tuple[str, Any]] = []
        self.fail_at = fail_at or set()

    def evaluate(self, window: Window) -> bool:
        self.windows.append(window)
        self.log.append(("window", len(self.windows)))
        return len(self.windows) not in self.fail_at

    def expire(self, gone: list[Any]) -> None:
        self.log.extend(("gone", t) for t in gone)

    def gone_after(self) -> dict[Any, int]:
        """Each expired tuple -> how many windows had been evaluated when it left."""
        out, seen = {}, 0
        for kind, what in self.log:
            if kind == "window":
                seen = what
            else:
                out[what] = seen
        return out


def make(length: Any, slide: Any = None, fail_at: set[int] | None = None
         ) -> tuple[ProcessingWindows, Recorder]:
    rec = Recorder(fail_at)
    spec = WindowSpec(length, slide if slide is not None else length)
    return ProcessingWindows(spec, rec.evaluate, rec.expire), rec


def test_sliding_count_window_evaluates_every_slide_with_the_last_n_tuples():
    w, rec = make(Count(4), Count(2))
    for i in range(10):
        w.add([i], now_ms=1000 + i)
    assert [win.tuples for win in rec.windows] == [
        [0, 1], [0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7], [6, 7, 8, 9]]
    assert [win.new for win in rec.windows] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    assert [win.expired for win in rec.windows] == [[], [], [0, 1], [2, 3], [4, 5]]
    assert [(win.start, win.end) for win in rec.windows] == [
        (1000, 1001), (1000, 1003), (1002, 1005), (1004, 1007), (1006, 1009)]
    # a tuple leaves only after the last window holding it: i is in windows i//2+1 .. i//2+2
    assert rec.gone_after() == {i: i // 2 + 2 for i in range(8)}
    assert len(w) == 2                       # 8 and 9 wait for the next window


def test_batches_split_at_window_boundaries():
    w, rec = make(Count(3))
    w.add(list(range(7)), now_ms=5)          # one batch completes two tumbling windows
    assert [win.tuples for win in rec.windows] == [[0, 1, 2], [3, 4, 5]]
    assert rec.gone_after() == {0: 1, 1: 1, 2: 1, 3: 2, 4: 2, 5: 2}   # at once, tumbling
    w.add([7, 8], now_ms=6)
    assert rec.windows[-1].tuples == [6, 7, 8] and rec.windows[-1].expired == [3, 4, 5]


def test_count_slide_longer_than_the_window_skips_the_gap_tuples():
    w, rec = make(Count(2), Count(3))
    w.add(list(range(6)), now_ms=0)
    assert [win.tuples for win in rec.windows] == [[1, 2], [4, 5]]
    assert rec.windows[0].expired == [0] and rec.windows[1].expired == [1, 2, 3]


def test_sliding_duration_window_fires_on_the_timer():
    w, rec = make(Duration(ms=100), Duration(ms=50))
    w.on_time(0)                              # the first timer starts the schedule
    for t in range(0, 200, 10):
        w.add([t], now_ms=t)
        w.on_time(t)
    w.on_time(200)
    # windows end at 50, 100, 150, 200 and hold what arrived in [end - 100, end)
    assert [(win.start, win.end) for win in rec.windows] == [
        (-50, 50), (0, 100), (50, 150), (100, 200)]
    assert [win.tuples for win in rec.windows] == [
        list(range(0, 50, 10)), list(range(0, 100, 10)), list(range(50, 150, 10)),
        list(range(100, 200, 10))]
    assert [win.new for win in rec.windows] == [
        list(range(0, 50, 10)), list(range(50, 100, 10)), list(range(100, 150, 10)),
        list(range(150, 200, 10))]
    assert [win.expired for win in rec.windows] == [
        [], [], list(range(0, 50, 10)), list(range(50, 100, 10))]
    gone = rec.gone_after()
    # a tuple that arrived at t is in every window ending in (t, t + 100]: it leaves after
    # the last of them
    for t, n in gone.items():
        last = max(i for i, win in enumerate(rec.windows, 1) if t in win.tuples)
        assert n == last, (t, n, last)


def test_a_late_timer_catches_up_window_by_window_and_skips_empty_ones():
    w, rec = make(Duration(ms=100))
    w.on_time(0)
    w.add(["a"], now_ms=10)
    w.add(["b"], now_ms=320)                  # arrived after the window ending at 300
    w.on_time(350)                            # three periods late: each window in turn
    # [0, 100) holds a; [100, 200) and [200, 300) hold nothing: skipped, though a left
    assert [(win.tuples, win.expired, win.end) for win in rec.windows] == [
        (["a"], [], 100)]
    assert rec.gone_after() == {"a": 1}       # tumbling: gone right after its window
    w.on_time(400)
    # a's departure is reported by the next window evaluated
    assert [(win.tuples, win.new, win.expired, win.start, win.end)
            for win in rec.windows[1:]] == [(["b"], ["b"], ["a"], 300, 400)]
    w.on_time(600)
    assert len(rec.windows) == 2              # b left, but nothing is held: skipped
    w.on_time(10**12)                         # a very late timer over nothing: one step
    assert len(rec.windows) == 2 and w.due == 10**12 + 100
    w.add(["c"], now_ms=10**12 + 50)
    w.on_time(10**12 + 100)
    assert [(win.tuples, win.expired) for win in rec.windows[2:]] == [(["c"], ["b"])]


def test_an_empty_window_is_never_evaluated():
    """A window with no tuple is skipped even when tuples left since the last evaluation
    (``process_window`` computing ``sum / len(window.tuples)`` must not divide by zero);
    each departure is reported once, by the next window evaluated."""
    for length, slide in ((Duration(ms=100), None), (Duration(ms=200), Duration(ms=100)),
                          (Count(3), Duration(ms=100))):
        w, rec = make(length, slide)
        w.on_time(0)
        for burst in range(3):                # bursts of 5, each followed by 1 s of quiet
            t0 = burst * 1000
            w.add([(burst, i) for i in range(5)], now_ms=t0 + 10)
            for t in range(t0, t0 + 1000, 20):
                w.on_time(t)
        assert len(rec.windows) >= 3, (length, slide)
        assert all(len(win.tuples) for win in rec.windows), (length, slide)
        # a tuple that left after n evaluations is in the expired of evaluation n + 1 and
        # of no other; the first two bursts all left before the last evaluation
        gone = rec.gone_after()
        assert {t for t in gone if t[0] < 2} == {(b, i) for b in (0, 1) for i in range(5)}
        reported = [(n, t) for n, win in enumerate(rec.windows) for t in win.expired]
        assert reported == sorted((n, t) for t, n in gone.items() if n < len(rec.windows))


def test_the_timer_schedule_starts_no_later_than_the_first_tuple():
    w, rec = make(Duration(ms=100))
    w.add(["a"], now_ms=1000)                 # before any timer
    w.on_time(1050)
    w.on_time(1100)
    assert [(win.tuples, win.start, win.end) for win in rec.windows] == [(["a"], 1000, 1100)]


def test_count_window_on_a_duration_slide_keeps_only_the_last_n():
    w, rec = make(Count(3), Duration(ms=100))
    w.on_time(0)
    w.add([1, 2, 3, 4, 5], now_ms=20)
    assert rec.gone_after() == {1: 0, 2: 0}   # never in a window: they leave at once
    w.on_time(100)
    assert [win.tuples for win in rec.windows] == [[3, 4, 5]]
    assert rec.windows[0].start == 20 and rec.windows[0].end == 100


def test_a_failed_window_is_forgotten_by_the_windows_after_it():
    w, rec = make(Count(4), Count(2), fail_at={2})
    for i in range(8):
        w.add([i], now_ms=i)
    # window 2 ([0..3]) failed: its tuples are not acked and not seen again
    assert [win.tuples for win in rec.windows] == [[0, 1], [0, 1, 2, 3], [4, 5], [4, 5, 6, 7]]
    assert rec.gone_after() == {4: 4, 5: 4}


@pytest.mark.parametrize("length,slide", [(Count(5), Count(5)), (Count(5), Count(1))])
def test_every_tuple_is_held_until_its_last_window(length: Count, slide: Count) -> None:
    w, rec = make(length, slide)
    for i in range(40):
        w.add([i], now_ms=i)
    evaluated = {}
    for n, win in enumerate(rec.windows, 1):
        for t in win.tuples:
            evaluated[t] = n
    assert rec.gone_after() == {t: evaluated[t] for t in rec.gone_after()}
    assert set(evaluated) == set(range(40))


def test_a_window_kept_and_read_later_holds_the_same_tuples():
    """Windows are views of the held list, sliced when read: neither later tuples nor the
    list being cut change what a kept window holds."""
    w, rec = make(Count(10), Count(5))
    for i in range(5000):
        w.add([i], now_ms=i)
    first, last = rec.windows[0], rec.windows[-1]
    assert (first.tuples, first.new, len(first)) == ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], 5)
    assert last.tuples == list(range(4990, 5000)) and last.new == list(range(4995, 5000))
    kept = rec.windows[3]
    assert kept.tuples == list(range(10, 20))


def test_duration_window_on_a_count_slide_holds_what_arrived_in_the_last_length():
    w, rec = make(Duration(ms=100), Count(2))
    w.add(["a"], now_ms=0)
    w.add(["b"], now_ms=50)                   # second tuple: evaluate, ending now
    w.add(["c", "d"], now_ms=130)             # a arrived more than 100 ms before 130
    assert [(win.tuples, win.start, win.end) for win in rec.windows] == [
        (["a", "b"], -50, 50), (["b", "c", "d"], 30, 130)]
    assert rec.windows[1].expired == ["a"] and rec.windows[1].new == ["c", "d"]
