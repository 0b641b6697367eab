"""``squall logs --follow`` against a real logviewer while the worker log rotates: every line
once and in order, whether the new file is still shorter than what was read of the old one or
already longer; a rotation it could not follow (twice between two reads) is said, not hidden."""
from __future__ import annotations

import logging
import logging.handlers
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from squall.cli.logs import Follower, Position, WorkerLog
from squall.daemon.logviewer import LogViewer

TID = "chatty-1-1700000000"
LINE = "printed %05d"          # 13 bytes a line with its newline


class Worker:
    """A worker's log written as a worker writes it: a RotatingFileHandler at ``max_bytes``."""

    def __init__(self, logs: Path, max_bytes: int) -> None:
        self.handler = logging.handlers.RotatingFileHandler(
            logs / f"{TID}-6700.log", maxBytes=max_bytes, backupCount=3, encoding="utf-8")
        self.handler.setFormatter(logging.Formatter("%(message)s"))
        self.logger = logging.Logger("chatty")
        self.logger.addHandler(self.handler)
        self.written = 0

    def write(self, lines: int) -> None:
        for _ in range(lines):
            self.logger.info(LINE, self.written)
            self.written += 1

    def close(self) -> None:
        self.handler.close()


@pytest.fixture
def worker_and_follower(tmp_path: Path) -> Iterator[tuple[Worker, Follower, Path]]:
    logs = tmp_path / "logs"
    logs.mkdir()
    viewer = LogViewer(logs, "127.0.0.1", 0)
    viewer.start()
    worker = Worker(logs, max_bytes=1300)          # 100 lines a file
    query = urllib.parse.urlencode({"topology": TID, "port": 6700, "file": "log"})
    w = WorkerLog("127.0.0.1", 6700, f"http://127.0.0.1:{viewer.port}/log?{query}")
    try:
        yield worker, Follower({}, {w: Position()}), logs
    finally:
        worker.close()
        viewer.stop()


def printed(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"printed (\d+)", text)]


def test_every_line_once_and_in_order_across_rotations(worker_and_follower, capsys) -> None:
    worker, follower, logs = worker_and_follower
    worker.write(30)
    follower.poll()
    # one rotation, and the new file already longer than what was read of the old one: it
    # was taken for the same file and read from that offset, skipping 70 + 30 lines
    worker.write(150)
    follower.poll()
    assert (logs / f"{TID}-6700.log.1").exists()
    # another, the new file shorter than what was read: the old file's last lines were lost
    worker.write(60)
    follower.poll()
    worker.write(5)
    follower.poll()
    out, err = capsys.readouterr()
    assert printed(out) == list(range(worker.written)) and err == ""


def test_a_rotation_it_could_not_follow_is_said(worker_and_follower, capsys) -> None:
    worker, follower, _ = worker_and_follower
    worker.write(10)
    follower.poll()
    worker.write(250)          # two rotations: the file it read is .log.2 now
    follower.poll()
    worker.write(3)
    follower.poll()
    out, err = capsys.readouterr()
    assert err == ("squall: 127.0.0.1:6700: the log rotated more than once since the last "
                   "read; lines between were not printed\n")
    # what it printed is in order: the start, then the new file from its start
    got = printed(out)
    assert got[:10] == list(range(10)) and got == sorted(got) and got[-1] == worker.written - 1
    assert got[10:] == list(range(got[10], worker.written))
