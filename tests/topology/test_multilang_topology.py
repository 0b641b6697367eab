"""Multi-lang components in a LocalCluster, with real clients: a pystorm 3.1.4 spout and bolt
(from PyPI) and a Node count bolt written against the protocol. Exact word counts under acking
and replay, also when a subprocess dies or hangs (one error, tuples in flight failed and
replayed, the subprocess restarted); msgpack; logs, stderr and errors where a user looks; no
subprocess outlives the cluster. A spout subprocess busy longer than the timeout in one
``next`` while it emits is not killed; \r\n line ends; an emit anchored to a tuple already
acked is reported, one anchored to a tick tuple (pystorm's emits in process_tick) is not."""
from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from squall import Bolt, LocalCluster, ShellBolt, ShellSpout, Spout, TopologyBuilder
from squall.multilang.process import running_pids
from squall.testing import wait_until

from tests.topology.conftest import info_errors

TOPOLOGIES = Path(__file__).resolve().parent.parent / "integration" / "topologies"
pytestmark = [pytest.mark.timeout(240)]


def _load(name: str) -> Any:
    if str(TOPOLOGIES) not in sys.path:
        sys.path.insert(0, str(TOPOLOGIES))
    spec = importlib.util.spec_from_file_location(name, TOPOLOGIES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


ml = _load("multilang_wordcount")
wc = _load("acked_wordcount")
TOTAL = 60


def _run(cluster: LocalCluster, out: Path, topology: Any, **conf: Any) -> None:
    cluster.submit_topology("ml", {"test.output.dir": str(out), "test.sentences": TOTAL,
                                   "topology.message.timeout.secs": 20, **conf}, topology)
    wait_until(lambda: sorted(wc.read_acks(out)) == list(range(TOTAL)), 120,
               message=lambda: f"acked: {sorted(wc.read_acks(out))}; errors: "
                               f"{cluster.get_topology_info('ml')['errors']}")
    assert wc.read_counts(out) == wc.expected_counts(TOTAL)
    assert max(wc.counted_words(out).values()) == 1        # each word counted once
    assert sorted(wc.read_acks(out)) == list(range(TOTAL))  # each sentence acked once


def test_pystorm_and_node_word_count_is_exact(cluster: LocalCluster, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="squall.component")
    _run(cluster, tmp_path, ml.build())
    info = cluster.get_topology_info("ml")
    assert info["errors"] == {}
    # a multi-lang bolt's process latency: from handing each tuple to it to its ack
    for x in info["executors"]:
        if x["component"] in ("split", "count") and x["acked"]:
            assert x["process_latency_ms"] > 0, x
    # the Node bolt's log command at level 3, and pystorm's logger, under the component
    assert any(r.name == "squall.component.count" and r.levelno == logging.WARNING
               and "count task" in r.getMessage() for r in caplog.records)
    assert any(r.name == "squall.component.split" and r.levelno == logging.WARNING
               and "split task" in r.getMessage() for r in caplog.records)


def test_msgpack_serializer(cluster: LocalCluster, tmp_path: Path) -> None:
    _run(cluster, tmp_path, ml.build(ml.MsgpackSplit,
                                     {"topology.multilang.serializer": "msgpack"}))
    assert cluster.get_topology_info("ml")["errors"] == {}


def test_a_subprocess_that_dies_is_restarted_and_its_tuples_replayed(
        cluster: LocalCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="squall.component")
    _run(cluster, tmp_path, ml.build(), **{"test.split.die.on": 7})
    errors = info_errors(cluster, "ml", "split")
    assert len(errors) == 1 and "exited with code 3" in errors[0]["error"]
    assert "restarting" in errors[0]["error"]
    # its stderr reached the worker's log under the component
    assert any(r.name == "squall.component.split" and "split dies on sentence 7" in
               r.getMessage() for r in caplog.records)


def test_a_subprocess_that_hangs_is_killed_restarted_and_its_tuples_replayed(
        cluster: LocalCluster, tmp_path: Path) -> None:
    _run(cluster, tmp_path, ml.build(), **{"test.split.hang.on": 7,
                                           "topology.subprocess.timeout.secs": 3})
    errors = info_errors(cluster, "ml", "split")
    assert len(errors) == 1 and "answered no heartbeat for 3 s" in errors[0]["error"]


def test_a_spout_subprocess_that_hangs_is_killed_and_restarted(
        cluster: LocalCluster, tmp_path: Path) -> None:
    cluster.submit_topology("ml", {"test.output.dir": str(tmp_path), "test.sentences": TOTAL,
                                   "topology.message.timeout.secs": 20,
                                   "test.spout.hang.after": 10,
                                   "topology.subprocess.timeout.secs": 3}, ml.build())
    # at least once: the new subprocess emits again what the old one had in flight
    wait_until(lambda: set(wc.read_acks(tmp_path)) == set(range(TOTAL)), 120,
               message=lambda: f"acked {sorted(set(wc.read_acks(tmp_path)))}")
    wait_until(lambda: wc.read_counts(tmp_path) == wc.expected_counts(TOTAL), 30)
    errors = info_errors(cluster, "ml", "sentences")
    assert len(errors) == 1 and "did not answer 'next': it sent nothing for 3 s" in \
        errors[0]["error"]
    assert (tmp_path / "spout-hang.marker").exists()


def test_leaving_the_cluster_stops_every_subprocess(tmp_path: Path) -> None:
    with LocalCluster() as cluster:
        cluster.submit_topology("ml", {"test.output.dir": str(tmp_path),
                                       "test.sentences": 5}, ml.build())
        pids = wait_until(lambda: len(running_pids()) == 5 and running_pids(), 60,
                          message="five subprocesses (spout, 2 split, 2 count)")
    assert running_pids() == []
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


class Missing(ShellBolt):
    command = ["/nonexistent/squall-shell-command"]
    outputs = ["word", "sid", "pos"]


def test_a_command_that_cannot_start_is_one_error_and_the_rest_runs(
        cluster: LocalCluster, tmp_path: Path) -> None:
    b = TopologyBuilder()
    b.set_spout("sentences", ml.Sentences)
    b.set_bolt("missing", Missing).shuffle_grouping("sentences")
    b.set_bolt("split", ml.Split).shuffle_grouping("sentences")
    cluster.submit_topology("ml", {"test.output.dir": str(tmp_path), "test.sentences": 3,
                                   "topology.message.timeout.secs": 5}, b.create_topology())
    error = wait_until(lambda: info_errors(cluster, "ml", "missing"), 60,
                       message="the error of the missing command")[0]["error"]
    assert "cannot start ['/nonexistent/squall-shell-command']" in error
    assert "No such file" in error
    # the bolt without a subprocess fails what it gets (so its spout replays it), while the
    # other bolt and the spout run on
    stats = lambda: cluster.get_topology_info("ml")["components"]   # noqa: E731
    wait_until(lambda: stats()["missing"]["failed"] >= 3 and stats()["split"]["acked"] >= 3,
               60, message=lambda: f"stats: {stats()}")
    assert len(running_pids()) == 2


class CannotImport(ShellBolt):
    # as a pystorm bolt run by a python without pystorm: a traceback on stderr, exit code 1
    command = [sys.executable, "-c", "import squall_test_no_such_module"]
    outputs = ["word"]


def test_a_subprocess_that_exits_at_start_is_reported_with_the_end_of_its_stderr(
        cluster: LocalCluster, tmp_path: Path) -> None:
    # a user at WARNING sees the error, not the INFO lines of the subprocess's stderr: the
    # error itself says why
    b = TopologyBuilder()
    b.set_spout("sentences", ml.Sentences)
    b.set_bolt("broken", CannotImport).shuffle_grouping("sentences")
    cluster.submit_topology("ml", {"test.output.dir": str(tmp_path), "test.sentences": 3,
                                   "topology.message.timeout.secs": 5}, b.create_topology())
    error = wait_until(lambda: info_errors(cluster, "ml", "broken"), 60,
                       message="the error of the bolt that cannot start")[0]["error"]
    assert "exited with code 1; its stderr ended with: Traceback" in error
    assert "No module named 'squall_test_no_such_module'" in error
    assert "\n" not in error                       # one line


SCRIPT = '''
import sys, time
from squall import LocalCluster, ShellBolt, Spout, TopologyBuilder
from squall.testing import wait_until
done = []
class Lines(Spout):
    outputs = ["line"]
    def initialize(self, conf, context):
        self.todo = ["a b"]
    def next_tuple(self):
        if self.todo:
            self.emit([self.todo.pop()], tup_id=1)
    def ack(self, tup_id):
        done.append(tup_id)
class Split(ShellBolt):
    command = [sys.executable, "split.py"]      # beside this script
    outputs = ["word"]
b = TopologyBuilder()
b.set_spout("lines", Lines)
b.set_bolt("split", Split).shuffle_grouping("lines")
with LocalCluster() as cluster:
    cluster.submit_topology("main", {"topology.message.timeout.secs": 10}, b.create_topology())
    wait_until(lambda: done, 60, message="the line acked")
print("acked", done)
'''


#: the multi-lang protocol, by hand, for the scripts these tests write (in other folders)
PROTOCOL = (Path(__file__).resolve().parent / "multilang" / "raw_protocol.py").read_text() \
    + "\nimport os\n"

ACKER = PROTOCOL + '''
handshake = read()
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
while True:
    tup = read()
    send({"command": "sync"} if tup.get("stream") == "__heartbeat" else
         {"command": "ack", "id": tup["id"]})
'''


def test_a_script_run_from_another_folder_runs_its_shell_components_beside_it(
        tmp_path: Path) -> None:
    code, elsewhere = tmp_path / "code", tmp_path / "elsewhere"
    code.mkdir()
    elsewhere.mkdir()
    (code / "topo.py").write_text(SCRIPT)
    (code / "split.py").write_text(ACKER)
    out = subprocess.run([sys.executable, str(code / "topo.py")], cwd=elsewhere,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "acked [1]" in out.stdout, out.stderr[-2000:]


#: under pytest-xdist, what every process this test process started inherits in its environment
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def _split_processes() -> set[int]:
    """Live processes running the split bolt's script (any parent), started from this test
    process (under pytest-xdist another process's tests run the same script)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split()[2]
            environ = (entry / "environ").read_bytes().split(b"\0") if _XDIST_WORKER else []
        except OSError:
            continue
        if _XDIST_WORKER and f"PYTEST_XDIST_WORKER={_XDIST_WORKER}".encode() not in environ:
            continue
        if b"multilang/split_bolt.py" in cmdline and state != "Z":
            found.add(int(entry.name))
    return found


def test_a_wrapper_scripts_child_that_hangs_is_killed_with_it(tmp_path: Path) -> None:
    """The command is a shell that runs the bolt without exec: the kill reaches the bolt
    (its process group), so the task restarts, reports it, and nothing is left running (the
    bolt outlived the kill, held its stdout, and the task waited for good)."""
    before = _split_processes()         # an earlier test's, still on its way out
    seen: set[int] = set()
    with LocalCluster() as cluster:
        _run(cluster, tmp_path, ml.build(ml.WrappedSplit),
             **{"test.split.hang.on": 7, "topology.subprocess.timeout.secs": 3})
        errors = info_errors(cluster, "ml", "split")
        assert len(errors) == 1 and "answered no heartbeat for 3 s" in errors[0]["error"]
        seen |= _split_processes() - before
        assert seen
    wait_until(lambda: not (seen & _split_processes()), 10,
               message=lambda: f"left running: {seen & _split_processes()}")


def test_a_restarted_spout_subprocess_is_activated_again(tmp_path: Path) -> None:
    """The spout subprocess emits only once activated, and dies after 10 sentences: its
    successor is activated too (it never emitted, and the rest was never sent)."""
    script = tmp_path / "gated.py"
    script.write_text(GATED)
    marker = tmp_path / "died.marker"

    class Gated(ShellSpout):
        command = [sys.executable, str(script), str(marker)]
        outputs = ["sentence", "sid"]

    b = TopologyBuilder()
    b.set_spout("sentences", Gated)
    b.set_bolt("split", ml.Split, parallelism=2).shuffle_grouping("sentences")
    b.set_bolt("count", ml.Count, parallelism=2).fields_grouping("split", ["word"])
    with LocalCluster() as cluster:
        cluster.submit_topology("gated", {"test.output.dir": str(tmp_path),
                                          "test.sentences": TOTAL}, b.create_topology())
        wait_until(lambda: set(wc.read_acks(tmp_path)) == set(range(TOTAL)), 60,
                   message=lambda: f"acked {sorted(set(wc.read_acks(tmp_path)))}")
    assert marker.exists()


GATED = PROTOCOL + r"""
MARKER = sys.argv[1]
SENTENCES = ["the cow jumped over the moon", "an apple a day keeps the doctor away"]

setup = read()
conf = setup["conf"]
total = int(conf["test.sentences"])
out = conf["test.output.dir"]
open(os.path.join(setup["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
ACKS = os.path.join(out, "acks-gated.txt")
acked = set()
if os.path.exists(ACKS):
    acked = {int(line) for line in open(ACKS).read().split()}
todo = [i for i in range(total) if i not in acked]
active, sent = False, 0
while True:
    m = read()
    cmd = m.get("command")
    if cmd == "activate":
        active = True
    elif cmd == "deactivate":
        active = False
    elif cmd == "next" and active and todo:
        if sent == 10 and not os.path.exists(MARKER):
            open(MARKER, "w").close()
            sys.exit(2)
        i = todo.pop(0)
        send({"command": "emit", "id": i, "tuple": [SENTENCES[i % 2], i],
              "need_task_ids": False})
        sent += 1
    elif cmd == "ack":
        with open(ACKS, "a") as f:
            f.write(f"{m['id']}\n")
    elif cmd == "fail":
        todo.append(int(m["id"]))
    send({"command": "sync"})
"""


# a spout whose first ``next`` emits six tuples 0.5 s apart before its sync (3 s in all);
# later ones sync at once; each ack is written to acks.txt beside it
BUSY = PROTOCOL + r"""
setup = read()
open(os.path.join(setup["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
import time
here = os.path.dirname(os.path.abspath(__file__))
first = True
while True:
    m = read()
    if m.get("command") == "next" and first:
        first = False
        for i in range(6):
            send({"command": "emit", "id": i, "tuple": [i], "need_task_ids": False})
            time.sleep(0.5)
    elif m.get("command") == "ack":
        with open(os.path.join(here, "acks.txt"), "a") as f:
            f.write("%s\n" % m["id"])
    send({"command": "sync"})
"""


def test_a_spout_subprocess_that_emits_for_longer_than_the_timeout_is_not_killed(
        tmp_path: Path) -> None:
    # the timeout limits its silence, not its call: each message starts the wait again
    (tmp_path / "busy.py").write_text(BUSY)

    class Busy(ShellSpout):
        command = [sys.executable, str(tmp_path / "busy.py")]
        outputs = ["n"]

    b = TopologyBuilder()
    b.set_spout("busy", Busy)
    acks = tmp_path / "acks.txt"
    done = lambda: sorted(acks.read_text().split()) if acks.exists() else []   # noqa: E731
    with LocalCluster() as cluster:
        cluster.submit_topology("busy", {"topology.subprocess.timeout.secs": 2},
                                b.create_topology())
        wait_until(lambda: done() == [str(i) for i in range(6)], 30,
                   message=lambda: f"acked {done()}; errors "
                                   f"{cluster.get_topology_info('busy')['errors']}")
        assert cluster.get_topology_info("busy")["errors"] == {}


CRLF_ACKER = ACKER.replace(r'"\nend\n"', r'"\r\nend\r\n"')


def test_a_subprocess_ending_its_lines_with_crlf_is_understood(tmp_path: Path) -> None:
    # as Storm's readLine reads them (a Windows-built tool, a writer in text mode)
    assert CRLF_ACKER != ACKER
    (tmp_path / "split.py").write_text(CRLF_ACKER)
    (tmp_path / "topo.py").write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(tmp_path / "topo.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "acked [1]" in out.stdout, out.stderr[-2000:]


# acks each tuple, then emits anchored to it (an async bolt's bug)
LATE = PROTOCOL + """
handshake = read()
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
while True:
    tup = read()
    if tup.get("stream") == "__heartbeat":
        send({"command": "sync"})
        continue
    send({"command": "ack", "id": tup["id"]})
    send({"command": "emit", "anchors": [tup["id"]], "tuple": tup["tuple"][:1],
          "need_task_ids": False})
"""


def test_an_emit_anchored_to_a_tuple_already_acked_is_reported(
        cluster: LocalCluster, tmp_path: Path) -> None:
    # its anchor cannot hold the tree open any more: a failure downstream will not replay
    # the sentence, which the user learns from one error line, not never
    (tmp_path / "late.py").write_text(LATE)

    class Late(ShellBolt):
        command = [sys.executable, str(tmp_path / "late.py")]
        outputs = ["sentence"]

    b = TopologyBuilder()
    b.set_spout("sentences", ml.Sentences)
    b.set_bolt("late", Late).shuffle_grouping("sentences")
    cluster.submit_topology("late", {"test.output.dir": str(tmp_path), "test.sentences": 2},
                            b.create_topology())
    errors = wait_until(lambda: info_errors(cluster, "late", "late"), 60,
                        message="no error for the late anchors")
    error = errors[0]["error"]
    assert error.startswith("MultilangError: an emit anchored to tuple id '") and \
        "which names no tuple this bolt sent its subprocess and it has not acked or failed " \
        "yet; ignored" in error and "\n" not in error.strip(), error


# counts the words it gets and emits the counts on each tick: pystorm anchors what
# process_tick emits to the tick tuple, as it does every emit of a bolt
TICK_COUNTER = """
import collections
from pystorm import Bolt

class TickCount(Bolt):
    def initialize(self, conf, ctx):
        self.counts = collections.Counter()

    def process(self, tup):
        self.counts[tup.values[0]] += 1

    def process_tick(self, tup):
        for word, n in self.counts.items():
            self.emit([word, n])
        self.counts.clear()

TickCount().run()
"""
TICKED: list[tuple[str, int]] = []
TICK_ACKS: list[int] = []


class Words(Spout):
    outputs = ["word"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo = list(range(30))

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit(["abc"[i % 3]], tup_id=i)

    def ack(self, tup_id: Any) -> None:
        TICK_ACKS.append(tup_id)


class Ticked(Bolt):
    outputs: list[str] = []

    def process(self, tup: Any) -> None:
        TICKED.append(tuple(tup.values))


def test_a_pystorm_bolt_emitting_on_ticks_is_not_reported(
        cluster: LocalCluster, tmp_path: Path) -> None:
    # the emits' anchor is the tick's id: dropped silently (a tick is in no tuple tree),
    # not an error line per emit
    (tmp_path / "tick_count.py").write_text(TICK_COUNTER)

    class TickCount(ShellBolt):
        command = [sys.executable, str(tmp_path / "tick_count.py")]
        outputs = ["word", "count"]

    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("count", TickCount, config={"topology.tick.tuple.freq.secs": 1}) \
        .fields_grouping("words", ["word"])
    b.set_bolt("sink", Ticked).shuffle_grouping("count")
    cluster.submit_topology("ticks", {}, b.create_topology())
    wait_until(lambda: sum(n for _, n in TICKED) == 30, 60,
               message=lambda: f"counted {TICKED}; errors "
                               f"{cluster.get_topology_info('ticks')['errors']}")
    totals: dict[str, int] = {}
    for word, n in TICKED:
        totals[word] = totals.get(word, 0) + n
    assert totals == {"a": 10, "b": 10, "c": 10}
    wait_until(lambda: sorted(TICK_ACKS) == list(range(30)), 30,
               message=lambda: f"acked {sorted(TICK_ACKS)}")
    assert cluster.get_topology_info("ticks")["errors"] == {}
