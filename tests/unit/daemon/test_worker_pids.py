"""The pids rule (seed 002): every process registered in a worker's ``pids/`` dir is stopped
with the worker, each checked by its start time (a recycled pid is left alone), also one
that left the worker's process group, and what a registered process that died (with its
worker) left running in its group."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from squall.daemon.supervisor_local import (
    WorkerRecord,
    kill_worker,
    pid_alive,
    register_pid,
    registered_process,
    worker_dir,
)
from squall.testing import wait_until

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def _spawn() -> subprocess.Popen[bytes]:
    return subprocess.Popen(SLEEP, start_new_session=True, stdin=subprocess.DEVNULL)


def test_a_registered_pid_is_recognised_by_its_start_time(tmp_path: Path) -> None:
    proc = _spawn()
    try:
        register_pid(tmp_path, proc.pid)
        assert registered_process(tmp_path, proc.pid)
        (tmp_path / str(proc.pid)).write_text("12345")       # another process's start
        assert not registered_process(tmp_path, proc.pid)
        # a pid file without a start time: the process must have started before it
        (tmp_path / str(proc.pid)).write_text("")
        assert registered_process(tmp_path, proc.pid)
        hour_ago = time.time() - 3600
        os.utime(tmp_path / str(proc.pid), (hour_ago, hour_ago))
        assert not registered_process(tmp_path, proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_a_child_that_left_the_workers_group_is_stopped_with_it(tmp_path: Path) -> None:
    worker = _spawn()
    child = _spawn()                      # its own session: not in the worker's group
    rec = WorkerRecord("w1", "t-1-1", 6700, [[1, 1]], worker.pid, time.time(), worker)
    pids = worker_dir(tmp_path, "w1") / "pids"
    register_pid(pids, worker.pid)
    register_pid(pids, child.pid)
    try:
        kill_worker(tmp_path, rec, grace=5)
        assert worker.poll() is not None
        wait_until(lambda: child.poll() is not None, 10, message="the child survived")
        assert not worker_dir(tmp_path, "w1").exists()
    finally:
        for p in (worker, child):
            if p.poll() is None:
                p.kill()
            p.wait()


def test_the_children_a_dead_registered_process_left_in_its_group_are_stopped(
        tmp_path: Path) -> None:
    # a shell subprocess killed with its worker (PR_SET_PDEATHSIG) leaves the children it
    # started: they share its process group, not the worker's
    worker = _spawn()
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; "
         "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
         "print(c.pid, flush=True); time.sleep(60)"],
        start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    grandchild = int(leader.stdout.readline())
    rec = WorkerRecord("w3", "t-1-1", 6702, [[1, 1]], worker.pid, time.time(), worker)
    pids = worker_dir(tmp_path, "w3") / "pids"
    register_pid(pids, worker.pid)
    register_pid(pids, leader.pid)
    leader.kill()                                   # dies with the worker, as on kill -9
    leader.wait()
    try:
        assert pid_alive(grandchild)
        kill_worker(tmp_path, rec, grace=5)
        wait_until(lambda: not pid_alive(grandchild), 10,
                   message="the dead subprocess's child survived its worker")
    finally:
        if pid_alive(grandchild):
            os.kill(grandchild, 9)
        if worker.poll() is None:
            worker.kill()
        worker.wait()


def test_a_recycled_pid_in_the_pids_dir_is_left_alone(tmp_path: Path) -> None:
    worker = _spawn()
    bystander = _spawn()
    rec = WorkerRecord("w2", "t-1-1", 6701, [[1, 1]], worker.pid, time.time(), worker)
    pids = worker_dir(tmp_path, "w2") / "pids"
    register_pid(pids, worker.pid)
    (pids / str(bystander.pid)).write_text("1")      # registered by a process long gone
    try:
        kill_worker(tmp_path, rec, grace=5)
        assert worker.poll() is not None
        assert pid_alive(bystander.pid) and bystander.poll() is None
    finally:
        for p in (worker, bystander):
            if p.poll() is None:
                p.kill()
            p.wait()
