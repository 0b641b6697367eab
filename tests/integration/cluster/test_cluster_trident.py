"""Trident on a real cluster: exact counts in Redis after ``kill -9`` of workers mid-run, read
back through the cluster's DRPC server. One cluster runs both topologies at once:

- a transactional spout (FixedBatchSpout) into a transactional RedisMapState;
- an opaque spout (RedisStreamSpout over two Redis streams) into an opaque RedisMapState.

Every worker is killed with SIGKILL while both topologies are part-way through (the opaque
one's streams get their second half after the kill; batches in flight, so the coordinators
restart from what they recorded in ZooKeeper, as do the spouts' partition metadata); the
supervisors restart them and every batch still ends up counted exactly once.
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
from squall.trident.state.redis import RedisBackingMap

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "trident_wordcount.py"
SENTENCES = 160


def stored_counts(client: Any, redis_conf: dict[str, Any], state: str, where: int
                  ) -> dict[str, int]:
    """The counts a RedisMapState named ``<prefix><state>`` holds, by word (``where``: the
    count's place in what it stores, ``[txid, v]`` or ``[txid, prev, v]``)."""
    prefix = redis_conf["key_prefix"] + state
    words = [json.loads(k[len(prefix):])[0] for k in client.keys(f"{prefix}*")]
    backing = RedisBackingMap(**{**redis_conf, "key_prefix": prefix})
    try:
        return {w: s[where] for w, s in zip(words, backing.multi_get([(w,) for w in words]))
                if s is not None}
    finally:
        backing.close()


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

    def feed(part: list[str], start: int) -> None:
        for i, line in enumerate(part, start):
            client.xadd(f"{prefix}stream{i % 2}", {"sentence": line})
    # the opaque spout's streams get their second half after the kill: it cannot finish first
    held = SENTENCES // 2
    feed(lines[:held], 0)
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

    def counts(kind: str) -> dict[str, int]:
        return stored_counts(client, redis_conf, f"{kind}:", 1 if kind == "tx" else 2)

    def partial(kind: str) -> bool:
        total = sum(counts(kind).values())
        return 0 < total < sum(expected.values())
    def workers() -> list[int]:
        return [pid for s in sups for pid in s.worker_pids()]
    # the opaque topology first (it cannot finish before the kill), then the transactional
    # one, whose fixed batches take seconds: both are part-way through when the kill comes
    c.squall("submit", f"{TOPOLOGY}:opaque_topology", "--name", "op", *common, env_extra=env)
    c.wait(lambda: partial("op"), 90, "the opaque topology under way")
    c.squall("submit", f"{TOPOLOGY}:transactional_topology", "--name", "tx", *common,
             env_extra=env)
    c.wait(lambda: partial("tx") and len(workers()) == 4, 90,
           "the transactional topology under way")
    victims = workers()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    assert partial("op"), "the opaque topology finished before the second half was fed"
    feed(lines[held:], held)
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


PARTITIONS = Path(__file__).resolve().parent.parent / "topologies" / "trident_partitions.py"


def test_a_txid_replayed_after_kill_9_reads_the_partitions_it_had(
        squall_cluster: Any, redis_conf: dict[str, Any]) -> None:
    """The coordinator's worker dies with a batch in flight while the spout's partitions
    change: the batch is replayed with its own partitions and rows, and none is lost."""
    import redis
    c = squall_cluster
    client = redis.Redis(host=redis_conf["host"], port=redis_conf["port"], db=redis_conf["db"],
                         decode_responses=True)
    prefix = redis_conf["key_prefix"]
    client.sadd(f"{prefix}parts", "p1")
    client.rpush(f"{prefix}part:p1", *range(6))
    client.set(f"{prefix}hold", 1)                 # txid 1 stays in flight

    def log() -> list[list[Any]]:
        return [json.loads(e) for e in client.lrange(f"{prefix}log", 0, -1)]

    def counts() -> dict[str, int]:
        return stored_counts(client, redis_conf, "tx:", 1)

    c.start_nimbus()
    sup = c.start_supervisor("sup1", slots=1)
    c.wait_ready(supervisors=1)
    c.squall("submit", f"{PARTITIONS}:topology", "--name", "parts", "-c", "topology.workers=1",
             "-c", "topology.max.spout.pending=1",
             env_extra={"SQUALL_TEST_REDIS_PORT": str(redis_conf["port"]),
                        "SQUALL_TEST_REDIS_PREFIX": prefix})
    c.wait(lambda: log(), 60, "txid 1 emitted")
    assert log() == [[1, "p1", 0, 3, log()[0][4]]]
    client.srem(f"{prefix}parts", "p1")            # the next batches read p2 only
    client.sadd(f"{prefix}parts", "p2")
    client.rpush(f"{prefix}part:p2", *range(3))
    victims = c.wait(sup.worker_pids, 30, "the worker's pid")
    assert victims == [log()[0][4]]
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    client.delete(f"{prefix}hold")
    c.wait(lambda: counts().get("p2") == 3, 60, "p2 counted after the restart")
    client.sadd(f"{prefix}parts", "p1")            # p1 is back: its rows 3 to 5 remain
    c.wait(lambda: counts() == {"p1": 6, "p2": 3}, 60, "exact counts")
    first = [e for e in log() if e[0] == 1]          # its try before the kill, and replays
    assert [e[:4] for e in first] == [[1, "p1", 0, 3]] * len(first)
    assert {e[4] for e in first} - set(victims), "txid 1 was not replayed by a new worker"
