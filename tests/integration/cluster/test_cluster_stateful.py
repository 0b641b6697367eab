"""Stateful bolts on a real cluster with the redis provider: counts stay exact across
``kill -9`` of the stateful bolt's worker (API.md section 11)."""
from __future__ import annotations

import collections
import importlib.util
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from squall.serializers.msgpack import MsgpackSerializer
from squall.stateful.provider import namespace

TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOTAL = 400
RATE = 80            # sentences per second: 5 s of them, the kill some 1 s in; the second
                     # half waits for it (a loaded host may take seconds to get there)


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("stateful_wordcount_helpers",
                                                  TOPOLOGIES / "stateful_wordcount.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def committed_counts(conf: dict[str, Any], name: str, tasks: list[int]) -> dict[str, int]:
    from squall.stateful.redis import RedisStateProvider
    provider = RedisStateProvider(conf)
    ser = MsgpackSerializer({})
    out: collections.Counter[str] = collections.Counter()
    try:
        for index in range(len(tasks)):
            _, data = provider.load(namespace(name, "count", index))
            out.update({ser.loads(k): ser.loads(v) for k, v in data.items()})
    finally:
        provider.close()
    return dict(out)


def test_kill_9_of_a_stateful_bolts_worker_keeps_counts_exact(squall_cluster, redis_conf):
    wc = _module()
    c = squall_cluster
    c.start_nimbus()
    c.start_supervisor("sup1", slots=2)
    c.wait_ready(supervisors=1)
    provider_conf = "{" + ", ".join(f"{k}: '{v}'" if k == "key_prefix" else f"{k}: {v}"
                                    for k, v in redis_conf.items()) + "}"
    c.squall("submit", str(TOPOLOGIES / "stateful_wordcount.py") + ":topology", "--name", "swc",
             "-c", "topology.workers=2", "-c", f"test.sentences={TOTAL}",
             "-c", f"test.emit.per.sec={RATE}", "-c", f"test.hold.from={TOTAL // 2}",
             "-c", "topology.state.provider=redis",
             "-c", f"topology.state.provider.config={provider_conf}",
             "-c", "topology.state.checkpoint.interval.ms=500",
             # the checkpoint in flight at the kill fails when it times out: the recovery
             # and the replays start then
             "-c", "topology.message.timeout.secs=5")
    acked = lambda: set(wc.read_acks(c.out_dir))  # noqa: E731
    c.wait(lambda: len(wc.count_pids(c.out_dir)) == 2 and len(acked()) >= 60, 90,
           "the topology did not start committing")
    count_tasks = wc.topology.tasks("count")
    victim = wc.count_pids(c.out_dir)[count_tasks[0]]
    os.kill(victim, signal.SIGKILL)
    wc.release(c.out_dir)       # the second half of the stream after the kill
    c.wait(lambda: wc.count_pids(c.out_dir)[count_tasks[0]] != victim, 60,
           "the killed worker was not restarted")
    c.wait(lambda: acked() == set(range(TOTAL)), 150, "not every sentence was acked")
    assert any((c.out_dir / f"failed-{i}").exists() for i in range(4, TOTAL, 9))
    # every acked sentence's words are in the committed state, once
    assert committed_counts(redis_conf, "swc", count_tasks) == wc.expected_counts(TOTAL)
