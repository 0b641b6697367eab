"""Failure handling on a real cluster: a supervisor's ZooKeeper session expires, a supervisor
restarts and adopts its workers, one stopped with SIGTERM takes its workers with it. With
acking nothing is lost: every spout tuple is eventually acked. (kill -9 of a worker, a
supervisor or the nimbus leader, and garbage on the ports: ``test_faults.py``.)"""
from __future__ import annotations

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
        # 640 sentences in 4 s, the expiry some 0.2 s in; the second half waits for it (a
        # loaded host may take seconds to get there)
        submit(c, "wc", 640, 80, "-c", "test.hold.from=320")
        c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 20, 30, "no acks")
        expire_session(sup.store)
        wordcount.release(c.out_dir)
        c.wait(lambda: c.state.supervisor_ids() == [sup.id] and
               sup.store.client_id is not None, 30, "the supervisor did not re-register")
        c.wait(all_acked(c, wordcount, 640), 90, "some sentences were never acked")
        assert len(sup.workers) == 2
    finally:
        sup.stop()
        sup.kill_workers()


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
