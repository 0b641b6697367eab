"""The streams a worker's tuples travel on: the system streams' names and one shared
:class:`~squall.api.tuple.Source` per (component, stream), so every tuple of a stream points at
the same descriptor (compared by identity on the hot paths)."""
from __future__ import annotations

from squall.api.topology import Topology
from squall.api.tuple import TICK_STREAM, Source

#: the acker's system streams: a spout starts a tree, a bolt acks an edge, anyone fails a tree
ACK_INIT, ACK_ACK, ACK_FAIL = "__ack_init", "__ack_ack", "__ack_fail"
ACK_STREAMS = (ACK_INIT, ACK_ACK, ACK_FAIL)
#: a task's data points on their way to the metrics consumer bolts
METRICS_STREAM = "__metrics"
SYSTEM = "__system"


class Sources:
    """The Source of every (component, stream) of one topology, made once per worker.

    ``tick`` is the source of tick tuples; ``ack[stream]`` those of the acker's streams
    (their values are ``(root, value, task)``, shared by every component that emits them)."""

    __slots__ = ("_cache", "_topology", "ack", "tick")

    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        self._cache: dict[tuple[str, str], Source] = {}
        self.tick = Source(SYSTEM, TICK_STREAM, ("freq",))
        self.ack = {s: Source(SYSTEM, s, ("root", "value", "task")) for s in ACK_STREAMS}

    @property
    def topology(self) -> Topology:
        """The topology these sources are of."""
        return self._topology

    def get(self, component: str, stream: str) -> Source:
        """The Source of ``stream`` of ``component`` (an acker stream's whoever emits it;
        an undeclared pair gets a Source without fields)."""
        src = self._cache.get((component, stream))
        if src is None:
            ack = self.ack.get(stream)
            if ack is not None:
                return ack
            spec = self._topology.components.get(component)
            fields = spec.streams[stream].fields if spec and stream in spec.streams else ()
            src = self._cache[(component, stream)] = Source(component, stream, tuple(fields))
        return src


def input_fields(topology: Topology, component: str) -> dict[str, dict[str, tuple[str, ...]]]:
    """The streams ``component`` subscribes to: source component -> stream -> its fields."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for inp in topology.components[component].inputs:
        src = topology.components.get(inp.component)
        stream = src.streams.get(inp.stream) if src is not None else None
        out.setdefault(inp.component, {})[inp.stream] = \
            tuple(stream.fields) if stream is not None else ()
    return out
