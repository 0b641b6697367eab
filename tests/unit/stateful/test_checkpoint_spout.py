"""The checkpoint spout's protocol (squall.stateful.checkpoint.CheckpointSpout): recover
first, then prepare / commit every interval; the commit decision is kept with the provider
before commit goes out; any failure sends recover."""
from __future__ import annotations

import logging
import re
import uuid
from typing import Any

import pytest

from squall.api.context import TopologyContext
from squall.runtime.memory_stores import MemoryStores
from squall.stateful.checkpoint import CHECKPOINT, COMMIT, PREPARE, RECOVER, CheckpointSpout
from squall.stateful.memory import MemoryStateProvider


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


#: the stores of the worker the spouts of these tests run in
STORES = MemoryStores()


def spout_for(prefix: str, clock: Clock) -> tuple[CheckpointSpout, list[tuple[Any, ...]]]:
    emitted: list[tuple[Any, ...]] = []
    spout = CheckpointSpout()
    spout.emit = lambda values, stream, tup_id: emitted.append(  # type: ignore[method-assign]
        (tuple(values), stream, tup_id))
    context = TopologyContext(topology_id="t-1", topology_name="t", component_id=CHECKPOINT,
                              task_id=9, task_to_component={9: CHECKPOINT},
                              this_worker_port=None, memory_stores=STORES)
    spout.context = context
    spout.initialize({"topology.state.checkpoint.interval.ms": 1000,
                      "topology.state.provider": "memory",
                      "topology.state.provider.config": {"key_prefix": prefix}}, context)
    spout.now = clock
    return spout, emitted


@pytest.fixture
def prefix() -> str:
    return uuid.uuid4().hex


def actions(emitted):
    return [(values[0], values[1]) for values, _, _ in emitted]


def test_recover_first_then_prepare_and_commit_every_interval(prefix):
    clock = Clock()
    spout, emitted = spout_for(prefix, clock)
    spout.activate()
    assert actions(emitted) == [(0, RECOVER)] and emitted[0][1] == CHECKPOINT
    spout.next_tuple()                          # one checkpoint tuple in flight at a time
    assert len(emitted) == 1
    spout.ack(emitted[-1][2])
    spout.next_tuple()
    assert len(emitted) == 1                    # the interval has not passed
    clock.t += 1.0
    spout.next_tuple()
    assert actions(emitted)[-1] == (1, PREPARE)
    spout.ack(emitted[-1][2])
    # every task prepared: the decision is kept before commit goes out
    provider = MemoryStateProvider({"key_prefix": prefix}, STORES)
    assert provider.txids(spout.namespace) == (1, None)
    spout.next_tuple()
    assert actions(emitted)[-1] == (1, COMMIT)
    spout.ack(emitted[-1][2])
    clock.t += 1.0
    spout.next_tuple()
    assert actions(emitted)[-1] == (2, PREPARE)
    assert len({tup_id for _, _, tup_id in emitted}) == len(emitted)   # a key per emission


def test_a_failed_prepare_recovers_the_last_commit_at_once(prefix):
    clock = Clock()
    spout, emitted = spout_for(prefix, clock)
    spout.activate()
    spout.ack(emitted[-1][2])
    clock.t += 1.0
    spout.next_tuple()
    spout.fail(emitted[-1][2])
    spout.next_tuple()
    assert actions(emitted)[-1] == (0, RECOVER)
    spout.fail(emitted[-1][2])                  # a failed recovery waits an interval
    spout.next_tuple()
    assert actions(emitted)[-1] == (0, RECOVER) and len(emitted) == 3
    clock.t += 1.0
    spout.next_tuple()
    assert actions(emitted)[-1] == (0, RECOVER) and len(emitted) == 4


def test_a_failed_commit_recovers_the_decided_checkpoint(prefix):
    clock = Clock()
    spout, emitted = spout_for(prefix, clock)
    spout.activate()
    spout.ack(emitted[-1][2])
    clock.t += 1.0
    spout.next_tuple()
    spout.ack(emitted[-1][2])
    spout.next_tuple()
    assert actions(emitted)[-1] == (1, COMMIT)
    spout.fail(emitted[-1][2])
    spout.next_tuple()
    assert actions(emitted)[-1] == (1, RECOVER)     # tasks that did not commit 1 commit it


def test_a_restarted_spout_recovers_from_the_kept_decision(prefix):
    clock = Clock()
    spout, emitted = spout_for(prefix, clock)
    spout.activate()
    spout.ack(emitted[-1][2])
    clock.t += 1.0
    spout.next_tuple()
    spout.ack(emitted[-1][2])                   # decision: 1
    again, emitted2 = spout_for(prefix, clock)
    again.activate()
    assert actions(emitted2) == [(1, RECOVER)]


def test_a_late_completion_of_an_old_checkpoint_is_ignored(prefix):
    clock = Clock()
    spout, emitted = spout_for(prefix, clock)
    spout.activate()
    old = emitted[-1][2]
    spout.fail(old)
    clock.t += 1.0
    spout.next_tuple()
    spout.ack(old)                              # the first recover, timed out and acked late
    spout.next_tuple()
    assert len(emitted) == 2


def test_a_backend_that_does_not_answer_is_one_error_the_topology_shows(prefix, monkeypatch,
                                                                        caplog):
    """Unreachable from the start, no checkpoint reaches a bolt, so the spout is the one to
    say it (a warning only, before: the stateful bolts failed every input silently)."""
    from squall.errors import StateProviderError
    clock = Clock()
    spout, emitted = spout_for(prefix, clock)
    reported: list[str] = []
    spout.report_error = reported.append                 # type: ignore[method-assign]

    def down(namespace: str) -> Any:
        raise StateProviderError("redis state provider at 127.0.0.1:1: refused")
    monkeypatch.setattr(spout.provider, "txids", down)
    for _ in range(3):
        spout.next_tuple()
        clock.t += 1.0
    assert emitted == []
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and len(reported) == 1            # once per run of failures
    assert "cannot read the last committed checkpoint" in reported[0]


def test_a_run_of_failed_checkpoints_is_one_warning_until_one_commits(prefix, caplog):
    """Recoveries that work between prepares that fail (a bolt failing every checkpoint, a
    backend down for writes) do not end the run: one warning, and one line when a checkpoint
    commits again (it logged both every cycle: 16 lines in 5 s)."""
    caplog.set_level(logging.INFO, logger="squall.stateful.checkpoint")
    clock = Clock()
    spout, emitted = spout_for(prefix, clock)
    spout.activate()
    spout.ack(emitted[-1][2])                   # recovered
    for _ in range(4):
        clock.t += 1.0
        spout.next_tuple()
        assert actions(emitted)[-1] == (1, PREPARE)
        spout.fail(emitted[-1][2])
        spout.next_tuple()
        assert actions(emitted)[-1] == (0, RECOVER)
        spout.ack(emitted[-1][2])               # the recovery works, the next prepare fails

    def lines() -> list[tuple[str, str]]:
        return [(r.levelname, r.getMessage()) for r in caplog.records
                if r.levelno >= logging.INFO]
    assert [level for level, _ in lines()] == ["WARNING"], lines()
    assert "prepare of txid 1 failed" in lines()[0][1]
    clock.t += 1.0
    spout.next_tuple()
    spout.ack(emitted[-1][2])                   # prepared
    spout.next_tuple()
    assert actions(emitted)[-1] == (1, COMMIT)
    spout.ack(emitted[-1][2])                   # committed: the run is over
    assert [level for level, _ in lines()] == ["WARNING", "INFO"], lines()
    assert "checkpoints of topology t commit again (txid 1)" in lines()[1][1]
    clock.t += 1.0
    spout.next_tuple()
    spout.fail(emitted[-1][2])                  # a new run: logged again
    assert [level for level, _ in lines()] == ["WARNING", "INFO", "WARNING"], lines()


def test_a_backend_failure_after_a_warning_is_still_the_error_the_topology_shows(
        prefix, monkeypatch, caplog):
    from squall.errors import StateProviderError
    clock = Clock()
    spout, emitted = spout_for(prefix, clock)
    reported: list[str] = []
    spout.report_error = reported.append                 # type: ignore[method-assign]
    spout.activate()
    spout.ack(emitted[-1][2])
    clock.t += 1.0
    spout.next_tuple()
    spout.fail(emitted[-1][2])                  # a prepare failed: a warning
    spout.next_tuple()
    spout.ack(emitted[-1][2])
    clock.t += 1.0
    spout.next_tuple()

    def down(namespace: str, txid: int, changes: Any) -> None:
        raise StateProviderError("redis state provider at 127.0.0.1:1: refused")
    monkeypatch.setattr(spout.provider, "prepare", down)
    for _ in range(2):
        spout.ack(emitted[-1][2])               # every task prepared; the decision fails
        clock.t += 1.0
        spout.next_tuple()
        spout.ack(emitted[-1][2])               # recovered
        clock.t += 1.0
        spout.next_tuple()
    assert [r.levelname for r in caplog.records if r.levelno >= logging.WARNING] == [
        "WARNING", "ERROR"]
    assert len(reported) == 1 and "checkpoint 1 not committed" in reported[0]


def test_redis_options_are_checked_by_name_type_and_range() -> None:
    pytest.importorskip("redis")
    from squall.errors import ConfigError
    from squall.stateful.redis import RedisStateProvider
    RedisStateProvider({"host": "h", "port": 6380, "db": 0, "password": None,
                        "key_prefix": "", "timeout": 0.5})      # no connection is made yet
    for conf, said in (({"hostname": "h"}, ": the redis state provider has no option 'hostname' "
                                           "(did you mean 'host'?)"),
                       ({"port": "abc"}, ".port must be a port from 1 to 65535"),
                       ({"port": 0}, ".port must be"),
                       ({"timeout": 0}, ".timeout must be a number of seconds"),
                       ({"db": -1}, ".db must be a database number")):
        with pytest.raises(ConfigError, match=r"^topology\.state\.provider\.config"
                                              + re.escape(said)):
            RedisStateProvider(conf)


def test_memory_options_are_checked_by_name_and_type() -> None:
    from squall.errors import ConfigError
    MemoryStateProvider({"key_prefix": "tenant-a:"})
    MemoryStateProvider({"key_prefix": None})                    # null: the default
    with pytest.raises(ConfigError, match=r"^topology\.state\.provider\.config: the memory "
                       r"state provider has no option 'key_prefx' \(did you mean "
                       r"'key_prefix'\?\); it takes key_prefix$"):
        MemoryStateProvider({"key_prefx": "tenant-a:"})
    with pytest.raises(ConfigError, match=r"\.key_prefix must be a string, got 3"):
        MemoryStateProvider({"key_prefix": 3})


def test_the_decision_kept_under_the_spouts_task_id_is_carried_over(prefix):
    # squall kept the spout's decisions under its task id (9 here) before
    provider = MemoryStateProvider({"key_prefix": prefix}, STORES)
    provider.prepare(f"t/{CHECKPOINT}/9", 6, {})
    provider.commit(f"t/{CHECKPOINT}/9", 6)
    spout, emitted = spout_for(prefix, Clock())
    spout.activate()
    assert actions(emitted) == [(6, RECOVER)]
    assert provider.txids(spout.namespace) == (6, None)
    assert spout.namespace == f"t/{CHECKPOINT}"
