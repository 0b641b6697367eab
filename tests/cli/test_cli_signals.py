"""``squall local`` closed with its terminal (SIGHUP) stops as on SIGTERM: its topology
stops in order, its shell subprocesses with it, and it leaves no files behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from squall.testing.waiting import wait_until

SQUALL = [sys.executable, "-m", "squall"]

TOPOLOGY = """
import sys
from squall import ShellBolt, Spout, TopologyBuilder

class Quiet(Spout):
    outputs = ["word"]

class Shell(ShellBolt):
    command = [sys.executable, "shell_bolt.py"]
    outputs = ["word"]

b = TopologyBuilder()
b.set_spout("quiet", Quiet)
b.set_bolt("shell", Shell).shuffle_grouping("quiet")
topology = b.create_topology()
"""

#: a multi-lang bolt by hand (the topology tests' hand-written framing): registers in the pid
#: directory and answers heartbeats
FRAMING = Path(__file__).resolve().parents[1] / "topology" / "multilang" / "raw_protocol.py"
SHELL_BOLT = FRAMING.read_text() + """
import os

handshake = read()
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
while True:
    tup = read()
    if isinstance(tup, dict) and tup.get("stream") == "__heartbeat":
        send({"command": "sync"})
    elif isinstance(tup, dict) and "id" in tup:
        send({"command": "ack", "id": tup["id"]})
"""


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP here")
def test_squall_local_stops_in_order_on_sighup_and_leaves_no_pid_directory(
        tmp_path: Path) -> None:
    (tmp_path / "shelltopo.py").write_text(textwrap.dedent(TOPOLOGY))
    (tmp_path / "shell_bolt.py").write_text(textwrap.dedent(SHELL_BOLT))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "SQUALL_CONF"}
    env.update(TMPDIR=str(tmp), HOME=str(tmp_path))
    proc = subprocess.Popen([*SQUALL, "local", "shelltopo.py:topology"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid_dirs = wait_until(
            lambda: [d for d in tmp.glob("squall-shell-pids-*") if any(d.iterdir())],
            timeout=60, message="the shell bolt never registered in a pid directory")
        shells = [int(p.name) for d in pid_dirs for p in d.iterdir()]
        proc.send_signal(signal.SIGHUP)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, (proc.returncode, err)
        assert "component" in out and "Traceback" not in err, (out, err)
        assert not list(tmp.glob("squall-shell-pids-*"))
        for pid in shells:
            wait_until(lambda pid=pid: not Path(f"/proc/{pid}").exists()
                       or b"Z" in Path(f"/proc/{pid}/stat").read_bytes().split(b")")[-1][:3],
                       timeout=10, message=f"shell subprocess {pid} outlived squall local")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
