"""streamparse 5 topologies (from PyPI) run by squall: the ``Topology`` class as a target,
its pystorm components in-process (and as subprocesses with ``squall.streamparse.mode:
shell``), exact word counts under acking and replay; ``squall local`` takes the class as a
streamparse user would name it."""
from __future__ import annotations

import collections
import contextlib
import importlib.util
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamparse import BatchingBolt, Grouping, Spout, Stream, Topology
from streamparse import Bolt as SPBolt

from squall import LocalCluster
from squall.api.target import load_target
from squall.testing import wait_until

from tests.topology.conftest import info_errors

TOPOLOGIES = Path(__file__).resolve().parent.parent / "integration" / "topologies"
TARGET = str(TOPOLOGIES / "streamparse_wordcount.py")
pytestmark = pytest.mark.timeout(180)
TOTAL = 60


def _wordcount() -> Any:
    spec = importlib.util.spec_from_file_location("acked_wordcount_readers",
                                                  TOPOLOGIES / "acked_wordcount.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


wc = _wordcount()


def _exact(out: Path, total: int) -> None:
    assert wc.read_counts(out) == wc.expected_counts(total)
    assert max(wc.counted_words(out).values()) == 1
    assert sorted(wc.read_acks(out)) == list(range(total))


@pytest.mark.parametrize("attr, serializer", [("WordCount", None), ("ShellWordCount", None),
                                              # given at submit: the subprocesses speak it
                                              ("ShellWordCount", "msgpack")])
def test_streamparse_word_count_is_exact_with_a_failure_replayed(
        cluster: LocalCluster, tmp_path: Path, attr: str, serializer: str | None) -> None:
    topology = load_target(f"{TARGET}:{attr}")
    conf = {"test.output.dir": str(tmp_path), "test.sentences": TOTAL, "test.split.fail.on": 7}
    if serializer:
        conf["topology.multilang.serializer"] = serializer
    cluster.submit_topology("sp", conf, topology)
    wait_until(lambda: sorted(wc.read_acks(tmp_path)) == list(range(TOTAL)), 120,
               message=lambda: f"acked {sorted(wc.read_acks(tmp_path))}; errors "
                               f"{cluster.get_topology_info('sp')['errors']}")
    wait_until(lambda: wc.read_counts(tmp_path) == wc.expected_counts(TOTAL), 30)
    _exact(tmp_path, TOTAL)
    errors = info_errors(cluster, "sp", "split")
    assert errors and all("refuses sentence 7" in e["error"] or "exited with code 1" in
                          e["error"] for e in errors)
    assert (tmp_path / "fail-7.marker").exists()


def test_squall_local_runs_a_streamparse_topology_class(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "squall.cli.main", "local", f"{TARGET}:WordCount",
         "--duration", "5", "-c", f"test.output.dir={tmp_path}", "-c", "test.sentences=20"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    _exact(tmp_path, 20)
    assert "split" in out.stdout and "count" in out.stdout


LOCK = threading.Lock()
ACKED: list[int] = []
TOTALS: collections.Counter[str] = collections.Counter()


class Letters(Spout):
    outputs = ["letter"]

    def initialize(self, storm_conf: Any, context: Any) -> None:
        self.todo = list(range(30))

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit(["abc"[i % 3]], tup_id=i)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)


class PerLetter(BatchingBolt):
    outputs = ["letter", "n"]

    def group_key(self, tup: Any) -> Any:
        return tup.values[0]

    def process_batch(self, key: Any, tups: Any) -> None:
        self.emit([key, len(tups)])


class Totals(SPBolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            TOTALS[tup.values[0]] += tup.values[1]


class Batches(Topology):
    letters = Letters.spec()
    per_letter = PerLetter.spec(inputs={letters: Grouping.fields("letter")},
                                config={"topology.tick.tuple.freq.secs": 1})
    totals = Totals.spec(inputs=[per_letter])


def test_a_batching_bolt_batches_on_ticks_and_acks_its_batches(cluster: LocalCluster) -> None:
    from squall.multilang.streamparse import from_streamparse

    cluster.submit_topology("batches", {}, from_streamparse(Batches))
    wait_until(lambda: sorted(ACKED) == list(range(30)), 60,
               message=lambda: f"acked {sorted(ACKED)}")
    wait_until(lambda: sum(TOTALS.values()) == 30, 30)
    assert TOTALS == {"a": 10, "b": 10, "c": 10}
    assert cluster.get_topology_info("batches")["errors"] == {}


PROJECT = {
    "src/spouts/__init__.py": "",
    "src/spouts/lines.py": ("from streamparse import Spout\n\n\nclass Lines(Spout):\n"
                            "    outputs = ['line']\n\n    def next_tuple(self):\n"
                            "        self.emit(['the cow jumped'])\n"),
    "src/bolts/__init__.py": "",
    "src/bolts/words.py": ("from streamparse import Bolt\n\n\nclass Split(Bolt):\n"
                           "    outputs = ['word']\n\n    def process(self, tup):\n"
                           "        for word in tup.values[0].split():\n"
                           "            self.emit([word])\n"),
    "topologies/sp_project_wc.py": ("from streamparse import Grouping, Topology\n\n"
                                "from bolts.words import Split\nfrom spouts.lines import Lines\n\n\n"
                                "class WordCount(Topology):\n    lines = Lines.spec()\n"
                                "    split = Split.spec(inputs={lines: Grouping.SHUFFLE})\n"),
}


def test_a_streamparse_projects_src_is_found_and_shipped(tmp_path: Path) -> None:
    """``sparse quickstart``'s layout: the topology in topologies/, its bolts and spouts in
    src/. ``squall local`` runs it as ``sparse run`` does, and ``squall submit`` ships src/
    beside the topology file (it failed: no module named 'bolts')."""
    import io
    import zipfile

    from squall.daemon.packaging import prepare_submission, zip_code_dir
    for name, text in PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "squall.cli.main", "local",
         "topologies/sp_project_wc.py:WordCount",
         "--duration", "1"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    split = next(line.split() for line in out.stdout.splitlines() if line.startswith("split"))
    assert int(split[2].replace(",", "")) > 0            # it executed lines
    path, modules = list(sys.path), set(sys.modules)
    try:
        sub = prepare_submission(str(tmp_path / "topologies" / "sp_project_wc.py")
                                 + ":WordCount")
    finally:                        # this process imported the project's modules: forget them
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            del sys.modules[name]
    assert sub.extra_dirs == ((tmp_path / "src").resolve(),)
    names = zipfile.ZipFile(io.BytesIO(zip_code_dir(sub.code_dir, sub.prefix,
                                                    sub.extra_dirs))).namelist()
    assert {"sp_project_wc.py", "bolts/words.py", "spouts/lines.py"} <= set(names)


BY_ID: dict[str, list[Any]] = {"acked": [], "failed": [], "sunk": []}


class Animals(Spout):
    outputs = ["word"]

    def initialize(self, storm_conf: Any, context: Any) -> None:
        self.todo = ["dog", "boom", "cat", "twice"]

    def next_tuple(self) -> None:
        if self.todo:
            word = self.todo.pop(0)
            self.emit([word], tup_id=word)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            BY_ID["acked"].append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            BY_ID["failed"].append(tup_id)


class ByIdManual(SPBolt):
    """Acks, fails and anchors by tuple id, as pystorm allows; acks "twice" twice."""
    outputs = ["word", "n"]
    auto_ack = False
    auto_anchor = False

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        if word == "boom":
            self.fail(tup.id)
            return
        self.emit([word, len(word)], anchors=[tup.id])
        self.ack(tup.id)
        if word == "twice":
            self.ack(tup.id)            # acked already: one error line, ignored


class ByIdSink(SPBolt):
    """pystorm's defaults (squall acks when process returns); fails "cat" by its id, and
    acks the others by theirs first."""

    def process(self, tup: Any) -> None:
        with LOCK:
            BY_ID["sunk"].append(tup.values[0])
        if tup.values[0] == "cat":
            self.fail(tup.id)
        else:
            self.ack(tup.id)


class ByIds(Topology):
    animals = Animals.spec()
    manual = ByIdManual.spec(inputs=[animals])
    sink = ByIdSink.spec(inputs=[manual])


def test_in_process_bolts_ack_fail_and_anchor_by_tuple_id(cluster: LocalCluster) -> None:
    """pystorm's ``ack(tup.id)``, ``fail(tup.id)`` and ``emit(..., anchors=[tup.id])`` name
    the tuples the bolt got (they failed on every tuple: 'int' object has no attribute
    'roots', anchors must be Tuples); an id the bolt acked already is one error line."""
    from squall.multilang.streamparse import from_streamparse

    cluster.submit_topology("by-id", {}, from_streamparse(ByIds))
    wait_until(lambda: len(BY_ID["acked"]) + len(BY_ID["failed"]) == 4, 60,
               message=lambda: f"{BY_ID}; errors {cluster.get_topology_info('by-id')['errors']}")
    # "cat" failed downstream: its anchor (given by id) tied it to the spout's tuple
    assert sorted(BY_ID["acked"]) == ["dog", "twice"]
    assert sorted(BY_ID["failed"]) == ["boom", "cat"]
    assert sorted(BY_ID["sunk"]) == ["cat", "dog", "twice"]
    errors = [e["error"] for e in info_errors(cluster, "by-id", "manual")]
    assert len(errors) == 1 and errors[0].startswith("MultilangError: ack tuple id ") \
        and "names no tuple this bolt received and has not acked or failed yet" in errors[0] \
        and "\n" not in errors[0].strip(), errors
    assert info_errors(cluster, "by-id", "sink") == []


SEEN: dict[str, list[Any]] = {"acked": [], "failed": [], "ids": [], "direct": []}


class Numbers(Spout):
    """Emits 0 to ``total`` - 1 (with "abc"[n % 3] beside each where ``outputs`` has a
    second field) and records acks and fails in ``seen``."""
    outputs = ["n"]
    seen = SEEN
    total = 10

    def initialize(self, storm_conf: Any, context: Any) -> None:
        self.todo = list(range(self.total))

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit([i, "abc"[i % 3]][:len(self.outputs)], tup_id=i)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            self.seen["acked"].append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            self.seen["failed"].append(tup_id)


class WantsIds(SPBolt):
    outputs = ["n"]

    def process(self, tup: Any) -> None:
        ids = self.emit([tup.values[0]], need_task_ids=True)
        with LOCK:
            SEEN["ids"].append(ids)


class Director(SPBolt):
    outputs = [Stream(fields=["n"], name="default", direct=True)]

    def initialize(self, storm_conf: Any, context: Any) -> None:
        self.targets = sorted(int(t) for t, c in context["task->component"].items()
                              if c == "direct_sink")

    def process(self, tup: Any) -> None:
        self.emit([tup.values[0]], direct_task=self.targets[tup.values[0] % 2])


class DirectSink(SPBolt):
    def initialize(self, storm_conf: Any, context: Any) -> None:
        self.task = context["taskid"]

    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN["direct"].append((self.task, tup.values[0]))


class TaskIds(Topology):
    numbers = Numbers.spec()
    wants_ids = WantsIds.spec(inputs=[numbers])
    director = Director.spec(inputs=[numbers])
    direct_sink = DirectSink.spec(inputs=[director], par=2)


def test_in_process_bolts_emit_with_task_ids_and_direct(cluster: LocalCluster) -> None:
    """pystorm's ``emit(..., need_task_ids=True)`` and ``emit(..., direct_task=...)`` from a
    bolt with its defaults raised TypeError: every tuple failed."""
    from squall.multilang.streamparse import from_streamparse

    cluster.submit_topology("ids", {}, from_streamparse(TaskIds))
    wait_until(lambda: len(SEEN["acked"]) + len(SEEN["failed"]) == 10, 60,
               message=lambda: f"{SEEN}; errors {cluster.get_topology_info('ids')['errors']}")
    assert sorted(SEEN["acked"]) == list(range(10)) and SEEN["failed"] == []
    assert SEEN["ids"] == [[] for _ in range(10)]       # nothing subscribes to wants_ids
    targets = sorted({task for task, _ in SEEN["direct"]})
    assert len(targets) == 2
    assert sorted(SEEN["direct"]) == sorted((targets[n % 2], n) for n in range(10))
    assert cluster.get_topology_info("ids")["errors"] == {}


ANCHORED: dict[str, list[Any]] = {"acked": [], "failed": []}


class AnchoredNumbers(Numbers):
    seen = ANCHORED


class CountingBolt(SPBolt):
    """Overrides ``emit`` (pystorm's own then anchors, to ``_current_tups``)."""
    outputs = ["n"]

    def initialize(self, storm_conf: Any, context: Any) -> None:
        self.emitted = 0

    def emit(self, tup: Any, **kwargs: Any) -> Any:
        self.emitted += 1
        return super().emit(tup, **kwargs)

    def process(self, tup: Any) -> None:
        self.emit([tup.values[0]])


class Refuser(SPBolt):
    def process(self, tup: Any) -> None:
        self.fail(tup)


class OverrideEmit(Topology):
    numbers = AnchoredNumbers.spec()
    counting = CountingBolt.spec(inputs=[numbers])
    refuser = Refuser.spec(inputs=[counting])


def test_a_bolt_overriding_emit_keeps_auto_anchor(cluster: LocalCluster) -> None:
    """Its emits went out unanchored in-process: the failures downstream never reached the
    spout (acked 10, failed 0), where a subprocess fails them."""
    from squall.multilang.streamparse import from_streamparse

    cluster.submit_topology("anchor", {}, from_streamparse(OverrideEmit))
    wait_until(lambda: len(ANCHORED["failed"]) + len(ANCHORED["acked"]) >= 10, 60,
               message=lambda: f"{ANCHORED}; errors "
                               f"{cluster.get_topology_info('anchor')['errors']}")
    assert sorted(ANCHORED["failed"]) == list(range(10)) and ANCHORED["acked"] == []


POISONED: dict[str, list[Any]] = {"acked": [], "failed": [], "batches": []}


class PoisonNumbers(Numbers):
    outputs = ["n", "letter"]
    seen = POISONED
    total = 30


class PoisonedLetter(BatchingBolt):
    """Its batch of "a" raises (pystorm's auto_fail fails it; the others go on)."""

    def group_key(self, tup: Any) -> Any:
        return tup.values[1]

    def process_batch(self, key: Any, tups: Any) -> None:
        with LOCK:
            POISONED["batches"].append((key, len(tups)))
        if key == "a":
            raise ValueError("cannot store batch a")


class Poison(Topology):
    numbers = PoisonNumbers.spec()
    per_letter = PoisonedLetter.spec(inputs={numbers: Grouping.fields("letter")},
                                     config={"topology.tick.tuple.freq.secs": 1})


def test_a_batch_that_raises_fails_and_the_others_go_on(cluster: LocalCluster) -> None:
    """It failed nothing, was retried every tick and starved the batches after it."""
    from squall.multilang.streamparse import from_streamparse

    cluster.submit_topology("poison", {"topology.message.timeout.secs": 60},
                            from_streamparse(Poison))
    wait_until(lambda: len(POISONED["failed"]) + len(POISONED["acked"]) >= 30, 60,
               message=lambda: f"{POISONED}; errors "
                               f"{cluster.get_topology_info('poison')['errors']}")
    assert sorted(POISONED["failed"]) == list(range(0, 30, 3))
    assert sorted(POISONED["acked"]) == sorted(set(range(30)) - set(range(0, 30, 3)))
    # each tuple of "a" was in one batch that raised, tried once
    assert sum(n for key, n in POISONED["batches"] if key == "a") == 10
    errors = info_errors(cluster, "poison", "per_letter")
    assert errors and all("cannot store batch a" in e["error"] for e in errors)


@contextlib.contextmanager
def _project(tmp_path: Path, files: dict[str, str], target: str) -> Iterator[Any]:
    """Write a project's ``files`` under ``tmp_path`` and load ``target`` there; the
    modules and path entries that added in this process are forgotten on leaving."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    path, modules = list(sys.path), set(sys.modules)
    try:
        yield load_target(str(tmp_path / target))
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            del sys.modules[name]


RECORDING_SPOUT = '''
import os

from streamparse import Spout


class Numbers(Spout):
    outputs = ["key", "i"]

    def initialize(self, conf, ctx):
        self.acks = open(os.path.join(conf["test.out"], "acks.txt"), "a", buffering=1)
        self.n, self.i = int(conf["test.total"]), 0

    def next_tuple(self):
        if self.i < self.n:
            self.emit([f"k{self.i % 50}", self.i], tup_id=self.i)
            self.i += 1

    def ack(self, tup_id):
        self.acks.write(f"{tup_id}\\n")

    def fail(self, tup_id):
        pass
'''


def _acked(out: Path) -> list[int]:
    try:
        return sorted(int(x) for x in (out / "acks.txt").read_text().split())
    except FileNotFoundError:
        return []


def test_a_tickless_batching_bolt_batches_every_tuple_once(cluster: LocalCluster,
                                                          tmp_path: Path) -> None:
    """Hosted in-process its batcher thread raced the worker's loop: tuples never batched,
    and "dictionary changed size during iteration" could stop the loop. It runs as a
    subprocess now, where pystorm's lock holds."""
    files = {"tickless_sp.py": RECORDING_SPOUT + '''
from streamparse import Grouping, TicklessBatchingBolt, Topology


class Batcher(TicklessBatchingBolt):
    outputs = ["key", "n"]
    secs_between_batches = 0.01

    def initialize(self, conf, ctx):
        self.f = open(os.path.join(conf["test.out"], "batched.txt"), "a", buffering=1)

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        self.f.write("".join(f"{t.values[1]}\\n" for t in tups))


class Tickless(Topology):
    numbers = Numbers.spec()
    batcher = Batcher.spec(inputs={numbers: Grouping.fields("key")})
'''}
    total = 3000
    with _project(tmp_path, files, "tickless_sp.py:Tickless") as topology:
        cluster.submit_topology("tickless", {"test.out": str(tmp_path), "test.total": total,
                                             "topology.message.timeout.secs": 60}, topology)
        wait_until(lambda: _acked(tmp_path) == list(range(total)), 90,
                   message=lambda: f"acked {len(_acked(tmp_path))}; errors "
                                   f"{cluster.get_topology_info('tickless')['errors']}")
    batched = collections.Counter(int(x) for x in (tmp_path / "batched.txt").read_text().split())
    assert sorted(batched) == list(range(total)) and max(batched.values()) == 1
    assert cluster.get_topology_info("tickless")["errors"] == {}


def test_a_shell_components_script_in_src_is_found(cluster: LocalCluster,
                                                    tmp_path: Path) -> None:
    """``ShellBolt.spec(command=..., script=...)`` in a project's topologies/ runs from its
    src/ (as Storm runs it from resources/, and ``squall submit`` ships src/ in the code
    root); locally it ran from topologies/ and its script was not found."""
    files = {
        "src/spouts/__init__.py": "",
        "src/spouts/numbers.py": RECORDING_SPOUT,
        "src/bolts/upper.py": ("import pystorm\n\n\nclass Upper(pystorm.Bolt):\n"
                               "    def process(self, tup):\n"
                               "        self.emit([tup.values[0].upper()])\n\n\n"
                               "Upper().run()\n"),
        "topologies/sp_shell_src.py": (
            "import sys\n\nfrom streamparse import ShellBolt, Topology\n\n"
            "from spouts.numbers import Numbers\n\n\nclass Upper(Topology):\n"
            "    numbers = Numbers.spec()\n"
            "    upper = ShellBolt.spec(command=sys.executable, script='bolts/upper.py',\n"
            "                           inputs=[numbers], outputs=['key'])\n"),
    }
    with _project(tmp_path, files, "topologies/sp_shell_src.py:Upper") as topology:
        cluster.submit_topology("shell-src", {"test.out": str(tmp_path), "test.total": 20},
                                topology)
        wait_until(lambda: _acked(tmp_path) == list(range(20)), 60,
                   message=lambda: f"acked {_acked(tmp_path)}; errors "
                                   f"{cluster.get_topology_info('shell-src')['errors']}")
    assert cluster.get_topology_info("shell-src")["errors"] == {}
