"""The ack ledger: acks folded per root and flushed once, trees started, failed and
completed, straight to an acker task of this worker or as tuples through the outbox."""
from __future__ import annotations

from typing import Any

from squall.ackers.xor import XorAcker
from squall.api.topology import Topology
from squall.api.tuple import Tuple, TupleRun
from squall.runtime.acks import AckLedger
from squall.runtime.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET, Sources
from squall.runtime.task import LocalTasks, TaskState

SPOUT, BOLT, ACKER_HERE, ACKER_THERE, SPOUT_THERE = 1, 2, 3, 4, 5


class Outbox:
    """Records what the ledger sends to other workers."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, Any, int, str]] = []

    def send_values(self, task: int, values: Any, src_task: int, src: Any) -> None:
        self.sent.append(("values", task, values, src_task, src.stream))

    def send_values_run(self, task: int, values: Any, src_task: int, src: Any) -> None:
        self.sent.append(("run", task, values, src_task, src.stream))

    def reaches(self, task: int) -> bool:
        return task in (ACKER_THERE, SPOUT_THERE)


def ledger(ackers: list[int]) -> tuple[AckLedger, LocalTasks, Outbox]:
    states = {SPOUT: TaskState("spout", SPOUT, None, {}),
              BOLT: TaskState("bolt", BOLT, None, {}),
              ACKER_HERE: TaskState("__acker", ACKER_HERE, XorAcker({}), {})}
    tasks = LocalTasks(states, lazy=set(), ackers={ACKER_HERE}, spouts={SPOUT})
    out = Outbox()
    return AckLedger(ackers, tasks, Sources(Topology([], {})), out), tasks, out  # type: ignore[arg-type]


def test_a_tree_started_and_acked_here_completes_to_the_spout_queue() -> None:
    acks, tasks, out = ledger([ACKER_HERE])
    spout, bolt = tasks.states[SPOUT], tasks.states[BOLT]
    acks.init_tree(spout, ACKER_HERE, 100, 0b0110)
    first = Tuple(("a",), SPOUT, None, 0b0010, (100,))      # type: ignore[arg-type]
    second = Tuple(("b",), SPOUT, None, 0b0100, (100,))     # type: ignore[arg-type]
    acks.ack_tuple(bolt, first)
    assert acks.folded == {100: 0b0010}          # folded, not sent yet
    acks.ack_tuple(bolt, second)
    assert acks.folded == {100: 0b0110}
    assert not tasks.spout_queues[SPOUT]
    acks.flush()
    assert acks.folded == {} and list(tasks.spout_queues[SPOUT]) == [(100, True)]
    assert bolt.acked == 2 and not out.sent


def test_acks_for_an_acker_elsewhere_go_as_one_run_per_flush() -> None:
    acks, tasks, out = ledger([ACKER_THERE])
    bolt = tasks.states[BOLT]
    for root, edge in ((10, 1), (11, 2), (10, 4)):
        acks.ack_tuple(bolt, Tuple(("w",), SPOUT, None, edge, (root,)))  # type: ignore[arg-type]
    acks.flush()
    assert out.sent == [("run", ACKER_THERE, [(10, 5), (11, 2)], 0, ACK_ACK)]


def test_inits_fails_and_completions_for_other_workers_travel_as_tuples() -> None:
    acks, tasks, out = ledger([ACKER_THERE])
    acks.init_tree(tasks.states[SPOUT], ACKER_THERE, 7, 9)
    acks.fail_tree(ACKER_THERE, 8)
    acks.complete_tree(tasks.states[ACKER_HERE], 9, SPOUT_THERE, False)
    assert out.sent == [("values", ACKER_THERE, (7, 9, SPOUT), SPOUT, ACK_INIT),
                        ("values", ACKER_THERE, (8, 0), 0, ACK_FAIL),
                        ("values", SPOUT_THERE, (9,), ACKER_HERE, ACK_FAIL)]


def test_a_failed_tuple_fails_each_of_its_trees_once() -> None:
    acks, tasks, _ = ledger([ACKER_HERE])
    spout, bolt = tasks.states[SPOUT], tasks.states[BOLT]
    for root in (1, 2):
        acks.init_tree(spout, ACKER_HERE, root, 3)
    acks.fail_tuple(bolt, Tuple(("x",), SPOUT, None, 3, (1, 2)))   # type: ignore[arg-type]
    assert bolt.failed == 1
    assert sorted(tasks.spout_queues[SPOUT]) == [(1, False), (2, False)]


def test_a_tuple_acked_is_settled_and_a_later_ack_or_fail_changes_nothing() -> None:
    # auto_ack's ack (process_batch, a bolt on its own thread) left the tuple as it was: a
    # later ack XORed its edge again (its tree waited for its timeout), a fail failed it
    acks, tasks, _ = ledger([ACKER_HERE])
    spout, bolt = tasks.states[SPOUT], tasks.states[BOLT]
    acks.init_tree(spout, ACKER_HERE, 100, 0b0110)
    tup = Tuple(("a",), SPOUT, None, 0b0110, (100,))      # type: ignore[arg-type]
    acks.ack_tuple(bolt, tup)
    assert (tup.id, tup.ackval) == (0, 0)
    acks.ack_tuple(bolt, tup)
    acks.fail_tuple(bolt, tup)
    assert acks.folded == {100: 0b0110} and (bolt.acked, bolt.failed) == (1, 0)
    acks.flush()
    assert list(tasks.spout_queues[SPOUT]) == [(100, True)]


def test_lost_tuples_fail_their_trees_where_the_acker_is_reachable() -> None:
    acks, tasks, out = ledger([ACKER_HERE, ACKER_THERE])
    acks.init_tree(tasks.states[SPOUT], ACKER_HERE, 6, 1)     # 6 % 2 == 0: the acker here
    acks.fail_lost({6, 7})                                      # 7: the acker elsewhere
    assert list(tasks.spout_queues[SPOUT]) == [(6, False)]
    assert out.sent[-1] == ("values", ACKER_THERE, (7, 0), 0, ACK_FAIL)


def test_without_ackers_nothing_is_tracked() -> None:
    acks, tasks, out = ledger([])
    assert not acks.acking
    acks.fail_roots(tasks.states[BOLT], (1, 2), 3)
    acks.fail_lost({1})
    assert tasks.states[BOLT].failed == 3 and not out.sent


def test_a_run_by_tree_acks_each_tuple_with_its_own_edge_into_its_own_tree() -> None:
    acks, tasks, _ = ledger([ACKER_HERE])
    spout, bolt = tasks.states[SPOUT], tasks.states[BOLT]
    acks.init_tree(spout, ACKER_HERE, 100, 0b0011)
    acks.init_tree(spout, ACKER_HERE, 200, 0b1100)
    first = TupleRun.by_tree([("a",), ("b",), ("c",)], SPOUT, None, [0b0001, 0b0100, 0b0010],
                             [100, 200, 100])       # type: ignore[arg-type]
    acks.ack_run(bolt, first)
    assert acks.folded == {100: 0b0011, 200: 0b0100} and bolt.acked == 3
    acks.flush()
    assert list(tasks.spout_queues[SPOUT]) == [(100, True)]     # 200 waits for its 0b1000
    acks.ack_run(bolt, TupleRun.by_tree([("d",)], SPOUT, None, [0b1000], [200]))  # type: ignore[arg-type]
    acks.flush()
    assert list(tasks.spout_queues[SPOUT]) == [(100, True), (200, True)]


def test_a_reset_reaches_the_acker_here_and_the_spout_task_it_names() -> None:
    acks, tasks, out = ledger([ACKER_HERE])
    spout, bolt = tasks.states[SPOUT], tasks.states[BOLT]
    acks.init_tree(spout, ACKER_HERE, 100, 6)
    acks.init_tree(spout, ACKER_HERE, 101, 6)
    tasks.states[ACKER_HERE].instance.rotate()          # both one rotation old
    acks.reset_trees(bolt, (100, 55))                   # 55: a tree the acker does not track
    queued = list(tasks.spout_queues[SPOUT])
    assert [(t.values, t.src.stream) for t in queued] == [((100,), ACK_RESET)] and not out.sent
    assert tasks.states[ACKER_HERE].instance.rotate() == [(101, SPOUT)]   # 100 kept


def test_a_reset_travels_to_an_acker_and_a_spout_task_elsewhere() -> None:
    acks, tasks, out = ledger([ACKER_THERE])
    acks.reset_trees(tasks.states[BOLT], (7, 8))
    assert out.sent == [("values", ACKER_THERE, (7, 0), BOLT, ACK_RESET),
                        ("values", ACKER_THERE, (8, 0), BOLT, ACK_RESET)]
    out.sent.clear()
    acks, tasks, out = ledger([ACKER_HERE])
    acks.acker_values(tasks.states[ACKER_HERE], acks.sources.ack[ACK_INIT], [(9, 3, SPOUT_THERE)])
    acks.acker_values(tasks.states[ACKER_HERE], acks.sources.ack[ACK_RESET], [(9, 0)])
    assert out.sent == [("values", SPOUT_THERE, (9,), ACKER_HERE, ACK_RESET)]


def test_without_ackers_a_reset_does_nothing() -> None:
    acks, tasks, out = ledger([])
    acks.reset_trees(tasks.states[BOLT], (1,))
    assert not out.sent and not tasks.spout_queues[SPOUT]


def test_a_batch_that_raised_fails_each_tuple_not_settled_once_and_each_tree_once() -> None:
    acks, tasks, out = ledger([ACKER_THERE])
    bolt = tasks.states[BOLT]
    tracked = [Tuple(("t",), SPOUT, None, e, (root,))      # type: ignore[arg-type]
               for e, root in ((1, 10), (2, 10), (4, 11))]
    plain = [Tuple(("u",), SPOUT, None) for _ in range(3)]  # type: ignore[arg-type]
    acks.ack_tuple(bolt, tracked[2])        # the bolt acked one, failed an untracked one
    acks.fail_tuple(bolt, plain[0])
    assert (bolt.acked, bolt.failed) == (1, 1)
    acks.fail_tuples(bolt, tracked + plain)     # then process_batch raised: auto_fail
    assert (bolt.acked, bolt.failed) == (1, 5)
    assert [s for s in out.sent if s[-1] == ACK_FAIL] == [
        ("values", ACKER_THERE, (10, 0), 0, ACK_FAIL)]       # tree 10 once; 11 was acked
    acks.fail_tuples(bolt, tracked + plain)     # settled: nothing more
    assert bolt.failed == 5
