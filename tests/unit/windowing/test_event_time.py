"""Event-time windows and the watermark, driven by a fake clock: aligned windows evaluated
once and in order as the watermark passes their end, late tuples, the least-of-all-inputs
watermark and how a quiet input task stops holding it back."""
from __future__ import annotations


from squall import Duration
from squall.windowing import WindowSpec
from squall.windowing.event_time import EventWindows

from windowing_recorder import Recorder

IDLE = 10_000


def make(length_ms: int, slide_ms: int | None = None, lag: int = 0, inputs: tuple = (1,),
         fail_at: set[int] | None = None) -> tuple[EventWindows, Recorder]:
    rec = Recorder(fail_at)
    spec = WindowSpec(Duration(ms=length_ms), Duration(ms=slide_ms or length_ms), "ts",
                      max_lag_ms=lag, watermark_ms=100)
    return EventWindows(spec, inputs, IDLE, rec.evaluate, rec.gone.extend,
                        rec.late.append), rec


def feed(w: EventWindows, stamps: list[int], task: int = 1, now: int = 0) -> None:
    for s in stamps:
        w.add((f"t{s}", task), s, task, now)


def test_tumbling_windows_fire_in_order_as_the_watermark_passes_their_end():
    w, rec = make(1000)
    feed(w, [1500, 1200, 2100, 1999, 3000])     # out of order within the lag of none
    w.on_time(0)                                 # watermark 3000: [1000, 2000), [2000, 3000)
    assert rec.spans() == [(1000, 2000, ["t1200", "t1500", "t1999"]),
                           (2000, 3000, ["t2100"])]
    assert [t for t, _ in rec.gone] == ["t1200", "t1500", "t1999", "t2100"]   # tumbling
    feed(w, [3500, 5200])
    w.on_time(50)                                # not yet: one computation per interval
    assert len(rec.windows) == 2
    w.on_time(100)                               # watermark 5200: [3000, 4000); 4000.. empty
    assert rec.spans()[2:] == [(3000, 4000, ["t3000", "t3500"])]
    # what left since the evaluation before: each window's expired
    assert [t for t, _ in rec.windows[1].expired] == ["t1200", "t1500", "t1999"]
    assert [t for t, _ in rec.windows[2].expired] == ["t2100"]


def test_sliding_windows_hold_each_tuple_until_its_last_window():
    w, rec = make(1000, 500)
    feed(w, [100, 600, 1100, 1600])
    w.on_time(0)                                 # watermark 1600: ends 500, 1000, 1500
    assert rec.spans() == [(-500, 500, ["t100"]), (0, 1000, ["t100", "t600"]),
                           (500, 1500, ["t600", "t1100"])]
    assert [t for t, _ in rec.windows[1].new] == ["t600"]
    assert [t for t, _ in rec.windows[2].expired] == ["t100"]
    assert [t for t, _ in rec.gone] == ["t100", "t600"]   # 600 is in no window after 1500


def test_tuples_behind_the_watermark_are_late():
    w, rec = make(1000, lag=200)
    feed(w, [1000, 2500])
    w.on_time(0)                                 # watermark 2300
    assert rec.spans() == [(1000, 2000, ["t1000"])]
    feed(w, [2299, 2300, 1999])
    assert [t for t, _ in rec.late] == ["t2299", "t1999"]
    feed(w, [3300])
    w.on_time(100)                               # watermark 3100
    assert rec.spans()[1:] == [(2000, 3000, ["t2300", "t2500"])]


def test_the_watermark_is_the_least_over_every_input_task():
    w, rec = make(1000, inputs=(1, 2))
    feed(w, [5000], task=1)
    w.on_time(0)
    assert w.watermark is None                   # task 2 not heard yet: wait for it
    feed(w, [1100, 2100], task=2)
    w.on_time(100)
    assert w.watermark == 2100                   # task 2 is behind
    assert rec.spans() == [(1000, 2000, ["t1100"])]
    feed(w, [4000], task=2)
    w.on_time(200)
    assert w.watermark == 4000
    assert [s[1] for s in rec.spans()] == [2000, 3000]   # [3000, 4000) empty: skipped
    feed(w, [3999], task=1)                      # behind the watermark: late, not a window
    assert [t for t, _ in rec.late] == ["t3999"]


def test_a_quiet_input_task_stops_holding_the_watermark_back_until_it_speaks():
    w, rec = make(1000, inputs=(1, 2))
    feed(w, [1000], task=2, now=0)
    feed(w, [1000, 2500], task=1, now=0)
    w.on_time(100)
    assert w.watermark == 1000 and not rec.windows
    feed(w, [3500], task=1, now=IDLE - 1)
    w.on_time(IDLE - 1)
    assert w.watermark == 1000                   # task 2 is not quiet yet
    feed(w, [4100], task=1, now=IDLE + 99)
    w.on_time(IDLE + 99)                         # task 2 quiet for IDLE ms: left out
    assert w.watermark == 4100
    assert [s[1] for s in rec.spans()] == [2000, 3000, 4000]
    feed(w, [4200], task=2, now=IDLE + 100)      # it speaks again: counts from now on
    feed(w, [9000], task=1, now=IDLE + 100)
    w.on_time(IDLE + 199)
    assert w.watermark == 4200 and len(rec.windows) == 3


def test_a_task_never_heard_from_is_waited_for_only_until_it_counts_as_quiet():
    w, rec = make(1000, inputs=(1, 2))
    feed(w, [1500], task=1, now=0)
    w.on_time(0)
    feed(w, [2500], task=1, now=IDLE - 1)
    w.on_time(IDLE - 1)
    assert w.watermark is None
    w.on_time(IDLE + 99)                         # since the bolt's first tuple
    assert rec.spans() == [(1000, 2000, ["t1500"])]


def test_when_every_task_heard_from_is_quiet_what_is_here_is_evaluated():
    # task 2 never speaks; task 1 speaks, then goes quiet before task 2 counts as quiet
    w, rec = make(1000, inputs=(1, 2))
    feed(w, [1500, 2500, 5000], task=1, now=0)
    w.on_time(0)
    assert w.watermark is None                   # task 2 may still speak
    w.on_time(IDLE + 1)                          # both quiet: past the window of the latest
    assert w.watermark == 6000
    assert rec.spans() == [(1000, 2000, ["t1500"]), (2000, 3000, ["t2500"]),
                           (5000, 6000, ["t5000"])]
    assert [t for t, _ in rec.gone] == ["t1500", "t2500", "t5000"]   # all acked
    feed(w, [5500], task=1, now=IDLE + 2)        # behind the flushed windows: late
    assert [t for t, _ in rec.late] == ["t5500"]
    feed(w, [6500], task=1, now=IDLE + 3)        # it speaks again: holds it from now on
    w.on_time(IDLE + 200)
    assert w.watermark == 6500


def test_when_every_task_is_quiet_each_sliding_window_of_the_latest_is_evaluated():
    w, rec = make(1000, 500, lag=300)
    feed(w, [100, 1100, 1200], now=0)
    w.on_time(0)                                 # watermark 900: ends 500 only
    assert [s[1] for s in rec.spans()] == [500]
    w.on_time(IDLE)                              # quiet: up to the last end holding 1200
    assert w.watermark == 2000
    assert rec.spans()[1:] == [(0, 1000, ["t100"]), (500, 1500, ["t1100", "t1200"]),
                               (1000, 2000, ["t1100", "t1200"])]
    assert len(w) == 0


def test_a_failed_window_is_forgotten_by_the_windows_after_it():
    w, rec = make(1000, 500, fail_at={1})
    feed(w, [100, 600, 1100])
    w.on_time(0)                                 # watermark 1100: ends 500, 1000
    assert rec.spans() == [(-500, 500, ["t100"]), (0, 1000, ["t600"])]
    assert rec.gone == []                        # t100 failed, not acked


def test_a_window_read_later_is_not_changed_by_tuples_sorted_in_after_it():
    w, rec = make(1000)
    feed(w, [1100, 1900, 2500])
    w.on_time(0)                                 # watermark 2500: [1000, 2000)
    feed(w, [2600, 2550, 2501])                  # inserted behind 2500's window, not into it
    for i in range(3000):                        # and the lists cut many times
        feed(w, [3000 + i * 10])
        w.on_time(100 + i * 100)
    assert [t for t, _ in rec.windows[0].tuples] == ["t1100", "t1900"]
    assert [t for t, _ in rec.windows[1].tuples] == ["t2500", "t2501", "t2550", "t2600"]


def test_a_failed_windows_replays_are_evaluated_again_in_the_same_window():
    """process_window raised: its tuples failed, and the spout replays them with their
    timestamps, behind the watermark by now. They are not late: once all are back the
    window is evaluated again, with the same bounds, and they are acked after it."""
    w, rec = make(1000, fail_at={1})
    feed(w, [1100, 1500, 2100], now=0)
    w.on_time(0)                                 # watermark 2100: [1000, 2000) fails
    assert rec.spans() == [(1000, 2000, ["t1100", "t1500"])] and rec.gone == []
    feed(w, [2500, 3100], now=10)                # new tuples go on
    w.on_time(100)                               # watermark 3100: [2000, 3000)
    feed(w, [1500], now=110)                     # the replays, in any order
    assert len(rec.windows) == 2                 # one of two back: not yet
    feed(w, [1100], now=120)
    assert rec.late == []
    assert rec.spans()[2:] == [(1000, 2000, ["t1100", "t1500"])]   # again, at once
    assert all(len(win.new) == len(win.tuples) for win in rec.windows[2:])
    assert [t for t, _ in rec.gone] == ["t2100", "t2500", "t1100", "t1500"]
    feed(w, [4100], now=130)
    w.on_time(200)                               # the next window reports them as expired
    assert [t for t, _ in rec.windows[3].expired] == ["t1100", "t1500"]
    feed(w, [1200], now=140)                     # the window is done: late again
    assert [t for t, _ in rec.late] == ["t1200"]


def test_a_failed_window_waits_for_its_replays_only_for_a_while():
    # partly back: evaluated with what came back half the message timeout after the first
    w, rec = make(1000, fail_at={1})
    feed(w, [1100, 1200, 1300, 2100], now=0)
    w.on_time(0)
    feed(w, [1100, 1300], now=50)
    w.on_time(50 + IDLE - 1)
    assert len(rec.windows) == 1
    w.on_time(50 + IDLE)
    assert rec.spans()[1:] == [(1000, 2000, ["t1100", "t1300"])]
    feed(w, [1200], now=50 + IDLE)               # too late for it
    assert [t for t, _ in rec.late] == ["t1200"]
    # nothing back: forgotten twice the message timeout after it failed
    w, rec = make(1000, fail_at={1})
    feed(w, [1100, 2100], now=0)
    w.on_time(0)
    w.on_time(4 * IDLE - 1)
    feed(w, [1100], now=4 * IDLE - 1)            # still taken back
    assert not rec.late
    w, rec = make(1000, fail_at={1})
    feed(w, [1100, 2100], now=0)
    w.on_time(0)
    w.on_time(4 * IDLE)                          # (the quiet input's last window too)
    feed(w, [1100], now=4 * IDLE)
    assert [t for t, _ in rec.late] == ["t1100"]
    assert [(start, end) for start, end, _ in rec.spans()] == [(1000, 2000), (2000, 3000)]


def test_a_window_failing_again_waits_for_its_replays_again():
    w, rec = make(1000, fail_at={1, 2})
    feed(w, [1100, 2100], now=0)
    w.on_time(0)
    feed(w, [1100], now=10)                      # back, evaluated again, fails again
    feed(w, [1100], now=20)                      # back again
    assert rec.spans() == [(1000, 2000, ["t1100"])] * 3
    assert not rec.late and [t for t, _ in rec.gone] == ["t1100"]


def test_only_the_failed_windows_range_is_taken_back_and_only_with_ackers():
    # sliding: [500, 1500) fails holding 600 and 1100; the replays go back into it alone
    # (the windows after it were evaluated without them: they failed)
    w, rec = make(1000, 500, fail_at={2})
    feed(w, [100, 600, 1100, 1600], now=0)
    w.on_time(0)                                 # ends 500, 1000 (fails), 1500
    assert rec.spans() == [(-500, 500, ["t100"]), (0, 1000, ["t100", "t600"]),
                           (500, 1500, ["t1100"])]
    feed(w, [100, 1100, 600], now=10)            # 100 is not of the failed window: late
    assert [t for t, _ in rec.late] == ["t1100"]
    assert rec.spans()[3:] == [(0, 1000, ["t100", "t600"])]
    # without ackers nothing is replayed: a tuple behind the watermark is simply late
    spec = WindowSpec(Duration(ms=1000), Duration(ms=1000), "ts", watermark_ms=100)
    rec = Recorder(fail_at={1})
    w = EventWindows(spec, (1,), IDLE, rec.evaluate, rec.gone.extend, rec.late.append,
                     replays=False)
    feed(w, [1100, 2100])
    w.on_time(0)
    feed(w, [1100])
    assert [t for t, _ in rec.late] == ["t1100"] and len(rec.windows) == 1
