"""Count windows and count slides on event time, driven by a fake clock: tuples take part in
event order once the watermark covers them; sliding and tumbling count windows, duration
windows sliding by count and count windows sliding by duration; the watermark of two input
tasks; late tuples; the quiet input; a failed window's replays."""
from __future__ import annotations

from typing import Any

from squall import Count, Duration
from squall.windowing import WindowSpec
from squall.windowing.event_count import EventCountWindows

from windowing_recorder import Recorder

IDLE = 10_000


def stamps(tuples: list[Any]) -> list[int]:
    return [s for s, _ in tuples]


def make(length: Count | Duration, slide: Count | Duration | None = None, lag: int = 0,
         inputs: tuple[int, ...] = (1,), fail_at: set[int] | None = None
         ) -> tuple[EventCountWindows, Recorder]:
    rec = Recorder(fail_at)
    spec = WindowSpec(length, slide or length, "ts", max_lag_ms=lag, watermark_ms=100)
    return EventCountWindows(spec, inputs, IDLE, rec.evaluate, rec.gone.extend,
                             rec.late.append), rec


def feed(w: EventCountWindows, ts: list[int], task: int = 1, now: int = 0) -> None:
    for s in ts:
        w.add((s, task), s, task, now)


def test_sliding_count_windows_take_the_covered_tuples_in_event_order():
    w, rec = make(Count(4), Count(2))
    feed(w, [300, 100, 200, 500, 400, 600, 700])
    w.on_time(0)                                 # watermark 700: 7 covered, 3 windows of 2
    assert rec.spans() == [(100, 200, [100, 200]), (100, 400, [100, 200, 300, 400]),
                           (300, 600, [300, 400, 500, 600])]     # start, end: first, last
    assert [stamps(win.new) for win in rec.windows] == [[100, 200], [300, 400], [500, 600]]
    assert stamps(rec.windows[2].expired) == [100, 200]
    assert stamps(rec.gone) == [100, 200, 300, 400]   # not in the window after 600's
    feed(w, [800], now=50)
    w.on_time(100)                               # watermark 800: 700 and 800
    assert rec.spans()[3:] == [(500, 800, [500, 600, 700, 800])]
    assert stamps(rec.windows[3].expired) == [300, 400]
    assert len(w) == 2                           # 700, 800: in the next window too


def test_a_tumbling_count_window_acks_its_tuples_once_evaluated_the_rest_wait():
    w, rec = make(Count(3))
    feed(w, [5, 1, 3, 2, 4])
    w.on_time(0)                                 # watermark 5: one window of 3; 4, 5 wait
    assert rec.spans() == [(1, 3, [1, 2, 3])]
    assert stamps(rec.gone) == [1, 2, 3]
    feed(w, [6], now=10)
    w.on_time(100)
    assert rec.spans()[1:] == [(4, 6, [4, 5, 6])]
    assert stamps(rec.gone) == [1, 2, 3, 4, 5, 6]


def test_only_tuples_the_watermark_of_every_input_task_covers_take_part():
    w, rec = make(Count(2), lag=50, inputs=(1, 2))
    feed(w, [100, 300, 500, 700], task=1)
    w.on_time(0)
    assert w.watermark is None and not rec.windows    # task 2 not heard yet
    feed(w, [200, 450], task=2)
    w.on_time(100)                               # watermark min(700, 450) - 50 = 400
    assert w.watermark == 400
    assert rec.spans() == [(100, 200, [100, 200])]     # 300 alone is not a slide of 2
    feed(w, [900], task=2)
    w.on_time(200)                               # watermark 650: 300, 450, 500 covered
    assert rec.spans()[1:] == [(300, 450, [300, 450])]
    assert [task for _, task in rec.windows[1].tuples] == [1, 2]
    feed(w, [1000], task=1)
    w.on_time(300)                               # watermark 850: 500, 700
    assert rec.spans()[2:] == [(500, 700, [500, 700])]


def test_tuples_behind_the_watermark_are_late_and_at_it_take_part():
    w, rec = make(Count(2), lag=100)
    feed(w, [1000, 1500])
    w.on_time(0)                                 # watermark 1400: 1000 alone covered
    assert not rec.windows
    feed(w, [1399, 1400])                        # 1399 is behind, 1400 at the watermark
    assert stamps(rec.late) == [1399]
    feed(w, [1600])
    w.on_time(100)                               # watermark 1500
    assert rec.spans() == [(1000, 1400, [1000, 1400])]
    # a tuple with the watermark's timestamp sorts after the window evaluated at it
    w, rec = make(Count(2))
    feed(w, [100, 200])
    w.on_time(0)
    feed(w, [200, 300])
    w.on_time(100)
    assert rec.spans() == [(100, 200, [100, 200]), (200, 300, [200, 300])]
    assert not rec.late


def test_a_duration_window_sliding_by_count_holds_the_last_length_of_event_time():
    w, rec = make(Duration(ms=1000), Count(2))
    feed(w, [600, 100, 1500, 1200, 2500, 2400])
    w.on_time(0)
    # each window ends at its second new tuple and holds [end - 1000, end]
    assert rec.spans() == [(-400, 600, [100, 600]), (500, 1500, [600, 1200, 1500]),
                           (1500, 2500, [1500, 2400, 2500])]
    assert [stamps(win.new) for win in rec.windows] == [[100, 600], [1200, 1500],
                                                        [2400, 2500]]
    assert stamps(rec.windows[2].expired) == [600, 1200]
    assert stamps(rec.gone) == [100, 600, 1200]


def test_a_count_window_sliding_by_duration_holds_the_last_n_before_each_aligned_end():
    w, rec = make(Count(3), Duration(ms=1000))
    feed(w, [200, 100, 300, 1500, 3700])
    w.on_time(0)                                 # watermark 3700: ends 1000 and 2000
    assert rec.spans() == [(100, 1000, [100, 200, 300]), (200, 2000, [200, 300, 1500])]
    assert stamps(rec.windows[1].new) == [1500]
    assert stamps(rec.windows[1].expired) == [100]
    # [2000, 3000) brought nothing new: the window ending at 3000 is skipped; 4000 is
    # evaluated once the input is quiet (the end of the window after the latest timestamp)
    w.on_time(IDLE)
    assert w.watermark == 4000
    assert rec.spans()[2:] == [(300, 4000, [300, 1500, 3700])]
    assert stamps(rec.gone) == [100, 200]        # the last 3 wait for newer tuples


def test_when_every_input_task_is_quiet_every_whole_slide_heard_is_evaluated():
    w, rec = make(Count(2), lag=500, inputs=(1, 2))
    feed(w, [100, 200, 300], task=1, now=0)
    w.on_time(0)
    assert w.watermark is None
    w.on_time(IDLE + 1)                          # both quiet: up to the latest timestamp
    assert w.watermark == 300
    assert rec.spans() == [(100, 200, [100, 200])]     # 300 waits for a second tuple
    feed(w, [250, 300, 900], task=1, now=IDLE + 2)    # it speaks again
    assert stamps(rec.late) == [250]
    w.on_time(IDLE + 200)                        # watermark 400 (900 - the lag)
    assert rec.spans()[1:] == [(300, 300, [300, 300])]


def test_a_failed_count_window_is_evaluated_again_with_its_replays():
    w, rec = make(Count(2), fail_at={1})
    feed(w, [100, 200, 300, 400], now=0)
    w.on_time(0)                                 # [100, 200] fails, [300, 400] does not
    assert rec.spans() == [(100, 200, [100, 200]), (300, 400, [300, 400])]
    assert stamps(rec.gone) == [300, 400]        # the failed ones are not acked
    feed(w, [200], now=10)                       # the replays, behind the watermark
    assert len(rec.windows) == 2 and not rec.late
    feed(w, [100], now=20)
    assert rec.spans()[2:] == [(100, 200, [100, 200])]     # the same bounds, at once
    assert stamps(rec.gone) == [300, 400, 100, 200]
    feed(w, [150], now=30)                       # the window is done: late
    assert stamps(rec.late) == [150]


def test_a_failed_sliding_window_is_in_no_later_window():
    w, rec = make(Count(3), Count(1), fail_at={2})
    feed(w, [100, 200, 300])
    w.on_time(0)
    assert rec.spans() == [(100, 100, [100]), (100, 200, [100, 200]), (300, 300, [300])]
    assert rec.gone == []                        # 100 and 200 failed; 300 is still held


def test_windows_read_later_are_not_changed_by_later_tuples_nor_by_cutting_the_lists():
    w, rec = make(Count(3), Count(1))
    for i in range(3000):
        feed(w, [i * 10 + 5, i * 10], now=i * 100)     # each pair out of order
        w.on_time(i * 100)
    everything = sorted(s for i in range(3000) for s in (i * 10, i * 10 + 5))
    assert [win.end for win in rec.windows] == everything      # one window per tuple
    for k, win in enumerate(rec.windows):
        assert stamps(win.tuples) == everything[max(0, k - 2):k + 1], win
        assert stamps(win.new) == [win.end]
    assert len(w) == 2 and len(rec.gone) == 5998
