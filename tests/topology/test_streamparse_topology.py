"""streamparse 5 topologies (from PyPI) run by squall: the ``Topology`` class as a target,
its pystorm components in-process (and as subprocesses with ``squall.streamparse.mode:
shell``), exact word counts under acking and replay; ``squall local`` takes the class as a
streamparse user would name it."""
from __future__ import annotations

import collections
import importlib.util
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from streamparse import BatchingBolt, Grouping, Spout, Topology
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
