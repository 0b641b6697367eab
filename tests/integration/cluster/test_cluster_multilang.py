"""Multi-lang on a real cluster: the pystorm spout and split and the Node count of
``multilang_wordcount`` shipped in a code package, run by worker processes of two supervisors;
a split subprocess dies once mid-run. Exact counts, every sentence acked once, and the workers
that ran it are the ones still running (the subprocess was restarted, not the worker). And
``squall submit`` of a streamparse ``Topology`` class, its components in the workers. And a
worker killed with ``kill -9`` leaves none of its subprocesses running, also one that does not
leave at the end of its stdin, or one behind a wrapper script."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from squall.daemon.supervisor_local import WORKER_MODULE
from squall.testing.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOTAL = 200
TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"
TARGET = str(TOPOLOGIES / "multilang_wordcount.py") + ":topology"
LINGERING = str(TOPOLOGIES / "multilang_lingering.py") + ":topology"


def _argv(pid: int) -> list[bytes]:
    """The command line of live process ``pid`` ([] when it is gone or a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, IndexError):
        return []
    return [] if state == "Z" else argv


def _workers(sup) -> list[int]:
    """The worker processes of ``sup`` (its workers' pids dirs list their subprocesses too)."""
    return sorted(p for p in sup.worker_pids() if WORKER_MODULE.encode() in _argv(p))


def test_multilang_word_count_is_exact_on_a_cluster_when_a_subprocess_dies(
        squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus()
    sups = [c.start_supervisor("sup1"), c.start_supervisor("sup2")]
    c.wait_ready(supervisors=2)
    c.squall("submit", TARGET, "--name", "ml", "-c", "topology.workers=2",
             "-c", f"test.sentences={TOTAL}", "-c", "test.split.die.on=17",
             "-c", "topology.message.timeout.secs=30")
    wait_until(lambda: len(c.worker_slots("ml")) == 2, 30,
               message=lambda: "no assignment on 2 workers\n" + c.logs_tail())
    pids = lambda: sorted(p for s in sups for p in _workers(s))         # noqa: E731
    workers = wait_until(lambda: len(pids()) == 2 and pids(), 60,
                         message=lambda: "the two workers did not start\n" + c.logs_tail())
    wait_until(lambda: sorted(wordcount.read_acks(c.out_dir)) == list(range(TOTAL)), 150,
               message=lambda: f"acked {len(wordcount.read_acks(c.out_dir))} of {TOTAL}\n"
                               + c.logs_tail())
    assert wordcount.read_counts(c.out_dir) == wordcount.expected_counts(TOTAL)
    assert max(wordcount.counted_words(c.out_dir).values()) == 1
    assert (c.out_dir / "die-17.marker").exists()           # the split did die on it
    assert pids() == workers


def test_squall_submit_takes_a_streamparse_topology_class(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus()
    c.start_supervisor("sup1")
    c.wait_ready(supervisors=1)
    target = TARGET.replace("multilang_wordcount.py:topology",
                            "streamparse_wordcount.py:WordCount")
    c.squall("submit", target, "--name", "sp", "-c", "topology.workers=2",
             "-c", f"test.sentences={TOTAL}", "-c", "test.split.fail.on=17")
    wait_until(lambda: sorted(wordcount.read_acks(c.out_dir)) == list(range(TOTAL)), 150,
               message=lambda: f"acked {len(wordcount.read_acks(c.out_dir))} of {TOTAL}\n"
                               + c.logs_tail())
    wait_until(lambda: wordcount.read_counts(c.out_dir) == wordcount.expected_counts(TOTAL), 30,
               message=lambda: f"counts {wordcount.read_counts(c.out_dir)}")
    assert max(wordcount.counted_words(c.out_dir).values()) == 1
    assert (c.out_dir / "fail-17.marker").exists()


def _lingering(sup) -> set[int]:
    """The live lingering bolts' subprocesses (the ones speaking the protocol) that ``sup``'s
    workers started (they run in its code folder)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and b"multilang/lingering_bolt.py" in _argv(int(entry.name)):
            try:
                if Path(os.readlink(entry / "cwd")).is_relative_to(sup.local_dir.resolve()):
                    found.add(int(entry.name))
            except OSError:
                continue
    return found


def test_a_worker_killed_with_kill_9_leaves_no_subprocess_running(squall_cluster):
    # one bolt's subprocess runs directly (it dies with the worker), the other's behind a
    # shell (its supervisor stops it, as it is registered in the worker's pids dir); neither
    # leaves at its stdin's end, so without them both would run on for good, beside the
    # subprocesses of the worker that replaces it
    c = squall_cluster
    c.start_nimbus()
    sup = c.start_supervisor("sup1", slots=1)
    c.wait_ready(supervisors=1)
    c.squall("submit", LINGERING, "--name", "linger")
    ready = lambda: len(_workers(sup)) == 1 and len(_lingering(sup)) == 2   # noqa: E731
    wait_until(ready, 60, message=lambda: f"workers {_workers(sup)}, subprocesses "
                                          f"{_lingering(sup)}\n" + c.logs_tail())
    [worker], before = _workers(sup), _lingering(sup)
    os.kill(worker, signal.SIGKILL)
    wait_until(lambda: not before & _lingering(sup), 20,
               message=lambda: f"still running: {before & _lingering(sup)}")
    # its replacement runs a subprocess of its own for each bolt, and only that
    wait_until(lambda: ready() and not before & _lingering(sup), 60,
               message=lambda: f"workers {_workers(sup)}, subprocesses {_lingering(sup)}\n"
                               + c.logs_tail())
    after = _lingering(sup)
    c.squall("kill", "linger", "--wait", "0")
    wait_until(lambda: not _workers(sup) and not after & _lingering(sup), 30,
               message=lambda: f"still running: {after & _lingering(sup)}")
