"""Topology packages (issue #30): a topology whose package no nimbus holds says so in its
status instead of being looked for silently. (The leader killed right after a submit with
``topology.min.replication.count: 2`` is a case of the fault suite, test_faults.py.)"""
from __future__ import annotations

import shutil

import pytest

from squall.daemon.nimbus_replication import NO_CODE

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def test_a_topology_whose_package_is_nowhere_says_so_once(squall_cluster, wordcount):
    c = squall_cluster
    n0 = c.start_nimbus()
    c.start_supervisor("sup1")
    c.wait_ready(supervisors=1)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "test.sentences=100000",
             "-c", "test.emit.per.sec=30")
    tid = c.state.find_topology_id("wc")
    c.wait(lambda: c.assignment("wc"), 30, "not assigned")
    # the supervisor has the package and its workers run before the only copy is lost
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 0, 60, "the workers never acked")
    n0.kill9()
    shutil.rmtree(n0.local_dir / "nimbus" / "stormdist" / tid)
    n0 = c.start_nimbus()
    c.wait(lambda: (c.state.get_storm(tid) or {}).get("status_reason") == NO_CODE, 30,
           "the status does not say the code is nowhere")
    c.wait(lambda: NO_CODE in c.squall("list").stdout, 20, "squall list does not say it")
    before = len(wordcount.read_acks(c.out_dir))       # the workers it had run on
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 20, 30, "workers stopped")
    text = n0.log_text()              # both lives of the nimbus: one line each at most
    assert text.count("no live nimbus holds the package") == 1
    assert text.count("no local package for topology") <= 1
