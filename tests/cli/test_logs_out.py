"""``squall logs NAME`` prints each worker's ``.out`` file too (its raw stdout/stderr, where
faulthandler writes the stacks of a worker that died of a SIGSEGV), labelled as such, for a
running topology and a killed one alike: it printed only the worker logs, and a user looking
into a segfault never saw the dump."""
from __future__ import annotations

import argparse
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from squall.cli.logs import Follower, Position, WorkerLog, cmd_logs
from squall.daemon._proto import nimbus_pb2 as pb
from squall.daemon.logviewer import LogViewer
from squall.errors import NotAliveError

TID = "seg-1-1700000000"
DUMP = ("--- worker 5f0c starting Mon Dec  1 10:00:00 2026\n"
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f3a (most recent call first):\n"
        '  File "/topologies/crash.py", line 12 in execute\n')


class FakeNimbus:
    """Nimbus naming the topology's two workers on one supervisor, or, ``killed``, knowing
    the name no more (its supervisor still lists it)."""

    logviewer_port = 0
    killed = False

    def __init__(self, conf: Any) -> None:
        pass

    def topology_info(self, name: str) -> dict[str, Any]:
        if self.killed:
            raise NotAliveError(f"no topology named {name!r} is running; running: none")
        return {"id": TID, "assigned_workers": [
            {"host": "127.0.0.1", "port": port, "logviewer_port": self.logviewer_port}
            for port in (6700, 6701)]}

    def cluster_info(self) -> pb.ClusterInfo:
        return pb.ClusterInfo(supervisors=[pb.SupervisorSummary(
            id="s0", hostname="127.0.0.1", ports=[6700, 6701],
            logviewer_port=self.logviewer_port)])

    def close(self) -> None:
        pass


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A supervisor's logs folder, served by its logviewer: the worker on 6700 died of a
    SIGSEGV (its dump in its ``.out``), the one on 6701 wrote nothing outside logging."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / f"{TID}-6700.log").write_text("INFO executing\n")
    (folder / f"{TID}-6700.out").write_text(DUMP)
    (folder / f"{TID}-6701.log").write_text("INFO the other\n")
    (folder / f"{TID}-6701.out").write_text("")
    viewer = LogViewer(folder, "127.0.0.1", 0)
    viewer.start()
    monkeypatch.setattr("squall.daemon.nimbus_client.NimbusClient", FakeNimbus)
    monkeypatch.setattr(FakeNimbus, "logviewer_port", viewer.port)
    try:
        yield folder
    finally:
        viewer.stop()


def logs_args(tail: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(name="seg", follow=False, tail=tail)


def test_a_running_topologys_worker_out_files_follow_their_logs(logs: Path, capsys) -> None:
    assert cmd_logs(logs_args(), {}) == 0
    out, err = capsys.readouterr()
    assert out == ("==> 127.0.0.1:6700 <==\nINFO executing\n"
                   "==> 127.0.0.1:6700 .out (stdout/stderr) <==\n" + DUMP +
                   "==> 127.0.0.1:6701 <==\nINFO the other\n")      # an empty .out: nothing
    assert err == ""
    assert cmd_logs(logs_args(tail=20), {}) == 0
    assert capsys.readouterr()[0] == (
        "==> 127.0.0.1:6700 <==\nINFO executing\n"
        "==> 127.0.0.1:6700 .out (stdout/stderr) <==\n line 12 in execute\n"
        "==> 127.0.0.1:6701 <==\nINFO the other\n")


def test_a_killed_topologys_kept_out_files_are_printed(
        logs: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(FakeNimbus, "killed", True)
    assert cmd_logs(logs_args(), {}) == 0
    out, _ = capsys.readouterr()
    assert out == (f"==> 127.0.0.1:6700 {TID} <==\nINFO executing\n"
                   f"==> 127.0.0.1:6700 {TID} .out (stdout/stderr) <==\n" + DUMP +
                   f"==> 127.0.0.1:6701 {TID} <==\nINFO the other\n")


def test_followed_out_lines_are_labelled(logs: Path, capsys) -> None:
    def at(file: str) -> WorkerLog:
        query = urllib.parse.urlencode({"topology": TID, "port": 6700, "file": file})
        return WorkerLog("127.0.0.1", 6700,
                         f"http://127.0.0.1:{FakeNimbus.logviewer_port}/log?{query}", file)
    follower = Follower({}, {at("log"): Position(), at("out"): Position()})
    follower.poll()
    out = capsys.readouterr()[0].splitlines()
    assert out[0] == "INFO executing"                   # one worker: its log as it is
    assert out[1:] == [f"[127.0.0.1:6700 .out (stdout/stderr)] {line}"
                       for line in DUMP.splitlines()]
