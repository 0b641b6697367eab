"""Supervisors configured with different transports, serializers or transport security under
one topology that chooses neither (no topology chooses squall.transport.tls): its workers could
never exchange a tuple, so nimbus says so in one error line and in the topology's status reason.
A topology choosing its own is unaffected. Nimbus's parts over the memory store."""
from __future__ import annotations

from typing import Any

import pytest

from squall.daemon.nimbus_worker_defaults import FIELD, advertised, find_clashes

from leader_parts import ROOMY, LeaderParts

TID = "wd-1-1000"


class Harness(LeaderParts):
    """The leader's scheduling parts on the memory store, one topology asking for 2 workers
    whose own conf is ``tconf``."""

    def __init__(self, tmp_path: Any, tconf: dict[str, Any]) -> None:
        # nimbus's own conf names a transport: the topology's own conf alone decides
        super().__init__(tmp_path, {"squall.scheduler": "even", "squall.transport": "zmq",
                                    "squall.serializer": "msgpack"},
                         tid=TID, name="wd", parallelism=2, tconf=tconf)

    def register(self, sid: str, port: int, **sup_conf: Any) -> None:
        conf = {k.replace("_", "."): v for k, v in sup_conf.items()}
        self.state.register_supervisor(sid, {"hostname": f"host-{sid}", "ports": [port],
                                             "resources": ROOMY, "time_secs": 1000,
                                             "uptime_secs": 100, FIELD: advertised(conf)})

    def nodes(self) -> set[str]:
        got = self.state.get_assignment(TID) or {}
        return {str(n) for n, _ in (got.get("executor_node_port") or {}).values()}


def _lines(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "ERROR"
            and "use different" in r.getMessage()]


@pytest.fixture
def harness(tmp_path: Any, request: Any) -> Any:
    h = Harness(tmp_path, getattr(request, "param", {}))
    yield h
    h.store.close()


@pytest.mark.parametrize("key,a,b", [("squall.transport", "zmq", "nng"),
                                     ("squall.serializer", "msgpack", "json")])
def test_supervisors_with_different_defaults_are_said_once_and_in_the_status(
        harness: Harness, key: str, a: str, b: str, caplog: Any) -> None:
    caplog.set_level("INFO")
    harness.register("sup-a", 6700, **{key.replace(".", "_"): a})
    harness.register("sup-b", 6701, **{key.replace(".", "_"): b})
    for _ in range(3):
        harness.lifecycle.monitor_pass()
    assert harness.nodes() == {"sup-a", "sup-b"}
    reason = harness.reason()
    assert f"the supervisors running its workers use different {key}: {a} (sup-a on " \
           f"host-sup-a), {b} (sup-b on host-sup-b)" in reason, reason
    assert f"set the same {key} in every supervisor's config" in reason
    assert f"squall submit -c {key}=NAME" in reason
    lines = _lines(caplog)
    assert len(lines) == 1, lines
    assert "topology wd" in lines[0] and f"{a} (sup-a on host-sup-a), {b} (sup-b on" in lines[0]
    # sup-b now agrees (restarted with sup-a's value): the reason goes
    harness.register("sup-b", 6701, **{key.replace(".", "_"): a})
    harness.lifecycle.monitor_pass()
    assert harness.reason() == ""
    assert "its supervisors agree on" in caplog.text


@pytest.mark.parametrize("harness", [{"squall.transport": "nng", "squall.serializer": "json"}],
                         indirect=True)
def test_a_topology_choosing_its_own_is_unaffected(harness: Harness, caplog: Any) -> None:
    harness.register("sup-a", 6700, squall_transport="zmq", squall_serializer="msgpack")
    harness.register("sup-b", 6701, squall_transport="grpc", squall_serializer="json")
    for _ in range(2):
        harness.lifecycle.monitor_pass()
    assert harness.nodes() == {"sup-a", "sup-b"}
    assert harness.reason() == ""
    assert not _lines(caplog)


def test_agreeing_supervisors_say_nothing(harness: Harness, caplog: Any) -> None:
    harness.register("sup-a", 6700)                         # the defaults, unset
    harness.register("sup-b", 6701, squall_transport="zmq", squall_serializer="msgpack")
    for _ in range(2):
        harness.lifecycle.monitor_pass()
    assert harness.nodes() == {"sup-a", "sup-b"}
    assert harness.reason() == ""
    assert not _lines(caplog)


def test_the_comparison() -> None:
    regs = {"s1": {FIELD: {"squall.transport": "zmq", "squall.serializer": "msgpack"}},
            "s2": {FIELD: {"squall.transport": "nng", "squall.serializer": "msgpack"}},
            "s3": {FIELD: {"squall.transport": "zmq", "squall.serializer": "json"}},
            "old": {}}                      # a supervisor advertising nothing is left out
    clashes = find_clashes({}, ["s1", "s2", "s3", "old"], regs)
    assert [(c.key, c.values) for c in clashes] == [
        ("squall.transport", (("zmq", ("s1", "s3")), ("nng", ("s2",)))),
        ("squall.serializer", (("msgpack", ("s1", "s2")), ("json", ("s3",))))]
    assert find_clashes({"squall.transport": "grpc"}, ["s1", "s2"], regs) == []
    assert find_clashes({}, ["s1", "old"], regs) == []
    assert advertised({}) == {
        "squall.transport": "zmq", "squall.serializer": "msgpack", "squall.transport.tls": False,
        "squall.transport.zmq.curve.enabled": False, "squall.transport.nng.tls.enabled": False,
        "squall.transport.grpc.tls.enabled": False}
    assert advertised({"squall.transport": "grpc"})["squall.transport"] == "grpc"
    assert advertised({"squall.transport.tls": True})["squall.transport.tls"] is True


def test_a_transports_own_key_is_compared_among_the_workers_running_it() -> None:
    def reg(transport: str, curve: bool) -> dict[str, Any]:
        return {FIELD: {"squall.transport": transport, "squall.serializer": "msgpack",
                        "squall.transport.zmq.curve.enabled": curve}}
    regs = {"s1": reg("zmq", True), "s2": reg("zmq", False),
            "n1": reg("nng", True), "n2": reg("nng", False)}
    [clash] = find_clashes({}, ["s1", "s2"], regs)
    assert clash.key == "squall.transport.zmq.curve.enabled"
    assert clash.values == ((True, ("s1",)), (False, ("s2",)))
    assert "curve.enabled: true (s1), false (s2)" in clash.describe()
    assert find_clashes({}, ["n1", "n2"], regs) == []          # nng: zmq's key is unused
    # the topology chooses zmq: its workers on n1 and n2 run it
    assert [c.key for c in find_clashes({"squall.transport": "zmq"}, ["n1", "n2"], regs)] == \
        ["squall.transport.zmq.curve.enabled"]
    # ... and sets the key too: every worker gets its value
    assert find_clashes({"squall.transport.zmq.curve.enabled": True}, ["s1", "s2"], regs) == []


def test_a_supervisor_without_the_clusters_transport_tls_is_said_once_and_in_the_status(
        harness: Harness, caplog: Any) -> None:
    # a rollout that missed one host: its workers and the others' cannot connect
    harness.register("sup-a", 6700, squall_transport_tls=True)
    harness.register("sup-b", 6701)
    for _ in range(2):
        harness.lifecycle.monitor_pass()
    assert harness.nodes() == {"sup-a", "sup-b"}
    reason = harness.reason()
    assert ("use different squall.transport.tls: true (sup-a on host-sup-a), false (sup-b on "
            "host-sup-b)") in reason, reason
    assert "set the same squall.transport.tls in every supervisor's config" in reason
    assert "squall submit" not in reason           # a topology cannot set it
    [line] = _lines(caplog)
    assert "topology wd" in line and "squall.transport.tls: true (sup-a" in line
