"""The leader's scheduling parts over the memory store with one submitted topology (a spout and
a bolt of ``parallelism`` each, asking for ``workers`` workers), for the tests of what a
scheduling pass does (slot clashes, supervisors' worker defaults)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from squall import Bolt, Spout, TopologyBuilder, drivers
from squall.daemon import packaging
from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_schedule import Scheduling
from squall.daemon.nimbus_topologies import TopologyLifecycle
from squall.state.cluster_state import ClusterState

#: resources of a supervisor with room for anything these tests place
ROOMY = {"cpu": 16, "memory": 32, "net": 16, "disk": 0}


class Src(Spout):
    outputs = ["line"]

    def next_tuple(self) -> None:
        pass


class Work(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        pass


class LeaderParts:
    """``state`` and ``lifecycle`` of a leader whose conf is ``conf`` (a memory store under
    ``tmp_path``), topology ``tid`` (named ``name``) submitted with its own conf ``tconf``."""

    def __init__(self, tmp_path: Path, conf: dict[str, Any], *, tid: str, name: str,
                 parallelism: int, tconf: dict[str, Any] | None = None) -> None:
        conf = {"squall.state": "memory", "storm.local.dir": str(tmp_path),
                "topology.message.timeout.secs": 0, **conf}
        self.tid = tid
        self.store = drivers.driver("state", conf)
        self.store.start()
        self.state = ClusterState(self.store, conf)
        self.state.setup()
        code = CodeStore(tmp_path / "nimbus", conf)
        code.prepare()
        self.code = code
        scheduling = Scheduling(conf, self.state, drivers.driver("scheduler", conf), code)
        self.lifecycle = TopologyLifecycle(conf, self.state, code, scheduling,
                                           require_leader=lambda: None, wake=lambda: None)
        self.add(tid, name, parallelism, tconf)

    def add(self, tid: str, name: str, parallelism: int, tconf: dict[str, Any] | None = None,
            launch_time: int = 1000) -> None:
        """Submit topology ``tid`` (as the constructor's) to the code store and the state."""
        directory = self.code.directory(tid)
        directory.mkdir(parents=True)
        b = TopologyBuilder()
        b.set_spout("spout", Src, parallelism=parallelism)
        b.set_bolt("count", Work, parallelism=parallelism).shuffle_grouping("spout")
        packaging.write_json(directory / packaging.CONF_FILE, tconf or {})
        packaging.write_json(directory / packaging.TOPOLOGY_FILE,
                             b.create_topology().to_json())
        (directory / packaging.CODE_FILE).write_bytes(b"")
        topology = self.code.topology_of(tid)[1]
        self.state.set_storm(tid, {
            "name": name, "launch_time": launch_time, "status": "active", "status_reason": "",
            "num_workers": parallelism, "component_executors": {
                c: s.parallelism for c, s in topology.components.items()}})

    def reason(self) -> str:
        return str((self.state.get_storm(self.tid) or {}).get("status_reason") or "")
