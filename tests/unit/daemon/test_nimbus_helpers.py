"""Pure pieces of nimbus and its client: seeds, submitted conf, executor options, liveness."""
from __future__ import annotations

import time

import pytest

from squall.cli.cluster import submitted_conf
from squall.daemon.nimbus_client import parse_executors, seed_addresses
from squall.daemon.nimbus_schedule import BeatTracker, alive_assignment
from squall.daemon.nimbus_slot_failures import NEVER_STARTED, Outage
from squall.daemon.nimbus_topologies import machine_keys, topology_conf
from squall.errors import ConfigError
from squall.scheduling.cluster import WorkerSlot


def test_seed_addresses_take_nimbus_port_unless_given():
    conf = {"nimbus.seeds": ["a", "b:7000"], "nimbus.port": 6627}
    assert seed_addresses(conf) == ["a:6627", "b:7000"]
    assert seed_addresses({"nimbus.seeds": "x,y:1", "nimbus.port": 5}) == ["x:5", "y:1"]


def test_submitted_conf_layers_and_daemon_keys_dropped_by_nimbus():
    from squall import config
    conf = config.load_config(None, ["topology.workers=3", "k=1"], env={}, home="/nonexistent")
    sent = submitted_conf(conf, {"topology.workers": 2, "topology.debug": True})
    assert sent["topology.workers"] == 3          # -c beats the topology's conf
    assert sent["topology.debug"] is True and sent["k"] == 1
    assert "storm.zookeeper.port" not in sent      # defaults are not sent
    assert sent[config.OVERRIDES_KEY] == {"topology.workers": 3, "k": 1}
    kept = topology_conf({**sent, "storm.zookeeper.servers": ["evil"], "nimbus.port": 1,
                          "squall.state": "memory", "squall.transport": "nng"})
    assert "storm.zookeeper.servers" not in kept and "nimbus.port" not in kept
    assert "squall.state" not in kept and kept["squall.transport"] == "nng"
    # nor do they reach the components through the recorded -c overrides
    kept = topology_conf({config.OVERRIDES_KEY: {"worker.log.level": "DEBUG", "k": 1}})
    assert kept[config.OVERRIDES_KEY] == {"k": 1}


def test_a_submit_warns_of_and_drops_every_machines_key_but_what_a_client_reads():
    # squall.scheduler, logviewer.*, storm.local.*, nimbus.* and the DRPC server's keys were
    # dropped or ignored without a word
    machines = ["squall.scheduler", "logviewer.port", "storm.local.hostname", "storm.local.dir",
                "nimbus.task.timeout.secs", "nimbus.supervisor.timeout.secs", "nimbus.host",
                "drpc.worker.threads", "drpc.http.port", "drpc.host", "drpc.invocations.threads",
                "drpc.fetch.lease.secs", "drpc.max.message.bytes", "worker.log.level",
                "supervisor.slots.ports", "ui.port", "squall.state"]
    clients = ["nimbus.seeds", "nimbus.port", "storm.zookeeper.servers", "storm.zookeeper.root",
               "nimbus.authentication", "nimbus.admins", "squall.auth.token"]
    # what a topology's workers and components read, from its conf
    topology = ["drpc.servers", "drpc.port", "drpc.request.timeout.secs", "topology.workers",
                "squall.transport", "topology.isolated.hosts", "my.own.key"]
    sent = dict.fromkeys(machines + clients + topology, 1)
    assert machine_keys(sent) == sorted(machines)
    assert set(topology_conf(sent)) == set(topology)


def test_parse_executors():
    assert parse_executors(["split=4", "count=1"]) == {"split": 4, "count": 1}
    for bad in (["split"], ["split=0"], ["=2"], ["split=x"]):
        with pytest.raises(ConfigError, match="COMPONENT=N"):
            parse_executors(bad)
    # the later one silently won
    with pytest.raises(ConfigError, match="--executors names 'count' twice"):
        parse_executors(["count=2", "count=3"])


def test_parse_executors_names_component_ids_with_equals() -> None:
    # it split at the first '=': "a=b=2" was "a bad --executors entry"
    assert parse_executors(["a=b=2", "k=v=w=3", "x,y=4"]) == {"a=b": 2, "k=v=w": 3, "x,y": 4}
    with pytest.raises(ConfigError, match="COMPONENT=N"):
        parse_executors(["a=2=b"])


def test_rebalance_takes_executors_repeated_and_storms_short_options():
    # a second --executors replaced the first: `-e split=1 -e count=3` dropped split=1
    from squall.cli.main import build_parser
    args = build_parser().parse_args(["rebalance", "wc", "--executors", "split=1",
                                      "--executors", "count=3", "--workers", "2"])
    assert args.executors == ["split=1", "count=3"] and args.workers == 2
    args = build_parser().parse_args(["rebalance", "wc", "-n", "3", "-e", "split=1", "a=2",
                                      "-e", "count=3", "-w", "0"])
    assert (args.workers, args.executors, args.wait) == (3, ["split=1", "a=2", "count=3"], 0)
    assert build_parser().parse_args(["kill", "wc", "-w", "5"]).wait == 5


def test_executors_are_alive_while_launching_or_beating():
    now = time.time()
    assignment = {"executor_node_port": {"[1, 1]": ["s", 1], "[2, 2]": ["s", 2],
                                         "[3, 3]": ["s", 3]},
                  "executor_start_time_secs": {"[1, 1]": now, "[2, 2]": now - 100,
                                               "[3, 3]": now - 100}}
    beats = {"s-2": {"time_secs": 1, "executors": {"[2, 2]": {}}}}
    tracker = BeatTracker()
    tracker.observe("t", beats)
    live = alive_assignment(tracker, "t", assignment, beats, task_timeout=5, launch_timeout=30)
    # [1, 1] is still launching; [2, 2] beats; [3, 3] is old and never beat
    assert sorted(str(e) for e in live.alive.executors()) == ["[1, 1]", "[2, 2]"]
    assert live.timed_out == {WorkerSlot("s", 3): Outage(("[3, 3]",), NEVER_STARTED)}
    assert live.beating == {WorkerSlot("s", 2)}


def test_a_beat_that_stops_changing_times_out():
    tracker = BeatTracker()
    tracker.observe("t", {"s-1": {"time_secs": 1}})
    tracker._seen[("t", "s-1")] = ((1, None), time.monotonic() - 10)
    tracker.observe("t", {"s-1": {"time_secs": 1}})       # unchanged: still old
    assert tracker.age("t", "s-1") >= 10
    tracker.observe("t", {"s-1": {"time_secs": 2}})       # changed: fresh
    assert tracker.age("t", "s-1") < 1


def test_a_start_failure_is_the_reason_only_on_a_slot_the_topology_still_has():
    from squall.daemon.nimbus_info import start_failure_reason
    from squall.runtime.errors import WORKER_COMPONENT
    now = time.time()
    errors = {WORKER_COMPONENT: [{"start_failure": True, "time_secs": now - 5, "node": "supA",
                                  "host": "10.0.0.1", "port": 6700,
                                  "error": "Traceback ...\nTopologyError: cannot read it"}]}
    beats = {"supB-6701": {"time_secs": now - 1}}
    assert start_failure_reason(errors, {}, now, {("supA", 6700)}) == (
        "workers fail to start (10.0.0.1:6700): TopologyError: cannot read it")
    # nimbus moved the executors to supB, where their worker beats: the old slot's failure
    # is no reason any more
    assert start_failure_reason(errors, beats, now, {("supB", 6701)}) == ""
    # a worker of that slot that beat since it failed runs
    assert start_failure_reason(errors, {"supA-6700": {"time_secs": now - 1}}, now,
                                {("supA", 6700)}) == ""
