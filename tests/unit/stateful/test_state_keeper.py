"""A stateful task's checkpoints (squall.stateful.keeper.StateKeeper) over the memory
provider: prepare, commit, rollback and recovery, and when its inputs are acked or failed."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from squall.errors import StateProviderError
from squall.serializers.msgpack import MsgpackSerializer
from squall.stateful.keeper import NotRecovered, StateKeeper
from squall.stateful.memory import MemoryStateProvider
from squall.stateful.provider import StateProvider
from squall.stateful.state import KeyValueState
from squall.stateful.values import value_codec

SER = MsgpackSerializer({})


class Input:
    """An input tuple as the keeper sees it: one root, its edge id, no ack value."""

    def __init__(self, root: int, id: int) -> None:
        self.roots = (root,)
        self.id = id
        self.ackval = 0


class Recorder:
    """What the keeper acked (root -> XOR) and failed (roots), and the states it handed out."""

    def __init__(self) -> None:
        self.acked: dict[int, int] = {}
        self.acked_n = 0
        self.failed: list[int] = []
        self.failed_n = 0
        self.states: list[KeyValueState] = []

    def ack(self, fold: dict[int, int], n: int) -> None:
        for r, v in fold.items():
            self.acked[r] = self.acked.get(r, 0) ^ v
        self.acked_n += n

    def fail(self, roots: Any, n: int) -> None:
        self.failed.extend(roots)
        self.failed_n += n


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
    return StateKeeper(provider=provider, namespace=ns, dumps=SER.dumps, loads=SER.loads,
                       init_state=rec.states.append, ack=rec.ack, fail=rec.fail)


def test_inputs_are_acked_only_when_their_checkpoint_commits(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    state = rec.states[-1]
    state.put("cow", 1)
    k.hold(Input(100, 0b0011))
    k.hold(Input(100, 0b0101))                # same tree: folded into one XOR
    k.prepare(1)
    state.put("cow", 2)
    k.hold(Input(200, 7))                     # after the prepare: in the next checkpoint
    assert rec.acked_n == 0
    assert provider.load("t/count/1") == (0, {})
    k.commit(1)
    assert rec.acked == {100: 0b0110} and rec.acked_n == 2
    assert provider.load("t/count/1") == (1, {SER.dumps("cow"): SER.dumps(1)})
    k.prepare(2)
    k.commit(2)
    assert rec.acked == {100: 0b0110, 200: 7} and rec.acked_n == 3 and rec.failed == []


def test_an_input_held_again_changes_nothing_and_counts_nothing(provider):
    # a second ack, auto_ack after the bolt's own, or an ack of an input auto_ack held
    # already: held twice, its XOR cancelled out and its tree timed out after the commit
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    tup = Input(100, 0b0011)
    k.hold(tup)
    k.hold(tup)
    k.prepare(1)
    k.commit(1)
    assert rec.acked == {100: 0b0011} and rec.acked_n == 1


def test_recovery_rolls_back_uncommitted_changes_and_fails_their_inputs(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.hold(Input(1, 1))
    k.prepare(1)
    k.commit(1)
    rec.states[-1].put("cow", 5)
    rec.states[-1].put("moon", 1)
    k.hold(Input(2, 1))
    k.prepare(2)                              # prepared, never committed
    rec.states[-1].delete("cow")
    k.hold(Input(3, 1))
    k.recover(1)                              # the spout's decision: 1 is the last commit
    assert sorted(rec.failed) == [2, 3] and rec.failed_n == 2
    assert rec.acked == {1: 1}
    assert len(rec.states) == 2 and dict(rec.states[-1].items()) == {"cow": 1}
    assert provider.txids("t/count/1") == (1, None)


def test_recovery_commits_the_prepared_checkpoint_the_spout_decided_on(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.hold(Input(1, 9))
    k.prepare(1)
    # the commit of 1 was decided but never reached this task: recovery applies it
    k.recover(1)
    assert rec.acked == {1: 9} and rec.failed == []
    assert dict(rec.states[-1].items()) == {"cow": 1}


def test_a_restarted_task_commits_what_it_prepared_before_dying(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.prepare(1)
    # kill -9: a new keeper (the held acks are gone with the old worker)
    again = Recorder()
    keeper_for(provider, again).recover(1)
    assert dict(again.states[-1].items()) == {"cow": 1}
    keeper_for(provider, Recorder()).recover(1)   # recovering again changes nothing
    assert provider.txids("t/count/1") == (1, None)


def test_a_provider_failure_leaves_the_checkpoint_uncommitted_and_fails_inputs(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.hold(Input(1, 1))
    provider.down = True
    with pytest.raises(StateProviderError):
        k.prepare(1)
    assert rec.failed == [1] and not k.ready
    with pytest.raises(StateProviderError):
        k.recover(0)
    with pytest.raises(NotRecovered):
        k.prepare(1)                          # not recovered: refused
    provider.down = False
    k.recover(0)
    assert k.ready and dict(rec.states[-1].items()) == {}
    assert provider.load("t/count/1") == (0, {})


def test_inputs_deferred_while_not_ready_fail_once_at_each_recover_within_a_bound(provider):
    rec = Recorder()
    k = StateKeeper(provider=provider, namespace="t/count/1", dumps=SER.dumps,
                    loads=SER.loads, init_state=rec.states.append, ack=rec.ack,
                    fail=rec.fail, defer_limit=3)
    assert k.defer(Input(1, 1)) and k.defer(Input(1, 2)) and k.defer(Input(2, 1))
    assert not k.defer(Input(3, 1))           # past the bound: the caller fails it now
    assert rec.failed == []                   # kept, not failed while waiting
    provider.down = True
    with pytest.raises(StateProviderError):
        k.recover(0)                          # a failed recovery fails them too, once
    assert sorted(rec.failed) == [1, 2] and rec.failed_n == 3 and not k.ready
    assert k.defer(Input(4, 1))
    provider.down = False
    k.recover(0)
    assert sorted(rec.failed) == [1, 2, 4] and rec.failed_n == 4 and k.ready
    k.recover(0)                              # nothing deferred since: nothing failed again
    assert rec.failed_n == 4 and rec.states and dict(rec.states[-1].items()) == {}


def test_a_failed_commit_keeps_the_acks_until_recovery_decides(provider):
    rec = Recorder()
    k = keeper_for(provider, rec)
    k.recover(0)
    rec.states[-1].put("cow", 1)
    k.hold(Input(1, 5))
    k.prepare(1)
    provider.down = True
    with pytest.raises(StateProviderError):
        k.commit(1)
    assert rec.acked == {} and rec.failed == []
    provider.down = False
    k.recover(1)                               # the spout decided on 1 before the commit
    assert rec.acked == {1: 5} and rec.failed == []
    assert dict(rec.states[-1].items()) == {"cow": 1}


def test_commit_of_another_txid_is_refused(provider):
    k = keeper_for(provider, Recorder())
    k.recover(0)
    k.prepare(1)
    with pytest.raises(NotRecovered):
        k.commit(2)


def test_state_kept_under_the_task_id_is_carried_over_once(provider):
    # squall kept a task's state under its task id before it kept it under its index
    old, new = "t/count/7", "t/count/index-0"
    provider.prepare(old, 4, {SER.dumps("cow"): SER.dumps(3)})
    provider.commit(old, 4)
    provider.prepare(old, 5, {SER.dumps("moon"): SER.dumps(1)})   # decided by the spout
    rec = Recorder()
    k = StateKeeper(provider=provider, namespace=new, legacy=old, dumps=SER.dumps,
                    loads=SER.loads, init_state=rec.states.append, ack=rec.ack,
                    fail=rec.fail)
    k.recover(5)
    assert dict(rec.states[-1].items()) == {"cow": 3, "moon": 1}
    rec.states[-1].put("cow", 4)
    k.prepare(6)
    k.recover(5)                      # not committed: the old namespace is read again
    assert dict(rec.states[-1].items()) == {"cow": 3, "moon": 1}
    k.prepare(6)                      # every key, though none changed
    k.commit(6)
    assert provider.load(new) == (6, {SER.dumps("cow"): SER.dumps(3),
                                      SER.dumps("moon"): SER.dumps(1)})
    assert provider.load(old)[1] == {}          # emptied: no other task reads it again
    k.recover(6)
    assert dict(rec.states[-1].items()) == {"cow": 3, "moon": 1}


def test_a_namespace_that_committed_does_not_read_the_old_one(provider):
    old, new = "t/count/7", "t/count/index-0"
    rec = Recorder()
    k = StateKeeper(provider=provider, namespace=new, legacy=old, dumps=SER.dumps,
                    loads=SER.loads, init_state=rec.states.append, ack=rec.ack,
                    fail=rec.fail)
    k.recover(0)
    k.prepare(1)
    k.commit(1)
    provider.prepare(old, 1, {SER.dumps("cow"): SER.dumps(3)})
    provider.commit(old, 1)
    k.recover(1)
    assert dict(rec.states[-1].items()) == {}


def test_a_tuple_value_survives_a_rollback_as_a_tuple(provider):
    value_dumps, value_loads = value_codec(SER)
    rec = Recorder()
    k = StateKeeper(provider=provider, namespace="t/count/index-0", dumps=SER.dumps,
                    loads=SER.loads, value_dumps=value_dumps, value_loads=value_loads,
                    init_state=rec.states.append, ack=rec.ack, fail=rec.fail)
    k.recover(0)
    rec.states[-1].put("pair", (1, "x"))
    rec.states[-1].put(("k", 1), {"nested": (1, (2, 3)), "list": [4]})
    k.prepare(1)
    k.commit(1)
    rec.states[-1].put("pair", (2, "y"))
    k.recover(1)                              # rolls back to checkpoint 1
    state = dict(rec.states[-1].items())
    assert state == {"pair": (1, "x"), ("k", 1): {"nested": (1, (2, 3)), "list": [4]}}
    assert type(state["pair"]) is tuple and type(state[("k", 1)]["nested"][1]) is tuple
