"""The graph a :class:`~squall.trident.TridentTopology` records: one :class:`Node` per
operation, in creation order (parents before children).

Node kinds and what they do with a batch's rows (``fields`` are the node's output fields):

=================  =======================================================================
kind               rows out
=================  =======================================================================
``spout``          the batch a batch spout emits for the txid
``drpc``           one row ``(args,)`` per DRPC request (a request is a batch of its own)
``partition``      the parent's rows, repartitioned (``how``: shuffle, fields, global,
                   batch_global, broadcast); starts a new bolt
``merge``          every parent's rows (a new bolt)
``join``           inner join of two parents on their join fields (a new bolt)
``each``           parent row + the function's output, per emitted output
``filter``         the rows the filter keeps
``map``            ``flat_map``: the function's rows
``project``        the selected fields
``peek``           the parent's rows, each shown to a consumer
``aggregate``      one row per group and batch: group fields + aggregator output
``state_query``    parent row + the query's output
``persist``        at commit, the new values (group fields + output); a committer
``return``         nothing: sends the rows to the DRPC caller
=================  =======================================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from squall.errors import TopologyError


@dataclass(eq=False)
class Node:
    id: int
    kind: str
    fields: list[str]
    parents: list[Node]
    params: dict[str, Any] = field(default_factory=dict)
    #: the operation, spout or aggregator object (travels as JSON, see :mod:`.plan`)
    op: Any = None
    #: the state factory of ``persist`` and ``state_query`` nodes
    state: Any = None
    parallelism: int | None = None

    def __repr__(self) -> str:
        return f"Node({self.id}, {self.kind}, {self.fields})"


class Graph:
    """The nodes of one topology, in creation order."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def add(self, kind: str, fields: list[str], parents: list[Node], **kw: Any) -> Node:
        """A new node; TopologyError when its fields repeat a name (an output field that
        is already an input or group field, or given twice)."""
        twice = sorted({f for f in fields if list(fields).count(f) > 1})
        if twice:
            raise TopologyError(f"{kind}: the field names {twice} appear twice in its output "
                                f"fields {list(fields)}; choose other names")
        node = Node(len(self.nodes), kind, list(fields), list(parents), **kw)
        self.nodes.append(node)
        return node

    def children(self) -> dict[int, list[Node]]:
        out: dict[int, list[Node]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for p in n.parents:
                out[p.id].append(n)
        return out
