"""What nimbus's topology info adds for the UI: the graph of user components, log viewers."""
from __future__ import annotations

from squall import Bolt, Spout, TopologyBuilder
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
                                        "grouping": "fields", "fields": ["word"]}]
    assert graph["words"]["inputs"] == []


def test_log_viewers_only_of_supervisors_that_publish_a_port():
    assert logviewer_ports({"a": {"hostname": "h", "logviewer_port": 8000},
                            "b": {"hostname": "h"}}) == {"a": 8000}
