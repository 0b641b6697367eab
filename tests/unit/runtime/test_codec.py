"""The wire format as pure functions: what the outbox encodes, the inbox decodes to the
same tuples, and anything malformed is refused whole with a ValueError."""
from __future__ import annotations

from typing import Any

import msgpack
import pytest

from squall.api.tuple import Source, Tuple, TupleRun
from squall.runtime.wire import codec
from squall.runtime.wire.codec import OpenRun

SRC = Source("split", "default", ("word",))


def dumps(obj: Any) -> bytes:
    return msgpack.packb(obj)


def loads(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def test_one_message_per_task_with_its_entries_in_emit_order() -> None:
    a, b, c = OpenRun(7, SRC, False), OpenRun(7, SRC, False), OpenRun(8, SRC, False)
    a.values.extend([["x"], ["y"]])
    b.values.append(["z"])
    c.values.append(["w"])
    messages = codec.encode([(3, a), (4, c), (3, b)], dumps)
    assert [task for task, _ in messages] == [3, 4]
    by_task = {task: codec.read_entries(loads(p)) for task, p in messages}
    assert by_task[3] == [[7, "default", [2, ["x", "y"]], 0, None],
                          [7, "default", [1, ["z"]], 0, None]]
    assert by_task[4] == [[8, "default", [1, ["w"]], 0, None]]


def test_an_untracked_run_decodes_to_one_tuple_run() -> None:
    run = OpenRun(7, SRC, False)
    run.values.extend([("a",), ("b",)])
    (entry,) = codec.read_entries(loads(codec.encode([(3, run)], dumps)[0][1]))
    src_task, stream, values, ids, roots = entry
    assert codec.shape(ids) == codec.RUN
    decoded = codec.run_of(src_task, SRC, values, ids, roots)
    assert (decoded.values, decoded.task, decoded.roots, decoded.edge) == (
        [("a",), ("b",)], 7, None, 0)


def test_single_tracked_tuples_keep_their_ids_and_roots_with_repeats_referring_back() -> None:
    run = OpenRun(7, SRC, True)
    shared = (11, 12)
    for value, tid, roots in (("a", 1, shared), ("b", 2, shared), ("c", 3, (13,))):
        run.values.append((value,))
        run.ids.append(tid)             # type: ignore[union-attr]
        run.add_roots(roots)
    entry = codec.entry(run)
    assert entry[2] == [3, ["a", "b", "c"]]     # the values by column
    assert entry[4] == [shared, 0, (13,)]       # the second tuple's roots refer back
    src_task, _, values, ids, roots = loads(dumps(entry))
    assert codec.shape(ids) == codec.ONES
    tuples = codec.ones_of(3, src_task, SRC, values, ids, roots)
    assert [(t.values, t.id, t.roots, t.task, t.src, t.ackval) for t in tuples] == [
        (("a",), 1, (11, 12), 7, SRC, 0), (("b",), 2, (11, 12), 7, SRC, 0),
        (("c",), 3, (13,), 7, SRC, 0)]
    assert all(isinstance(t, Tuple) for t in tuples)


def test_anchored_runs_split_by_their_counts() -> None:
    run = OpenRun(7, SRC, True)
    for values, edge, roots in (([("a",), ("b",)], 5, (1,)), ([("c",)], 6, (1,)),
                                ([("d",)], 9, (2,))):
        run.values.extend(values)
        run.ids.append([edge, len(values)])     # type: ignore[union-attr]
        run.add_roots(roots)
    src_task, _, values, ids, roots = loads(dumps(codec.entry(run)))
    assert codec.shape(ids) == codec.RUNS
    runs = codec.runs_of(3, src_task, SRC, values, ids, roots)
    assert [(r.values, r.edge, r.roots) for r in runs] == [
        ([("a",), ("b",)], 5, (1,)), ([("c",)], 6, (1,)), ([("d",)], 9, (2,))]


def test_a_tuple_run_is_an_entry_of_its_own() -> None:
    run = TupleRun([("a",), ("b",)], 7, SRC, (4,), 99)
    assert codec.entry(run) == [7, "default", [2, ["a", "b"]], 99, (4,)]
    src_task, _, values, ids, roots = loads(dumps(codec.entry(run)))
    decoded = codec.run_of(src_task, SRC, values, ids, roots)
    assert (decoded.values, decoded.edge, decoded.roots) == ([("a",), ("b",)], 99, (4,))


def test_control_messages_round_trip() -> None:
    ((task, payload),) = codec.control("throttle", "h:1", True, dumps)
    assert task == codec.CONTROL
    assert codec.read_control(loads(payload)) == ("throttle", "h:1", True)


@pytest.mark.parametrize("payload", [
    "text", [[1, "default", [0], 0]], [[1, "default", "values", 0, None]],
    [["1", "default", [0], 0, None]], [[1, 5, [0], 0, None]], [1, 2, 3],
    [[1, "default", [], 0, None]], [[1, "default", ["2", [1, 2]], 0, None]]])
def test_a_payload_that_is_not_a_list_of_entries_is_refused(payload: Any) -> None:
    with pytest.raises(ValueError):
        codec.read_entries(payload)


@pytest.mark.parametrize("values,ids,roots", [
    ([2, [1, 2]], [5], [[7], 0]),       # 2 values, 1 id
    ([1, [1]], [5], [0]),               # the first roots refer back
    ([1, [1]], ["5"], [[7]]),           # an id that is not an int
    ([1, [1]], [5], [["x"]]),           # roots that are not ints
    ([1, [1]], [5], None),              # no roots column
    ([2, [1]], [5, 6], [[7], 0]),       # a column shorter than the count
])
def test_malformed_single_tuples_are_refused_whole(values: Any, ids: Any, roots: Any) -> None:
    with pytest.raises(ValueError):
        codec.ones_of(3, 7, SRC, values, ids, roots)


@pytest.mark.parametrize("values,pairs,roots", [
    ([2, [1, 2]], [[5, 1]], [[7]]),     # counts add up to 1, 2 values
    ([1, [1]], [[5, 1]], [0]),          # the first run's roots refer back
    ([1, [1]], [[5, "1"]], [[7]]),      # a pair that is not [edge, count]
    ([1, [1]], [[5, 0]], [[7]]),        # an empty run
    ([1, [1]], [[5, 1]], [[7], [8]]),   # more roots than runs
])
def test_malformed_anchored_runs_are_refused_whole(values: Any, pairs: Any, roots: Any) -> None:
    with pytest.raises(ValueError):
        codec.runs_of(3, 7, SRC, values, pairs, roots)


@pytest.mark.parametrize("obj", [["throttle", "h:1"], [5, "h:1", True], "throttle", None])
def test_a_malformed_control_message_is_refused(obj: Any) -> None:
    with pytest.raises(ValueError):
        codec.read_control(obj)


def test_read_id_and_read_roots() -> None:
    assert codec.read_id(None) is None and codec.read_id(5) == 5
    assert codec.read_roots(None) is None and codec.read_roots([3]) == (3,)
    assert codec.read_roots([3, 4]) == (3, 4)
    for bad in ("5", 5.0, [5]):
        with pytest.raises(ValueError):
            codec.read_id(bad)
    for bad in ("x", [1, "2"], 5):
        with pytest.raises(ValueError):
            codec.read_roots(bad)


def test_roots_in_collects_every_root_and_skips_what_does_not_read() -> None:
    entries = [[1, "s", [1, [1]], 9, [4]], [1, "s", [2, [1, 2]], [1, 2], [[5, 6], 0]],
               [1, "s", [1, [1]], [[3, 1]], [[7]]], [1, "s", [1, [1]], 0, None], ["junk"],
               [1, "s", [1, [1]], [1], ["bad"]]]
    assert codec.roots_in(entries) == {4, 5, 6, 7}


def test_pieces_cut_a_run_into_entries_that_mean_the_same() -> None:
    ones = OpenRun(7, SRC, True)
    for value, tid, roots in (("a", 1, (11,)), ("b", 2, (11,)), ("c", 3, (13,))):
        ones.values.append((value,))
        ones.ids.append(tid)            # type: ignore[union-attr]
        ones.add_roots(roots)
    cut = codec.pieces(ones)
    assert [codec.entry(p) for p in cut] == [           # a repeat's roots are spelled out
        [7, "default", [1, ["a"]], [1], [(11,)]], [7, "default", [1, ["b"]], [2], [(11,)]],
        [7, "default", [1, ["c"]], [3], [(13,)]]]
    runs = OpenRun(7, SRC, True)
    for values, edge, roots in (([("a",), ("b",)], 5, (1,)), ([("c",)], 6, (1,))):
        runs.values.extend(values)
        runs.ids.append([edge, len(values)])    # type: ignore[union-attr]
        runs.add_roots(roots)
    assert [codec.entry(p) for p in codec.pieces(runs)] == [
        [7, "default", [2, ["a", "b"]], [[5, 2]], [(1,)]],
        [7, "default", [1, ["c"]], [[6, 1]], [(1,)]]]
    plain = OpenRun(7, SRC, False)
    plain.values.extend([("x",), ("y",)])
    assert [codec.entry(p) for p in codec.pieces(plain)] == [
        [7, "default", [1, ["x"]], 0, None], [7, "default", [1, ["y"]], 0, None]]
    whole = TupleRun([("a",)], 7, SRC, (4,), 99)
    assert codec.pieces(whole) == [whole]


@pytest.mark.parametrize("values", [
    [], [("a",), ("b",)], [("a", 1, None), ("b", 2, [3])], [(), (), ()],
    [(["x", "y"], {"k": 1})]])
def test_a_run_travels_by_column_and_comes_back_as_its_tuples(values: list[Any]) -> None:
    block = codec.columns(values)
    assert block[0] == len(values)
    assert len(block) == 1 + (len(values[0]) if values else 0)
    assert codec.rows(loads(dumps(block))) == [tuple(v) for v in values]


def test_tuples_of_different_arities_do_not_make_a_block() -> None:
    from squall.errors import SerializationError
    with pytest.raises(SerializationError, match="arities"):
        codec.columns([("a",), ("b", 2)])


@pytest.mark.parametrize("block", [
    [2, ["a"]], [1, ["a"], ["b", "c"]], ["1", ["a"]], [1, "a"], [-1], [codec.MAX_ROWS + 1]])
def test_a_block_whose_columns_disagree_with_its_count_is_refused(block: list[Any]) -> None:
    with pytest.raises(ValueError, match="block"):
        codec.rows(block)


def test_a_run_by_column_reads_as_the_same_tuples_and_hands_out_its_columns() -> None:
    words, counts = ["a", "b", "c"], [1, 2, 3]
    run = TupleRun.of_columns([words, counts], 3, 7, SRC)
    assert len(run) == 3
    assert run.column(0) is words                       # no copy, no tuple per row
    assert run.values == [("a", 1), ("b", 2), ("c", 3)]
    assert len(run) == 3 and list(run.column(1)) == counts
    assert [t.values for t in run.tuples()] == run.values
    assert TupleRun.of_columns([], 2, 7, SRC).values == [(), ()]


def test_anchored_runs_arrive_by_column_each_with_its_slice() -> None:
    run = OpenRun(7, SRC, True)
    for values, edge, roots in (([("a",), ("b",)], 5, (1,)), ([("c",)], 6, (2,))):
        run.values.extend(values)
        run.ids.append([edge, len(values)])     # type: ignore[union-attr]
        run.add_roots(roots)
    src_task, _, block, ids, roots = loads(dumps(codec.entry(run)))
    first, second = codec.runs_of(3, src_task, SRC, block, ids, roots)
    assert (list(first.column(0)), first.edge, first.roots) == (["a", "b"], 5, (1,))
    assert (list(second.column(0)), second.edge, second.roots) == (["c"], 6, (2,))


def test_a_batch_reads_columns_across_runs_by_column_rows_and_single_tuples() -> None:
    from squall.api.tuple import TupleBatch
    parts = [TupleRun.of_columns([["a", "b"]], 2, 7, SRC), Tuple(("c",), 7, SRC),
             TupleRun([("d",)], 7, SRC)]
    batch = TupleBatch(parts, 4)                        # type: ignore[arg-type]
    assert batch.column("word") == ["a", "b", "c", "d"]
    assert batch.built is None                          # no Tuple was made for that
    assert [t["word"] for t in batch] == ["a", "b", "c", "d"]


def test_tuples_by_tree_travel_with_their_own_ids_and_roots() -> None:
    run = codec.open_trees(7, SRC, [("a",), ("b",), ("c",)], [21, 22, 23], [4, 5, 4])
    entry = codec.entry(run)
    assert entry == [7, "default", [3, ["a", "b", "c"]], [21, 22, 23], [4, 5, 4]]
    src_task, _, values, ids, roots = loads(dumps(entry))
    assert codec.shape(ids, roots) == codec.TREES
    assert codec.shape([1], [[4]]) == codec.ONES       # a list of root ids: one tuple each
    decoded = codec.trees_of(3, src_task, SRC, values, ids, roots)
    assert (len(decoded), decoded.ids, decoded.roots, decoded.edge) == (3, [21, 22, 23],
                                                                        [4, 5, 4], 0)
    assert list(decoded.column(0)) == ["a", "b", "c"]
    assert sorted(decoded.trees()) == [4, 5]            # each tree once
    assert [(t.values, t.id, t.roots) for t in decoded.tuples()] == [
        (("a",), 21, (4,)), (("b",), 22, (5,)), (("c",), 23, (4,))]
    # a TupleRun by tree is an entry of its own, and is cut per tuple like an open one
    local = TupleRun.by_tree([("a",), ("b",)], 7, SRC, [21, 22], [4, 5])
    assert codec.entry(local) == [7, "default", [2, ["a", "b"]], [21, 22], [4, 5]]
    assert [codec.entry(p) for p in codec.pieces(local)] == [
        [7, "default", [1, ["a"]], [21], [4]], [7, "default", [1, ["b"]], [22], [5]]]
    assert codec.roots_in([entry]) == {4, 5}


@pytest.mark.parametrize("ids,roots", [
    ([21, 22], [4, 5]),             # fewer ids and roots than values
    ([21, 22, 23], [4, 5]),
    ([21, "22", 23], [4, 5, 6]),    # an id that is not an int
    ([21, 22, 23], [4, [5], 6]),    # a root that is not an int
    ([21, 22, 23], "456")])
def test_malformed_tuples_by_tree_are_refused_whole(ids: Any, roots: Any) -> None:
    with pytest.raises(ValueError):
        codec.trees_of(3, 7, SRC, [3, ["a", "b", "c"]], ids, roots)
