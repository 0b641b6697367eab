"""Multi-lang on a real cluster: the pystorm spout and split and the Node count of
``multilang_wordcount`` shipped in a code package, run by worker processes of two supervisors;
a split subprocess dies once mid-run. Exact counts, every sentence acked once, and the workers
that ran it are the ones still running (the subprocess was restarted, not the worker). And
``squall submit`` of a streamparse ``Topology`` class, its components in the workers."""
from __future__ import annotations

from pathlib import Path

import pytest

from squall.testing.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOTAL = 200
TARGET = str(Path(__file__).resolve().parent.parent / "topologies" /
             "multilang_wordcount.py") + ":topology"


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
    pids = lambda: sorted(p for s in sups for p in s.worker_pids())     # noqa: E731
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
