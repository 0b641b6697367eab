"""Windowed bolts in a LocalCluster: count, processing-time and event-time windows evaluated
once each and in order with the right tuples; acks only when a tuple leaves its last
window; emits anchored to the whole window; late tuples; Storm's component keys; and the
event-time watermark across the input tasks of two workers."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from squall import Bolt, Count, Duration, LocalCluster, Spout, TopologyBuilder, TopologyError, \
    WindowedBolt
from squall.testing import WaitTimeout, wait_until

LOCK = threading.Lock()
#: the shared event log: ("window", n, [values]) from the windowed bolt, ("ack"/"fail", id)
#: from the spout; appended on the loop thread(s), read by the test
EVENTS: list[tuple[Any, ...]] = []
WINDOWS: list[dict[str, Any]] = []
LATE: list[Any] = []
#: per spout task index: the rows it emits, and a gate that lets it go on past a pause
ROWS: dict[int, list[tuple[Any, ...]]] = {}
GATES: dict[int, threading.Event] = {}
PORTS: dict[str, int] = {}


@pytest.fixture(autouse=True)
def _clear() -> None:
    for x in (EVENTS, WINDOWS, LATE, ROWS, GATES, PORTS):
        x.clear()


def log(*event: Any) -> None:
    with LOCK:
        EVENTS.append(event)


def events(kind: str) -> list[tuple[Any, ...]]:
    with LOCK:
        return [e for e in EVENTS if e[0] == kind]


class Rows(Spout):
    """Emits ROWS[its task index] in order, each with a tup_id (its first value); a row
    ``("pause",)`` waits for GATES[index] to be set. Logs acks and fails."""
    outputs = ["n", "ts"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.index = context.task_index
        self.rows = list(ROWS.get(self.index, []))
        PORTS[f"spout{self.index}"] = context.this_worker_port

    def next_tuple(self) -> None:
        if not self.rows:
            return
        if self.rows[0] == ("pause",):
            if not GATES[self.index].is_set():
                return
            self.rows.pop(0)
            return
        row = self.rows.pop(0)
        self.emit(list(row), tup_id=row[0])
        log("emit", self.index, row[0])

    def ack(self, tup_id: Any) -> None:
        log("ack", tup_id)

    def fail(self, tup_id: Any) -> None:
        log("fail", tup_id)


class Recording(WindowedBolt):
    """Logs every window it evaluates and emits the sum of its ``n`` values."""
    outputs = ["total"]
    window = Count(4)
    slide = Count(2)

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        PORTS["window"] = context.this_worker_port

    def process_window(self, window: Any) -> None:
        with LOCK:
            WINDOWS.append({"tuples": [t["n"] for t in window.tuples],
                            "new": [t["n"] for t in window.new],
                            "expired": [t["n"] for t in window.expired],
                            "start": window.start, "end": window.end})
            EVENTS.append(("window", len(WINDOWS), [t["n"] for t in window.tuples]))
        self.emit([sum(t["n"] for t in window.tuples)])


def run(cluster: LocalCluster, bolt: type, rows: dict[int, list[tuple[Any, ...]]], *,
        conf: dict[str, Any] | None = None, component: dict[str, Any] | None = None,
        spouts: int = 1, sink: type | None = None, late_sink: type | None = None) -> None:
    ROWS.update(rows)
    for i in rows:
        GATES[i] = threading.Event()
    b = TopologyBuilder()
    b.set_spout("rows", Rows, spouts)
    b.set_bolt("window", bolt, config=component).global_grouping("rows")
    if sink is not None:
        b.set_bolt("sink", sink).shuffle_grouping("window")
    if late_sink is not None:
        b.set_bolt("late", late_sink).shuffle_grouping("window", "late")
    cluster.submit_topology("windows", conf or {}, b.create_topology(conf))


def test_sliding_count_windows_in_order_and_acks_only_after_the_last_window(cluster):
    run(cluster, Recording, {0: [(i, 0) for i in range(10)]})
    wait_until(lambda: len(events("ack")) == 8, timeout=20, message=lambda: repr(EVENTS))
    with LOCK:
        assert [w["tuples"] for w in WINDOWS] == [
            [0, 1], [0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7], [6, 7, 8, 9]]
        assert [w["new"] for w in WINDOWS] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
        log_now = list(EVENTS)
    # tuple i is in windows i//2 + 1 and i//2 + 2: its ack comes after the latter, never
    # before; 8 and 9 wait for a window that has not come
    position = {e[:2]: k for k, e in enumerate(log_now)}
    for i in range(8):
        assert position[("ack", i)] > position[("window", i // 2 + 2)], log_now
    assert {e[1] for e in events("ack")} == set(range(8)) and not events("fail")


def test_component_keys_override_the_class_window(cluster):
    run(cluster, Recording, {0: [(i, 0) for i in range(6)]},
        component={"topology.bolts.window.length.count": 3})
    wait_until(lambda: len(events("ack")) == 5, timeout=20, message=lambda: repr(EVENTS))
    # the key replaces the window (Count(4)); the class's slide (Count(2)) stays
    assert [w["tuples"] for w in WINDOWS] == [[0, 1], [1, 2, 3], [3, 4, 5]]
    assert {e[1] for e in events("ack")} == {0, 1, 2, 3, 4}     # 5 is in the next window


class Tumbling(Recording):
    window = Duration(ms=300)
    slide = None


def test_processing_time_windows_fire_on_the_timer_once_each(cluster):
    run(cluster, Tumbling, {0: [(i, 0) for i in range(50)]})
    wait_until(lambda: len(events("ack")) == 50, timeout=20, message=lambda: repr(EVENTS))
    # the input is over: the windows after the last are empty, and none is evaluated
    # (though the last window's tuples left since: no window of nothing but expired)
    with pytest.raises(WaitTimeout):
        wait_until(lambda: not WINDOWS[-1]["tuples"], timeout=1.0)
    with LOCK:
        assert all(w["tuples"] for w in WINDOWS), WINDOWS
        seen = [n for w in WINDOWS for n in w["tuples"]]
        ends = [w["end"] for w in WINDOWS]
    assert seen == list(range(50))               # every tuple in one window, in order
    # on the timer's schedule (windows with nothing in them skipped)
    assert all(b > a and (b - a) % 300 == 0 for a, b in zip(ends, ends[1:]))
    assert all(w["end"] - w["start"] == 300 for w in WINDOWS)
    assert not events("fail")


class FailSecond(Bolt):
    """Fails the second tuple it gets (its window's spout tuples must fail with it)."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.seen = 0

    def process(self, tup: Any) -> None:
        self.seen += 1
        if self.seen == 2:
            raise ValueError("downstream failure")


class Triples(Recording):
    window = Count(3)
    slide = None


class TriplesMany(Triples):
    """Emits each window's sum twice, with one ``emit_many``."""

    def process_window(self, window: Any) -> None:
        total = sum(t["n"] for t in window.tuples)
        self.emit_many([[total], [total]])


@pytest.mark.parametrize("bolt", [Triples, TriplesMany])
def test_failing_a_tuple_emitted_from_a_window_fails_that_windows_spout_tuples(cluster, bolt):
    # FailSecond fails the second tuple it gets: window 2's (emit), window 1's second (many)
    run(cluster, bolt, {0: [(i, 0) for i in range(9)]}, sink=FailSecond)
    wait_until(lambda: len(events("ack")) + len(events("fail")) == 9, timeout=20,
               message=lambda: repr(EVENTS))
    failed = [3, 4, 5] if bolt is Triples else [0, 1, 2]
    assert sorted(e[1] for e in events("fail")) == failed
    assert sorted(e[1] for e in events("ack")) == sorted(set(range(9)) - set(failed))


class Explodes(Triples):
    def process_window(self, window: Any) -> None:
        super().process_window(window)
        if len(WINDOWS) == 1:
            raise RuntimeError("bad window")


def test_an_exception_in_process_window_fails_its_tuples_and_the_bolt_goes_on(cluster):
    run(cluster, Explodes, {0: [(i, 0) for i in range(6)]})
    wait_until(lambda: len(events("ack")) + len(events("fail")) == 6, timeout=20,
               message=lambda: repr(EVENTS))
    assert sorted(e[1] for e in events("fail")) == [0, 1, 2]
    assert sorted(e[1] for e in events("ack")) == [3, 4, 5]
    errors = cluster.get_topology_info("windows")["errors"]["window"]
    assert any("bad window" in e["error"] for e in errors), errors


#: seconds between two tuples of Paced: a Count(6) window sliding by one holds each 2.5 s
#: (acked after its last window, the fifth tuple after it), over twice the 1 s message
#: timeout (a tree times out one to two timeouts after its last reset)
PACE = 0.5


class Paced(Rows):
    """Emits its rows one every PACE s; logs ("emit", id, time) and ("ack", id, time)."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        super().initialize(conf, context)
        self.next_at = 0.0

    def next_tuple(self) -> None:
        now = time.monotonic()
        if not self.rows or now < self.next_at:
            return
        self.next_at = now + PACE
        row = self.rows.pop(0)
        self.emit(list(row), tup_id=row[0])
        log("emit", row[0], now)

    def ack(self, tup_id: Any) -> None:
        log("ack", tup_id, time.monotonic())


class KeepsAlive(WindowedBolt):
    """Restarts the timeout of every tuple of each window it evaluates (one per tuple)."""
    outputs = ["total"]
    window = Count(6)
    slide = Count(1)

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        try:
            self.reset_timeout((1, 0))      # not a Tuple: one clear error
        except TopologyError as exc:
            log("refused", str(exc))

    def process_window(self, window: Any) -> None:
        for t in window.tuples:
            self.reset_timeout(t)


def test_reset_timeout_keeps_a_windows_tuples_alive_past_the_message_timeout(cluster):
    ROWS[0] = [(i, 0) for i in range(6)]
    b = TopologyBuilder()
    b.set_spout("rows", Paced)
    b.set_bolt("window", KeepsAlive).global_grouping("rows")
    conf = {"topology.message.timeout.secs": 1}
    cluster.submit_topology("windows", conf, b.create_topology(conf))
    # tuple 0's last window is the one tuple 5 ends, 2.5 s on: then it is acked, once
    wait_until(lambda: events("ack") or events("fail"), timeout=10,
               message=lambda: repr(EVENTS))
    with LOCK:
        log_now = list(EVENTS)
    assert [e[:2] for e in log_now if e[0] in ("ack", "fail")] == [("ack", 0)], log_now
    emitted = next(e[2] for e in log_now if e[:2] == ("emit", 0))
    assert events("ack")[0][2] - emitted > 2.0, log_now      # held past two timeouts
    assert events("refused") == [("refused", "component 'window': reset_timeout takes a "
                                  "Tuple this bolt received, got tuple (1, 0)")]


class EventTime(Recording):
    window = Duration(ms=1000)
    slide = None
    timestamp_field = "ts"
    watermark_interval = Duration(ms=20)
    late_stream = "late"


class LateSink(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            LATE.append(tuple(tup.values))


class EventTimeLagging(EventTime):
    #: the out-of-order rows below arrive within it, however the watermark's timer falls
    #: between them (with no lag, 2 after 1 is late if a watermark is computed in between)
    max_lag = Duration(ms=500)


def test_event_time_windows_in_order_and_late_tuples_to_the_late_stream(cluster):
    rows = [(1, 1500), (2, 1200), (3, 2100), (4, 1999), (5, 3000), (9, 3600), ("pause",),
            (6, 1100), (7, 3500), (8, 9000)]
    run(cluster, EventTimeLagging, {0: rows}, late_sink=LateSink)
    wait_until(lambda: len(WINDOWS) >= 2, timeout=20, message=lambda: repr(EVENTS))
    GATES[0].set()                   # the watermark passed 3000 (3600 - 500): 6 is late
    wait_until(lambda: len(WINDOWS) >= 3 and LATE, timeout=20, message=lambda: repr(EVENTS))
    with LOCK:
        assert [(w["start"], w["end"], w["tuples"]) for w in WINDOWS] == [
            (1000, 2000, [2, 1, 4]), (2000, 3000, [3]), (3000, 4000, [5, 7, 9])]
        assert LATE == [(6, 1100)]
    # the late tuple is acked (after its trip down the late stream), the windows' tuples
    # once they left them; 8 (ts 9000) waits for a later watermark
    wait_until(lambda: len(events("ack")) == 8, timeout=20, message=lambda: repr(EVENTS))
    assert {e[1] for e in events("ack")} == {1, 2, 3, 4, 5, 6, 7, 9}


class EventTimeCount(EventTimeLagging):
    window = Count(4)
    slide = Count(2)


def test_event_time_count_windows_in_event_order_and_acks_as_tuples_leave(cluster):
    # the watermark (latest - 500) covers the tuples in event order, two by two; 7 comes
    # behind it, 8 (ts 9000) lets 5 and 6 in and waits itself
    rows = [(1, 1500), (2, 1200), (3, 2100), (4, 1999), (5, 3000), (6, 3600), ("pause",),
            (7, 1100), (8, 9000)]
    run(cluster, EventTimeCount, {0: rows}, late_sink=LateSink)
    wait_until(lambda: len(WINDOWS) >= 2, timeout=20, message=lambda: repr(EVENTS))
    GATES[0].set()
    wait_until(lambda: len(WINDOWS) >= 3 and len(events("ack")) == 5, timeout=20,
               message=lambda: repr(EVENTS))
    with LOCK:
        assert [(w["start"], w["end"], w["tuples"], w["new"], w["expired"])
                for w in WINDOWS] == [
            (1200, 1500, [2, 1], [2, 1], []),
            (1200, 2100, [2, 1, 4, 3], [4, 3], []),
            (1999, 3600, [4, 3, 5, 6], [5, 6], [2, 1])]
        assert LATE == [(7, 1100)]
        log_now = list(EVENTS)
    # 2 and 1 leave after the second window, 4 and 3 after the third; 5, 6 and 8 are held
    position = {e[:2]: k for k, e in enumerate(log_now)}
    for n, last in ((1, 2), (2, 2), (3, 3), (4, 3)):
        assert position[("ack", n)] > position[("window", last)], log_now
    assert {e[1] for e in events("ack")} == {1, 2, 3, 4, 7} and not events("fail")


def test_event_time_windows_of_what_arrived_are_evaluated_once_the_input_is_quiet(cluster):
    # nothing comes after ts 2100: once the spout is quiet for half the message timeout the
    # window holding it is evaluated and its tuple acked, instead of timing out (and, with
    # a replaying spout, coming back to wait again)
    run(cluster, EventTime, {0: [(1, 100), (2, 1100), (3, 2100)]},
        conf={"topology.message.timeout.secs": 4})
    wait_until(lambda: len(events("ack")) == 3, timeout=20, message=lambda: repr(EVENTS))
    assert not events("fail")
    with LOCK:
        assert [(w["start"], w["tuples"]) for w in WINDOWS] == [(0, [1]), (1000, [2]),
                                                               (2000, [3])]


class Replaying(Rows):
    """Rows that emits a failed row again, next, with its timestamp (as any event-time
    source replays)."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        super().initialize(conf, context)
        self.by_id = {row[0]: row for row in self.rows if row != ("pause",)}

    def fail(self, tup_id: Any) -> None:
        super().fail(tup_id)
        self.rows.insert(0, self.by_id[tup_id])


class EventTimeRaisesOnce(EventTime):
    def process_window(self, window: Any) -> None:
        super().process_window(window)
        if len(WINDOWS) == 1:
            raise RuntimeError("bad window")


def test_an_event_time_window_that_raised_is_evaluated_again_with_the_replays(cluster):
    # [1000, 2000) raises: 1, 2 and 3 fail and come back behind the watermark (at 2100 or
    # more by then); they are not late but evaluated again in a window of the same bounds
    rows = [(1, 1100), (2, 1500), (3, 1900), (4, 2100), (5, 2600), (6, 3100), (7, 9000)]
    ROWS[0] = rows
    b = TopologyBuilder()
    b.set_spout("rows", Replaying)
    b.set_bolt("window", EventTimeRaisesOnce).global_grouping("rows")
    b.set_bolt("late", LateSink).shuffle_grouping("window", "late")
    cluster.submit_topology("windows", {}, b.create_topology())
    wait_until(lambda: {e[1] for e in events("ack")} >= {1, 2, 3, 4, 5, 6}, timeout=20,
               message=lambda: repr(EVENTS))
    assert sorted(e[1] for e in events("fail")) == [1, 2, 3]
    with LOCK:
        bounds = [(w["start"], w["end"], w["tuples"]) for w in WINDOWS]
        assert LATE == []
    assert bounds[0] == (1000, 2000, [1, 2, 3])                  # raised
    assert sorted(bounds[1:]) == [(1000, 2000, [1, 2, 3]), (2000, 3000, [4, 5]),
                                  (3000, 4000, [6])]


class EventTimeNoLateStream(EventTime):
    late_stream = None


def test_bad_timestamps_fail_and_late_tuples_without_a_late_stream_are_acked(cluster):
    rows = [(1, "1200"), (2, 1500), (3, 3000), ("pause",), (4, 1000), (5, 9000)]
    run(cluster, EventTimeNoLateStream, {0: rows})
    wait_until(lambda: WINDOWS and events("fail"), timeout=20, message=lambda: repr(EVENTS))
    GATES[0].set()                   # the watermark is at 3000: 4 (ts 1000) is late
    wait_until(lambda: len(events("ack")) == 3, timeout=20, message=lambda: repr(EVENTS))
    assert [e[1] for e in events("fail")] == [1]
    assert {e[1] for e in events("ack")} == {2, 3, 4}
    assert [(w["start"], w["tuples"]) for w in WINDOWS] == [(1000, [2]), (3000, [3])]
    errors = cluster.get_topology_info("windows")["errors"]["window"]
    assert any("timestamp field 'ts' must be an int" in e["error"] for e in errors), errors


def test_a_bad_timestamp_is_one_error_line_the_tuple_fails_and_the_bolt_goes_on(cluster):
    # the input's fault: no traceback of squall's executor, one line naming field and value
    rows = [(1, "1200"), (2, None), (3, 1500.5), (4, True), (5, 1500), (6, 3000)]
    run(cluster, EventTimeNoLateStream, {0: rows})
    wait_until(lambda: len(events("fail")) == 4 and events("ack"), timeout=20,
               message=lambda: repr(EVENTS))
    assert sorted(e[1] for e in events("fail")) == [1, 2, 3, 4]
    assert [e[1] for e in events("ack")] == [5]
    errors = [e["error"] for e in cluster.get_topology_info("windows")["errors"]["window"]]
    assert len(errors) == 4, errors
    assert all("\n" not in e and "Traceback" not in e for e in errors), errors
    prefix = ("windowed bolt 'window': timestamp field 'ts' must be an int (ms since the "
              "epoch), got ")
    assert sorted(errors) == sorted(prefix + got + "; the tuple fails" for got in (
        "str '1200'", "NoneType None", "float 1500.5", "bool True"))


def test_submit_refuses_a_window_longer_than_the_submitted_message_timeout(cluster):
    b = TopologyBuilder()
    b.set_spout("rows", Rows)
    b.set_bolt("window", EventTime).global_grouping("rows")      # 1 s + 1 s
    topology = b.create_topology()
    with pytest.raises(TopologyError, match="does not fit in topology.message.timeout.secs"):
        cluster.submit_topology("windows", {"topology.message.timeout.secs": 1}, topology)


def test_submit_refuses_a_count_window_longer_than_the_submitted_max_spout_pending(cluster):
    # Count(4) sliding by Count(2) waits for 6 tuples in flight: 5 pending cannot feed it
    b = TopologyBuilder()
    b.set_spout("rows", Rows)
    b.set_bolt("window", Recording).global_grouping("rows")
    topology = b.create_topology()
    with pytest.raises(TopologyError, match=r"window plus slide \(6 tuples\) is more than "
                                            r"topology.max.spout.pending \(5\)"):
        cluster.submit_topology("windows", {"topology.max.spout.pending": 5}, topology)
    assert "windows" not in cluster.topologies()


def test_submit_refuses_a_late_stream_the_topology_was_built_without(cluster):
    b = TopologyBuilder()
    b.set_spout("rows", Rows)
    b.set_bolt("window", EventTimeNoLate).global_grouping("rows")
    topology = b.create_topology()
    with pytest.raises(TopologyError, match="late stream 'late' .* was not declared when the "
                                            "topology was built"):
        cluster.submit_topology("windows", {"topology.bolts.late.tuple.stream": "late"},
                                topology)


def test_submit_refuses_a_timestamp_field_the_inputs_lack(cluster):
    b = TopologyBuilder()
    b.set_spout("rows", Rows)
    b.set_bolt("window", EventTimeNoLate).global_grouping("rows")
    topology = b.create_topology()
    with pytest.raises(TopologyError, match=r"timestamp field 'tss' .* not a field of "
                                            r"rows:default; its input streams' fields: "
                                            r"rows:default \['n', 'ts'\]"):
        cluster.submit_topology("windows", {"topology.bolts.tuple.timestamp.field.name": "tss"},
                                topology)


class EventTimeNoLate(EventTime):
    late_stream = None


class EventTimeAcrossWorkers(EventTime):
    late_stream = None


def test_event_time_watermark_waits_for_every_input_task_across_two_workers():
    """Two spout tasks in two workers feed one windowed task: the watermark is the least of
    their latest timestamps, so the task that lags holds windows back until it catches up;
    a task that has gone quiet (half the message timeout) stops holding them back."""
    rows = {0: [(100 + i, 1000 + 400 * i) for i in range(10)],        # up to ts 4600
            1: [(200, 1100), (201, 2500), ("pause",), (202, 4700), (203, 9000)]}
    # quiet after 7 s: spout 0's ten rows and the one-second look below fit in it on a
    # loaded host
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 14}
    with LocalCluster() as cluster:
        run(cluster, EventTimeAcrossWorkers, rows, conf=conf, spouts=2)
        wait_until(lambda: WINDOWS and len([e for e in events("emit") if e[1] == 0]) == 10,
                   timeout=20, message=lambda: repr(EVENTS))
        assert PORTS["spout0"] != PORTS["spout1"], PORTS
        # spout 1 is at 2500: [1000, 2000) is all the watermark allows, though spout 0 is
        # at 4600 (its tuples keep arriving and the watermark is recomputed every 20 ms)
        with pytest.raises(WaitTimeout):
            wait_until(lambda: len(WINDOWS) > 1, timeout=1.0)
        with LOCK:
            assert [(w["start"], w["end"], w["tuples"]) for w in WINDOWS] == [
                (1000, 2000, [100, 200, 101, 102])]
        GATES[1].set()
        # spout 1 moves on to 9000; spout 0 (at 4600) holds [4000, 5000) back until it has
        # been quiet for 7 s, then the watermark follows spout 1 alone
        wait_until(lambda: len(WINDOWS) >= 4, timeout=30, message=lambda: repr(WINDOWS))
        with LOCK:
            assert [(w["start"], w["end"], w["tuples"]) for w in WINDOWS] == [
                (1000, 2000, [100, 200, 101, 102]), (2000, 3000, [103, 201, 104]),
                (3000, 4000, [105, 106, 107]), (4000, 5000, [108, 109, 202])]
