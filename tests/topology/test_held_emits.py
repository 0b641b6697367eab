"""``emit_many`` values are held and routed together (one grouping pass for a whole pass of
a batch bolt; anchored ones by tree, on streams that reach another worker): what a user can
see of that is only that nothing changes. Each target task receives one emitter's tuples in
emit order, whatever mix of emit_many, emit, streams and anchors produced them, held values
are never left behind, and counts stay exact."""
from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, Stream, TopologyBuilder
from squall.runtime.emit.fast import HOLD_CAP
from squall.testing import complete_topology, wait_until

LOCK = threading.Lock()
#: (receiving task, emitting task, line) -> the sequence numbers in arrival order
ARRIVED: dict[tuple[int, int, int], list[int]] = defaultdict(list)
#: sequence number -> the streams it arrived on
STREAMS: dict[int, set[str]] = defaultdict(set)
FAILED_IDS: list[Any] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    ARRIVED.clear()
    STREAMS.clear()
    FAILED_IDS.clear()


class Lines(Spout):
    outputs = ["line"]


class Mixed(Bolt):
    """Per input line: emit_many, emit_many on another stream, a tracked emit anchored to
    the line, a plain emit, and emit_many anchored to the line (held by tree where the
    stream reaches another worker): seq 0..6 in emit order."""

    outputs = [Stream(["line", "seq"]), Stream(["line", "seq"], name="other")]

    def process_batch(self, tuples: list[Any]) -> None:
        for tup in tuples:
            i = tup["line"]
            self.emit_many([(i, 0), (i, 1)])
            self.emit_many([(i, 2)], "other")
            self.emit((i, 3), anchors=[tup])
            self.emit((i, 4))
            self.emit_many([[i, 5], [i, 6]], anchors=[tup])     # lists: arrive as tuples


class Big(Bolt):
    """One input: emit_many calls that cross HOLD_CAP, one list past it, then a plain emit."""

    outputs = [Stream(["line", "seq"])]

    def process(self, tup: Any) -> None:
        i, seq = tup["line"], 0
        for size in (HOLD_CAP - 3, 5, 2 * HOLD_CAP, 7):
            self.emit_many([(i, seq + k) for k in range(size)])
            seq += size
        self.emit((i, seq))


class Record(Bolt):
    def process(self, tup: Any) -> None:
        line, seq = tup.values
        with LOCK:
            ARRIVED[(self.context.task_id, tup.task, line)].append(seq)
            STREAMS[seq].add(tup.stream)


def _run(emitter: type[Bolt], lines: int, workers: int, ackers: int) -> Any:
    b = TopologyBuilder()
    b.set_spout("lines", Lines, 2)
    b.set_bolt("mixed", emitter, 2).shuffle_grouping("lines")
    rec = b.set_bolt("record", Record, 3).fields_grouping("mixed", ["line"])
    if emitter is Mixed:
        rec.fields_grouping("mixed", ["line"], stream="other")
    return complete_topology(b.create_topology(), {"lines": [[i] for i in range(lines)]},
                             conf={"topology.workers": workers,
                                   "topology.acker.executors": ackers})


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("ackers", [0, 1])
def test_each_target_gets_an_emitters_tuples_in_emit_order(workers: int, ackers: int) -> None:
    result = _run(Mixed, 200, workers, ackers)
    by_line: dict[int, list[int]] = defaultdict(list)
    for (_, _, line), seqs in ARRIVED.items():
        assert seqs == sorted(seqs), f"line {line} arrived out of order: {seqs}"
        by_line[line].extend(seqs)
    assert {line: sorted(seqs) for line, seqs in by_line.items()} == {
        i: list(range(7)) for i in range(200)}
    assert STREAMS == {seq: {"other" if seq == 2 else "default"} for seq in range(7)}
    assert len(result.tuples("mixed")) == 200 * 6 and len(result.tuples("mixed", "other")) == 200
    if ackers:
        assert result.acked == set(range(200)) and not result.failed


@pytest.mark.parametrize("workers", [1, 2])
def test_emits_past_the_hold_cap_arrive_whole_and_in_order(workers: int) -> None:
    _run(Big, 3, workers, 0)
    total = HOLD_CAP - 3 + 5 + 2 * HOLD_CAP + 7 + 1
    for i in range(3):
        [seqs] = [s for (_, _, line), s in ARRIVED.items() if line == i]
        assert seqs == list(range(total))


class Retrying(Spout):
    """Tracked lines; a failed line is announced with emit_many on the "failures" stream from
    inside the fail callback, which runs outside any bolt's pass."""

    outputs = [Stream(["line"]), Stream(["line"], name="failures")]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.next_line = 0

    def next_tuple(self) -> None:
        if self.next_line < 40:
            self.emit([self.next_line], tup_id=self.next_line)
            self.next_line += 1

    def fail(self, tup_id: Any) -> None:
        self.emit_many([(tup_id,)], "failures")


class FailOdd(Bolt):
    def process(self, tup: Any) -> None:
        if tup["line"] % 2:
            self.fail(tup)
        else:
            self.ack(tup)
    auto_ack = False


class Failures(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            FAILED_IDS.append(tup["line"])


@pytest.mark.parametrize("workers", [1, 2])
def test_emit_many_in_a_spouts_fail_callback_is_delivered(workers: int) -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Retrying)
    b.set_bolt("check", FailOdd, 2).shuffle_grouping("lines")
    b.set_bolt("failures", Failures, 2).shuffle_grouping("lines", "failures")
    with LocalCluster() as cluster:
        cluster.submit_topology("held", {"topology.workers": workers,
                                         "topology.acker.executors": 1}, b.create_topology())
        wait_until(lambda: len(FAILED_IDS) >= 20, timeout=30,
                   message="the fail callback's emits to arrive")
    assert sorted(FAILED_IDS) == list(range(1, 40, 2))


class Reuse(Bolt):
    """Emits one list object again and again, changing it between calls."""

    outputs = [Stream(["line", "seq"])]

    def process(self, tup: Any) -> None:
        row = [tup["line"], 0]
        for seq in range(5):
            row[1] = seq
            self.emit_many([row])


@pytest.mark.parametrize("workers", [1, 2])
def test_values_are_taken_when_emitted_not_when_routed(workers: int) -> None:
    _run(Reuse, 20, workers, 0)
    assert sorted((line, seqs) for (_, _, line), seqs in ARRIVED.items()) == [
        (i, list(range(5))) for i in range(20)]
