"""The worker's side of the multi-lang protocol, checked against a subprocess that speaks it by
hand: emits answered with their target task ids unless ``need_task_ids`` is false or they name
a task (a direct emit), streams,
anchoring, ``ack``/``fail``, ``error`` reported as the component's error, an emit on an
undeclared stream or with fields of the wrong type reported (and answered) while the
subprocess goes on, ``log`` levels."""
from __future__ import annotations

import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from squall import Bolt, LocalCluster, ShellBolt, Spout, Stream, TopologyBuilder, TopologyError
from squall.multilang.process import ShellProcess
from squall.testing import wait_until

from tests.topology.conftest import info_errors

pytestmark = pytest.mark.timeout(120)
RAW = Path(__file__).resolve().parent / "multilang" / "raw_bolt.py"
GATE = Path(__file__).resolve().parent / "multilang" / "gate_bolt.py"
LOCK = threading.Lock()
ACKED: list[Any] = []
FAILED: list[Any] = []
SEEN: dict[str, list[tuple]] = {"default": [], "ids": [], "pick": []}


class Letters(Spout):
    """Emits ``items``, each tracked by itself; keeps what was acked and failed."""

    outputs = ["x"]
    items: list[Any] = ["a", "b", "bad", "nope", "odd", "c"]
    acked = ACKED
    failed = FAILED

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo = list(self.items)

    def next_tuple(self) -> None:
        if self.todo:
            x = self.todo.pop(0)
            self.emit([x], tup_id=x)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            self.acked.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            self.failed.append(tup_id)


class Raw(ShellBolt):
    command = [sys.executable, str(RAW)]
    outputs = [Stream(["x"]), Stream(["x", "ids"], name="ids"),
               Stream(["x"], name="pick", direct=True)]
    shell_metrics = ["seen"]


class Sink(Bolt):
    outputs = ["x"]

    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN[tup.stream].append((self.context.task_id, tup.values))


def test_protocol_from_a_subprocess_speaking_it_by_hand(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="squall.component")
    caplog.set_level(logging.INFO, logger="squall.metrics")
    b = TopologyBuilder()
    b.set_spout("letters", Letters)
    b.set_bolt("raw", Raw).shuffle_grouping("letters")
    b.set_bolt("sink", Sink, parallelism=2).shuffle_grouping("raw") \
        .all_grouping("raw", stream="ids").direct_grouping("raw", stream="pick")
    cluster.submit_topology("raw", {"topology.metrics.consumer.register": ["log"],
                                    "topology.builtin.metrics.bucket.size.secs": 1},
                            b.create_topology())
    wait_until(lambda: len(ACKED) + len(FAILED) == 6, 60,
               message=lambda: f"acked {ACKED}, failed {FAILED}")
    assert sorted(ACKED) == ["a", "b", "c", "nope", "odd"] and FAILED == ["bad"]
    wait_until(lambda: len(SEEN["ids"]) == 12, 30, message=lambda: f"seen {SEEN}")
    assert len({t for t, _ in SEEN["ids"]}) == 2         # all grouping: both sink tasks
    # each default-stream tuple reached the one task the worker answered to its emit
    for _task, (x, ids) in SEEN["ids"]:
        assert json.loads(ids) == [t for t, values in SEEN["default"] if values == (x,)]
    # the direct emits reached the task they named (the higher sink task), each once
    wait_until(lambda: len(SEEN["pick"]) == 6, 30)
    assert {t for t, _ in SEEN["pick"]} == {max(t for t, _ in SEEN["ids"])}
    assert sorted(v for _, (v,) in SEEN["pick"]) == ["a", "b", "bad", "c", "nope", "odd"]
    # the subprocess's metric updates, summed per bucket, reach the metrics consumers
    seen = lambda: sum(float(r.getMessage().split("\t")[-1]) for r in caplog.records   # noqa
                       if r.name == "squall.metrics" and "\tseen\t" in r.getMessage())
    wait_until(lambda: seen() == 6, 30, message=lambda: f"seen {seen()}")
    errors = [e["error"] for e in info_errors(cluster, "raw", "raw")]
    assert not [e for e in errors if "task ids nobody asked for" in e], errors
    assert len(errors) == 4
    assert any("bad value" in e for e in errors)
    # one line each, with need_task_ids or without: the runtime's traceback through the link
    # left out
    undeclared = [e for e in errors if "undeclared stream 'nope'" in e]
    assert len(undeclared) == 2, errors
    assert all(e.startswith("TopologyError: ") and "\n" not in e.strip() for e in undeclared), \
        undeclared
    assert any("'anchors' must be a list of tuple ids, got 5" in e for e in errors)
    assert any(r.name == "squall.component.raw" and r.getMessage() == "odd level"
               for r in caplog.records)
    assert any(r.name == "squall.component.raw" and r.levelno == logging.WARNING
               and r.getMessage().startswith("raw bolt of task") for r in caplog.records)


class Numbers(Letters):
    items = list(range(8))
    acked: list[Any] = []
    failed: list[Any] = []


class Gate(ShellBolt):
    """Subprocesses that answer their handshake once ``test.gate`` of them have started."""
    outputs = ["x"]

    def shell_command(self, conf: Any) -> list[str]:
        return [sys.executable, str(GATE), conf["test.markers"], str(conf["test.gate"])]


def _submit_gates(cluster: LocalCluster, parallelism: int, gate: int, markers: Path,
                  timeout: int) -> None:
    """Numbers → Gate × ``parallelism`` (shuffle), as topology "gate"."""
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("gate", Gate, parallelism=parallelism).shuffle_grouping("numbers")
    cluster.submit_topology("gate", {"test.markers": str(markers), "test.gate": gate,
                                     "topology.subprocess.timeout.secs": timeout},
                            b.create_topology())


def test_the_shell_tasks_of_a_worker_start_side_by_side(cluster: LocalCluster,
                                                         tmp_path: Path) -> None:
    # each subprocess answers its handshake only once all four have started: started one
    # after another, waiting for each answer, the first would never answer in time
    _submit_gates(cluster, 4, 4, tmp_path, 20)
    wait_until(lambda: sorted(Numbers.acked) == list(range(8)), 60,
               message=lambda: f"acked {Numbers.acked}; errors "
                               f"{cluster.get_topology_info('gate')['errors']}")
    assert len(list(tmp_path.iterdir())) == 4     # one start each, none retried
    assert cluster.get_topology_info("gate")["errors"] == {}


def _waiting_for_a_handshake(component: str) -> int:
    """Threads of ``component`` waiting for their subprocess's answer to the handshake."""
    names = {t.ident: t.name for t in threading.enumerate()}
    waiting = 0
    for ident, frame in sys._current_frames().items():
        if names.get(ident, "").startswith(f"squall-{component}-"):
            while frame is not None and frame.f_code is not ShellProcess.answered.__code__:
                frame = frame.f_back
            waiting += frame is not None
    return waiting


def test_a_worker_stops_at_once_while_its_shell_tasks_wait_for_their_handshake(
        cluster: LocalCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # subprocesses that never answer their handshake in the test's time (they wait for 99 to
    # have started), as a bolt whose code takes long to load: the worker's stopping ends the
    # waits of its components' threads, so they are not waited for until the shutdown's
    # timeout (10 s), and their cleanup runs
    _submit_gates(cluster, 3, 99, tmp_path, 60)
    wait_until(lambda: len(list(tmp_path.iterdir())) == 3, 30)
    wait_until(lambda: _waiting_for_a_handshake("gate") == 3, 30,
               message=lambda: f"{_waiting_for_a_handshake('gate')} of 3 waiting")
    pids = [int(p.name) for p in tmp_path.iterdir()]
    assert all(Path(f"/proc/{pid}").exists() for pid in pids)
    started = time.monotonic()
    cluster.kill_topology("gate")
    took = time.monotonic() - started
    assert "still in a call at shutdown" not in caplog.text
    assert took < 5.0, f"the kill took {took:.1f} s"
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def test_an_unknown_serializer_is_refused_at_submit(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("letters", Letters)
    b.set_bolt("raw", Raw, config={"topology.multilang.serializer": "xml"}) \
        .shuffle_grouping("letters")
    with pytest.raises(TopologyError, match="component 'raw'.*json, msgpack.*'xml'"):
        cluster.submit_topology("bad", {}, b.create_topology())


TICK = Path(__file__).resolve().parent / "multilang" / "tick_bolt.py"


class TickEcho(ShellBolt):
    command = [sys.executable, str(TICK)]
    outputs = ["seen"]


class Quiet(Letters):
    acked: list[Any] = []
    failed: list[Any] = []


class TickSink(Bolt):
    seen: list[dict[str, Any]] = []

    def process(self, tup: Any) -> None:
        with LOCK:
            self.seen.append(json.loads(tup["seen"]))


def test_a_tick_reaches_the_subprocess_from_system_task_minus_1(cluster: LocalCluster) -> None:
    # Storm's multi-lang tick: {"comp": "__system", "stream": "__tick", "task": -1, ...}
    TickSink.seen.clear()
    b = TopologyBuilder()
    b.set_spout("letters", Quiet)
    b.set_bolt("echo", TickEcho, config={"topology.tick.tuple.freq.secs": 0.1}) \
        .shuffle_grouping("letters")
    b.set_bolt("sink", TickSink).shuffle_grouping("echo")
    cluster.submit_topology("ticks", {}, b.create_topology())
    wait_until(lambda: len(TickSink.seen) >= 2, 30,
               message=lambda: f"seen {TickSink.seen}; errors "
                               f"{cluster.get_topology_info('ticks')['errors']}")
    with LOCK:
        assert all(s == {"comp": "__system", "stream": "__tick", "task": -1, "tuple": [0.1]}
                   for s in TickSink.seen), TickSink.seen


# sends an error of 2 MB (it quotes the record it could not parse) once it has answered its
# handshake, then acks what it gets
TELLS_AT_LENGTH = (Path(__file__).resolve().parent / "multilang" / "raw_protocol.py") \
    .read_text() + """
import os
handshake = read()
send({"pid": os.getpid()})
send({"command": "error", "msg": "cannot parse record " + "x" * (2 << 20) + " at line 7"})
while True:
    tup = read()
    if tup.get("stream") == "__heartbeat":
        send({"command": "sync"})
    else:
        send({"command": "ack", "id": tup["id"]})
"""


class Verbose(ShellBolt):
    outputs = ["x"]

    def shell_command(self, conf: Any) -> list[str]:
        return [sys.executable, conf["test.script"]]


def test_an_error_of_megabytes_is_kept_cut_to_fit_the_state_store(
        cluster: LocalCluster, tmp_path: Path) -> None:
    # ZooKeeper refuses a value over 1 MB: the error is recorded as its head and its end,
    # here as on a cluster
    script = tmp_path / "verbose.py"
    script.write_text(TELLS_AT_LENGTH)
    b = TopologyBuilder()
    b.set_spout("letters", Quiet)
    b.set_bolt("verbose", Verbose).shuffle_grouping("letters")
    cluster.submit_topology("verbose", {"test.script": str(script)}, b.create_topology())
    (entry,) = wait_until(lambda: info_errors(cluster, "verbose", "verbose"), 30)
    assert entry["error"].startswith("cannot parse record xxx")
    assert entry["error"].endswith("xxx at line 7")
    assert "characters cut) ...\n" in entry["error"]
    assert len(entry["error"]) < 100_000
