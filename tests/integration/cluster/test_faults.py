"""The fault suite (issue #30): one cluster (two nimbuses, two supervisors, a ZooKeeper of
its own) running an acked word count while faults are injected one after another: kill -9
of a worker (three times), of a supervisor, of the nimbus leader (steady, and right after a
submit), ZooKeeper down past the session timeout and restarted, garbage on every port.
After each, every sentence emitted before the fault is acked (none lost), and the recovery
is timed: ``resume`` (first acks after the fault) and ``settle`` (everything emitted before
it acked). The figures are printed and written to ``recovery.json`` in the cluster's
temporary directory."""
from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

FIGURES: dict[str, list[dict[str, float]]] = {}
SESSION_SECS = 4.0          # storm.zookeeper.session.timeout of the harness (FAST)


@pytest.fixture(scope="module")
def running(fault_cluster: tuple[Any, Any], wordcount: Any) -> Iterator[dict[str, Any]]:
    c, zk = fault_cluster
    nimbuses = [c.start_nimbus(0)]
    c.wait(lambda: c.state.nimbuses(), 30, "nimbus did not register")
    nimbuses.append(c.start_nimbus(1))
    sups = {name: c.start_supervisor(name, slots=3) for name in ("sup1", "sup2")}
    c.wait(lambda: len(c.state.nimbuses()) == 2 and len(c.state.supervisor_ids()) == 2, 30,
           "daemons did not register")
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=3",
             "-c", "test.sentences=1000000", "-c", "test.emit.per.sec=20")
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 40, 60, "no acks")
    yield {"c": c, "zk": zk, "nimbuses": nimbuses, "sups": sups, "wc": wordcount}
    out = c.tmp / "recovery.json"
    out.write_text(json.dumps(FIGURES, indent=1))
    print(f"\nrecovery figures ({out}):\n{json.dumps(FIGURES)}")


def _emitted(c: Any, wordcount: Any) -> set[int]:
    return {e.arg for e in wordcount.read_spout_events(c.out_dir) if e.event == "emit"}


def _recover(env: dict[str, Any], label: str, inject: Callable[[], None],
             timeout: float = 120, hits: Callable[[], bool] | None = None) -> dict[str, float]:
    """Inject a fault; wait until acking resumes and until every sentence emitted before it
    is acked; record both times (from the injection). ``hits`` says when a fault that
    takes effect later (a dead supervisor's workers move) has: what was emitted until then
    counts."""
    c, wc = env["c"], env["wc"]
    before = len(wc.read_acks(c.out_dir))
    emitted = _emitted(c, wc)
    t0 = time.monotonic()
    inject()
    if hits is not None:
        c.wait(hits, timeout, f"{label}: the fault did not take effect")
        before = len(wc.read_acks(c.out_dir))
        emitted = _emitted(c, wc)
    c.wait(lambda: len(wc.read_acks(c.out_dir)) > before + 20, timeout,
           f"{label}: acking did not resume")
    resume = time.monotonic() - t0
    c.wait(lambda: emitted <= set(wc.read_acks(c.out_dir)), timeout,
           f"{label}: sentences emitted before the fault were never acked")
    figures = {"resume_secs": round(resume, 1), "settle_secs": round(time.monotonic() - t0, 1)}
    FIGURES.setdefault(label, []).append(figures)
    return figures


def _worker_pids(env: dict[str, Any]) -> set[int]:
    return {p for s in env["sups"].values() for p in s.worker_pids()}


def test_worker_killed_again_and_again(running: dict[str, Any]) -> None:
    c, sup = running["c"], running["sups"]["sup1"]
    for _ in range(3):
        c.wait(lambda: sup.worker_pids(), 30, "sup1 runs no worker")
        victim = sup.worker_pids()[0]
        _recover(running, "worker kill -9", lambda v=victim: os.kill(v, signal.SIGKILL))
        c.wait(lambda v=victim: v not in sup.worker_pids() and len(_worker_pids(running)) == 3,
               30, "the killed worker was not replaced")


def test_supervisor_killed(running: dict[str, Any]) -> None:
    c, sups = running["c"], running["sups"]
    victim = sups["sup2"]
    _recover(running, "supervisor kill -9 (its workers move)", victim.kill9,
             hits=lambda: len(c.state.supervisor_ids()) == 1 and
             len(sups["sup1"].worker_pids()) == 3)
    sups["sup2"] = c.start_supervisor("sup2", ports=victim.ports)
    c.wait(lambda: len(c.state.supervisor_ids()) == 2, 30, "the supervisor did not come back")
    c.wait(lambda: not victim.worker_pids() or set(victim.worker_pids()) <= set(
        sups["sup2"].worker_pids()), 30, "orphaned workers kept running")


def test_nimbus_leader_killed(running: dict[str, Any]) -> None:
    c, nimbuses = running["c"], running["nimbuses"]
    _recover(running, "nimbus leader kill -9", nimbuses[0].kill9)
    # commands work through the new leader (the client finds it among nimbus.seeds)
    c.wait(lambda: c.squall("deactivate", "wc", check=False).returncode == 0, 40,
           "the standby never took over")
    assert c.listed().get("wc") == "inactive"
    c.squall("activate", "wc")
    # the old leader comes back as a standby; commands still work
    nimbuses[0] = c.start_nimbus(0)
    c.wait(lambda: len(c.state.nimbuses()) == 2, 30, "the old leader did not come back")
    assert c.listed().get("wc") == "active"


def test_nimbus_leader_killed_right_after_a_submit(running: dict[str, Any]) -> None:
    c, nimbuses, wc = running["c"], running["nimbuses"], running["wc"]
    leader = c.client().cluster_info().leader
    index = c.nimbus_ports.index(int(leader.rsplit(":", 1)[1]))
    out = c.tmp / "out2"
    out.mkdir()
    c.squall("submit", c.wordcount_target, "--name", "wc2", "-c", "topology.workers=1",
             "-c", "test.sentences=100", "-c", "test.emit.per.sec=50",
             "-c", f"test.output.dir={out}", "-c", "topology.min.replication.count=2")
    # the submit returned: the standby holds the package already
    tid = c.state.find_topology_id("wc2")
    standby = nimbuses[1 - index]
    assert (standby.local_dir / "nimbus" / "stormdist" / tid / "stormcode.zip").is_file()
    t0 = time.monotonic()
    nimbuses[index].kill9()
    c.wait(lambda: set(wc.read_acks(out)) == set(range(100)), 120,
           "the topology submitted before the leader died did not run")
    FIGURES.setdefault("leader kill -9 right after submit", []).append(
        {"all_acked_secs": round(time.monotonic() - t0, 1)})
    c.wait(lambda: c.squall("kill", "wc2", "--wait", "0", check=False).returncode == 0, 40,
           "kill through the new leader failed")
    nimbuses[index] = c.start_nimbus(index)
    c.wait(lambda: len(c.state.nimbuses()) == 2, 30, "the old leader did not come back")
    # the next cases count the workers of wc alone: wc2's worker must be gone first
    c.wait(lambda: len(_worker_pids(running)) == 3, 60, "wc2's worker did not stop")


def test_zookeeper_down_past_the_session_timeout(running: dict[str, Any]) -> None:
    c, zk = running["c"], running["zk"]
    pids = _worker_pids(running)

    def outage() -> None:
        zk.stop()
        end = time.monotonic() + SESSION_SECS + 2      # the outage's length, not a sync
        c.wait(lambda: time.monotonic() >= end, SESSION_SECS + 10, "clock")
        zk.start()
    _recover(running, "zookeeper down 6 s", outage)
    c.wait(lambda: len(c.state.supervisor_ids()) == 2, 60, "supervisors did not re-register")
    assert _worker_pids(running) == pids, c.logs_tail()     # nimbus waited: none restarted


def test_garbage_on_every_port(running: dict[str, Any]) -> None:
    import zmq
    c = running["c"]
    pids = _worker_pids(running)
    ports = sorted({p for _, p in c.worker_slots("wc")})

    def garbage() -> None:
        for port in [*ports, *c.nimbus_ports]:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                raw.sendall(os.urandom(4096))
        ctx = zmq.Context()
        for port in ports:
            push = ctx.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 2000)
            push.connect(f"tcp://127.0.0.1:{port}")
            for _ in range(5):
                push.send(os.urandom(300))
            push.close()
        ctx.term()
    _recover(running, "garbage on every port", garbage)
    logs = [log for s in running["sups"].values() for p in ports
            for log in s.local_dir.glob(f"logs/*-{p}.log")]
    c.wait(lambda: any("invalid frame" in log.read_text() for log in logs), 20,
           "the garbage was not logged")
    assert _worker_pids(running) == pids, running["c"].logs_tail()
    assert all(n.alive() for n in running["nimbuses"])
    assert c.listed().get("wc") == "active"
