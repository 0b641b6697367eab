"""A package damaged on nimbus's disk (a file truncated since it was stored) is one topology's
problem: one ERROR line names the file, that topology's status reason says so, nothing damaged
is sent to a supervisor, and every other topology is scheduled and listed. A nimbus that cannot
store a package it downloads (its disk full) says so once, as its own fault. Nimbus's parts over
the memory store, no gRPC server."""
from __future__ import annotations

import io
import json
import logging
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from leader_parts import ROOMY, LeaderParts
from squall import drivers
from squall.daemon import nimbus_client, packaging
from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_info import NimbusReads
from squall.daemon.nimbus_leader import Leadership
from squall.daemon.nimbus_replication import Replication
from squall.errors import NotAliveError, SquallError, TopologyError
from squall.state.cluster_state import ClusterState

GOOD, BAD = "good-1-1000", "bad-2-1001"


class _Leading:
    """The election of a nimbus that leads."""

    is_leader = True

    def contenders(self) -> list[str]:
        return ["n1:6627"]

    def run(self, func: Any) -> bool:
        return False

    def cancel(self) -> None:
        pass


def _errors(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.ERROR and r.name.startswith("squall")]


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("topo.py", "x = 1\n" * 50)
    return buf.getvalue()


@pytest.fixture
def leader(tmp_path: Path) -> Any:
    """Two topologies stored by a previous life of this nimbus; ``bad``'s conf file is
    truncated on its disk before this nimbus reads it."""
    parts = LeaderParts(tmp_path, {"squall.scheduler": "even"}, tid=GOOD, name="good",
                        parallelism=1)
    parts.state.register_supervisor("sup-a", {"hostname": "host-a", "ports": [6700, 6701],
                                              "resources": ROOMY, "time_secs": 1000,
                                              "uptime_secs": 100})
    yield parts
    parts.store.close()


def _store_truncated(parts: LeaderParts, tmp_path: Path) -> Path:
    """``BAD``, stored as ``GOOD`` was, with its conf then truncated; returns that file."""
    source = parts.code.directory(GOOD)
    target = parts.code.directory(BAD)
    target.mkdir()
    for file in packaging.PACKAGE_FILES:
        (target / file).write_bytes((source / file).read_bytes())
    conf = target / packaging.CONF_FILE
    conf.write_text('{"topology.workers": 1, "topology.na')
    base = parts.state.get_storm(GOOD)
    parts.state.set_storm(BAD, {**base, "name": "bad", "launch_time": 999})   # the older
    return conf


def test_an_unreadable_conf_is_its_topologys_status_and_the_others_are_scheduled_and_listed(
        leader: LeaderParts, tmp_path: Path, caplog: Any) -> None:
    conf = _store_truncated(leader, tmp_path)
    caplog.set_level(logging.INFO, logger="squall")
    for _ in range(3):
        leader.lifecycle.monitor_pass()
    assert (leader.state.get_assignment(GOOD) or {}).get("executor_node_port")
    assert leader.state.get_assignment(BAD) is None
    reason = str(leader.state.get_storm(BAD)["status_reason"])
    assert reason.startswith(f"cannot be scheduled: its package on nimbus is damaged "
                             f"(cannot read {conf}: "), reason
    assert reason.endswith("; kill it and submit it again")
    [error] = _errors(caplog)                          # once, not at every pass
    assert f"the package of topology {BAD} on this nimbus is damaged: cannot read {conf}" \
        in error
    reads = NimbusReads(leader.state, leader.code, Leadership(_Leading(), "n1:6627"))
    listed = {t["name"]: t for t in reads.topology_summaries()}
    assert listed["bad"]["status_reason"] == reason and listed["bad"]["num_tasks"] == 0
    assert listed["good"]["status_reason"] == "" and listed["good"]["num_tasks"] > 0
    assert reads.topology_info("bad")["status_reason"] == reason
    with pytest.raises(TopologyError, match="cannot rebalance topology .*damaged"):
        leader.lifecycle.rebalance("bad", 0, num_workers=2)
    leader.lifecycle.kill("bad", 0)                    # the way out works
    leader.lifecycle.monitor_pass()
    assert leader.state.get_storm(BAD) is None


def test_a_conf_that_can_be_read_again_clears_the_status(leader: LeaderParts,
                                                         tmp_path: Path) -> None:
    conf = _store_truncated(leader, tmp_path)
    leader.lifecycle.monitor_pass()
    assert leader.state.get_storm(BAD)["status_reason"]
    packaging.write_json(conf, {})
    leader.lifecycle.monitor_pass()
    assert leader.state.get_storm(BAD)["status_reason"] == ""
    assert (leader.state.get_assignment(BAD) or {}).get("executor_node_port")


def _stored(tmp_path: Path) -> tuple[CodeStore, Path]:
    """A code store holding ``GOOD`` as a submit stores it (digests recorded)."""
    code = CodeStore(tmp_path / "nimbus", {})
    code.prepare()
    from squall import Spout, TopologyBuilder

    class S(Spout):
        outputs = ["x"]

    b = TopologyBuilder()
    b.set_spout("s", S)
    with code.staged({}, b.create_topology().to_json(), _zip()) as staged:
        code.install(staged, GOOD)
    return code, code.directory(GOOD) / packaging.CODE_FILE


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_a_zip_truncated_since_submit_is_found_at_start_and_never_sent(tmp_path: Path,
                                                                       caplog: Any) -> None:
    code, zip_file = _stored(tmp_path)
    assert code.package_file(GOOD, packaging.CODE_FILE) == zip_file
    _truncate(zip_file)
    caplog.set_level(logging.INFO, logger="squall")
    restarted = CodeStore(tmp_path / "nimbus", {})
    restarted.prepare()
    [error] = _errors(caplog)
    assert f"the package of topology {GOOD} on this nimbus is damaged: {zip_file} changed " \
           f"since it was stored" in error
    for file in packaging.PACKAGE_FILES:               # no file of it goes to a supervisor
        with pytest.raises(TopologyError, match=f"nimbus's copy of the package of topology "
                                                f"{GOOD} is damaged"):
            restarted.package_file(GOOD, file)
    assert restarted.problem(GOOD).startswith("its package on nimbus is damaged (")
    assert restarted.packages() == [] and restarted.damaged() == [GOOD]  # not offered
    assert len(_errors(caplog)) == 1


def test_a_zip_truncated_while_nimbus_runs_is_found_when_asked_for(tmp_path: Path,
                                                                   caplog: Any) -> None:
    code, zip_file = _stored(tmp_path)
    _truncate(zip_file)
    caplog.set_level(logging.ERROR, logger="squall")
    for _ in range(2):
        with pytest.raises(TopologyError, match="damaged"):
            code.package_file(GOOD, packaging.CODE_FILE)
    assert len(_errors(caplog)) == 1 and str(zip_file) in _errors(caplog)[0]


def test_a_package_stored_without_digests_is_served_unchecked(tmp_path: Path) -> None:
    # one stored by the release before the digests: nothing to check it against
    code, zip_file = _stored(tmp_path)
    (zip_file.parent / packaging.DIGEST_FILE).unlink()
    _truncate(zip_file)
    restarted = CodeStore(tmp_path / "nimbus", {})
    restarted.prepare()
    assert restarted.package_file(GOOD, packaging.CODE_FILE) == zip_file
    assert restarted.problem(GOOD) == "" and restarted.packages() == [GOOD]


def test_a_damaged_package_is_its_topologys_status_reason_while_it_runs(
        leader: LeaderParts) -> None:
    directory = leader.code.directory(GOOD)
    packaging.record_digests(directory, packaging.PACKAGE_FILES)
    leader.lifecycle.monitor_pass()
    assert leader.state.get_storm(GOOD)["status_reason"] == ""
    _truncate(directory / packaging.TOPOLOGY_FILE)
    with pytest.raises(TopologyError):
        leader.code.package_file(GOOD, packaging.TOPOLOGY_FILE)
    leader.lifecycle.monitor_pass()
    reason = leader.state.get_storm(GOOD)["status_reason"]
    assert reason.startswith("its package on nimbus is damaged (") and \
        packaging.TOPOLOGY_FILE in reason
    # its workers keep their slots: the scheduled topology read its package before
    assert (leader.state.get_assignment(GOOD) or {}).get("executor_node_port")


# -- replication ---------------------------------------------------------------------------------
class _OtherNimbus:
    """Stands in for NimbusClient: the other nimbus gives ``files``."""

    files: dict[str, bytes] = {}

    def __init__(self, conf: Any, **_: Any) -> None:
        pass

    def download(self, tid: str, file: str) -> bytes:
        if file not in self.files:
            raise NotAliveError(f"nimbus has no package for topology {tid!r}")
        return self.files[file]

    def close(self) -> None:
        pass


@pytest.fixture
def replication(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """This nimbus (n2) and the leader n1, which holds ``GOOD``'s package."""
    conf = {"squall.state": "memory", "squall.state.memory.namespace": uuid.uuid4().hex}
    store = drivers.driver("state", conf)
    store.start()
    state = ClusterState(store, conf)
    state.setup()
    source, _ = _stored(tmp_path / "leader")
    _OtherNimbus.files = {f: (source.directory(GOOD) / f).read_bytes()
                          for f in packaging.PACKAGE_FILES}
    monkeypatch.setattr(nimbus_client, "NimbusClient", _OtherNimbus)
    state.register_nimbus("n1:6627", {"host": "n1", "port": 6627, "packages": [GOOD]})
    code = CodeStore(tmp_path / "standby" / "nimbus", {})
    code.prepare()
    yield Replication(state, code, "n2:6627", {"host": "n2", "port": 6627},
                      lambda: "n1:6627", {}), code, state
    store.close()


def test_a_nimbus_whose_disk_is_full_says_so_once_and_blames_no_one(
        replication: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    repl, code, state = replication

    def full(self: Path, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    caplog.set_level(logging.INFO, logger="squall")
    with monkeypatch.context() as m:
        m.setattr(Path, "write_bytes", full)
        for _ in range(3):
            repl.sync([GOOD])
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert lines == [f"nimbus cannot write its storm.local.dir ({code.stormdist}): "
                     "No space left on device"], lines
    assert repl.unfound == set() and not list(code.stormdist.iterdir())   # nothing half-done
    assert GOOD not in state.nimbuses()["n2:6627"]["packages"]
    repl.sync([GOOD])                                  # room again
    assert code.packages() == [GOOD] and GOOD in state.nimbuses()["n2:6627"]["packages"]


def test_a_damaged_package_is_replaced_by_another_nimbuss_good_copy(
        replication: Any, caplog: Any) -> None:
    repl, code, _ = replication
    repl.sync([GOOD])
    zip_file = code.directory(GOOD) / packaging.CODE_FILE
    _truncate(zip_file)
    with pytest.raises(TopologyError):
        code.package_file(GOOD, packaging.CODE_FILE)
    repl.sync([GOOD])
    assert code.damaged() == [] and code.package_file(GOOD, packaging.CODE_FILE) == zip_file
    assert zip_file.read_bytes() == _OtherNimbus.files[packaging.CODE_FILE]


def test_a_submit_records_the_digests_of_its_package(tmp_path: Path) -> None:
    code, zip_file = _stored(tmp_path)
    recorded = json.loads((zip_file.parent / packaging.DIGEST_FILE).read_text())
    assert sorted(recorded) == sorted(packaging.PACKAGE_FILES)


def test_a_full_disk_at_submit_still_says_so_each_time(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       caplog: Any) -> None:
    code = CodeStore(tmp_path / "nimbus", {})
    code.prepare()

    def full(self: Path, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    caplog.set_level(logging.ERROR, logger="squall")
    for _ in range(2):
        with pytest.raises(SquallError, match="nimbus cannot write its storm.local.dir"):
            with code.staged({}, {}, _zip()):
                pass
    assert len(_errors(caplog)) == 2                   # each refused submit, in its log too
