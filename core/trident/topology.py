"""``TridentTopology``: record streams, then ``build()`` an ordinary squall topology.

>>> from squall.trident import TridentTopology, FixedBatchSpout, Count, MemoryMapState
>>> t = TridentTopology()
>>> spout = FixedBatchSpout(["word"], 2, [["a"], ["b"], ["a"]])
>>> _ = t.new_stream("words", spout).group_by(["word"]).persistent_aggregate(
...     MemoryMapState(), Count(), ["count"])
>>> sorted(t.build().components)
['$mastercoord-bg0', 'b-1', 'spout-words']
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from squall.api.topology import Topology
from squall.errors import TopologyError
from squall.trident.graph import Graph
from squall.trident.partitioned import (
    OpaquePartitionedSpout, PartitionedSpout, TransactionalSpout,
)
from squall.trident.spout import BatchSpout
from squall.trident.stream import (
    Stream, TridentState, check_input_fields, field_names,
)


class TridentTopology:
    """A Trident topology under construction (see the module docstring)."""

    def __init__(self) -> None:
        self.graph = Graph()
        self._names: set[str] = set()

    def _name(self, name: str, what: str) -> str:
        if not isinstance(name, str) or not name or not name.replace("-", "").replace(
                "_", "").replace(".", "").isalnum():
            raise TopologyError(f"{what}: a name of letters, digits, '-', '_' or '.', got "
                                f"{name!r}")
        if name in self._names:
            raise TopologyError(f"{what}: the name {name!r} is used twice")
        self._names.add(name)
        return name

    def new_stream(self, txid_name: str,
                   spout: BatchSpout | TransactionalSpout | OpaquePartitionedSpout) -> Stream:
        """A stream of the batches ``spout`` emits (a :class:`BatchSpout`, or a
        ``TransactionalSpout`` / ``OpaquePartitionedSpout``, whose stream may run in several
        tasks). ``txid_name`` names the stream; it keys what the coordinator and the emitters
        keep in the cluster state store, so keep it when you resubmit."""
        name = self._name(txid_name, "new_stream")
        if not isinstance(spout, (BatchSpout, PartitionedSpout)):
            raise TopologyError(f"new_stream: expected a BatchSpout, TransactionalSpout or "
                                f"OpaquePartitionedSpout instance, got {spout!r}")
        fields = [str(f) for f in spout.output_fields()]
        if not fields:
            raise TopologyError(f"new_stream {name!r}: {type(spout).__name__} declares no "
                                "output fields")
        node = self.graph.add("spout", fields, [], op=spout, params={
            "name": name, "partitioned": isinstance(spout, PartitionedSpout)})
        return Stream(self, node)

    def new_drpc_stream(self, function: str, drpc: Any = None) -> Stream:
        """A stream of DRPC requests for ``function``: each request is a batch of one row
        ``(args,)``; what the stream's last operation outputs is the request's result (JSON
        of the rows). ``drpc``: a :class:`squall.LocalDRPC` of this process; without one the
        requests come from the cluster's DRPC servers (``drpc.servers``)."""
        from squall.drpc.names import RULE, function_problem, shown
        problem = function_problem(function)
        if problem is not None:     # what a cluster's DRPC servers refuse, and LocalDRPC
            raise TopologyError(f"new_drpc_stream: the function name {shown(function)} "
                                f"{problem}; {RULE}")
        name = self._name(f"drpc-{function}", "new_drpc_stream")
        service = None
        if drpc is not None:
            service = getattr(drpc, "service_id", None)
            if not isinstance(service, str):
                raise TopologyError(f"new_drpc_stream({function!r}): expected a LocalDRPC, "
                                    f"got {drpc!r}")
        node = self.graph.add("drpc", ["args"], [],
                              params={"name": name, "function": function, "service": service})
        return Stream(self, node)

    def merge(self, *streams: Stream) -> Stream:
        """Every row of every stream, with the first stream's field names (the streams must
        have as many fields)."""
        if len(streams) == 1 and isinstance(streams[0], (list, tuple)):
            streams = tuple(streams[0])
        if len(streams) < 2 or not all(isinstance(s, Stream) for s in streams):
            raise TopologyError("merge takes two or more streams")
        self._check_own(streams, "merge")
        n = len(streams[0].fields)
        for s in streams[1:]:
            if len(s.fields) != n:
                raise TopologyError(f"merge: streams with fields {streams[0].fields} and "
                                    f"{s.fields} do not have as many fields")
        node = self.graph.add("merge", streams[0].fields, [s.node for s in streams])
        return Stream(self, node)

    def join(self, s1: Stream, f1: Sequence[str], s2: Stream, f2: Sequence[str],
             out_fields: Sequence[str]) -> Stream:
        """Inner join, batch by batch, of ``s1`` and ``s2`` on ``f1`` = ``f2``. The output is
        the join fields, then ``s1``'s other fields, then ``s2``'s (named by ``out_fields``)."""
        if not isinstance(s1, Stream) or not isinstance(s2, Stream):
            raise TopologyError(f"join(s1, f1, s2, f2, out_fields): s1 and s2 must be streams, "
                                f"got {type(s1).__name__} and {type(s2).__name__}")
        self._check_own((s1, s2), "join")
        j1, j2 = field_names(f1, "join"), field_names(f2, "join")
        check_input_fields(s1.node, j1, "join")
        check_input_fields(s2.node, j2, "join")
        if len(j1) != len(j2) or not j1:
            raise TopologyError(f"join: as many join fields on both sides, got {j1} and {j2}")
        outs = field_names(out_fields, "join")
        width = len(s1.fields) + len(s2.fields) - len(j1)
        if len(outs) != width or len(set(outs)) != len(outs):
            raise TopologyError(f"join: {width} distinct output fields expected (join fields, "
                                f"then the first stream's others, then the second's), got "
                                f"{outs}")
        node = self.graph.add("join", outs, [s1.node, s2.node],
                              params={"keys": [j1, j2],
                                      "index": [[s1.fields.index(f) for f in j1],
                                                [s2.fields.index(f) for f in j2]]})
        return Stream(self, node)

    def _check_own(self, streams: Sequence[Stream], what: str) -> None:
        """TopologyError unless every stream was made by this topology."""
        nodes = self.graph.nodes
        for s in streams:
            if not (s.node.id < len(nodes) and nodes[s.node.id] is s.node):
                raise TopologyError(f"{what}: a stream of another TridentTopology; streams "
                                    "combine only within the topology that made them")

    def new_values_stream(self, state: TridentState) -> Stream:
        """The values every commit of ``state`` wrote (``state.new_values_stream()``)."""
        if not isinstance(state, TridentState):
            raise TopologyError(f"new_values_stream: expected a TridentState (what "
                                f"persistent_aggregate returns), got {state!r}")
        return state.new_values_stream()

    def build(self) -> Topology:
        """Compile into an ordinary topology (LocalCluster or ``squall submit``)."""
        from squall.trident.compile import compile_graph
        return compile_graph(self.graph)
