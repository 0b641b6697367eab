"""A stateful task's checkpoints (squall.stateful.keeper.StateKeeper) over the memory
provider: prepare, commit, rollback and recovery, and when its inputs are acked or failed."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from squall.errors import StateProviderError
from squall.serializers.msgpack import MsgpackSerializer
from squall.stateful.keeper import StateKeeper
from squall.stateful.memory import MemoryStateProvider
from squall.stateful.provider import StateProvider
from squall.stateful.state import KeyValueState


class Recorder:
    def __init__(self) -> None:
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.states: list[KeyValueState] = []


class Flaky(MemoryStateProvider):
    """The memory provider, down while ``down`` is set (as Redis is when stopped)."""
    down = False

    def __getattribute__(self, name: str) -> Any:
        if name in ("load", "txids", "prepare", "commit", "rollback") and \
                object.__getattribute__(self, "down"):
            raise StateProviderError("backend down")
        return object.__getattribute__(self, name)


@pytest.fixture
def provider() -> Flaky:
    return Flaky({"key_prefix": uuid.uuid4().hex})


def keeper_for(provider: StateProvider, rec: Recorder, ns: str = "t/count/1") -> StateKeeper:
    ser = MsgpackSerializer({})
    return StateKeeper(provider=provider, namespace=ns, dumps=ser.dumps, loads=ser.loads,
                       init_state=rec.states.append, ack=rec.acked.append,
                       fail=rec.failed.append)


def test_inputs_are_acked_only_when_their_checkpoint_commits(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    state = rec.states[-1]
    state.put("cow", 1)
    k.hold("t1")
    k.prepare(1)
    state.put("cow", 2)
    k.hold("t2")                              # after the prepare: in the next checkpoint
    assert rec.acked == []
    assert provider.load("t/count/1") == (0, {})
    k.commit(1)
    assert rec.acked == ["t1"]
    ser = MsgpackSerializer({})
    assert provider.load("t/count/1") == (1, {ser.dumps("cow"): ser.dumps(1)})
    k.prepare(2)
    k.commit(2)
    assert rec.acked == ["t1", "t2"] and rec.failed == []


def test_recovery_rolls_back_uncommitted_changes_and_fails_their_inputs(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.hold("t1")
    k.prepare(1)
    k.commit(1)
    rec.states[-1].put("cow", 5)
    rec.states[-1].put("moon", 1)
    k.hold("t2")
    k.prepare(2)                              # prepared, never committed
    rec.states[-1].delete("cow")
    k.hold("t3")
    k.recover(1)                              # the spout's decision: 1 is the last commit
    assert sorted(rec.failed) == ["t2", "t3"]
    assert rec.acked == ["t1"]
    state = rec.states[-1]
    assert len(rec.states) == 2 and dict(state.items()) == {"cow": 1}
    assert provider.txids("t/count/1") == (1, None)


def test_recovery_commits_the_prepared_checkpoint_the_spout_decided_on(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.hold("t1")
    k.prepare(1)
    # the commit of 1 was decided but never reached this task: recovery applies it
    k.recover(1)
    assert rec.acked == ["t1"] and rec.failed == []
    assert dict(rec.states[-1].items()) == {"cow": 1}


def test_a_restarted_task_commits_what_it_prepared_before_dying(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.prepare(1)
    # kill -9: a new keeper (its held tuples are gone with the old worker)
    again = Recorder()
    k2 = keeper_for(provider, again)
    k2.recover(1)
    assert dict(again.states[-1].items()) == {"cow": 1}
    k3 = keeper_for(provider, Recorder())
    k3.recover(1)                              # recovering again changes nothing
    assert provider.txids("t/count/1") == (1, None)


def test_a_provider_failure_leaves_the_checkpoint_uncommitted_and_fails_inputs(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.hold("t1")
    provider.down = True
    with pytest.raises(StateProviderError):
        k.prepare(1)
    assert rec.failed == ["t1"] and not k.ready
    with pytest.raises(StateProviderError):
        k.recover(0)
    with pytest.raises(StateProviderError):
        k.prepare(1)                          # not recovered: refused
    provider.down = False
    k.recover(0)
    assert k.ready and dict(rec.states[-1].items()) == {}
    assert provider.load("t/count/1") == (0, {})


def test_a_failed_commit_keeps_the_inputs_until_recovery_decides(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.hold("t1")
    k.prepare(1)
    provider.down = True
    with pytest.raises(StateProviderError):
        k.commit(1)
    assert rec.acked == [] and rec.failed == []
    provider.down = False
    k.recover(1)                               # the spout decided on 1 before the commit
    assert rec.acked == ["t1"] and rec.failed == []
    assert dict(rec.states[-1].items()) == {"cow": 1}


def test_commit_of_another_txid_is_refused(provider):
    k = keeper_for(provider, Recorder())
    k.recover(0)
    k.prepare(1)
    with pytest.raises(StateProviderError):
        k.commit(2)
