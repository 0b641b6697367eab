"""``squall logs NAME`` of a topology killed a moment ago: nimbus knows the name no more, but
its supervisors keep its logs for ``worker.log.cleanup.grace.secs`` and their logviewers serve
them; the command printed only ``no topology named ... is running``."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from squall.cli.logs import cmd_logs
from squall.daemon._proto import nimbus_pb2 as pb
from squall.daemon.logviewer import LogViewer
from squall.errors import NotAliveError


class FakeNimbus:
    """Nimbus after the kill: the name is unknown; the supervisors are listed."""

    logviewer_ports: list[int] = []

    def __init__(self, conf: Any) -> None:
        pass

    def topology_info(self, name: str) -> dict[str, Any]:
        raise NotAliveError(f"no topology named {name!r} is running; running: none")

    def cluster_info(self) -> pb.ClusterInfo:
        return pb.ClusterInfo(supervisors=[
            pb.SupervisorSummary(id=f"s{i}", hostname="127.0.0.1", ports=[6700],
                                 logviewer_port=port)
            for i, port in enumerate(self.logviewer_ports)])

    def close(self) -> None:
        pass


@pytest.fixture
def supervisor_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A supervisor's logs folder served by its logviewer, which nimbus names."""
    logs = tmp_path / "logs"
    logs.mkdir()
    viewer = LogViewer(logs, "127.0.0.1", 0)
    viewer.start()
    monkeypatch.setattr("squall.daemon.nimbus_client.NimbusClient", FakeNimbus)
    monkeypatch.setattr(FakeNimbus, "logviewer_ports", [viewer.port])
    try:
        yield logs
    finally:
        viewer.stop()


def logs_args(name: str, tail: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(name=name, follow=False, tail=tail)


def test_a_killed_topologys_kept_logs_are_printed(supervisor_logs: Path, capsys) -> None:
    (supervisor_logs / "ci-1-1700000000-6700.log").write_text("INIT-FAILS: no database\n")
    (supervisor_logs / "ci-1-1700000000-6700.out").write_text("raw\n")
    (supervisor_logs / "ci-2-1700000100-6701.log").write_text("the second run\n")
    (supervisor_logs / "cix-1-1700000000-6700.log").write_text("another topology\n")
    assert cmd_logs(logs_args("ci"), {}) == 0
    out, err = capsys.readouterr()
    assert out == ("==> 127.0.0.1:6700 ci-1-1700000000 <==\nINIT-FAILS: no database\n"
                   "==> 127.0.0.1:6700 ci-1-1700000000 .out (stdout/stderr) <==\nraw\n"
                   "==> 127.0.0.1:6701 ci-2-1700000100 <==\nthe second run\n")
    assert err == ("squall: topology 'ci' is not running; printing the logs its supervisors "
                   "still keep\n")
    assert cmd_logs(logs_args("ci", tail=4), {}) == 0
    assert capsys.readouterr()[0].endswith("<==\nrun\n")


def test_with_no_kept_logs_it_is_one_line(supervisor_logs: Path, capsys) -> None:
    (supervisor_logs / "other-1-1700000000-6700.log").write_text("not ci's\n")
    with pytest.raises(NotAliveError) as raised:
        cmd_logs(logs_args("ci"), {})
    assert str(raised.value) == ("no topology named 'ci' is running; running: none; no "
                                 "supervisor keeps logs of a topology named 'ci'")
    assert capsys.readouterr() == ("", "")


def test_a_logviewer_that_cannot_be_asked_is_one_line_and_the_others_are_read(
        supervisor_logs: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from squall.daemon.ports import free_port
    (supervisor_logs / "ci-1-1700000000-6700.log").write_text("kept\n")
    down = free_port("127.0.0.1")
    monkeypatch.setattr(FakeNimbus, "logviewer_ports", [down, *FakeNimbus.logviewer_ports])
    assert cmd_logs(logs_args("ci"), {}) == 0
    out, err = capsys.readouterr()
    assert out.endswith("<==\nkept\n")
    assert err.splitlines()[0].startswith(f"squall: 127.0.0.1:{down}: cannot ask its "
                                          "logviewer which logs it keeps: ")
