"""A component blocked for ever in a call on its worker's loop thread (not on a thread of its
own) holds up every executor of that worker, its acks and its message timeouts too. Once the
loop has been in one pass for ``supervisor.worker.timeout.secs`` the worker reports it, as an
error of that component naming it and where it waits, and its supervisor restarts it; the
spouts replay what was in flight, so nothing is lost."""
from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "hanging_bolt.py"
TOTAL = 300
#: ids per second: the restarted worker's spout emits every id again (its ids are not durable),
#: so the stream after the restart lasts TOTAL / RATE; fast enough that it is short, slow enough
#: that the hang (after the first 20 acks) comes well before the stream's end
RATE = 100
#: supervisor.worker.timeout.secs for the supervisor and the worker (the harness's is 5 s)
WORKER_TIMEOUT = 3


def _module():
    spec = importlib.util.spec_from_file_location("hanging_bolt_helpers", TOPOLOGY)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_a_worker_whose_loop_is_stuck_in_a_bolt_is_restarted_and_nothing_is_lost(
        squall_cluster):
    topo = _module()
    c = squall_cluster
    c.start_nimbus()
    sup = c.start_supervisor("sup1",
                             overrides={"supervisor.worker.timeout.secs": WORKER_TIMEOUT})
    c.wait_ready(supervisors=1)
    c.squall("submit", f"{TOPOLOGY}:topology", "--name", "stuck", "-c", "topology.workers=1",
             "-c", f"test.ids={TOTAL}", "-c", f"test.emit.per.sec={RATE}",
             "-c", f"supervisor.worker.timeout.secs={WORKER_TIMEOUT}")
    tid = c.wait(lambda: c.state.find_topology_id("stuck"), 10, "no topology")
    c.wait(lambda: len(topo.read_acks(c.out_dir)) > 20, 60, "no acks")
    (hung_pid,) = sup.worker_pids()

    (c.out_dir / "hang").write_text("")
    c.wait(lambda: (c.out_dir / f"hung-{hung_pid}").exists(), 30, "the bolt did not hang")
    # when the bolt hung: its file's making (this test may see the file a while later)
    hung_at = (c.out_dir / f"hung-{hung_pid}").stat().st_mtime
    # supervisor.worker.timeout.secs is WORKER_TIMEOUT: stuck that long, found within the 1 s
    # heartbeat, the supervisor's next round (1 s), and the new worker's start
    c.wait(lambda: sup.worker_pids() and hung_pid not in sup.worker_pids(), 25,
           "the stuck worker was not restarted")
    restarted_after = time.time() - hung_at
    assert restarted_after >= WORKER_TIMEOUT - 0.5, \
        f"restarted {restarted_after:.1f} s after the hang"
    assert f"no heartbeat for {WORKER_TIMEOUT} s" in sup.log_text()

    errors = c.wait(lambda: c.state.errors(tid).get("hang"), 20, "no error for the bolt")
    text = errors[-1]["error"]
    assert text.startswith("worker loop stuck in hang (task "), text
    assert "in process" in text and "threading.Event().wait()" in text, text   # where
    info = c.client().topology_info("stuck")
    assert any("worker loop stuck in hang" in e["error"]
               for e in info["errors"].get("hang", [])), info["errors"]
    # the supervisor says it restarted the worker, and why (a restart loop was invisible)
    (restart,) = c.wait(lambda: c.state.errors(tid).get("__worker"), 20, "no restart reported")
    assert restart["fatal"] and restart["error"].startswith(
        f"worker on port {restart['port']} was restarted: no heartbeat for {WORKER_TIMEOUT} s "
        "(supervisor.worker.timeout.secs); its loop was stuck in one pass"), restart

    c.wait(lambda: topo.read_acks(c.out_dir) == set(range(1, TOTAL + 1)), 120,
           "some ids were never acked")
    assert c.listed() == {"stuck": "active"}
