"""The grouping contract suite: what every ``squall.groupings`` entry point must do.

Use it by subclassing in a pytest module and overriding the ``grouping_factory`` fixture::

    from squall.testing.contracts.grouping import (
        DeterministicGrouping, GroupingContract, SpreadingGrouping,
    )

    class TestMyGrouping(DeterministicGrouping, SpreadingGrouping, GroupingContract):
        @pytest.fixture
        def grouping_factory(self):
            return MyGrouping        # called with no arguments, like an entry point

A grouping is configured (``configure`` with a :class:`~squall.spi.grouping.
GroupingDeclaration`: ``declared_fields`` of the stream ``word, n, flag``, which a subclass
may change), prepared with ``prepare(context, (component, stream), target_tasks)`` and then
asked ``choose_tasks(emitting_task, values)`` per tuple (see :class:`squall.Grouping`), as the
runtime does. Checked:

* every answer is a list of ints, without duplicates, each one of ``target_tasks``, for one
  target and for several (not necessarily consecutive) targets;
* a :class:`~squall.spi.grouping.SingleTargetGrouping` answers on all its paths:
  ``choose_one`` and ``choose_many`` give targets, one per item (with
  :class:`DeterministicGrouping`, the same ones, and what ``choose_tasks`` gives); with a
  ``key_index``, tuples equal at that index go to one task whatever their other fields,
  however often asked;
* groupings work for two emitting tasks prepared separately, and for tuples of any values;
* with the :class:`DeterministicGrouping` mix-in (for groupings that promise it, like fields
  grouping): the same values give the same tasks for every call, every emitting task and every
  fresh instance, and in another Python process with another ``PYTHONHASHSEED`` (each worker
  is a process of its own: a grouping on Python's salted ``hash()`` of a str sends one word
  to different tasks from different workers). That process rebuilds the grouping from
  ``grouping_factory`` when it is a class or a module-level function, else from a pickled
  ``grouping_factory()``; it gets this process's ``sys.path``, so a grouping defined in a
  test module is found there. One that can be rebuilt neither way skips that check;
* with the :class:`SpreadingGrouping` mix-in (shuffle-like groupings): 2 000 different tuples
  reach every target, none taking more than half.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pickle
import subprocess
import sys
from collections import Counter
from typing import Any
from collections.abc import Callable, Sequence

import pytest

from squall.spi.grouping import Grouping, GroupingDeclaration, SingleTargetGrouping

__all__ = ["DeterministicGrouping", "FakeContext", "GroupingContract", "SpreadingGrouping"]

TARGET_SETS = [[4], [2, 3, 4, 5], [7, 11, 12, 30, 31, 32, 90]]
STREAM = ("source", "default")
#: the fields of the contract's tuples (``_values``)
SOURCE_FIELDS = ("word", "n", "flag")


class FakeContext:
    """The parts of a :class:`squall.TopologyContext` a grouping may look at."""

    def __init__(self, task_id: int, targets: Sequence[int]) -> None:
        self.task_id = task_id
        self.component_id = "source"
        self.worker_tasks = [task_id, *targets]
        self._tasks = {1: "source", 100: "source", **{t: "target" for t in targets}}

    def component_tasks(self, component_id: str) -> list[int]:
        return sorted(t for t, c in self._tasks.items() if c == component_id)

    def component_for_task(self, task_id: int) -> str | None:
        return self._tasks.get(task_id)


def _values(i: int) -> list[Any]:
    return [f"word-{i}", i, i % 3 == 0]


class GroupingContract:
    """Base class of the grouping contract tests; override ``grouping_factory``."""

    #: the fields the grouping is declared with (as ``fields_grouping("source", [...])``
    #: would); a grouping that takes none sees them and ignores them
    declared_fields: tuple[str, ...] = ("word",)

    @pytest.fixture
    def grouping_factory(self) -> Callable[[], Grouping]:
        raise NotImplementedError("override the grouping_factory fixture")

    @pytest.fixture
    def prepared(self, grouping_factory: Callable[[], Grouping]
                 ) -> Callable[[Sequence[int], int], Grouping]:
        def prepared(targets: Sequence[int], task_id: int = 1) -> Grouping:
            grouping = grouping_factory()
            assert isinstance(grouping, Grouping)
            grouping.configure(GroupingDeclaration(self.declared_fields, SOURCE_FIELDS, {}))
            grouping.prepare(FakeContext(task_id, targets), STREAM, list(targets))
            return grouping
        return prepared

    @pytest.mark.parametrize("targets", TARGET_SETS, ids=lambda t: f"{len(t)}-targets")
    def test_a_single_target_grouping_answers_alike_on_every_path(
            self, prepared: Callable[..., Grouping], targets: list[int]) -> None:
        grouping = prepared(targets)
        if not isinstance(grouping, SingleTargetGrouping):
            return              # asked choose_tasks only: the other checks cover it
        one, many = grouping.choose_one, grouping.choose_many   # read once, as the runtime
        batch = [_values(i) for i in range(300)]
        singles = [one(v) for v in batch]
        assert all(t in targets for t in singles), f"choose_one gave {set(singles)}"
        chosen = many(batch)
        assert len(chosen) == len(batch) and all(t in targets for t in chosen), (
            f"choose_many gave {len(chosen)} answers for {len(batch)}, "
            f"{set(chosen) - set(targets)} not targets")
        if isinstance(self, DeterministicGrouping):
            assert chosen == singles, "choose_many differs from choose_one per item"
            assert [grouping.choose_tasks(1, v) for v in batch] == [[t] for t in singles]
        if grouping.key_index is None:
            return
        k = grouping.key_index
        for i in range(100):        # equal at key_index, the rest different: one task
            values = _values(i)
            for j in (1, 2, 3, 1000):
                other = list(_values(i + j))
                other[k] = values[k]
                assert one(values) == one(other) == one(values), (
                    f"key_index {k}: {values} and {other} went to different tasks")

    @pytest.mark.parametrize("targets", TARGET_SETS, ids=lambda t: f"{len(t)}-targets")
    def test_answers_are_subsets_of_targets(self, prepared: Callable[..., Grouping],
                                            targets: list[int]) -> None:
        grouping = prepared(targets)
        for i in range(500):
            chosen = grouping.choose_tasks(1, _values(i))
            assert isinstance(chosen, (list, tuple)), f"choose_tasks returned {chosen!r}"
            assert all(isinstance(t, int) and not isinstance(t, bool) for t in chosen)
            assert len(set(chosen)) == len(chosen), f"duplicate tasks in {chosen}"
            assert set(chosen) <= set(targets), f"{chosen} is not a subset of {targets}"

    def test_odd_values(self, prepared: Callable[..., Grouping]) -> None:
        grouping = prepared(TARGET_SETS[1])
        for values in ([None], [b"\x00\xff"], ["🐄"], [2**64 - 1], [1.5, -0.0], [[1, 2], {"a": 1}],
                       [""]):
            assert set(grouping.choose_tasks(1, values)) <= set(TARGET_SETS[1])

    def test_two_emitting_tasks(self, prepared: Callable[..., Grouping]) -> None:
        targets = TARGET_SETS[2]
        a, b = prepared(targets, 1), prepared(targets, 100)
        for i in range(200):
            assert set(a.choose_tasks(1, _values(i))) <= set(targets)
            assert set(b.choose_tasks(100, _values(i))) <= set(targets)


class DeterministicGrouping:
    """Mix-in for groupings whose choice depends only on the values (fields, global, all)."""

    def test_deterministic(self, prepared: Callable[..., Grouping]) -> None:
        targets = TARGET_SETS[2]
        a, b = prepared(targets, 1), prepared(targets, 100)
        for i in range(300):
            first = a.choose_tasks(1, _values(i))
            assert a.choose_tasks(1, _values(i)) == first
            assert b.choose_tasks(100, _values(i)) == first

    def test_deterministic_across_processes(self, grouping_factory: Callable[[], Grouping],
                                            prepared: Callable[..., Grouping]) -> None:
        """Another worker process (another hash seed) sends the same values to the same
        tasks."""
        targets = TARGET_SETS[2]
        here = prepared(targets, 1)
        mine = [list(here.choose_tasks(1, _values(i))) for i in range(CROSS_PROCESS_TUPLES)]
        seed, theirs = _choices_elsewhere(grouping_factory, getattr(self, "declared_fields",
                                                                    ("word",)), targets)
        differ = [i for i in range(CROSS_PROCESS_TUPLES) if mine[i] != theirs[i]]
        if differ:
            i = differ[0]
            raise AssertionError(
                f"{len(differ)} of {CROSS_PROCESS_TUPLES} tuples went to other tasks in a "
                f"process with PYTHONHASHSEED={seed} (values {_values(i)}: {mine[i]} here, "
                f"{theirs[i]} there): each worker would route them its own way; hash with "
                "something stable across processes (squall.api.groupings.fields_hash, "
                "zlib.crc32), not hash()")


class SpreadingGrouping:
    """Mix-in for groupings that spread different tuples over every target (shuffle)."""

    def test_spreads(self, prepared: Callable[..., Grouping]) -> None:
        targets = TARGET_SETS[2]
        grouping = prepared(targets)
        counts: Counter[int] = Counter()
        for i in range(2000):
            counts.update(grouping.choose_tasks(1, _values(i)))
        assert set(counts) == set(targets), f"targets never chosen: {set(targets) - set(counts)}"
        assert max(counts.values()) <= sum(counts.values()) / 2


#: how many tuples the cross-process check compares
CROSS_PROCESS_TUPLES = 300
#: seconds the other process may take
CROSS_PROCESS_TIMEOUT = 60.0
_MARK = "squall-grouping-choices: "
_CHILD = ("import pickle, sys\n"
          "job = pickle.load(sys.stdin.buffer)\n"
          "sys.path[:] = job['path'] + [p for p in sys.path if p not in job['path']]\n"
          "from squall.testing.contracts.grouping import _choose_in_child\n"
          "_choose_in_child(job)\n")


def _locate(obj: Any) -> tuple[str, str] | None:
    """``(module, qualname)`` that name ``obj`` in its module, or None (a lambda, a local
    class or function, a bound method)."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return (module, qualname) if found is obj else None


def _module_files(*modules: str) -> dict[str, str]:
    """Module name -> file, for the other process to load a module it cannot import by name
    (a test module pytest imported with ``--import-mode=importlib``)."""
    files = {}
    for name in modules:
        file = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(file, str):
            files[name] = file
    return files


def _choices_elsewhere(factory: Callable[[], Grouping], declared_fields: Sequence[str],
                       targets: Sequence[int]) -> tuple[str, list[list[int]]]:
    """The hash seed of a fresh Python process and what the grouping chooses there."""
    __tracebackhide__ = True
    job: dict[str, Any] = {"path": [p for p in sys.path if isinstance(p, str)],
                           "declared_fields": list(declared_fields), "targets": list(targets),
                           "count": CROSS_PROCESS_TUPLES, "factory": _locate(factory),
                           "pickled": None}
    if job["factory"] is None:
        instance = factory()
        try:
            job["pickled"] = pickle.dumps(instance)
        except Exception as exc:
            pytest.skip(f"cannot check the grouping in another process: grouping_factory "
                        f"({factory!r}) is no module-level class or function and "
                        f"{type(instance).__name__} does not pickle ({exc!r:.100})")
        job["modules"] = _module_files(type(instance).__module__)
    else:
        job["modules"] = _module_files(job["factory"][0])
    own = os.environ.get("PYTHONHASHSEED", "")
    seed = str((int(own) + 1) % 2**32) if own.isdigit() else "1"
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD], input=pickle.dumps(job),
                              capture_output=True, timeout=CROSS_PROCESS_TIMEOUT,
                              env={**os.environ, "PYTHONHASHSEED": seed})
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the grouping in another Python process gave no answer within "
                             f"{CROSS_PROCESS_TIMEOUT:.0f} s") from None
    lines = done.stdout.decode(errors="replace").splitlines()
    marked = [line[len(_MARK):] for line in lines if line.startswith(_MARK)]
    if done.returncode or not marked:
        errors = done.stderr.decode(errors="replace").strip().splitlines()
        raise AssertionError(f"could not run the grouping in another Python process "
                             f"(exit {done.returncode}): "
                             f"{errors[-1] if errors else 'no output'}")
    return seed, json.loads(marked[-1])


def _choose_in_child(job: dict[str, Any]) -> None:
    """In the other process: rebuild, configure and prepare the grouping as the contract's
    ``prepared`` does, print its choices."""
    for name, file in job["modules"].items():
        try:
            importlib.import_module(name)
        except ImportError:
            spec = importlib.util.spec_from_file_location(name, file)
            if spec is None or spec.loader is None:
                raise
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    if job["factory"] is not None:
        module, qualname = job["factory"]
        factory: Any = importlib.import_module(module)
        for part in qualname.split("."):
            factory = getattr(factory, part)
        grouping = factory()
    else:
        grouping = pickle.loads(job["pickled"])
    targets = job["targets"]
    grouping.configure(GroupingDeclaration(tuple(job["declared_fields"]), SOURCE_FIELDS, {}))
    grouping.prepare(FakeContext(1, targets), STREAM, list(targets))
    chosen = [list(grouping.choose_tasks(1, _values(i))) for i in range(job["count"])]
    print(_MARK + json.dumps(chosen), flush=True)
