"""A network partition (issue #30): a supervisor in a network namespace of its own, joined
to the host by a veth pair, is cut off for longer than the ZooKeeper session timeout. Its
executors move to the supervisor on the other side, every sentence emitted before the cut
is acked, and when the link comes back the supervisor rejoins and its stranded workers
leave. The recovery time is printed and written to ``partition.json``. The same two sides
carry the word count over nng and grpc too, each listening on 0.0.0.0 (its ``bind.host``)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from squall.daemon.dev_zookeeper import DevZooKeeper
from squall.daemon.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)


@pytest.fixture
def netns() -> Iterator[dict[str, str]]:
    """A namespace ``ns`` with ``inner`` (its address) linked to the host's ``outer``
    through the veth ``link`` (host side); skipped where the kernel refuses namespaces."""
    tag = uuid.uuid4().hex[:6]
    ns, link, peer = f"sq{tag}", f"sqh{tag}", f"sqn{tag}"
    octet = int(tag[:2], 16) % 200 + 20
    outer, inner = f"10.213.{octet}.1", f"10.213.{octet}.2"
    made = _ip("netns", "add", ns)
    if made.returncode != 0:
        pytest.skip(f"network namespaces are not available here: {made.stderr.strip()}")
    try:
        for cmd in (["link", "add", link, "type", "veth", "peer", "name", peer],
                    ["link", "set", peer, "netns", ns],
                    ["addr", "add", f"{outer}/24", "dev", link],
                    ["link", "set", link, "up"],
                    ["netns", "exec", ns, "ip", "addr", "add", f"{inner}/24", "dev", peer],
                    ["netns", "exec", ns, "ip", "link", "set", peer, "up"],
                    ["netns", "exec", ns, "ip", "link", "set", "lo", "up"]):
            done = _ip(*cmd)
            assert done.returncode == 0, f"ip {' '.join(cmd)}: {done.stderr}"
        yield {"ns": ns, "link": link, "outer": outer, "inner": inner}
    finally:
        _ip("link", "del", link)
        _ip("netns", "del", ns)


class _TwoSides:
    """ZooKeeper, nimbus and a supervisor on the host's side of the veth, a supervisor in the
    namespace, and the word count submitted over both (``topology.workers=2``)."""

    def __init__(self, tmp_path: Path, netns: dict[str, str], harness_class: Any,
                 conf: dict[str, Any]) -> None:
        self.tmp_path, self.netns = tmp_path, netns
        self.outer, self.inner = netns["outer"], netns["inner"]
        self.zk = DevZooKeeper(tmp_path / "zookeeper", host=self.outer).start()
        self.c = harness_class(tmp_path, {**self.zk.conf("/squall-partition"),
                                          "squall.state": "zookeeper",
                                          "storm.zookeeper.connection.timeout": 10000})
        self.c.conf.update({"nimbus.host": self.outer,
                            "nimbus.seeds": [f"{self.outer}:{self.c.nimbus_ports[0]}"],
                            **conf})
        self.c.config_file.write_text(yaml.safe_dump(self.c.conf))
        self.inside: subprocess.Popen[bytes] | None = None
        self.local = tmp_path / "sup-inside"

    def start(self, wordcount: Any, rate: int = 20) -> Any:
        """Start both sides and submit (``rate`` sentences per second per spout task); returns
        the supervisor on the host's side once the topology runs on both and acks."""
        c = self.c
        c.start_nimbus()
        host_sup = c.start_supervisor("sup-host", slots=3,
                                      overrides={"storm.local.hostname": self.outer})
        self.local.mkdir()
        ports = [free_port() for _ in range(2)]
        with open(self.tmp_path / "sup-inside.log", "ab") as out:
            self.inside = subprocess.Popen(
                ["ip", "netns", "exec", self.netns["ns"], sys.executable, "-m",
                 "squall.cli.main", "--config", str(c.config_file),
                 "-c", f"storm.local.dir={self.local}",
                 "-c", f"storm.local.hostname={self.inner}",
                 "-c", f"supervisor.slots.ports={json.dumps(ports)}", "supervisor"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        c.wait(lambda: len(c.state.supervisor_ids()) == 2, 60, "supervisors did not register")
        c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
                 "-c", "test.sentences=1000000", "-c", f"test.emit.per.sec={rate}")
        c.wait(lambda: len({n for n, _ in c.worker_slots("wc")}) == 2, 60,
               "the topology is not on both sides")
        c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 40, 60, "no acks")
        return host_sup

    def close(self) -> None:
        inside = self.inside
        if inside is not None and inside.poll() is None:
            os.killpg(inside.pid, signal.SIGTERM)
            inside.wait(20)
        for pid_file in self.local.glob("workers/*/pids/*"):
            try:
                os.killpg(int(pid_file.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError):
                pass
        self.c.close()
        self.zk.stop()


@pytest.mark.parametrize("transport", ["nng", "grpc"])
def test_every_socket_transport_carries_tuples_between_machines(
        transport: str, netns: dict[str, str], tmp_path: Path, wordcount: Any,
        harness_class: Any) -> None:
    """Workers on both sides of the link, over nng or grpc listening on 0.0.0.0 (their
    bind.host): the trees that cross it complete (zmq is the partition test's)."""
    sides = _TwoSides(tmp_path, netns, harness_class,
                      {"squall.transport": transport,
                       f"squall.transport.{transport}.bind.host": "0.0.0.0"})
    try:
        sides.start(wordcount, rate=50)
        c = sides.c
        before = len(wordcount.read_acks(c.out_dir))
        c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 100, 60,
               "acking stopped")
    finally:
        sides.close()


def test_a_partitioned_supervisors_work_moves_and_nothing_is_lost(
        netns: dict[str, str], tmp_path: Path, wordcount: Any, harness_class: Any) -> None:
    # the trees the cut strands are replayed once they time out: a message timeout shorter
    # than the harness's 5 s (the fault itself, past the ZooKeeper session, is unchanged)
    sides = _TwoSides(tmp_path, netns, harness_class,
                      {"squall.transport.zmq.bind.host": "0.0.0.0",
                       "topology.message.timeout.secs": 2})
    c, inner, local = sides.c, sides.inner, sides.local
    try:
        host_sup = sides.start(wordcount)
        (inner_id,) = [s for s in c.state.supervisor_ids()
                       if (c.state.get_supervisor(s) or {}).get("hostname") == inner]

        emitted = {e.arg for e in wordcount.read_spout_events(c.out_dir) if e.event == "emit"}
        t0 = time.monotonic()
        assert _ip("link", "set", netns["link"], "down").returncode == 0       # the cut
        c.wait(lambda: inner_id not in c.state.supervisor_ids(), 60,
               "the cut-off supervisor stayed registered")
        c.wait(lambda: {n for n, _ in c.worker_slots("wc")} == set(c.state.supervisor_ids()),
               60, "its executors did not move")
        moved = time.monotonic() - t0
        emitted |= {e.arg for e in wordcount.read_spout_events(c.out_dir) if e.event == "emit"}
        c.wait(lambda: emitted <= set(wordcount.read_acks(c.out_dir)), 120,
               "sentences emitted before the cut were never acked")
        settled = time.monotonic() - t0
        assert _ip("link", "set", netns["link"], "up").returncode == 0         # healed
        c.wait(lambda: inner_id in c.state.supervisor_ids(), 60, "it did not rejoin")
        stranded = [int(p.name) for p in local.glob("workers/*/pids/*")]
        c.wait(lambda: not [p for p in stranded if Path(f"/proc/{p}").exists()], 60,
               "its stranded workers kept running")
        before = len(wordcount.read_acks(c.out_dir))
        c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 40, 60,
               "the topology stopped after the partition healed")
        figures = {"partition": {"work_moved_secs": round(moved, 1),
                                 "settle_secs": round(settled, 1)}}
        (tmp_path / "partition.json").write_text(json.dumps(figures))
        print("recovery:", json.dumps(figures))
        assert host_sup.alive()
    finally:
        sides.close()
