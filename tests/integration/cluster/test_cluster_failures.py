"""Failure handling on a real cluster: a worker, a supervisor or the nimbus leader dies, a
supervisor's ZooKeeper session expires, garbage reaches a worker's port. With acking nothing
is lost: every spout tuple is eventually acked."""
from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from squall.daemon.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOTAL = 400


def submit(c, name="wc", total=TOTAL, rate=40, *extra):
    c.squall("submit", c.wordcount_target, "--name", name, "-c", "topology.workers=2",
             "-c", f"test.sentences={total}", "-c", f"test.emit.per.sec={rate}", *extra)


def all_acked(c, wordcount, total=TOTAL):
    return lambda: set(wordcount.read_acks(c.out_dir)) == set(range(total))


def test_worker_killed_mid_run_is_restarted_and_nothing_is_lost(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus()
    sup = c.start_supervisor("sup1")
    c.wait_ready(supervisors=1)
    # the trees the killed worker held are replayed once they time out: after 2 to 4 s
    submit(c, "wc", TOTAL, 40, "-c", "topology.message.timeout.secs=2")
    c.wait(lambda: len(sup.worker_pids()) == 2, 30, "workers did not start")
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 40, 30, "no acks")
    victim = sup.worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    c.wait(lambda: len(sup.worker_pids()) == 2 and victim not in sup.worker_pids(), 30,
           "the killed worker was not replaced")
    c.wait(all_acked(c, wordcount), 90, "some sentences were never acked")


def test_supervisor_killed_its_executors_move_and_nothing_is_lost(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus()
    s1 = c.start_supervisor("sup1")
    s2 = c.start_supervisor("sup2")
    c.wait_ready(supervisors=2)
    submit(c)
    c.wait(lambda: len({n for n, _ in c.worker_slots("wc")}) == 2, 30, "not on 2 supervisors")
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 40, 30, "no acks")
    sid1 = c.state.supervisor_ids()
    s1.kill9()
    c.wait(lambda: len(c.state.supervisor_ids()) == 1, 30, "the dead supervisor stayed")
    (alive_id,) = set(c.state.supervisor_ids()) & set(sid1)
    c.wait(lambda: {n for n, _ in c.worker_slots("wc")} == {alive_id}, 30,
           "executors were not reassigned to the live supervisor")
    c.wait(lambda: len(s2.worker_pids()) == 2, 30, "the live supervisor did not start workers")
    c.wait(all_acked(c, wordcount), 90, "some sentences were never acked")
    # the dead supervisor's orphaned worker noticed its executors moved and exited
    c.wait(lambda: not s1.worker_pids(), 30, "the orphaned worker kept running")


def test_nimbus_leader_killed_standby_takes_over(ha_cluster, wordcount):
    c = ha_cluster
    n0 = c.start_nimbus(0)
    c.wait(lambda: c.state.nimbuses(), 30, "nimbus did not register")
    n1 = c.start_nimbus(1)
    c.start_supervisor("sup1")
    c.start_supervisor("sup2")
    c.wait(lambda: len(c.state.nimbuses()) == 2 and len(c.state.supervisor_ids()) == 2, 30,
           "daemons did not register")
    submit(c, total=100000, rate=30)
    tid = c.wait(lambda: c.state.find_topology_id("wc"), 10, "no topology")
    c.wait(lambda: (n1.local_dir / "nimbus" / "stormdist" / tid / "stormcode.zip").is_file(),
           30, "the standby did not fetch the package")
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 40, 30, "no acks")

    n0.kill9()
    before = len(wordcount.read_acks(c.out_dir))
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 60, 30,
           "the topology stopped while nimbus was down")
    # commands work through the new leader (the client finds it among nimbus.seeds)
    c.wait(lambda: c.squall("deactivate", "wc", check=False).returncode == 0, 40,
           "the standby never took over")
    assert c.listed() == {"wc": "inactive"}
    c.squall("activate", "wc")

    # the old leader comes back as a standby; commands still work
    n0 = c.start_nimbus(0)
    c.wait(lambda: len(c.state.nimbuses()) == 2, 30, "the restarted nimbus did not register")
    assert c.listed() == {"wc": "active"}
    c.squall("kill", "wc", "--wait", "0")
    c.wait(lambda: c.listed() == {}, 20, "kill did not finish")


def test_supervisor_session_expiry_recovers(squall_cluster, wordcount, expire_session):
    from squall.daemon.supervisor import Supervisor
    c = squall_cluster
    c.start_nimbus()
    from squall import config
    conf = {**config.defaults(), **c.conf, "storm.local.dir": str(c.tmp / "insup"),
            "supervisor.slots.ports": [free_port(), free_port()]}
    sup = Supervisor(conf)
    sup.start()
    try:
        c.wait(lambda: c.state.supervisor_ids() == [sup.id] and c.state.nimbuses(), 20,
               "supervisor or nimbus not registered")
        submit(c, rate=80)            # 400 sentences in 2.5 s, the expiry some 0.2 s in
        c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 20, 30, "no acks")
        expire_session(sup.store)
        assert len(set(wordcount.read_acks(c.out_dir))) < TOTAL, "the stream ended before"
        c.wait(lambda: c.state.supervisor_ids() == [sup.id] and
               sup.store.client_id is not None, 30, "the supervisor did not re-register")
        c.wait(all_acked(c, wordcount), 90, "some sentences were never acked")
        assert len(sup.workers) == 2
    finally:
        sup.stop()
        sup.kill_workers()


def test_garbage_on_a_worker_port_is_logged_and_ignored(squall_cluster, wordcount):
    import zmq
    c = squall_cluster
    c.start_nimbus()
    sup = c.start_supervisor("sup1")
    c.wait_ready(supervisors=1)
    submit(c, total=100000, rate=30)
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 20, 30, "no acks")
    pids = sorted(sup.worker_pids())
    port = sorted(p for _, p in c.worker_slots("wc"))[0]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:   # not even zmq
        raw.sendall(os.urandom(4096))
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 2000)
    push.connect(f"tcp://127.0.0.1:{port}")
    for _ in range(5):
        push.send(os.urandom(300))
    push.close()
    ctx.term()
    log_file = next(sup.local_dir.glob(f"logs/*-{port}.log"))
    c.wait(lambda: "invalid frame" in log_file.read_text(), 20, "the garbage was not logged")
    before = len(wordcount.read_acks(c.out_dir))
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 40, 30,
           "the topology stopped after the garbage")
    assert sorted(sup.worker_pids()) == pids       # no worker died


def test_restarted_supervisor_adopts_its_workers(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus()
    sup = c.start_supervisor("sup1")
    c.wait_ready(supervisors=1)
    (sid,) = c.state.supervisor_ids()
    submit(c, total=100000, rate=30)
    c.wait(lambda: len(sup.worker_pids()) == 2, 30, "workers did not start")
    pids = sorted(sup.worker_pids())
    sup.kill9()
    again = c.start_supervisor("sup1", ports=sup.ports)
    c.wait(lambda: again.log_text().count("adopted worker") == 2, 30, "workers not adopted")
    assert c.state.supervisor_ids() == [sid]          # same id after the restart
    # the old session's expiry does not take the new registration with it
    before = len(wordcount.read_acks(c.out_dir))
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 150, 40, "topology stalled")
    assert c.state.supervisor_ids() == [sid]
    assert sorted(again.worker_pids()) == pids        # never restarted, never two per slot


def test_a_supervisor_stopped_with_sigterm_has_its_workers_exit_at_once(squall_cluster,
                                                                       wordcount):
    # README: one stopped with SIGTERM leaves the cluster at once, so nimbus moves its
    # executors and its workers exit. With the default timings (nimbus's periodic pass every
    # 10 s, a 20 s session): its node goes with its session, nimbus's watch sees it, and
    # the workers see their executors moved, none waiting for a period or a timeout
    c = squall_cluster
    defaults = {"nimbus.monitor.freq.secs": 10, "storm.zookeeper.session.timeout": 20000,
         "supervisor.monitor.frequency.secs": 3, "supervisor.heartbeat.frequency.secs": 5,
         "task.heartbeat.frequency.secs": 3, "supervisor.worker.shutdown.sleep.secs": 3,
         "nimbus.task.timeout.secs": 30, "supervisor.worker.timeout.secs": 30}
    c.start_nimbus(overrides=defaults)
    s1 = c.start_supervisor("sup1", overrides=defaults)
    c.start_supervisor("sup2", overrides=defaults)
    c.wait_ready(supervisors=2)
    submit(c, total=100000, rate=30)
    c.wait(lambda: len({n for n, _ in c.worker_slots("wc")}) == 2 and s1.worker_pids(), 30,
           "not on 2 supervisors")
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 20, 30, "no acks")
    pids = s1.worker_pids()
    started = time.monotonic()
    s1.terminate()
    c.wait(lambda: not [p for p in pids if _running(p)], 30,
           f"the stopped supervisor's workers {pids} did not exit")
    took = time.monotonic() - started
    assert took < 6, f"its workers exited {took:.1f} s after the supervisor's SIGTERM"
    before = len(wordcount.read_acks(c.out_dir))
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 30, 60,
           "the topology did not go on on the other supervisor")


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, not reaped yet, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
