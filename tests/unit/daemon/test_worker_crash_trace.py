"""A worker killed by a fatal signal (a C extension's SIGSEGV) leaves its Python stacks in its
raw stderr, the ``.out`` file its supervisor keeps and the logviewer serves (README: "a
crash's trace included"); it left nothing there."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

# a worker whose start crashes the interpreter, as a C extension's fault would
_CRASHING_WORKER = """
import ctypes, sys
from squall.daemon import worker_main

def run(self):
    return ctypes.string_at(0)          # SIGSEGV

worker_main.WorkerProcess.run = run
worker_main.main(sys.argv[1:])
"""


def test_a_segfault_leaves_every_threads_stack_in_the_out_file(tmp_path: Path) -> None:
    out = tmp_path / "t-1-1-6700.out"
    with out.open("wb") as stderr:
        proc = subprocess.run(
            [sys.executable, "-c", _CRASHING_WORKER, "--topology-id", "t-1-1",
             "--supervisor-id", "s1", "--port", "6700", "--worker-id", "w1",
             "--local-dir", str(tmp_path), "--log-file", str(tmp_path / "t-1-1-6700.log")],
            stdout=stderr, stderr=stderr, timeout=60)
    assert proc.returncode == -signal.SIGSEGV     # its supervisor still sees the signal
    text = out.read_text(errors="replace")
    assert "Fatal Python error: Segmentation fault" in text
    assert "in run" in text and "in main" in text       # the stack that crashed
    assert "Current thread" in text or "Thread 0x" in text
