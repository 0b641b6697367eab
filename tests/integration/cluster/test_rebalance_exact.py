"""Rebalance on a real cluster keeps word counts exact under acking, with either scheduler.

A finite, rate-limited stream of sentences with ids runs through the acked word count of
``tests/integration/topologies/acked_wordcount.py`` (its count tasks keep their counts durable and
reload them wherever they start again). Mid-stream, ``squall rebalance --workers N --executors
count=N --wait S`` changes the worker count and the count executors, so count tasks start again in
other executors and workers. Afterwards every sentence is acked, every word is counted exactly
once, the count tasks' own totals equal the expected counts, and the spouts' event logs show that
no spout emitted while the topology was deactivated for the wait.
"""
from __future__ import annotations

import time
from collections import defaultdict

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOTAL = 300          # sentences (ids 0..TOTAL-1)
RATE = 30            # sentences per second per spout task (two spout tasks); the ids from
                     # TOTAL // 2 on wait until the spouts were deactivated for the rebalance
WAIT = 5             # rebalance --wait: far longer than a sentence takes to be acked, and
                     # than the command's return and a `squall list` take on a loaded host
ROOM = {"supervisor.cpu.slots": 16, "supervisor.memory.slots": 16, "supervisor.net.slots": 16}


def _check_spouts(events, t_cmd: float) -> None:
    """The spout events against a rebalance with ``--wait WAIT`` issued at ``t_cmd`` (taken
    just before the command: nimbus cannot end the wait before ``t_cmd + WAIT``)."""
    wait_end = t_cmd + WAIT
    active: dict[tuple[int, int], bool] = defaultdict(bool)     # (pid, task) -> active
    active_at_cmd: set[tuple[int, int]] | None = None
    deactivated_at: dict[tuple[int, int], float] = {}
    inactive_emits = []
    for e in events:
        key = (e.pid, e.task)
        if e.time >= t_cmd and active_at_cmd is None:
            active_at_cmd = {k for k, v in active.items() if v}
        if e.event == "activate":
            active[key] = True
        elif e.event == "deactivate":
            active[key] = False
            if e.time >= t_cmd:
                deactivated_at.setdefault(key, e.time)
        elif e.event == "emit" and not active[key]:
            inactive_emits.append(e)
    assert not inactive_emits, f"spouts emitted while not active: {inactive_emits[:5]}"
    assert active_at_cmd, "no spout instance was active when the rebalance was issued"
    late = {k: round(deactivated_at[k] - wait_end, 3) if k in deactivated_at else None
            for k in active_at_cmd if deactivated_at.get(k, wait_end) >= wait_end}
    assert not late, ("spout instances (pid, task) not deactivated during the rebalance wait "
                      f"(seconds after it ended, None: never): {late}")
    deactivated = max(deactivated_at[k] for k in active_at_cmd)
    reactivated = min((e.time for e in events if e.event == "activate" and e.time > deactivated),
                      default=None)
    assert reactivated is not None, "no spout was activated again after the rebalance"
    assert reactivated >= wait_end, (
        f"a spout was activated {wait_end - reactivated:.2f} s before the --wait {WAIT} ended")
    during = [e for e in events if e.event == "emit" and deactivated <= e.time <= reactivated]
    assert not during, f"spouts emitted during the rebalance wait: {during[:5]}"
    # an instance deactivated for the rebalance whose worker is being replaced is not
    # activated again before it closes: its emits would only be replayed (nimbus restored
    # the status before it wrote the new assignment, and the old worker took the status
    # with its old assignment)
    history: dict[tuple[int, int], list[str]] = defaultdict(list)
    for e in events:
        if e.time >= t_cmd and e.event in ("activate", "deactivate", "close"):
            history[(e.pid, e.task)].append(e.event)
    revived = {k: h for k, h in history.items()
               if "close" in h and "deactivate" in h[:h.index("close")]
               and "activate" in h[h.index("deactivate") + 1:h.index("close")]}
    assert not revived, f"replaced spout instances activated again before closing: {revived}"
    emits = [e.time for e in events if e.event == "emit"]
    assert min(emits) < t_cmd and max(emits) > reactivated, "the stream did not run on both " \
        "sides of the rebalance"


@pytest.mark.parametrize("scheduler, workers, count_executors", [
    pytest.param("even", 3, 4, id="even-2to3-workers-count-2to4"),
    pytest.param("multidim", 1, 1, id="multidim-2to1-workers-count-2to1"),
])
def test_rebalance_mid_stream_keeps_counts_exact(squall_cluster, wordcount, scheduler, workers,
                                                 count_executors):
    c = squall_cluster
    c.start_nimbus(overrides={"squall.scheduler": scheduler})
    c.start_supervisor("sup1", overrides=ROOM)
    c.start_supervisor("sup2", overrides=ROOM)
    c.wait_ready(supervisors=2)
    target = c.wordcount_target.rsplit(":", 1)[0] + ":rebalance_topology"
    c.squall("submit", target, "--name", "wc", "-c", "topology.workers=2",
             "-c", f"test.sentences={TOTAL}", "-c", f"test.emit.per.sec={RATE}",
             "-c", f"test.hold.from={TOTAL // 2}")
    acked = lambda: set(wordcount.read_acks(c.out_dir))  # noqa: E731
    c.wait(lambda: len(c.worker_slots("wc")) == 2 and len(acked()) >= 40, 40,
           "the topology did not start acking on two workers")
    tid = c.state.find_topology_id("wc")
    assert c.state.get_storm(tid)["component_executors"]["count"] == 2

    t_cmd = time.time()
    c.squall("rebalance", "wc", "--workers", str(workers), "--executors",
             f"count={count_executors}", "--wait", str(WAIT))
    assert c.listed() == {"wc": "rebalancing"}

    def deactivated() -> bool:
        events = wordcount.read_spout_events(c.out_dir)
        return {e.task for e in events} <= {e.task for e in events
                                            if e.event == "deactivate" and e.time >= t_cmd}
    c.wait(deactivated, 30, "the spouts were not deactivated for the rebalance")
    # the second half of the stream runs after the rebalance
    wordcount.release(c.out_dir)

    def applied() -> bool:
        base = c.state.get_storm(tid) or {}
        return (base.get("status") == "active" and base.get("num_workers") == workers
                and base.get("component_executors", {}).get("count") == count_executors
                and len(c.worker_slots("wc")) == workers)
    c.wait(applied, 30, "the rebalance was not applied")

    c.wait(lambda: acked() == set(range(TOTAL)), 40, "not every sentence was acked")

    # a count is durable before its tuple is acked: with every sentence acked, every word of
    # every sentence is counted, once
    counted = wordcount.counted_words(c.out_dir)
    twice = {k: n for k, n in counted.items() if n > 1}
    assert not twice, f"words counted more than once (sentence id, position, word): {twice}"
    expected_words = wordcount.expected_words(TOTAL)
    assert set(counted) == expected_words, (
        f"missing {sorted(expected_words - set(counted))[:10]}, "
        f"unexpected {sorted(set(counted) - expected_words)[:10]}")
    # the count tasks' own totals: a task that started again from zero would show less
    assert wordcount.read_counts(c.out_dir) == wordcount.expected_counts(TOTAL)
    assert c.listed() == {"wc": "active"}

    # spouts: none emitted while not active, all active ones were deactivated during the wait
    # and none was active again before it ended, and the stream ran on both sides of it
    _check_spouts(wordcount.read_spout_events(c.out_dir), t_cmd)
