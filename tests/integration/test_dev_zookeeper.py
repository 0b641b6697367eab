"""`squall dev-zookeeper` (DevZooKeeper.main) serves clients until interrupted."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from squall.daemon.dev_zookeeper import four_letter_word
from squall.state.zookeeper import ZooKeeperStateStore

pytestmark = pytest.mark.integration


def test_dev_zookeeper_runs_in_the_foreground_until_ctrl_c(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "squall.daemon.dev_zookeeper", "--port", "0",
         "--dir", str(tmp_path / "zk")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.search(r"127\.0\.0\.1:(\d+)", first)
        assert match, f"unexpected banner: {first!r}"
        port = int(match.group(1))
        assert four_letter_word("127.0.0.1", port, "ruok") == "imok"
        store = ZooKeeperStateStore({"storm.zookeeper.servers": ["127.0.0.1"],
                                     "storm.zookeeper.port": port})
        store.start()
        store.put("/hello", b"world")
        assert store.get("/hello") == b"world"
        store.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
        with pytest.raises(OSError):
            four_letter_word("127.0.0.1", port, "ruok")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
