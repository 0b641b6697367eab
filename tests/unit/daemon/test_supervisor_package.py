"""A package that changed on the supervisor's disk since its download (a file truncated or gone)
would fail every worker started from it, for ever: before it launches a worker the supervisor
finds the change, says so in one line, and downloads the package again."""
from __future__ import annotations

import io
import json
import logging
import time
import types
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from squall.daemon import nimbus_client, packaging
from squall.daemon import supervisor as sup_module
from squall.daemon import supervisor_local as sl
from squall.daemon.nimbus_client import NimbusUnavailableError
from squall.daemon.supervisor import Supervisor
from squall.state.cluster_state import ClusterState
from squall.state.memory import MemoryStateStore

TID = "wc-1-1"


def _package() -> dict[str, bytes]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("wordcount.py", "WORDS = ['a', 'b']\n" * 20)
    return {packaging.CODE_FILE: buf.getvalue(),
            packaging.CONF_FILE: json.dumps({"topology.name": "wc", "k": "v" * 60}).encode(),
            packaging.TOPOLOGY_FILE: json.dumps({"components": {}}).encode()}


class FakeNimbus:
    """Stands in for NimbusClient: serves :func:`_package`, counting the files sent; raises
    NimbusUnavailableError while ``down``."""

    files = _package()
    sent: list[str] = []
    down = False

    def __init__(self, conf: Any, **_: Any) -> None:
        pass

    def download(self, tid: str, file: str) -> bytes:
        if FakeNimbus.down:
            raise NimbusUnavailableError("no nimbus leader answered")
        FakeNimbus.sent.append(file)
        return self.files[file]

    def close(self) -> None:
        pass


@pytest.fixture
def supervisor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(nimbus_client, "NimbusClient", FakeNimbus)
    FakeNimbus.sent, FakeNimbus.down = [], False
    conf = {"storm.local.dir": str(tmp_path), "supervisor.slots.ports": [6700],
            "squall.state": "memory", "squall.state.memory.namespace": uuid.uuid4().hex}
    sup = Supervisor(conf)
    store = MemoryStateStore(conf)
    store.start()
    sup.state = ClusterState(store)
    sup.state.setup()
    monkeypatch.setattr(sup, "resources", {}, raising=False)     # set by start()
    yield sup
    store.close()


def _errors(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.ERROR and r.name.startswith("squall")]


def test_a_truncated_conf_is_downloaded_again_before_the_worker_is_relaunched(
        supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    supervisor.state.set_assignment(TID, {"node_host": {supervisor.id: "h"},
                                          "executor_node_port": {"[1, 1]": [supervisor.id,
                                                                            6700]}})
    package = supervisor.local_dir / "supervisor" / "stormdist" / TID
    started: list[bytes] = []      # the conf each launched worker would read

    def launch(local_dir: Path, sup_id: str, tid: str, port: int, execs: Any, *_: Any
               ) -> sl.WorkerRecord:
        started.append((package / packaging.CONF_FILE).read_bytes())
        return sl.WorkerRecord(f"w{len(started)}", tid, port, execs, 0, time.time())

    monkeypatch.setattr(sup_module, "launch_worker", launch)
    monkeypatch.setattr(sup_module, "stop_workers", lambda *a: None)
    caplog.set_level(logging.INFO, logger="squall")
    supervisor.sync()
    assert len(started) == 1 and len(FakeNimbus.sent) == 3
    assert _errors(caplog) == []

    conf = package / packaging.CONF_FILE
    conf.write_bytes(conf.read_bytes()[:40])           # the disk lost the end of it
    supervisor.workers.clear()                         # and the worker died (kill -9)
    supervisor.sync()
    assert started[-1] == FakeNimbus.files[packaging.CONF_FILE]
    assert len(FakeNimbus.sent) == 6                   # downloaded again, once
    [error] = _errors(caplog)
    assert error == (f"the package of topology {TID} in {package} changed since it was "
                     f"downloaded ({packaging.CONF_FILE}); downloading it again")


def test_damaged_code_is_not_run_while_nimbus_cannot_send_it_again(
        supervisor: Supervisor, caplog: Any) -> None:
    assert supervisor.ensure_code(TID)
    package = supervisor.local_dir / "supervisor" / "stormdist" / TID
    assert supervisor.code_intact(TID) and len(FakeNimbus.sent) == 3    # nothing to fetch
    module = package / packaging.CODE_DIR / "wordcount.py"
    module.write_text(module.read_text()[:30])
    FakeNimbus.down = True
    caplog.set_level(logging.WARNING, logger="squall")
    assert not supervisor.code_intact(TID)              # no worker is launched from it
    assert len(_errors(caplog)) == 1 and "code/wordcount.py" in _errors(caplog)[0]
    assert not supervisor.ensure_code(TID)              # the next rounds try again
    FakeNimbus.down = False
    assert supervisor.ensure_code(TID) and supervisor.code_intact(TID)
    assert module.read_bytes() == zipfile.ZipFile(io.BytesIO(
        FakeNimbus.files[packaging.CODE_FILE])).read("wordcount.py")
    assert len(_errors(caplog)) == 1


def test_a_package_kept_without_digests_is_downloaded_again(supervisor: Supervisor) -> None:
    # one a supervisor from before the digests downloaded: its files cannot be vouched for
    assert supervisor.ensure_code(TID)
    package = supervisor.local_dir / "supervisor" / "stormdist" / TID
    (package / packaging.DIGEST_FILE).unlink()
    assert supervisor.ensure_code(TID) and len(FakeNimbus.sent) == 6
    assert (package / packaging.DIGEST_FILE).is_file()


def test_a_package_nimbus_sends_that_cannot_be_used_is_reported_once_not_retried_quietly(
        supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    from squall.daemon.nimbus_info import start_failure_reason
    supervisor.state.set_assignment(TID, {"node_host": {supervisor.id: "h"},
                                          "executor_node_port": {"[1, 1]": [supervisor.id,
                                                                            6700]}})
    good = FakeNimbus.files[packaging.CODE_FILE]
    monkeypatch.setattr(FakeNimbus, "files", {**FakeNimbus.files,
                                              packaging.CODE_FILE: good[: len(good) // 2]})
    started: list[str] = []
    monkeypatch.setattr(sup_module, "launch_worker", lambda _d, _s, tid, port, execs, *_: (
        started.append(tid) or sl.WorkerRecord("w1", tid, port, execs, 0, time.time())))
    caplog.set_level(logging.INFO, logger="squall")
    for _ in range(3):
        supervisor.sync()
    assert started == [] and len(FakeNimbus.sent) == 3      # asked once, not every round
    [error] = _errors(caplog)
    assert error.startswith(f"the package of topology {TID} that nimbus sent cannot be used: "
                            f"the code package is not a valid zip file")
    assert "yet" not in caplog.text
    errors = supervisor.state.errors(TID)
    reason = start_failure_reason(errors, {}, time.time(), {(supervisor.id, 6700)})
    assert reason.startswith(f"workers fail to start ({supervisor.hostname}:6700): worker on "
                             "port 6700 cannot start: the package nimbus sent cannot be used: "
                             "the code package is not a valid zip file"), reason
    assert sum(len(v) for v in errors.values()) == 1

    later = types.SimpleNamespace(time=time.time, monotonic=lambda: time.monotonic() + 61)
    monkeypatch.setattr(sup_module, "time", later)     # the retry is due
    monkeypatch.setattr(sup_module, "BAD_PACKAGE_RETRY_SECS", 0.0)   # and the next one
    supervisor.sync()
    supervisor.sync()
    assert len(FakeNimbus.sent) == 9 and len(_errors(caplog)) == 1   # said once
    assert sum(len(v) for v in supervisor.state.errors(TID).values()) == 3   # each try
    monkeypatch.setattr(FakeNimbus, "files", {**FakeNimbus.files, packaging.CODE_FILE: good})
    supervisor.sync()
    assert started == [TID]


def test_nimbus_refusing_its_damaged_copy_is_a_package_that_cannot_be_used(
        supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    from squall.errors import TopologyError

    def damaged(self: Any, tid: str, file: str) -> bytes:
        raise TopologyError(f"nimbus's copy of the package of topology {tid} is damaged")

    monkeypatch.setattr(FakeNimbus, "download", damaged)
    caplog.set_level(logging.WARNING, logger="squall")
    assert not supervisor.ensure_code(TID)
    assert not supervisor.ensure_code(TID)
    assert [r.levelname for r in caplog.records] == ["ERROR"]
    assert "nimbus's copy of the package of topology wc-1-1 is damaged" in caplog.text
