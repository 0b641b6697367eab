"""DRPC function names: the DRPC server, LocalDRPC and new_drpc_stream take the same ones, so a
topology tested with LocalDRPC is one a cluster's DRPC servers can call."""
from __future__ import annotations

import pytest

from squall import LocalDRPC
from squall.drpc import Call, Caller, DRPCServer
from squall.drpc.names import MAX_FUNCTION_CHARS
from squall.errors import DRPCError, TopologyError
from squall.trident import TridentTopology

CALLER = Caller("grpc", "ipv4:127.0.0.1:1", {})
LONGEST = "f" * MAX_FUNCTION_CHARS


@pytest.mark.parametrize("function, why", [
    ("f" * (MAX_FUNCTION_CHARS + 1), f"has {MAX_FUNCTION_CHARS + 1} characters"),
    ("", "is empty"), ("a/b", "contains '/'")])
def test_a_name_the_server_refuses_is_refused_by_local_drpc_and_at_build(function: str,
                                                                         why: str) -> None:
    # a 300-character name built and ran with LocalDRPC; a cluster's server answered 400 to
    # its callers and to the topology's own fetches
    server = DRPCServer({"drpc.request.timeout.secs": 1})
    rule = f"at most {MAX_FUNCTION_CHARS} characters"
    with pytest.raises(DRPCError, match=why) as refused:
        server.handle(Call("execute", function=function, args="x"), CALLER)
    assert rule in str(refused.value) and len(str(refused.value)) < 200
    with LocalDRPC({"drpc.request.timeout.secs": 2}) as drpc, \
            pytest.raises(DRPCError, match=why) as refused:
        drpc.execute(function, "x")             # at once, not queued until it times out
    assert rule in str(refused.value)
    with pytest.raises(TopologyError, match=why) as built:
        TridentTopology().new_drpc_stream(function, drpc)
    assert rule in str(built.value)


def test_the_longest_name_is_served_everywhere() -> None:
    with LocalDRPC({"drpc.request.timeout.secs": 0.01}) as drpc:
        with pytest.raises(DRPCError, match="timed out"):      # queued: nothing serves it
            drpc.execute(LONGEST, "x")
        t = TridentTopology()
        t.new_drpc_stream(LONGEST, drpc)
        assert f"spout-drpc-{LONGEST}" in t.build().components
    server = DRPCServer({"drpc.request.timeout.secs": 1})
    assert server.handle(Call("fetch", function=LONGEST, wait=0, max_requests=1,
                              holder="h"), CALLER) == []

