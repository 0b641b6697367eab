"""The nimbus client: how long a submit may take, and what a call that changes state says
when nimbus does not answer in time (it may have done it: no other seed is tried)."""
from __future__ import annotations

from typing import Any

import grpc
import pytest

from squall.daemon.nimbus_client import NimbusClient, NimbusUnavailableError
from squall.daemon.validate import TIMEOUT_SECS


class Late(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "late"


def test_a_submit_may_take_the_load_and_the_replication_wait() -> None:
    client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1"]}, timeout=30)
    assert client._submit_timeout({}) == 30 + TIMEOUT_SECS
    assert client._submit_timeout({"topology.min.replication.count": 2,
                                   "topology.max.replication.wait.time.sec": 60}) == (
        30 + TIMEOUT_SECS + 60)
    assert client._submit_timeout({"topology.min.replication.count": 2,
                                   "topology.max.replication.wait.time.sec": -1}) is None


def test_a_change_nimbus_did_not_answer_in_time_may_have_happened() -> None:
    client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1", "127.0.0.1:2"]}, timeout=5)
    tried: list[Any] = []

    def late(stub: Any, timeout: Any) -> Any:
        tried.append(timeout)
        raise Late(grpc.StatusCode.DEADLINE_EXCEEDED)

    with pytest.raises(NimbusUnavailableError, match=r"nimbus at 127.0.0.1:1 did not answer "
                       r"within 5 s; the kill may have gone through: see `squall list`"):
        client._call(late, change="the kill")
    assert tried == [5]                     # the other seed was not asked to do it again
    tried.clear()
    with pytest.raises(NimbusUnavailableError, match="no nimbus leader answered"):
        client._call(late)                  # a read: every seed is tried
    assert tried == [5, 5]
