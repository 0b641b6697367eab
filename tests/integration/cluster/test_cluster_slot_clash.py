"""Two supervisors on one host given the same ``supervisor.slots.ports``: nimbus uses each
host:port once, so the topology runs on the slots whose workers can bind, says so in one error
line and in ``squall list``, and every sentence gets acked."""
from __future__ import annotations

import pytest

from squall.daemon.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_a_host_port_two_supervisors_offer_is_used_once(squall_cluster, wordcount):
    c = squall_cluster
    ports = (free_port(), free_port())
    nimbus = c.start_nimbus()
    c.start_supervisor("supA", ports=ports)       # same storm.local.hostname (127.0.0.1)
    c.start_supervisor("supB", ports=ports)
    c.wait_ready(supervisors=2)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=4",
             "-c", "test.sentences=200", "-c", "test.emit.per.sec=100")
    c.wait(lambda: set(wordcount.read_acks(c.out_dir)) == set(range(200)), 45,
           "some sentences were never acked")
    slots = c.worker_slots("wc")
    assert len({node for node, _ in slots}) == 1 and {p for _, p in slots} == set(ports), slots
    shown = ", ".join(map(str, sorted(ports)))
    listed = c.squall("list").stdout
    assert f"offer the same slots 127.0.0.1:{shown}" in listed, listed
    lines = [line for line in nimbus.log_text().splitlines()
             if " ERROR " in line and "offer the same slots" in line]
    assert len(lines) == 1 and f"both offer ports {shown}" in lines[0], lines
