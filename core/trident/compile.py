"""Compile a Trident graph into an ordinary topology.

1. DRPC streams get a ``return`` node after their last operation (over a global partition).
2. Nodes are cut into bolts: a spout, DRPC, partition, merge or join node starts one; every
   other node runs in its parent's bolt, so a chain of operations is one bolt and one call per
   operation per batch.
3. Bolts connected by data edges form a batch group with one master coordinator spout
   (``$mastercoord-bg<k>``), whose ``$batch``, ``$commit`` and ``$success`` streams reach
   every source bolt (all grouping), and ``$commit`` every committer (a bolt holding a
   ``persist`` node).
4. An edge between bolts is a direct stream ``$e<k>`` of batch pieces: every task of the
   sending bolt sends every task of the receiving bolt one piece ``(txid, attempt, rows,
   meta)`` per batch (possibly empty), so a task knows a batch is complete when it has one
   piece per upstream task. The sender partitions the rows (``how``).
"""
from __future__ import annotations

from typing import Any

from squall.api.builder import TopologyBuilder
from squall.api.topology import Topology
from squall.errors import TopologyError
from squall.trident import plan
from squall.trident.graph import Graph, Node

_STARTS = ("spout", "drpc", "partition", "merge", "join")


def _add_returns(graph: Graph) -> None:
    children = graph.children()
    for src in [n for n in graph.nodes if n.kind == "drpc"]:
        seen, todo, leaves = {src.id}, [src], []
        while todo:
            n = todo.pop()
            kids = children[n.id]
            if not kids:
                leaves.append(n)
            for k in kids:
                if k.id not in seen:
                    seen.add(k.id)
                    todo.append(k)
        if len(leaves) != 1:
            raise TopologyError(f"DRPC stream {src.params['function']!r} must end in one "
                                f"stream, it ends in {len(leaves)}")
        leaf = leaves[0]
        part = graph.add("partition", leaf.fields, [leaf],
                         params={"how": "global", "fields": []})
        graph.add("return", [], [part], params={"source": src.id})


class _Groups:
    """Bolts (groups of nodes) and batch groups (coordinators) of a graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.group_of: dict[int, int] = {}
        self.members: list[list[Node]] = []
        for n in graph.nodes:
            if n.kind in _STARTS:
                self.group_of[n.id] = len(self.members)
                self.members.append([n])
            else:
                g = self.group_of[n.parents[0].id]
                self.group_of[n.id] = g
                self.members[g].append(n)
        # batch groups: union of bolts joined by data edges
        parent = list(range(len(self.members)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        for n in graph.nodes:
            for p in n.parents:
                a, b = find(self.group_of[n.id]), find(self.group_of[p.id])
                if a != b:
                    parent[a] = b
        roots: dict[int, int] = {}
        self.batch_group = [roots.setdefault(find(g), len(roots))
                            for g in range(len(self.members))]
        self.phase: dict[int, int] = {}
        for n in graph.nodes:
            self.phase[n.id] = max([self.out_phase(p) for p in n.parents], default=0)

    def out_phase(self, n: Node) -> int:
        """1 when ``n``'s rows are made at commit (a persist node or after one)."""
        return 1 if n.kind == "persist" or self.phase[n.id] else 0


def _component_ids(groups: _Groups) -> list[str]:
    out = []
    for g, members in enumerate(groups.members):
        head = members[0]
        out.append(f"spout-{head.params['name']}" if head.kind in ("spout", "drpc")
                   else f"b-{g}")
    return out


def _node_json(n: Node, phase: int) -> dict[str, Any]:
    d: dict[str, Any] = {"id": n.id, "kind": n.kind, "fields": n.fields,
                         "parents": [p.id for p in n.parents], "params": n.params,
                         "phase": phase}
    if n.op is not None:
        d["op"] = plan.to_json(n.op, f"{n.kind} operation {type(n.op).__name__}")
    if n.state is not None:
        d["state"] = n.state.to_json()
    return d


def _parallelism(members: list[Node]) -> int:
    hints = [n.parallelism for n in members if n.parallelism]
    n = max(hints, default=1)
    head = members[0]
    if head.kind in ("spout", "drpc") and not head.params.get("partitioned") and n > 1:
        raise TopologyError(f"a batch spout's stream runs in one task; repartition it "
                            f"(shuffle(), partition_by()) before parallelism_hint({n})")
    return n


def compile_graph(graph: Graph) -> Topology:
    if not any(n.kind in ("spout", "drpc") for n in graph.nodes):
        raise TopologyError("a Trident topology needs a stream (new_stream or "
                            "new_drpc_stream)")
    _add_returns(graph)
    groups = _Groups(graph)
    ids = _component_ids(groups)
    children = graph.children()
    plans: list[dict[str, Any]] = []
    for g, members in enumerate(groups.members):
        plans.append({"component": ids[g], "coordinator": f"$mastercoord-bg"
                      f"{groups.batch_group[g]}", "sources": [], "inputs": {},
                      "nodes": [_node_json(n, groups.phase[n.id]) for n in members],
                      "outputs": [], "committer": any(n.kind == "persist" for n in members),
                      "late": False})
        if members[0].kind in ("spout", "drpc"):
            plans[g]["sources"].append(members[0].id)
    edge = 0
    for n in graph.nodes:
        edges_to: dict[int, int] = {}
        for child in children[n.id]:
            src, dst = groups.group_of[n.id], groups.group_of[child.id]
            if src == dst:
                continue
            stream = f"$e{edge}"
            edge += 1
            # which of the child's inputs this edge is (a stream joined with itself is two)
            nth = edges_to[child.id] = edges_to.get(child.id, -1) + 1
            slot = [i for i, p in enumerate(child.parents) if p is n][nth]
            how, fields = "shuffle", []
            if child.kind == "partition":
                how, fields = child.params["how"], child.params["fields"]
            elif child.kind == "join":
                how, fields = "fields", child.params["keys"][slot]
            phase = groups.out_phase(n)
            plans[src]["outputs"].append({
                "stream": stream, "node": n.id, "component": ids[dst], "how": how,
                "index": [n.fields.index(f) for f in fields], "phase": phase})
            plans[dst]["inputs"][stream] = {"component": ids[src], "node": child.id,
                                            "slot": slot, "slots": len(child.parents),
                                            "phase": phase}
            if phase:
                plans[dst]["late"] = True
    return _build(groups, ids, plans)


def _outlives(persist: Node) -> bool:
    """Whether the state of ``persist`` outlives its topology (a memory state is dropped when
    the topology is killed; a Redis one is not)."""
    return bool(persist.state is not None and persist.state.backend != "memory")


def _build(groups: _Groups, ids: list[str], plans: list[dict[str, Any]]) -> Topology:
    from squall.trident.runtime.bolt import TridentBolt
    from squall.trident.runtime.coordinator import TridentCoordinator
    b = TopologyBuilder()
    for bg in sorted(set(groups.batch_group)):
        heads = [groups.members[g][0] for g in range(len(ids)) if groups.batch_group[g] == bg]
        sources = [h for h in heads if h.kind in ("spout", "drpc")]
        key = "+".join(sorted(h.params["name"] for h in sources))
        partitioned = [{"name": h.params["name"], "spout": plan.to_json(h.op, "spout")}
                       for h in sources if h.params.get("partitioned")]
        persists = [n for g in range(len(ids)) if groups.batch_group[g] == bg
                    for n in groups.members[g] if n.kind == "persist"]
        b.set_spout(f"$mastercoord-bg{bg}", TridentCoordinator,
                    config={"trident.coordinator": {
                        "key": key, "partitioned": partitioned,
                        "streams": sorted(h.params["name"] for h in sources
                                          if h.kind == "spout"),
                        # DRPC requests cannot be replayed after a restart: nothing to keep
                        "durable": any(h.kind == "spout" for h in sources),
                        # what is kept survives a kill only for a state that does too
                        "outlives": any(_outlives(n) for n in persists)}})
    for g, p in enumerate(plans):
        d = b.set_bolt(ids[g], TridentBolt, _parallelism(groups.members[g]),
                       config={"trident.plan": p})
        coord = p["coordinator"]
        if p["sources"]:
            d.all_grouping(coord, "$batch")
        if p["sources"] or p["committer"]:
            d.all_grouping(coord, "$commit")
        if p["sources"]:
            d.all_grouping(coord, "$success")
        for stream, inp in sorted(p["inputs"].items()):
            d.direct_grouping(inp["component"], stream)
    return b.create_topology()
