"""A supervisor's hold on its storm.local.dir: deleted under it, the directory gets back the
conf file its workers read and the lock that keeps a second supervisor off it (or the
supervisor stops, when another one took it); a full disk where a page frees now and then does
not make it leave and rejoin over and over. Supervisors over the memory store, no workers."""
from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from squall import config
from squall.daemon.ports import free_port
from squall.daemon.supervisor import Supervisor
from squall.daemon.worker_main import supervisor_conf_path
from squall.errors import SquallError
from squall.state.cluster_state import ClusterState
from squall.state.memory import MemoryStateStore


def _conf(local_dir: Path, **more: Any) -> dict[str, Any]:
    return {**config.defaults(), "storm.local.dir": str(local_dir),
            "supervisor.slots.ports": [free_port()], "squall.state": "memory",
            "squall.state.memory.namespace": uuid.uuid4().hex, "logviewer.port": 0, **more}


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A started supervisor whose rounds the test runs itself (``sync()``)."""
    sup = Supervisor(_conf(tmp_path / "local"))
    monkeypatch.setattr(sup, "_monitor_loop", lambda: None)
    sup.start()
    yield sup
    sup.stop()


def test_a_deleted_local_dir_gets_its_workers_conf_and_lock_back(started: Supervisor,
                                                                 caplog: Any) -> None:
    local = started.local_dir
    shutil.rmtree(local)                               # a /tmp cleaner, an rm -rf
    caplog.set_level(logging.INFO, logger="squall")
    started.sync()
    # what every worker launched from now on reads first (its state store, ...)
    conf = json.loads(supervisor_conf_path(local).read_text())
    assert conf["squall.state"] == "memory" and conf["storm.local.dir"] == str(local)
    assert oct(supervisor_conf_path(local).stat().st_mode & 0o777) == "0o600"
    assert (local / "supervisor.lock").read_text() == f"{os.getpid()}\n"
    assert (local / "supervisor" / "localstate").is_file()       # its id survives a restart
    with pytest.raises(SquallError, match="another supervisor .* runs on storm.local.dir"):
        Supervisor(started.conf).start()               # a second one is refused again
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2 and "holds the directory again" in warnings[0], warnings
    started.sync()                                     # nothing more to say
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 2


def test_a_supervisor_whose_deleted_dir_another_took_stops_with_one_line(
        started: Supervisor, caplog: Any) -> None:
    local = started.local_dir
    shutil.rmtree(local)
    local.mkdir()
    other = open(local / "supervisor.lock", "a+")      # another supervisor started there
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        other.write("4242\n")
        other.flush()
        caplog.set_level(logging.ERROR, logger="squall")
        started.sync()
        stopped = threading.Thread(target=started.wait)
        stopped.start()
        stopped.join(10)
        assert not stopped.is_alive()                  # it stops
        [line] = [r.getMessage() for r in caplog.records]
        assert line == (f"another supervisor (pid 4242) took storm.local.dir {local} after "
                        f"its supervisor.lock was deleted; this supervisor stops (one "
                        f"supervisor a directory)")
        assert started.failure.endswith("this supervisor stopped")    # `squall supervisor`
    finally:                                                           # exits 2 with it
        other.close()


# -- a full disk -----------------------------------------------------------------------------
class Disk:
    """What the supervisor finds of its local dir: whether its probe can be written, how
    much is free."""

    def __init__(self) -> None:
        self.writable, self.free = True, 10 * 2**30

    def statvfs(self, path: Any) -> Any:
        class St:
            f_frsize = 4096
            f_bavail = self.free // 4096
        return St()


@pytest.fixture
def supervisor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    conf = {"storm.local.dir": str(tmp_path), "supervisor.slots.ports": [6700],
            "squall.state": "memory", "squall.state.memory.namespace": uuid.uuid4().hex,
            "supervisor.local.dir.min.free.mb": 16}
    sup = Supervisor(conf)
    store = MemoryStateStore(conf)
    store.start()
    sup.state = ClusterState(store)
    sup.state.setup()
    monkeypatch.setattr(sup, "resources", {}, raising=False)      # set by start()
    disk = Disk()
    real_write = Path.write_bytes

    def write_bytes(path: Path, data: bytes) -> int:
        if not disk.writable and path.name.startswith(".probe-"):
            raise OSError(28, "No space left on device")
        return real_write(path, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    monkeypatch.setattr(os, "statvfs", disk.statvfs)
    yield sup, disk
    store.close()


def test_a_full_disk_keeps_the_supervisor_out_until_it_has_room(supervisor: Any,
                                                                caplog: Any) -> None:
    sup, disk = supervisor
    sup.sync()
    assert sup.state.supervisor_ids() == [sup.id]
    caplog.set_level(logging.INFO, logger="squall")
    disk.writable, disk.free = False, 0
    sup.sync()
    assert sup.state.supervisor_ids() == []            # it leaves: nimbus moves its work
    disk.writable, disk.free = True, 8192               # a worker's directory removed
    for _ in range(5):
        sup.sync()
        assert sup.state.supervisor_ids() == []        # no rejoin on a page or two
    disk.free = 15 * 2**20
    sup.sync()
    assert sup.state.supervisor_ids() == []
    disk.free = 16 * 2**20
    sup.sync()
    assert sup.state.supervisor_ids() == [sup.id]      # room again: back
    lines = [(r.levelname, r.getMessage()) for r in caplog.records
             if r.name == "squall.daemon.supervisor"]
    assert [level for level, _ in lines] == ["ERROR", "WARNING", "INFO"], lines
    assert lines[1][1] == (f"supervisor {sup.id} can write its local dir again, but "
                           f"{sup.local_dir} has 0.0 MB free, under "
                           f"supervisor.local.dir.min.free.mb (16): it comes back once it "
                           f"has that room")


def test_no_floor_comes_back_as_soon_as_it_can_write(supervisor: Any) -> None:
    sup, disk = supervisor
    sup = Supervisor({**sup.conf, "supervisor.local.dir.min.free.mb": 0})
    sup.state = supervisor[0].state
    disk.writable = False
    sup.sync()
    assert sup.state.supervisor_ids() == []
    disk.writable, disk.free = True, 0
    sup.resources = {}
    sup.sync()
    assert sup.state.supervisor_ids() == [sup.id]
