"""The outbox: tuples for other workers' tasks folded into runs, one message per task per
send, sent when full, idle or due; what cannot be sent fails its trees back."""
from __future__ import annotations

import logging
from typing import Any

import msgpack
import pytest

from squall.api.tuple import Source, Tuple
from squall.errors import TransportError
from squall.runtime.wire import codec
from squall.runtime.wire.credits import Windows
from squall.runtime.wire.outbox import Outbox
from squall.runtime.wire.peers import LimitedLog
from squall.transports import framing
from squall.serializers.msgpack import MsgpackSerializer

SRC = Source("split", "default", ("word",))
HERE, THERE, ELSEWHERE = ("h", 1), ("h", 2), ("h", 3)


class Conn:
    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.batches: list[list[tuple[int, bytes]]] = []

    def send(self, messages: list[tuple[int, bytes]]) -> None:
        if self.fail:
            raise TransportError("peer gone")
        self.batches.append(messages)

    def close(self) -> None:
        pass


class Transport:
    def __init__(self, fail: bool = False) -> None:
        self.conns: dict[tuple[str, int], Conn] = {}
        self.fail = fail

    def connect(self, topology_id: str, host: str, port: int) -> Conn:
        return self.conns.setdefault((host, port), Conn(self.fail))


def outbox(fail: bool = False, interval: float = 0.0) -> tuple[Outbox, Transport, list[set[int]]]:
    transport = Transport(fail)
    lost: list[set[int]] = []
    out = Outbox(transport=transport, serializer=MsgpackSerializer(), topology_id="t",
                 local_tasks=[1], batch_size=2, flush_interval=interval, lost=lost.append)
    out.set_address(*HERE)
    out.set_assignment({1: HERE, 5: THERE, 6: THERE, 7: ELSEWHERE})
    return out, transport, lost


def entries(messages: list[tuple[int, bytes]]) -> dict[int, list[Any]]:
    return {task: msgpack.unpackb(p) for task, p in messages}


def test_emits_for_one_task_join_one_run_and_each_task_gets_its_message() -> None:
    out, transport, _ = outbox()
    out.send_values(5, ("a",), 1, SRC)
    out.send_values(6, ("b",), 1, SRC)
    out.send_values(5, ("c",), 1, SRC)
    out.send_tracked(7, ("d",), 1, SRC, 11, (3,))
    out.send_tracked(7, ("e",), 1, SRC, 12, (3,))
    assert out.pending() == 3 and not transport.conns
    out.flush_all()
    (batch,) = transport.conns[THERE].batches
    assert entries(batch) == {5: [[1, "default", [2, ["a", "c"]], 0, None]],
                              6: [[1, "default", [1, ["b"]], 0, None]]}
    (batch,) = transport.conns[ELSEWHERE].batches
    assert entries(batch) == {7: [[1, "default", [2, ["d", "e"]], [11, 12], [[3], 0]]]}
    assert out.sent_batches == 3 and out.pending() == 0


def test_anchored_runs_from_one_source_travel_as_one_entry() -> None:
    out, transport, _ = outbox()
    out.send_anchored(5, [("a",), ("b",)], 1, SRC, 40, (9,))
    out.send_anchored(5, [("c",)], 1, SRC, 41, (9,))
    out.send_values(5, ("d",), 1, SRC)          # a single tuple after them: a new entry
    out.flush_all()
    (batch,) = transport.conns[THERE].batches
    assert entries(batch)[5] == [[1, "default", [3, ["a", "b", "c"]], [[40, 2], [41, 1]],
                                  [[9], 0]],
                                 [1, "default", [1, ["d"]], 0, None]]


def test_a_full_run_is_sent_at_once() -> None:
    out, transport, _ = outbox()
    for i in range(out.run_cap):
        out.send_values(5, (i,), 1, SRC)
    (batch,) = transport.conns[THERE].batches
    assert entries(batch)[5][0][2][0] == out.run_cap


def test_with_an_interval_an_outbox_waits_for_it_unless_flushed_idle() -> None:
    out, transport, _ = outbox(interval=0.05)
    out.send_values(5, ("a",), 1, SRC)
    out.flush_all(10.0)                 # first seen holding entries
    out.flush_all(10.04)
    assert not transport.conns
    out.flush_all(10.05)
    assert len(transport.conns[THERE].batches) == 1
    out.send_values(5, ("b",), 1, SRC)
    out.flush_all()                     # the loop is idle: everything goes
    assert len(transport.conns[THERE].batches) == 2


def test_what_cannot_be_sent_fails_its_trees_once() -> None:
    out, _, lost = outbox(fail=True)
    out.send_tracked(5, ("a",), 1, SRC, 11, (3, 4))
    out.send_tracked(5, ("b",), 1, SRC, 12, (3, 4))
    out.send_values(6, ("c",), 1, SRC)
    out.flush_all()
    assert lost == [{3, 4}] and out.send_failures == 1


def test_a_task_no_worker_runs_is_lost_at_once() -> None:
    out, _, lost = outbox()
    out.send_tuple(99, Tuple(("a",), 1, SRC, 5, (8,)))
    assert lost == [{8}]


def test_a_forwarded_message_follows_what_waited_for_its_worker() -> None:
    out, transport, _ = outbox()
    out.send_values(5, ("a",), 1, SRC)
    payload = msgpack.packb([[2, "default", [1, ["z"]], 0, None]])
    assert out.forward(6, payload)
    batches = transport.conns[THERE].batches
    assert [[task for task, _ in b] for b in batches] == [[5], [6]]
    assert batches[1][0][1] == payload
    assert not out.forward(99, payload)


def test_a_new_assignment_drops_workers_and_fails_what_waited_for_them() -> None:
    out, _, lost = outbox()
    out.send_tracked(7, ("a",), 1, SRC, 11, (3,))
    assert out.set_assignment({1: HERE, 5: THERE}) == [ELSEWHERE]
    assert lost == [{3}]
    assert out.reaches(5) and not out.reaches(7)


def test_control_messages_reach_every_worker() -> None:
    out, transport, _ = outbox()
    out.broadcast_control("throttle", True)
    for key in (THERE, ELSEWHERE):
        ((task, payload),) = transport.conns[key].batches[0]
        assert task == codec.CONTROL
        assert codec.read_control(msgpack.unpackb(payload)) == ("throttle", "h:1", True)


def test_local_tasks_are_never_given_an_outbox() -> None:
    out, _, _ = outbox()
    assert not out.reaches(1) and out.reaches(6)


def windowed(high: int) -> tuple[Outbox, Transport, list[int]]:
    transport = Transport()
    changes: list[int] = []
    windows = Windows(high, lambda: changes.append(len(windows.saturated)))
    out = Outbox(transport=transport, serializer=MsgpackSerializer(), topology_id="t",
                 local_tasks=[1], batch_size=2, flush_interval=0.0, lost=lambda roots: None,
                 windows=windows)
    out.set_address(*HERE)
    out.set_assignment({1: HERE, 5: THERE, 7: ELSEWHERE})
    return out, transport, changes


def test_what_is_sent_counts_against_the_grant_and_a_task_sent_up_to_it_saturates() -> None:
    out, _, changes = windowed(high=8)      # two other workers: a share of 4 each
    for i in range(3):
        out.send_values(5, (i,), 1, SRC)
    out.flush_all()
    assert not out.windows.saturated
    out.send_values(5, (3,), 1, SRC)
    out.send_values(7, (0,), 1, SRC)
    out.flush_all()
    assert out.windows.saturated == {5} and changes == [1]
    out.credit(THERE, "w2-a", [[5, 4, 6]], now=1.0)     # granted up to 6 in all
    assert not out.windows.saturated and changes == [1, 0]
    with pytest.raises(ValueError):
        out.credit(THERE, "w2-a", [[5, 4, "6"]], now=1.0)


def test_folded_acks_do_not_count_against_a_grant() -> None:
    out, _, _ = windowed(high=2)
    out.send_values_run(5, [(1, 2), (3, 4), (5, 6)], 0, Source("__acker", "__ack_ack", ("id", "v")))
    out.flush_all()
    assert not out.windows.saturated and not out.windows.sent


def test_tuples_by_tree_from_one_source_travel_as_one_entry_in_emit_order() -> None:
    out, transport, _ = outbox()
    out.send_trees(5, [("a",), ("b",)], 1, SRC, [21, 22], [3, 4])
    out.send_trees(5, (("c",),), 1, SRC, (23,), (3,))
    out.send_anchored(5, [("d",)], 1, SRC, 40, (9,))     # an anchored run: a new entry
    out.send_trees(5, [("e",)], 1, SRC, [24], [8])
    out.send_values(5, ("f",), 1, SRC)
    out.flush_all()
    (batch,) = transport.conns[THERE].batches
    assert entries(batch)[5] == [
        [1, "default", [3, ["a", "b", "c"]], [21, 22, 23], [3, 4, 3]],
        [1, "default", [1, ["d"]], [[40, 1]], [[9]]],
        [1, "default", [1, ["e"]], [24], [8]],
        [1, "default", [1, ["f"]], 0, None]]


def test_tuples_by_tree_that_cannot_be_sent_fail_each_of_their_trees() -> None:
    out, _, lost = outbox(fail=True)
    out.send_trees(5, [("a",), ("b",), ("c",)], 1, SRC, [21, 22, 23], [3, 4, 3])
    out.flush_all()
    assert lost == [{3, 4}]


def test_the_run_a_tuple_joined_takes_the_next_ones_until_another_entry_follows_it() -> None:
    # the emit fast paths append to the returned run themselves while it is open
    out, transport, _ = outbox()
    run = out.send_values(5, ("a",), 1, SRC)
    assert run is not None and run.open
    run.values.append(("b",))
    out.send_anchored(5, [("x",)], 1, SRC, 40, (9,))    # another entry for task 5 follows
    assert not run.open
    again = out.send_values(5, ("c",), 1, SRC)
    assert again is not None and again is not run and again.open
    out.flush_all()
    assert not again.open
    (batch,) = transport.conns[THERE].batches
    assert [e[2] for e in entries(batch)[5]] == [[2, ["a", "b"]], [1, ["x"]], [1, ["c"]]]


def test_a_joined_run_closes_when_another_source_or_kind_takes_its_task() -> None:
    out, _, _ = outbox()
    first = out.send_values(6, ("a",), 1, SRC)
    out.send_tracked(6, ("b",), 1, SRC, 11, (3,))           # a tracked tuple follows
    assert first is not None and not first.open
    mine = out.send_values(6, ("c",), 1, SRC)
    other = out.send_values(6, ("d",), 2, SRC)              # another source task
    assert mine is not None and not mine.open and other is not None and other.open
    out.set_assignment({1: HERE, 5: THERE, 6: THERE, 7: ELSEWHERE})
    assert not other.open                                   # looked up anew after it


def test_a_tuple_that_fills_its_run_returns_no_open_run() -> None:
    out, transport, _ = outbox()
    run = out.send_values(5, (0,), 1, SRC)
    assert run is not None
    for i in range(1, out.run_cap - 1):
        run.values.append((i,))
    assert out.send_values(5, (out.run_cap - 1,), 1, SRC) is None and not run.open
    (batch,) = transport.conns[THERE].batches
    assert entries(batch)[5][0][2][1] == list(range(out.run_cap))


class Bounded(Transport):
    """A transport whose sends take batches of ``max_frame_bytes`` at most, as nng's and
    grpc's do."""

    max_frame_bytes = 4096

    def connect(self, topology_id: str, host: str, port: int) -> Conn:
        return self.conns.setdefault((host, port), BoundedConn(self.max_frame_bytes))


class BoundedConn(Conn):
    def __init__(self, limit: int) -> None:
        super().__init__(False)
        self.limit = limit

    def send(self, messages: list[tuple[int, bytes]]) -> None:
        if len(framing.encode(messages)) > self.limit:
            raise TransportError("over the limit")
        super().send(messages)


def bounded() -> tuple[Outbox, Bounded, list[set[int]], list[tuple[Source, str]]]:
    transport = Bounded()
    lost: list[set[int]] = []
    refused: list[tuple[Source, str]] = []
    out = Outbox(transport=transport, serializer=MsgpackSerializer(), topology_id="t",
                 local_tasks=[1], batch_size=100, flush_interval=0.0, lost=lost.append,
                 unencodable=lambda src, exc, count, field: refused.append((src, str(exc))))
    out.set_address(*HERE)
    out.set_assignment({1: HERE, 5: THERE, 6: THERE, 7: ELSEWHERE})
    return out, transport, lost, refused


def arrived(batches: list[list[tuple[int, bytes]]]) -> dict[int, list[Any]]:
    """Every value each task got, in order, and the ids and roots of the tracked ones."""
    got: dict[int, list[Any]] = {}
    for batch in batches:
        for task, payload in batch:
            for _, _, block, ids, roots in msgpack.unpackb(payload):
                got.setdefault(task, []).extend(zip(block[1], ids, roots) if ids else block[1])
    return got


def test_a_batch_over_the_transports_limit_goes_as_several_under_it() -> None:
    # 40 x 500 bytes for task 5 (one run, in emit order), 10 x 300 for task 6: 23 KB where
    # a batch may hold 4 KB; each tuple fits, so every one arrives, in order
    out, transport, lost, refused = bounded()
    for i in range(40):
        out.send_tracked(5, (f"{i:03}" * 167,), 1, SRC, 100 + i, (i,))
        if i % 4 == 0:
            out.send_values(6, (f"{i:03}" * 100,), 1, SRC)
    out.flush_all()
    batches = transport.conns[THERE].batches
    assert len(batches) > 5 and all(len(framing.encode(b)) <= 4096 for b in batches)
    got = arrived(batches)
    assert got[5] == [(f"{i:03}" * 167, 100 + i, [i]) for i in range(40)]
    assert got[6] == [f"{i:03}" * 100 for i in range(0, 40, 4)]
    assert not lost and not refused and not out.send_failures
    # a batch that fits goes as before: one message per task, one send
    out.send_values(5, ("small",), 1, SRC)
    out.send_values(6, ("small",), 1, SRC)
    out.flush_all()
    assert [task for task, _ in transport.conns[THERE].batches[-1]] == [5, 6]


def test_a_tuple_over_the_limit_alone_fails_and_is_reported_and_the_rest_arrives() -> None:
    out, transport, lost, refused = bounded()
    other = Source("count", "totals", ("n",))
    out.send_tracked(5, ("a",), 1, SRC, 11, (3,))
    out.send_tracked(5, ("x" * 5000,), 1, SRC, 12, (4,))
    out.send_tracked(5, ("b",), 1, SRC, 13, (3,))
    out.send_anchored(6, [("y" * 3000,), ("z" * 3000,)], 2, other, 40, (8,))   # one edge
    out.send_values(6, ("c" * 3000,), 2, other)
    out.flush_all()
    got = arrived(transport.conns[THERE].batches)
    assert got == {5: [("a", 11, [3]), ("b", 13, [3])], 6: ["c" * 3000]}
    assert lost == [{4, 8}]
    assert [src for src, _ in refused] == [SRC, other]
    assert "a tuple serialized to 50" in refused[0][1] and "(4096 bytes)" in refused[0][1]
    assert "a run of 2 tuples anchored together" in refused[1][1]
    assert not out.send_failures        # reported as the components' errors, not logged


def test_each_cause_of_a_batchs_refused_values_is_reported_with_its_count_and_field() -> None:
    # only the first refusal of a source was reported: the object and the lone surrogate
    # failed their trees without a word anywhere
    reports: list[tuple[Source, str, int, Any]] = []
    lost: list[set[int]] = []
    out = Outbox(transport=Transport(), serializer=MsgpackSerializer(), topology_id="t",
                 local_tasks=[1], batch_size=100, flush_interval=0.0, lost=lost.append,
                 unencodable=lambda src, exc, n, field: reports.append((src, str(exc), n, field)))
    out.set_address(*HERE)
    out.set_assignment({1: HERE, 5: THERE, 6: THERE})
    pair = Source("pairs", "default", ("key", "value"))
    out.send_tracked(5, ("k", 2**70), 1, pair, 11, (1,))
    out.send_tracked(5, ("fine", "fine"), 1, pair, 12, (2,))
    out.send_tracked(5, (object(), 1), 1, pair, 13, (3,))
    out.send_tracked(5, ("k", -2**66), 1, pair, 14, (4,))     # another int too large
    out.send_values(6, ("\udcff",), 1, SRC)
    out.send_values(6, ("\udc80",), 1, SRC)
    out.send_values(6, ("ok",), 1, SRC)
    out.flush_all()
    assert [(src, n, field) for src, _, n, field in reports] == [
        (pair, 2, "value"), (pair, 1, "key"), (SRC, 2, "word")]
    assert "the int 1180591620717411303424 is beyond the 64 bits" in reports[0][1]
    assert "cannot serialize an object of type object" in reports[1][1]
    assert "surrogates not allowed" in reports[2][1]
    assert lost == [{1, 3, 4}]
    # the rest of the batch goes (the first field of each)
    assert arrived(out.transport.conns[THERE].batches) == {5: [("fine", 12, [2])], 6: ["ok"]}


def test_send_failures_are_logged_once_a_minute_per_reason(caplog: Any) -> None:
    # the log counted failures over the worker's life: the first was logged, then every
    # 1000th, and a quiet refusal of the serializer counted too
    out, _, lost = outbox(fail=True)
    now = [0.0]
    out.send_log = LimitedLog(logging.getLogger("squall.runtime.transfer"),
                              clock=lambda: now[0])
    out.send_values(5, (object(),), 1, SRC)     # refused by the serializer: reported, quiet
    out.flush_all()
    with caplog.at_level(logging.WARNING, "squall.runtime.transfer"):
        for _ in range(3):
            out.send_values(5, ("a",), 1, SRC)
            out.flush_all()
        out.send_values(7, ("b",), 1, SRC)      # another worker: its own line
        out.flush_all()
        now[0] = 61.0
        out.send_values(5, ("c",), 1, SRC)
        out.flush_all()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and out.send_failures == 5
    assert "worker h:2 failed: peer gone; 1 tuple(s)" in lines[0]
    assert "worker h:3" in lines[1]
    assert "worker h:2" in lines[2] and "(2 more like it in the last minute)" in lines[2]
