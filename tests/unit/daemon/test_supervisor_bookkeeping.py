"""Supervisor bookkeeping without real workers: local state, heartbeats, what to kill."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from squall import config
from squall.daemon import supervisor_local as sl
from squall.daemon.ports import free_port
from squall.daemon.supervisor import Supervisor
from squall.daemon.worker_main import (
    KEEP_HEARTBEATS,
    my_executors,
    task_to_worker,
    write_local_heartbeat,
)
from squall.state.cluster_state import ClusterState
from squall.state.memory import MemoryStateStore
from squall.testing.waiting import wait_until

ASSIGNMENT = {"node_host": {"sup-a": "10.0.0.1", "sup-b": "10.0.0.2"},
              "executor_node_port": {"[1, 2]": ["sup-a", 6700], "[3, 3]": ["sup-b", 6700],
                                     "[4, 4]": ["sup-a", 6700], "[5, 5]": ["sup-a", 6701]}}


def test_assignment_helpers():
    assert my_executors(ASSIGNMENT, "sup-a", 6700) == [(1, 2), (4, 4)]
    assert my_executors(ASSIGNMENT, "sup-c", 6700) == []
    assert my_executors(None, "sup-a", 6700) == []
    assert task_to_worker(ASSIGNMENT) == {1: ("10.0.0.1", 6700), 2: ("10.0.0.1", 6700),
                                          3: ("10.0.0.2", 6700), 4: ("10.0.0.1", 6700),
                                          5: ("10.0.0.1", 6701)}


def test_local_state_keeps_the_supervisor_id_and_workers(tmp_path):
    first = sl.LocalState(tmp_path)
    first.workers["w1"] = sl.WorkerRecord("w1", "t-1-1", 6700, [[1, 2]], 4242, 10.0)
    first.save()
    again = sl.LocalState(tmp_path)
    assert again.supervisor_id == first.supervisor_id
    assert again.workers["w1"] == first.workers["w1"]


def test_corrupt_local_state_starts_fresh(tmp_path):
    (tmp_path / "supervisor").mkdir()
    (tmp_path / "supervisor" / "localstate").write_text("{not json")
    assert sl.LocalState(tmp_path).workers == {}


def test_newest_heartbeat_wins_and_only_a_few_are_kept(tmp_path):
    hb_dir = sl.worker_dir(tmp_path, "w1") / "heartbeats"
    for i in range(8):
        write_local_heartbeat(hb_dir, {"time_secs": i})
    (hb_dir / "8").write_text('{"time_secs": 7}')           # the newest, rewritten...
    (hb_dir / "9").write_text('{"time_')                    # ...and one half written
    assert sl.latest_heartbeat(tmp_path, "w1") == {"time_secs": 7}
    write_local_heartbeat(hb_dir, {"time_secs": 8})
    assert len([p for p in hb_dir.iterdir() if p.name.isdigit()]) <= KEEP_HEARTBEATS
    assert sl.latest_heartbeat(tmp_path, "nobody") is None


@pytest.fixture
def supervisor(tmp_path):
    ns = uuid.uuid4().hex
    conf = {"storm.local.dir": str(tmp_path), "supervisor.slots.ports": [6700, 6701],
            "squall.state": "memory", "squall.state.memory.namespace": ns,
            "supervisor.worker.timeout.secs": 5, "supervisor.worker.start.timeout.secs": 20}
    sup = Supervisor(conf)
    store = MemoryStateStore(conf)
    store.start()
    sup.state = ClusterState(store)
    sup.state.setup()
    yield sup
    store.close()


def test_assigned_slots_reads_only_this_supervisors_ports(supervisor):
    a = {"node_host": {supervisor.id: "h"},
         "executor_node_port": {"[1, 1]": [supervisor.id, 6700], "[2, 2]": ["other", 6700],
                                "[3, 4]": [supervisor.id, 6701], "[5, 5]": [supervisor.id, 9999]}}
    supervisor.state.set_assignment("t-1-1", a)
    assert supervisor.assigned_slots() == {6700: ("t-1-1", [[1, 1]]),
                                           6701: ("t-1-1", [[3, 4]])}


def test_worker_problems(supervisor, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)
    try:
        rec = sl.WorkerRecord("w1", "t-1-1", 6700, [[1, 1]], proc.pid, time.time(), proc)
        wanted = ("t-1-1", [[1, 1]])
        assert supervisor.worker_problem(rec, None) == "no longer assigned"
        assert supervisor.worker_problem(rec, ("t-1-1", [[1, 2]])) == "no longer assigned"
        assert supervisor.worker_problem(rec, wanted) == ""          # starting, no beat yet
        supervisor.worker_beats.clock = lambda: time.monotonic() + 60
        assert supervisor.worker_problem(rec, wanted) == "no heartbeat since launch"
        write_local_heartbeat(sl.worker_dir(tmp_path, "w1") / "heartbeats",
                              {"time_secs": time.time()})
        assert supervisor.worker_problem(rec, wanted) == ""
        write_local_heartbeat(sl.worker_dir(tmp_path, "w1") / "heartbeats",
                              {"time_secs": time.time() - 30})
        assert supervisor.worker_problem(rec, wanted) == "no heartbeat for 5 s"
        sl.kill_worker(tmp_path, rec, grace=5)
        assert proc.poll() is not None
        assert not sl.worker_dir(tmp_path, "w1").exists()
        assert supervisor.worker_problem(rec, wanted) == "process died"
    finally:
        proc.kill()
        proc.wait()


def _stand_in(on_sigterm: str) -> subprocess.Popen:
    """A process standing in for a worker, in a session of its own, once it is ready:
    ``on_sigterm`` is the source of its SIGTERM handler (``signal.SIG_IGN``: it ignores it)."""
    code = (f"import signal, sys, time; signal.signal(signal.SIGTERM, {on_sigterm}); "
            "print('ready', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            start_new_session=True)
    if proc.stdout.readline().strip() != b"ready":      # type: ignore[union-attr]
        proc.kill()
        proc.wait()
        raise AssertionError("the stand-in worker did not start")
    return proc


def test_workers_stopped_together_share_one_grace(tmp_path):
    """A topology killed while its workers are each in a long call: the supervisor waits
    one grace for all of them, not one after another (its sync round is held meanwhile)."""
    procs = [_stand_in("signal.SIG_IGN") for _ in range(4)]
    try:
        recs = [sl.WorkerRecord(f"w{i}", "t-1-1", 6700 + i, [], proc.pid, time.time(), proc)
                for i, proc in enumerate(procs)]
        began = time.monotonic()
        sl.stop_workers(tmp_path, recs, grace=1.0)
        took = time.monotonic() - began
        assert [proc.poll() for proc in procs] == [-9] * 4
        assert took < 2.5, f"stopping 4 workers took {took:.1f} s with a 1 s grace"
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_stopped_worker_takes_its_sigterm_at_once(tmp_path):
    """A worker whose process is stopped (SIGSTOP, a frozen host) gets its SIGTERM handled
    now, not SIGKILL after the whole grace."""
    import signal
    proc = _stand_in("lambda *a: sys.exit(3)")
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        rec = sl.WorkerRecord("w3", "t-1-1", 6700, [], proc.pid, time.time(), proc)
        sl.stop_workers(tmp_path, [rec], grace=30)
        assert proc.poll() == 3      # its own SIGTERM handler ran: no SIGKILL after 30 s
    finally:
        proc.kill()
        proc.wait()


def test_kill_worker_escalates_to_sigkill(tmp_path, caplog):
    proc = _stand_in("signal.SIG_IGN")
    try:
        rec = sl.WorkerRecord("w2", "t-1-1", 6700, [], proc.pid, time.time(), proc)
        sl.kill_worker(tmp_path, rec, grace=0.3)
        assert proc.poll() == -9
        # it may have been stopping all along: the line says how long it had, not "ignored"
        assert f"worker w2 (pid {proc.pid}) did not exit within 0.3 s of SIGTERM " \
               "(supervisor.worker.shutdown.sleep.secs); killing it" in caplog.text
    finally:
        proc.kill()
        proc.wait()


def test_a_reused_pid_is_not_taken_for_a_worker():
    assert not sl.is_our_worker(1, "some-worker-id")
    assert not sl.pid_alive(2 ** 22 + 12345)


def test_a_second_supervisor_on_the_same_local_dir_is_refused(tmp_path):
    from squall.errors import SquallError
    ns = uuid.uuid4().hex
    conf = {**config.defaults(), "storm.local.dir": str(tmp_path),
            "supervisor.slots.ports": [free_port()], "squall.state": "memory",
            "squall.state.memory.namespace": ns, "logviewer.port": 0}
    first = Supervisor(conf)
    first.start()
    try:
        with pytest.raises(SquallError, match=f"another supervisor \\(pid {os.getpid()}\\) runs "
                                              f"on storm.local.dir"):
            Supervisor(conf).start()
    finally:
        first.stop()
    again = Supervisor(conf)        # the first one stopped: the directory is free again
    again.start()
    again.stop()


def test_a_download_a_crash_left_half_done_is_removed_at_start(tmp_path):
    # a supervisor killed while downloading a package left stormdist/<id>.tmp for ever
    dist = tmp_path / "supervisor" / "stormdist"
    (dist / "big-1-1.tmp" / "code").mkdir(parents=True)
    (dist / "big-1-1.tmp" / "stormcode.zip").write_bytes(b"x" * 1000)
    (dist / "live-2-1").mkdir()
    conf = {**config.defaults(), "storm.local.dir": str(tmp_path),
            "supervisor.slots.ports": [free_port()], "squall.state": "memory",
            "squall.state.memory.namespace": uuid.uuid4().hex, "logviewer.port": 0}
    sup = Supervisor(conf)
    sup.start()
    try:
        assert not (dist / "big-1-1.tmp").exists()
    finally:
        sup.stop()


def test_a_launch_that_cannot_happen_does_not_stop_the_other_slots(supervisor, monkeypatch):
    # a topology id too long for its log file's name raised out of the whole round: no other
    # topology's worker was ever launched, and the supervisor stopped registering
    from squall.daemon import supervisor as sup_module
    from squall.runtime.errors import WORKER_COMPONENT
    long_id, short_id = "b" * 235 + "-17-1796045175", "wc-2-2"
    for tid, port in ((long_id, 6700), (short_id, 6701)):
        supervisor.state.set_assignment(tid, {"node_host": {supervisor.id: "h"},
                                              "executor_node_port": {"[1, 1]": [supervisor.id,
                                                                                port]}})
    monkeypatch.setattr(supervisor, "ensure_code", lambda tid: True)
    monkeypatch.setattr(supervisor, "code_intact", lambda tid: True)
    monkeypatch.setattr(supervisor, "resources", {}, raising=False)   # set by start()
    launched = []

    def launch(local_dir, sup_id, tid, port, execs, install, rotation):
        if tid == long_id:        # the real one: its log file cannot be made
            return sl.launch_worker(local_dir, sup_id, tid, port, execs, install, rotation)
        launched.append((tid, port))
        return sl.WorkerRecord("w-short", tid, port, execs, 0, time.time())

    monkeypatch.setattr(sup_module, "launch_worker", launch)
    monkeypatch.setattr(sup_module, "stop_workers", lambda *a: None)
    supervisor.sync()
    assert launched == [(short_id, 6701)]
    [error] = supervisor.state.errors(long_id)[WORKER_COMPONENT]
    assert "cannot launch a worker on port 6700" in error["error"] and \
        "File name too long" in error["error"]
    assert error["start_failure"] is True        # so `squall list` shows it as the reason
    assert supervisor.backoff.count(6700) == 1               # it backs off as a failed start
    assert supervisor.state.supervisors()[supervisor.id]      # and the round went on


def test_a_running_workers_out_file_stays_near_the_max(tmp_path, monkeypatch):
    # a C library or a child process writing to the worker's stdout filled the disk: the
    # .out file was rotated only when a worker started
    from squall.daemon import log_files
    from squall.daemon import supervisor as sup_module
    ns = uuid.uuid4().hex
    conf = {"storm.local.dir": str(tmp_path), "supervisor.slots.ports": [6700],
            "squall.state": "memory", "squall.state.memory.namespace": ns,
            "worker.log.max.bytes": 20_000, "worker.log.backup.count": 2}
    sup = Supervisor(conf)
    store = MemoryStateStore(conf)
    store.start()
    sup.state = ClusterState(store)
    sup.state.setup()
    monkeypatch.setattr(sup, "resources", {}, raising=False)   # set by start()
    monkeypatch.setattr(sup, "ensure_code", lambda tid: True)
    monkeypatch.setattr(sup, "code_intact", lambda tid: True)
    sup.state.set_assignment("wc-1-1", {"node_host": {sup.id: "h"},
                                        "executor_node_port": {"[1, 1]": [sup.id, 6700]}})
    out = tmp_path / "logs" / log_files.worker_out_name("wc-1-1", 6700)
    chatty = "import os, time\nwhile True:\n    os.write(1, b'noise ' * 50 + b'\\n')\n" \
             "    time.sleep(0.001)\n"
    procs = []

    def launch(local_dir, sup_id, tid, port, execs, install, rotation):
        out.parent.mkdir(exist_ok=True)
        with open(out, "ab") as stdout:
            procs.append(subprocess.Popen([sys.executable, "-c", chatty], stdout=stdout))
        return sl.WorkerRecord("w1", tid, port, execs, procs[-1].pid, time.time(), procs[-1])

    monkeypatch.setattr(sup_module, "launch_worker", launch)
    try:
        sup.sync()
        assert len(procs) == 1
        for _ in range(3):
            wait_until(lambda: out.stat().st_size > 20_000, 10, message="the worker writes")
            sup.sync()
            assert out.stat().st_size < 20_000
        assert len(procs) == 1                        # the same worker throughout
        backups = sorted(p.name for p in out.parent.glob(f"{out.name}.*"))
        assert backups == [f"{out.name}.1", f"{out.name}.2"]
        assert all(p.stat().st_size <= 20_000 for p in out.parent.glob(f"{out.name}.*"))
        assert not out.read_bytes().startswith(b"\0")  # written on at its start, no hole
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        store.close()
