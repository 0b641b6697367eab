"""Flow control under faults on a real two-worker cluster: the worker of a saturated bolt is
killed (its replacement must not leave the spout throttled for good), and forged control
frames sent to a worker's port change nothing. Every id is acked in the end."""
from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import pytest

from squall import config, drivers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "saturated.py"
TOTAL = 3000         # ids: the bolt takes 2 ms each, the kill comes after some 500 of them


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("saturated_helpers", TOPOLOGY)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _worker_pid(sup: Any, port: int) -> int:
    for pid in sup.worker_pids():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--port" in cmd and cmd[cmd.index(b"--port") + 1] == str(port).encode():
            return pid
    raise AssertionError(f"no worker process for port {port}")


def _forge(conf: dict[str, Any], topology_id: str, port: int, who: str, value: Any) -> None:
    """Send one ``congested`` control frame to a worker's port, as a stranger would."""
    conf = {**config.defaults(), **conf}
    transport = drivers.driver("transport", conf)
    serializer = drivers.driver("serializer", conf)
    conn = transport.connect(topology_id, "127.0.0.1", port)
    try:
        conn.send([(0, serializer.dumps(["congested", who, value]))])
    finally:
        conn.close()
        transport.close()


def test_killing_a_saturated_bolts_worker_does_not_stop_the_spout_for_good(squall_cluster):
    c = squall_cluster
    helpers = _module()
    c.start_nimbus()
    sup = c.start_supervisor("sup1")
    c.wait_ready(supervisors=1)
    c.squall("submit", f"{TOPOLOGY}:topology", "--name", "sat", "-c", "topology.workers=2",
             "-c", f"test.sentences={TOTAL}", "-c", "test.work.ms=2",
             "-c", "topology.executor.receive.buffer.size=100",
             "-c", "topology.backpressure.stall.report.secs=1",
             # the ids the killed worker held are replayed once they time out
             "-c", "topology.message.timeout.secs=3")
    tid = c.wait(lambda: c.state.find_topology_id("sat"), 20, "no topology")
    client = c.client()

    def placement() -> dict[str, tuple[int, list[int]]] | None:
        info = client.topology_info("sat")
        where = {ex["component"]: (int(ex["worker"].rsplit(":", 1)[1]), ex["tasks"])
                 for ex in info["executors"]}
        return where if {"a_numbers", "b_slow"} <= set(where) else None

    where = c.wait(placement, 60, "the executors never reported")
    spout_port, _ = where["a_numbers"]
    slow_port, slow_tasks = where["b_slow"]
    assert spout_port != slow_port, where           # the spout feeds the bolt across workers
    acked = lambda: helpers.read_acks(c.out_dir)     # noqa: E731
    c.wait(lambda: len(acked()) > 300, 60, "no acks")

    def spout_held() -> bool:
        info = client.topology_info("sat")
        return any(ex["component"] == "a_numbers" and ex.get("paused", 0) > 0
                   for ex in info["executors"])
    c.wait(spout_held, 30, "backpressure never held the spout back")

    # forged frames: from a stranger, and in a worker's name about a task it does not run
    spout_task = where["a_numbers"][1][0]
    _forge(c.conf, tid, spout_port, "10.9.9.9:1", ["x", [[slow_tasks[0], True]], False])
    _forge(c.conf, tid, spout_port, f"127.0.0.1:{slow_port}", ["x", [[spout_task, True]], False])
    before = len(acked())
    c.wait(lambda: len(acked()) > before + 200, 60, "a forged control frame stopped the spout")
    log_file = next(sup.local_dir.glob(f"logs/*-{spout_port}.log"))
    c.wait(lambda: "not a worker of this topology" in log_file.read_text(), 20,
           "the stranger's frame was not logged")
    assert "does not run in worker" in log_file.read_text()

    # kill -9 the saturated bolt's worker: its replacement gets the spout going again
    victim = _worker_pid(sup, slow_port)
    import os
    import signal
    before = len(acked())
    killed_at = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    c.wait(lambda: len(acked()) > before + 100, 90, "acking never resumed after the kill")
    resumed = time.monotonic() - killed_at
    c.wait(lambda: acked() == set(range(TOTAL)), 120, "some ids were never acked")
    done = time.monotonic() - killed_at
    figures = {"saturated_bolt_worker_kill": {"acking_resumed_secs": round(resumed, 1),
                                              "all_acked_secs": round(done, 1)}}
    (c.tmp / "recovery.json").write_text(json.dumps(figures))
    print("recovery:", json.dumps(figures))
    assert _worker_pid(sup, slow_port) != victim
