"""What nimbus's topology info adds for the UI: the graph of user components, log viewers."""
from __future__ import annotations

from squall import Bolt, Spout, StatefulBolt, Stream, TopologyBuilder
from squall.daemon.nimbus_info import logviewer_ports, topology_graph


class Words(Spout):
    outputs = ["word"]

    def next_tuple(self) -> None:
        pass


class Count(Bolt):
    def process(self, tup) -> None:
        pass


def test_graph_lists_user_components_with_their_inputs_and_groupings():
    b = TopologyBuilder()
    b.set_spout("words", Words, 2)
    b.set_bolt("count", Count, 3).fields_grouping("words", ["word"])
    graph = {n["id"]: n for n in topology_graph(b.create_topology().with_components([]))}
    assert set(graph) == {"words", "count"}
    assert graph["count"]["kind"] == "bolt" and graph["count"]["executors"] == 3
    assert graph["count"]["inputs"] == [{"component": "words", "stream": "default",
                                        "grouping": "fields", "fields": ["word"],
                                        "rate_from": "source"}]
    assert graph["words"]["inputs"] == []


class Streams(Spout):
    outputs = [Stream(["n"]), Stream(["n"], name="side"), Stream(["n"], name="other")]

    def next_tuple(self) -> None:
        pass


class Pass(Bolt):
    outputs = ["n"]

    def process(self, tup) -> None:
        pass


class Store(StatefulBolt):
    def init_state(self, state) -> None:
        pass

    def process(self, tup) -> None:
        pass


def test_an_edge_names_the_counter_that_holds_its_tuples_alone():
    """Workers count per task, not per stream: an edge's tuples are the source's transferred
    ones when it is the source's only subscription, else the bolt's executed ones when it is
    the bolt's only input (its tick tuples count in no counter); otherwise no counter holds
    them apart."""
    b = TopologyBuilder()
    b.set_spout("src", Streams)
    b.set_bolt("a", Pass).shuffle_grouping("src")                       # src has 2 subscribers
    b.set_bolt("b", Pass).all_grouping("src", stream="other")
    b.set_bolt("join", Pass).shuffle_grouping("a").shuffle_grouping("b")  # a, b: 1 each
    b.set_bolt("tick", Pass, config={"topology.tick.tuple.freq.secs": 1}).shuffle_grouping(
        "join")                                                         # join: 2 subscribers
    b.set_bolt("plain", Pass).shuffle_grouping("join")
    topology = b.create_topology()
    rates = {(n["id"], i["component"], i["stream"]): i["rate_from"]
             for n in topology_graph(topology) for i in n["inputs"]}
    assert rates == {("a", "src", "default"): "target", ("b", "src", "other"): "target",
                     ("join", "a", "default"): "source", ("join", "b", "default"): "source",
                     ("tick", "join", "default"): "target",
                     ("plain", "join", "default"): "target"}


def test_the_checkpoint_path_is_no_edge_of_the_picture():
    b = TopologyBuilder()
    b.set_spout("src", Streams)
    b.set_bolt("pass", Pass).shuffle_grouping("src")
    b.set_bolt("store", Store).shuffle_grouping("pass")
    graph = {n["id"]: n for n in topology_graph(b.create_topology())}
    assert set(graph) == {"src", "pass", "store"}
    # pass also feeds store's __checkpoint stream, and both get checkpoints: no counter holds
    # the pass -> store edge alone
    assert graph["store"]["inputs"] == [{"component": "pass", "stream": "default",
                                        "grouping": "shuffle", "fields": [],
                                        "rate_from": None}]


def test_log_viewers_only_of_supervisors_that_publish_a_port():
    assert logviewer_ports({"a": {"hostname": "h", "logviewer_port": 8000},
                            "b": {"hostname": "h"}}) == {"a": 8000}


def test_the_topology_info_carries_the_debug_switched_at_run_time(tmp_path):
    # the UI's debug and samplingPct need it: it was only in /storms/<id>
    from types import SimpleNamespace

    from squall import drivers
    from squall.daemon.nimbus_code import CodeStore
    from squall.daemon.nimbus_info import NimbusReads
    from squall.state.cluster_state import ClusterState
    conf = {"squall.state": "memory", "storm.local.dir": str(tmp_path)}
    store = drivers.driver("state", conf)
    store.start()
    try:
        state = ClusterState(store, conf)
        state.setup()
        code = CodeStore(tmp_path / "nimbus", conf)
        code.prepare()
        reads = NimbusReads(state, code, SimpleNamespace(is_leader=True,
                                                         leader_address=lambda: ""))
        state.set_storm("wc-1-1", {"name": "wc", "status": "active", "launch_time": 1})
        assert reads.topology_info("wc")["component_debug"] == {}
        debug = {"split": {"enable": True, "samplingpct": 10.0}}
        state.update_storm("wc-1-1", component_debug=debug)
        assert reads.topology_info("wc")["component_debug"] == debug
    finally:
        store.close()
