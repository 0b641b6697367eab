"""A worker process follows its topology's status and debug sampling without waiting for its
loop: with a spout holding the loop in ``next_tuple``, ``squall deactivate`` / ``debug`` stop
neither the worker's ZooKeeper beat nor its main thread (nimbus took the silence for a dead
worker and had it restarted); the spout's ``deactivate`` runs once its call returns, the
latest status wins, and nothing is applied twice."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from squall import Spout, TopologyBuilder, config
from squall.daemon.worker_main import WorkerProcess, parse_args
from squall.runtime.local_cluster import assign_even
from squall.runtime.system import add_system_components
from squall.runtime.worker import Worker
from squall.state.cluster_state import ClusterState
from squall.state.memory import MemoryServer, MemoryStateStore
from squall.testing import wait_until

TID = "held-1-1"
ENTERED = threading.Event()
RELEASE = threading.Event()
CALLS: list[str] = []


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    ENTERED.clear()
    RELEASE.clear()
    CALLS.clear()
    yield
    RELEASE.set()       # a test that failed leaves no call blocked


@pytest.fixture
def state() -> Any:
    store = MemoryStateStore({}, server=MemoryServer())
    store.start()
    cs = ClusterState(store)
    cs.setup()
    yield cs
    store.close()


class Holds(Spout):
    """Holds the loop in its first ``next_tuple`` until the test releases it."""

    outputs = ["n"]

    def next_tuple(self) -> None:
        if not RELEASE.is_set():
            ENTERED.set()
            RELEASE.wait(30)

    def activate(self) -> None:
        CALLS.append("activate")

    def deactivate(self) -> None:
        CALLS.append("deactivate")


def one_worker() -> Worker:
    conf = {**config.defaults(), "squall.transport": "local", "squall.state": "memory",
            "topology.name": "held"}
    b = TopologyBuilder()
    b.set_spout("holds", Holds)
    full = add_system_components(b.create_topology(), conf)
    (execs,) = assign_even(full, 1)
    return Worker(conf=conf, topology=full, topology_id=TID, port=6700, executors=execs,
                  task_to_worker={t: ("local", 6700) for s, e in execs for t in range(s, e + 1)},
                  host="local")


def _process(tmp_path: Path, state: ClusterState, worker: Worker) -> WorkerProcess:
    proc = WorkerProcess(parse_args(["--topology-id", TID, "--supervisor-id", "s1",
                                     "--port", "6700", "--worker-id", "w1",
                                     "--local-dir", str(tmp_path)]))
    proc.conf = worker.conf
    proc.state = state
    proc.worker = worker
    return proc


def test_status_and_debug_changes_do_not_wait_for_a_loop_held_in_a_call(
        tmp_path: Path, state: ClusterState) -> None:
    w = one_worker()
    w.start()
    proc = _process(tmp_path, state, w)
    try:
        proc._apply_status({"status": "active"})
        wait_until(ENTERED.is_set, 10)      # the spout holds the loop now
        began = time.monotonic()
        debug = {"holds": {"enable": True, "samplingpct": 10}}
        # squall deactivate and squall debug
        proc._apply_status({"status": "inactive", "component_debug": debug})
        proc.heartbeat_zk()
        assert time.monotonic() - began < 2     # the loop took 10 s to be given up on
        assert list(state.worker_beats(TID)) == ["s1-6700"]
        assert CALLS == ["activate"] and not w.events.sampled()    # the loop is in the call
        # activate and deactivate again meanwhile
        proc._apply_status({"status": "active", "component_debug": debug})
        proc._apply_status({"status": "inactive", "component_debug": debug})
        RELEASE.set()
        wait_until(lambda: CALLS == ["activate", "deactivate"], 10)
        (task,) = w.topology.tasks("holds")
        wait_until(lambda: w.events.sampled() == {task: 0.1}, 10)
        passes = w.passes
        wait_until(lambda: w.passes > passes + 10, 10)
        assert CALLS == ["activate", "deactivate"]      # the latest, applied once
        proc._apply_status({"status": "active", "component_debug": debug})
        wait_until(lambda: CALLS == ["activate", "deactivate", "activate"], 10)
    finally:
        RELEASE.set()
        w.shutdown()
