"""Host isolation and per-component resources with the ``multidim`` scheduler on a real cluster.

Two supervisors on this machine advertise different host names that both reach it
(``storm.local.hostname``: ``localhost`` and ``127.0.0.1``; the zmq transport binds
127.0.0.1). A topology isolated to ``localhost`` (``topology.isolated.hosts``) runs only
there; a topology that may run anywhere stays on ``127.0.0.1`` although ``localhost`` has
free ports. A third topology whose split bolt asks for more cpu slots (``set_resources``)
than ``127.0.0.1`` has left waits, ``pending`` with the cpu shortfall, while the isolated
topology holds ``localhost``, and is placed there once that topology is killed. Each runs to
exact word counts with every sentence acked.
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

TOTAL = 100
TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"
RESOURCED_TARGET = str(TOPOLOGIES / "resourced_wordcount.py") + ":topology"
ISO_HOST, OPEN_HOST = "localhost", "127.0.0.1"
# cpu: the open host fits one plain word count (8 executors of 1 cpu slot: 2 spouts, 2
# splits, 2 counts, 2 ackers) with 2 slots to spare; the isolated host has room for more
ISO_ROOM = {"supervisor.cpu.slots": 20, "supervisor.memory.slots": 16,
            "supervisor.net.slots": 16, "storm.local.hostname": ISO_HOST}
OPEN_ROOM = {"supervisor.cpu.slots": 10, "supervisor.memory.slots": 16,
             "supervisor.net.slots": 16, "storm.local.hostname": OPEN_HOST}


def _hosts(c, name: str) -> set[str]:
    """The advertised hosts of the supervisors running topology ``name``'s workers."""
    a = c.assignment(name) or {}
    return {a["node_host"][node] for node, _port in c.worker_slots(name)}


def _submit(c, target: str, name: str, workers: int, *conf: str) -> Path:
    out = c.out_dir / name
    out.mkdir()
    c.squall("submit", target, "--name", name, "-c", f"topology.workers={workers}",
             "-c", f"test.output.dir={out}", "-c", f"test.sentences={TOTAL}", *conf)
    return out


def _exact(c, wordcount, out: Path, name: str) -> None:
    c.wait(lambda: sorted(wordcount.read_acks(out)) == list(range(TOTAL)), 30,
           f"{name}: not every sentence was acked")
    expected = wordcount.expected_counts(TOTAL)
    c.wait(lambda: wordcount.read_counts(out) == expected, 10, f"{name}: counts differ")
    assert max(wordcount.counted_words(out).values()) == 1


def test_isolated_hosts_and_component_resources_on_a_real_cluster(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus(overrides={"squall.scheduler": "multidim"})
    c.start_supervisor("iso", slots=3, overrides=ISO_ROOM)
    c.start_supervisor("open", slots=3, overrides=OPEN_ROOM)
    c.wait_ready(supervisors=2)
    assert sorted(s["hostname"] for s in c.state.supervisors().values()) == \
        sorted([ISO_HOST, OPEN_HOST])

    # the isolated topology: both workers on its host, none elsewhere
    iso_out = _submit(c, c.wordcount_target, "iso", 2, "-c",
                      f"topology.isolated.hosts=[{ISO_HOST}]")
    c.wait(lambda: len(c.worker_slots("iso")) == 2, 20, "iso not placed on 2 workers")
    assert _hosts(c, "iso") == {ISO_HOST}

    # a topology that may run anywhere keeps off the isolated host, which still has a free port
    plain_out = _submit(c, c.wordcount_target, "plain", 2)
    c.wait(lambda: len(c.worker_slots("plain")) == 2, 20, "plain not placed on 2 workers")
    assert _hosts(c, "plain") == {OPEN_HOST}
    plain_slots = c.worker_slots("plain")

    # set_resources(cpu=3) on the split bolt: 2 + 2 * 3 + 2 + 1 acker = 11 cpu slots for one
    # worker; the open host has 2 left and the isolated host's room is not for it
    heavy_out = _submit(c, RESOURCED_TARGET, "heavy", 1)
    tid = c.wait(lambda: c.state.find_topology_id("heavy"), 10, "heavy not submitted")
    storm = c.wait(lambda: (c.state.get_storm(tid) or {}).get("status") == "pending"
                   and c.state.get_storm(tid), 20, "heavy not pending")
    assert storm["status_reason"] == "needs 9 more cpu slots (have 2, need 11)"
    assert not c.worker_slots("heavy")

    # tuples flow between the workers of each host
    _exact(c, wordcount, iso_out, "iso")
    _exact(c, wordcount, plain_out, "plain")

    # once the isolated topology is gone its host takes the heavy one, the only place it fits
    c.squall("kill", "iso", "--wait", "0")
    c.wait(lambda: (c.state.get_storm(tid) or {}).get("status") == "active"
           and c.worker_slots("heavy"), 20, "heavy never scheduled")
    assert _hosts(c, "heavy") == {ISO_HOST}
    assert [r["cpu"] for r in c.assignment("heavy")["worker_resources"].values()] == [11]
    _exact(c, wordcount, heavy_out, "heavy")
    assert c.worker_slots("plain") == plain_slots
    assert c.listed() == {"plain": "active", "heavy": "active"}
