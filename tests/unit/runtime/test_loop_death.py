"""A worker whose loop, or a component's own thread, ends with what a component's call raised
past the executor's ``except Exception`` (``sys.exit()``, ``KeyboardInterrupt``, a bare
``BaseException``...): the death is reported before the worker goes, as a fatal error of the
component and task whose call raised it (topology info, the state store's ``/errors``, the
status reason), and the worker is restarted. One the worker's own code raised is an error of
``__worker``."""
from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder, config
from squall.runtime.errors import WORKER_COMPONENT
from squall.runtime.local_cluster import assign_even
from squall.runtime.system import add_system_components
from squall.runtime.worker import Worker
from squall.testing import wait_until

TOTAL = 20
ACKED: set[int] = set()
RAISED = threading.Event()
#: what the dying component raises, once (the test sets it)
RAISE: list[Any] = [SystemExit(3)]


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    ACKED.clear()
    RAISED.clear()
    yield


class Ids(Spout):
    """Emits 1..TOTAL once per instance (a restarted worker's emits them again)."""

    outputs = ["i"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0

    def next_tuple(self) -> None:
        if self.n < TOTAL:
            self.n += 1
            self.emit([self.n], tup_id=self.n)

    def ack(self, tup_id: int) -> None:
        ACKED.add(tup_id)


def _raise_once() -> None:
    if not RAISED.is_set():
        RAISED.set()
        raise RAISE[0]


class Dies(Bolt):
    """Raises RAISE[0] in its call for the 5th id, the first time."""

    def process(self, tup: Any) -> None:
        if tup.values[0] == 5:
            _raise_once()        # a helper with no ``self``: the frame outside it names the bolt


class DiesOnItsThread(Dies):
    dedicated_thread = True


class SpoutDies(Ids):
    def next_tuple(self) -> None:
        if self.n == 5:
            _raise_once()
        super().next_tuple()


def topology(bolt: type[Bolt], spout: type[Spout] = Ids) -> Any:
    b = TopologyBuilder()
    b.set_spout("ids", spout)
    b.set_bolt("dies", bolt).shuffle_grouping("ids")
    return b.create_topology()


def _fatal(cluster: LocalCluster, name: str, component: str) -> dict[str, Any]:
    return wait_until(lambda: next((e for e in cluster.get_topology_info(name)["errors"]
                                    .get(component, []) if e.get("fatal")), None), 10)


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt("stop"), GeneratorExit(),
                                    BaseException("bare")], ids=lambda e: type(e).__name__)
def test_a_base_exception_in_process_is_the_components_error_and_the_worker_restarts(
        raised: BaseException) -> None:
    RAISE[0] = raised
    name = type(raised).__name__
    with LocalCluster() as cluster:
        tid = cluster.submit_topology("dies", {}, topology(Dies))
        (first,) = cluster.workers("dies")
        task = cluster.get_topology("dies").tasks("dies")[0]
        entry = _fatal(cluster, "dies", "dies")
        assert entry["task"] == task
        last = entry["error"].strip().splitlines()[-1]
        what = f"{name}: {raised}" if str(raised) else name
        assert last == (f"worker stopped: component 'dies' (task {task}) raised {what} (not an "
                        f"Exception: sys.exit(), KeyboardInterrupt and the like stop the "
                        f"worker); it restarts"), last
        assert "in _raise_once\n" in entry["error"]         # the whole traceback
        # restarted, and the error went to the state store's /errors with it
        wait_until(lambda: cluster.workers("dies")[0] is not first, 10)
        stored = wait_until(lambda: cluster.state.errors(tid).get("dies"), 10)
        assert [e["error"] for e in stored if e.get("fatal")] == [entry["error"]]
        reason = cluster.get_topology_info("dies")["status_reason"]
        assert reason.startswith("a worker died ") and reason.endswith(last), reason
        # the new worker runs: every id is acked (the first worker's pending ones replayed)
        wait_until(lambda: ACKED == set(range(1, TOTAL + 1)), 20)


@pytest.mark.parametrize("bolt, spout, component, own", [
    (DiesOnItsThread, Ids, "dies", True), (Dies, SpoutDies, "ids", False)],
    ids=["bolt-on-its-own-thread", "spout"])
def test_sys_exit_on_a_components_own_thread_or_in_a_spout_names_it(
        bolt: type[Bolt], spout: type[Spout], component: str, own: bool) -> None:
    RAISE[0] = SystemExit("bye")
    with LocalCluster() as cluster:
        cluster.submit_topology("dies", {}, topology(bolt, spout))
        task = cluster.get_topology("dies").tasks(component)[0]
        entry = _fatal(cluster, "dies", component)
        where = f"task {task}, on its own thread" if own else f"task {task}"
        assert entry["task"] == task
        assert f"worker stopped: component {component!r} ({where}) raised SystemExit: bye" \
            in entry["error"], entry["error"]
        wait_until(lambda: ACKED == set(range(1, TOTAL + 1)), 20)


def test_the_death_is_recorded_past_the_throttle() -> None:
    """A component that reported its errors up to the limit still has its death recorded."""
    RAISE[0] = SystemExit(9)

    class Noisy(Dies):
        def process(self, tup: Any) -> None:
            if tup.values[0] < 5:
                raise ValueError(f"noise {tup.values[0]}")
            super().process(tup)

    with LocalCluster() as cluster:
        cluster.submit_topology("noisy", {"topology.max.error.report.per.interval": 2},
                                topology(Noisy))
        entry = _fatal(cluster, "noisy", "dies")
        assert "raised SystemExit: 9" in entry["error"]


def test_the_worker_s_own_code_dying_is_an_error_of_the_worker() -> None:
    conf = {**config.defaults(), "squall.transport": "local", "squall.state": "memory",
            "topology.name": "own"}
    full = add_system_components(topology(Dies), conf)
    (execs,) = assign_even(full, 1)
    w = Worker(conf=conf, topology=full, topology_id="own-1-1", port=1, executors=execs,
               task_to_worker={t: ("local", 1) for s, e in execs for t in range(s, e + 1)},
               host="local")
    w.start()
    try:
        w.loop.submit(lambda: sys.exit(7))      # a call on the loop, in no component's
        wait_until(lambda: not w.is_alive(), 10)
        (entry,) = w.errors.recent()[WORKER_COMPONENT]
        assert entry["fatal"] and entry["task"] == 0
        assert entry["error"].strip().splitlines()[-1].startswith(
            "worker stopped: the worker's loop raised SystemExit: 7"), entry["error"]
    finally:
        w.shutdown()


INITS: list[int] = []


class ExitsOnRestart(Dies):
    """Dies as Dies does; the instance of its first restart calls sys.exit() in initialize."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        INITS.append(context.task_id)
        if len(INITS) == 2:
            sys.exit(4)


def test_sys_exit_in_the_initialize_of_a_restart_does_not_stop_the_monitor() -> None:
    """LocalCluster's monitor logs the failed restart and tries again at its next round."""
    RAISE[0] = SystemExit(3)
    INITS.clear()
    with LocalCluster() as cluster:
        cluster.submit_topology("restarts", {}, topology(ExitsOnRestart))
        wait_until(lambda: len(INITS) >= 3, 20)
        wait_until(lambda: ACKED == set(range(1, TOTAL + 1)), 20)
