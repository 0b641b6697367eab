"""Which transport a LocalCluster runs: an in-process one chosen in its own conf (a YAML
file, ``LocalCluster(conf)``) is used; a cluster's transport in a shared config file gives
way to ``local`` with a log line; the submit conf chooses as it is."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from squall import ConfigError, LocalCluster, Spout, TopologyBuilder, config, drivers
from squall.runtime.local_cluster import warn_ignored_keys
from squall.testing import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _fake_dist import fake_distribution

COUNTING = '''
from squall.transports.local import LocalTransport

BINDS = []

class CountingTransport(LocalTransport):
    name = "counting"

    def bind(self, *args, **kwargs):
        BINDS.append(args)
        return super().bind(*args, **kwargs)
'''


class Numbers(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < 5:
            self.emit([self.i], tup_id=self.i)
            self.i += 1

    def ack(self, tup_id: Any) -> None:
        ACKED.append(tup_id)


ACKED: list[Any] = []


def _topology() -> Any:
    b = TopologyBuilder()
    b.set_spout("n", Numbers, 2)
    return b.create_topology()


@pytest.fixture
def counting(tmp_path: Path) -> Any:
    eps = {"squall.transports": {"counting": "squall_counting_transport:CountingTransport"}}
    with fake_distribution(tmp_path / "site", "squall-counting", eps,
                           {"squall_counting_transport": COUNTING}):
        import squall_counting_transport
        yield squall_counting_transport


def test_an_in_process_transport_of_the_clusters_conf_is_used(counting: Any) -> None:
    # it was replaced by 'local' unless given in the submit conf
    ACKED.clear()
    with LocalCluster({"squall.transport": "counting"}) as cluster:
        cluster.submit_topology("t", {"topology.workers": 2}, _topology())
        wait_until(lambda: len(ACKED) >= 10, timeout=20)
    assert counting.BINDS


def test_a_cluster_transport_of_a_shared_config_gives_way_to_local(
        caplog: pytest.LogCaptureFixture) -> None:
    ACKED.clear()
    with caplog.at_level("INFO", logger="squall.runtime.local_cluster"), \
            LocalCluster({"squall.transport": "nng"}) as cluster:
        cluster.submit_topology("t", {"topology.workers": 2}, _topology())
        wait_until(lambda: len(ACKED) >= 10, timeout=20)
    assert "squall.transport 'nng' of the configuration is for clusters: this LocalCluster " \
           "uses 'local'" in caplog.text


@pytest.fixture
def without_pynng(monkeypatch: pytest.MonkeyPatch) -> Any:
    """This process as an install without squall[nng]: importing pynng fails."""
    import squall.plugins.transport_nng as package
    for name in [n for n in sys.modules if n.startswith(f"{package.__name__}.")
                 and n != f"{package.__name__}.hooks"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(package, "NngTransport", raising=False)
    monkeypatch.setitem(sys.modules, "pynng", None)
    drivers.refresh()
    yield
    drivers.refresh()


def test_a_shared_configs_transport_whose_extra_is_missing_gives_way_too(
        without_pynng: None, caplog: pytest.LogCaptureFixture) -> None:
    # it was refused: "squall.transports 'nng' could not be loaded ...", though never used
    ACKED.clear()
    with caplog.at_level("INFO", logger="squall.runtime.local_cluster"), \
            LocalCluster({"squall.transport": "nng"}) as cluster:
        cluster.submit_topology("t", {"topology.workers": 2}, _topology())
        wait_until(lambda: len(ACKED) >= 10, timeout=20)
    said = [r.getMessage() for r in caplog.records if "squall.transport" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(
        "squall.transport 'nng' of the configuration cannot be used here (squall.transports "
        "'nng' could not be loaded: ") and said[0].endswith(
        "; install it with: pip install 'squall[nng]'): this LocalCluster uses 'local'")


def test_a_transport_chosen_with_dash_c_is_refused_in_one_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # `squall local -c squall.transport=nng` said the LocalCluster used 'local', then refused
    conf = config.load_config(None, ["squall.transport=nng"], env={}, home=tmp_path)
    with caplog.at_level("INFO", logger="squall.runtime.local_cluster"), \
            LocalCluster(conf) as cluster, \
            pytest.raises(ConfigError, match="needs an in-process transport .*'nng' is for "
                                             "clusters"):
        cluster.submit_topology("t", {}, _topology())
    assert not [r for r in caplog.records if "this LocalCluster uses" in r.getMessage()]


def test_the_submit_conf_chooses_as_it_is() -> None:
    with LocalCluster() as cluster, pytest.raises(ConfigError, match="in-process transport"):
        cluster.submit_topology("t", {"squall.transport": "zmq"}, _topology())


def test_a_scheduler_or_state_store_set_in_its_conf_is_said_to_be_ignored(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="squall.runtime.local_cluster")
    with LocalCluster({}):
        pass
    assert not [r for r in caplog.records if "ignores" in r.getMessage()]
    # the shipped default (squall.state: zookeeper, in every conf read from files) is quiet
    with LocalCluster({"squall.scheduler": "multidim", "squall.state": "zookeeper"}):
        pass
    said = [r.getMessage() for r in caplog.records if "ignores" in r.getMessage()]
    assert said == [
        "LocalCluster ignores squall.scheduler='multidim': it always uses 'even' (the setting "
        "applies on a cluster)"]
    caplog.clear()
    warn_ignored_keys({"squall.scheduler": "even", "squall.state": "acmemem"})
    assert [r.getMessage() for r in caplog.records] == [
        "LocalCluster ignores squall.state='acmemem': it always uses 'memory' (the setting "
        "applies on a cluster)"]
