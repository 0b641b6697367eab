"""Trident on a real cluster: exact counts in Redis after ``kill -9`` of workers mid-run, read
back through the cluster's DRPC server. One cluster runs both topologies at once:

- a transactional spout (FixedBatchSpout) into a transactional RedisMapState;
- an opaque spout (RedisStreamSpout over two Redis streams) into an opaque RedisMapState.

Every worker is killed with SIGKILL while both topologies are part-way through (batches in
flight, so the coordinators restart from what they recorded in ZooKeeper, as do the spouts'
partition metadata); the supervisors restart them and every batch still ends up counted
exactly once.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from squall import DRPCClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "trident_wordcount.py"
SENTENCES = 160


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("trident_wordcount_helpers", TOPOLOGY)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_trident_counts_exact_after_workers_killed(squall_cluster: Any,
                                                   redis_conf: dict[str, Any]) -> None:
    import redis
    tw = _module()
    c = squall_cluster
    client = redis.Redis(host=redis_conf["host"], port=redis_conf["port"], db=redis_conf["db"],
                         decode_responses=True)
    prefix = redis_conf["key_prefix"]
    lines = tw.sentences(SENTENCES)
    for i, line in enumerate(lines):
        client.xadd(f"{prefix}stream{i % 2}", {"sentence": line})
    expected = Counter(w for line in lines for w in line.split())

    c.start_nimbus()
    sups = [c.start_supervisor("sup1", slots=2), c.start_supervisor("sup2", slots=2)]
    drpc = c.start_drpc({"drpc.request.timeout.secs": 20})
    c.wait_ready(supervisors=2)
    env = {"SQUALL_TEST_REDIS_PORT": str(redis_conf["port"]),
           "SQUALL_TEST_REDIS_PREFIX": prefix, "SQUALL_TEST_SENTENCES": str(SENTENCES)}
    servers = f"drpc.servers=[\"127.0.0.1:{drpc.port}\"]"
    common = ["-c", "topology.workers=2", "-c", servers, "-c", "topology.max.spout.pending=2",
              "-c", "topology.trident.batch.emit.interval.millis=150"]
    c.squall("submit", f"{TOPOLOGY}:transactional_topology", "--name", "tx", *common,
             env_extra=env)
    c.squall("submit", f"{TOPOLOGY}:opaque_topology", "--name", "op", *common, env_extra=env)

    def counts(kind: str) -> dict[str, int]:
        keys = client.keys(f"{prefix}{kind}:*")
        where = 1 if kind == "tx" else 2           # [txid, v] or [txid, prev, v]
        skip = len(prefix) + len(kind) + 1
        return {json.loads(k[skip:])[0]: json.loads(v)[where]
                for k, v in zip(keys, client.mget(keys))}

    def partial(kind: str) -> bool:
        total = sum(counts(kind).values())
        return 0 < total < sum(expected.values())
    def workers() -> list[int]:
        return [pid for s in sups for pid in s.worker_pids()]
    c.wait(lambda: partial("tx") and partial("op") and len(workers()) == 4, 90,
           "both topologies under way")
    victims = workers()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    assert partial("tx") or partial("op"), "the kill came after both had finished"
    c.wait(lambda: len(workers()) == 4 and not set(victims) & set(workers()), 60,
           "the killed workers were not replaced")
    c.wait(lambda: counts("tx") == expected, 120, "exact transactional counts")
    c.wait(lambda: counts("op") == expected, 120, "exact opaque counts")
    query = "apple fig nosuchword"
    total = expected["apple"] + expected["fig"]
    drpc_client = DRPCClient({"drpc.servers": [f"127.0.0.1:{drpc.port}"],
                              "drpc.request.timeout.secs": 20})
    assert drpc_client.execute("count-tx", query) == f"[[{total}]]"
    assert drpc_client.execute("count-opaque", query) == f"[[{total}]]"
