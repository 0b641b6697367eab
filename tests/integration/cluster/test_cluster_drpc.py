"""DRPC on a real cluster: the worker serving a function killed with SIGKILL while it holds
requests (one started, one fetched for the next batch) and more wait on the server. The
requests it had not started go back to the server when their lease (drpc.fetch.lease.secs)
runs out, and its restarted worker answers them; the caller of the one it had started hears
why at once. No caller waits out its timeout (they all did: the worker had fetched every
waiting request and took them with it)."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from squall import DRPCClient
from squall.errors import DRPCError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "drpc_echo.py"
TIMEOUT = 40
#: each request's work on the worker's loop (seconds): the restarted worker answers them one
#: after another, so the test lasts about five of these after the kill
CALL = "sleep:1"


def test_a_killed_worker_loses_no_request_it_had_not_started(squall_cluster: Any) -> None:
    c = squall_cluster
    c.start_nimbus()
    sup = c.start_supervisor("sup1", slots=1)
    drpc = c.start_drpc({"drpc.request.timeout.secs": TIMEOUT, "drpc.fetch.lease.secs": 2})
    c.wait_ready(supervisors=1)
    servers = [f"127.0.0.1:{drpc.port}"]
    c.squall("submit", f"{TOPOLOGY}:topology", "--name", "echo",
             "-c", f'drpc.servers=["{servers[0]}"]',
             "-c", "topology.trident.batch.emit.interval.millis=20")
    client = DRPCClient({"drpc.servers": servers, "drpc.request.timeout.secs": TIMEOUT})

    def served() -> bool:
        try:
            return client.execute("echo", "ping") == '[["ping"]]'
        except DRPCError:
            return False
    c.wait(served, 90, "the topology serving echo")
    out: dict[int, str] = {}

    def call(i: int) -> None:
        try:
            out[i] = client.execute("echo", CALL)
        except DRPCError as exc:
            out[i] = f"DRPCError: {exc}"
    callers = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(6)]
    for t in callers:
        t.start()

    def holding() -> bool:
        echo = [f for f in client.functions() if f.get("function") == "echo"]
        return bool(echo) and echo[0]["in_flight"] >= 2
    c.wait(holding, 30, "the worker holding requests")
    victims = sup.worker_pids()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    for t in callers:
        t.join(TIMEOUT + 10)
    assert not any(t.is_alive() for t in callers), out
    answered = [r for r in out.values() if r == f'[["{CALL}"]]']
    failed = [r for r in out.values() if r != f'[["{CALL}"]]']
    # the one it had started may fail (its batch may have run part of the way), at once
    assert len(answered) >= 5 and all(
        "failed: the topology that started it stopped answering" in r for r in failed), out
    assert time.monotonic() - killed < TIMEOUT - 5, "a caller waited out its timeout"
