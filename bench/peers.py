"""What the word counts ``bench.scale`` compares squall with share: W peer processes
(``bench.bytewax_wc``, ``bench.floor_wc``), each told its index and every peer's address, each
writing its progress to a file the harness reads.

A progress file holds ``"<CLOCK_MONOTONIC seconds> <words counted>"``, rewritten atomically
every 0.2 s by a thread of the process, so the reader knows exactly when each count was true.
"""
from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

from bench.topologies.corpus import KINDS


def parser(prog: str) -> argparse.ArgumentParser:
    """The arguments every peer process takes (``bench.scale``'s ``run_peers`` passes them)."""
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("--proc-id", type=int, required=True)
    p.add_argument("--addresses", default="", help="every process's host:port, ';'-separated")
    p.add_argument("--progress", required=True)
    p.add_argument("--corpus", choices=KINDS, default="varied")
    return p


def addresses(arg: str) -> list[str]:
    """The ``--addresses`` list (empty for a single process)."""
    return [a for a in arg.split(";") if a]


def report(path: str, counted: list[int], every: float = 0.2) -> None:
    """Start the thread that writes ``counted[0]`` to the progress file ``path``."""
    def write() -> None:
        tmp = path + ".tmp"
        while True:
            with open(tmp, "w") as f:
                f.write(f"{time.monotonic()!r} {counted[0]}")
            os.replace(tmp, path)
            time.sleep(every)
    threading.Thread(target=write, daemon=True, name="progress").start()


def progress(path: Path) -> tuple[float, int] | None:
    """A progress file's (monotonic time, words counted); None until it is first written."""
    try:
        t, n = path.read_text().split()
    except (OSError, ValueError):
        return None
    return float(t), int(n)
