"""Components on threads of their own in real worker processes: the acked word count with
``topology.executor.dedicated.thread`` set for every component (its count bolt fsyncs a journal
per batch, the blocking call the option is for) counts exactly across two workers, and a kill
still deactivates and closes every spout in order."""
from __future__ import annotations

import pytest

from squall.testing.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOTAL = 300


def test_wordcount_on_dedicated_threads_across_two_workers(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus()
    # the workers get 10 s to close their spouts after a kill (a loaded host may take more
    # than the harness's 2 s before the supervisor's SIGKILL)
    grace = {"supervisor.worker.shutdown.sleep.secs": 10}
    c.start_supervisor("sup1", overrides=grace)
    c.start_supervisor("sup2", overrides=grace)
    c.wait_ready(supervisors=2)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
             "-c", "topology.executor.dedicated.thread=true",
             "-c", f"test.sentences={TOTAL}", "-c", "topology.message.timeout.secs=60")
    wait_until(lambda: len(c.worker_slots("wc")) == 2, 30,
               message=lambda: "no assignment on 2 workers\n" + c.logs_tail())

    expected = wordcount.expected_counts(TOTAL)
    wait_until(lambda: sorted(wordcount.read_acks(c.out_dir)) == list(range(TOTAL)), 60,
               message=lambda: "not every sentence was acked\n" + c.logs_tail())
    wait_until(lambda: wordcount.read_counts(c.out_dir) == expected, 20,
               message=lambda: f"counts differ: {wordcount.read_counts(c.out_dir)}\n"
                               + c.logs_tail())
    assert max(wordcount.counted_words(c.out_dir).values()) == 1
    # the spouts ran on threads of their own, not on their workers' loops
    threads = [p.read_text() for p in c.out_dir.glob("spout-*.thread")]
    assert len(threads) == 2 and all(name.startswith("squall-sentences-") for name in threads)

    c.squall("kill", "wc", "--wait", "1")
    c.wait(lambda: all(not d.worker_pids() for d in c.daemons), 30, "workers still running")
    events = [e for e in wordcount.read_spout_events(c.out_dir) if e.event != "emit"]
    per_task: dict[int, list[str]] = {}
    for e in events:
        per_task.setdefault(e.task, []).append(e.event)
    assert len(per_task) == 2
    for task, seq in per_task.items():
        assert seq == ["init", "activate", "deactivate", "close"], (task, seq)
