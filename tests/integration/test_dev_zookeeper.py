"""`squall dev-zookeeper` (DevZooKeeper.main) serves clients until interrupted."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from squall.daemon.dev_zookeeper import DevZooKeeper, four_letter_word
from squall.errors import StateError
from squall.state.zookeeper import ZooKeeperStateStore
from squall.testing.waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("where", ["absolute", "relative", "default"])
def test_dev_zookeeper_runs_in_the_foreground_until_ctrl_c(tmp_path: Path, where: str) -> None:
    # a relative directory (the default storm.local.dir is squall-local) named nothing from
    # the directory Java runs in: "zoo.cfg file is missing"
    dirs = {"absolute": ["--dir", str(tmp_path / "zk")], "relative": ["--dir", "zk"],
            "default": []}[where]
    # as from a terminal: a test process started in the background (pytest-xdist's) passes
    # on SIGINT ignored
    proc = subprocess.Popen(
        [sys.executable, "-m", "squall.daemon.dev_zookeeper", "--port", "0", *dirs],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.search(r"127\.0\.0\.1:(\d+)", first)
        assert match, f"unexpected banner: {first!r} {proc.stderr.read() if not first else ''}"
        port = int(match.group(1))
        assert four_letter_word("127.0.0.1", port, "ruok") == "imok"
        store = ZooKeeperStateStore({"storm.zookeeper.servers": ["127.0.0.1"],
                                     "storm.zookeeper.port": port})
        store.start()
        store.put("/hello", b"world")
        assert store.get("/hello") == b"world"
        store.close()
        proc.send_signal(signal.SIGINT)
        # stop() gives the JVM 10 s after SIGTERM, then SIGKILLs it and waits up to 10 s more
        assert proc.wait(30) == 0
        with pytest.raises(OSError):
            four_letter_word("127.0.0.1", port, "ruok")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = DevZooKeeper(tmp_path / "zk", port=port)
        # refused before the JVM starts: a server already there would answer for this one
        with pytest.raises(StateError, match=f"127.0.0.1:{port} is already in use"):
            server.start()
        assert not server.is_running()
    with pytest.raises(StateError, match="port must be 0 .a free one. to 65535, got 70000"):
        DevZooKeeper(tmp_path / "zk", port=70000)


def test_a_restarted_server_keeps_its_port_and_data(tmp_path: Path) -> None:
    with DevZooKeeper(tmp_path / "zk") as server:
        port = server.port
        store = ZooKeeperStateStore(server.conf("/keep"))
        store.start()
        store.put("/kept", b"yes")
        store.close()
        server.stop()
        assert not server.is_running()
        server.start()
        assert server.port == port
        store = ZooKeeperStateStore(server.conf("/keep"))
        store.start()
        assert store.get("/kept") == b"yes"
        store.close()


def _processes_mentioning(text: str) -> list[int]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text.encode() in (proc / "cmdline").read_bytes():
                    out.append(int(proc.name))
            except OSError:
                continue
    return out


def _running(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return b"Z" not in stat.read_bytes().split(b")")[-1][:3]
    except OSError:
        return False


@pytest.mark.parametrize(("sig", "code"), [
    (signal.SIGTERM, 0),            # a service manager
    (signal.SIGHUP, 0),             # the terminal of a `squall dev-zookeeper &` closed
    (signal.SIGKILL, -signal.SIGKILL),
], ids=["SIGTERM", "SIGHUP", "SIGKILL"])
def test_squall_dev_zookeeper_stops_its_java_process_when_it_is_stopped(
        tmp_path: Path, sig: signal.Signals, code: int) -> None:
    data = tmp_path / "zk-term"
    proc = subprocess.Popen(
        [sys.executable, "-m", "squall", "dev-zookeeper", "--port", "0", "--dir", str(data)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    java: list[int] = []
    try:
        assert proc.stdout is not None
        match = re.search(r"127\.0\.0\.1:(\d+)", proc.stdout.readline())
        assert match
        port = int(match.group(1))
        assert four_letter_word("127.0.0.1", port, "ruok") == "imok"
        java = [p for p in _processes_mentioning(str(data)) if p != proc.pid]
        assert java, "no ZooKeeper JVM found"
        proc.send_signal(sig)
        assert proc.wait(30) == code
        wait_until(lambda: not any(_running(p) for p in java), timeout=30,
                   message="the ZooKeeper JVM outlived squall dev-zookeeper")
        with pytest.raises(OSError):
            four_letter_word("127.0.0.1", port, "ruok")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid in java:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
