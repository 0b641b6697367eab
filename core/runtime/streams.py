"""The streams a worker's tuples travel on: the system streams' names and one shared
:class:`~squall.api.tuple.Source` per (component, stream), so every tuple of a stream points at
the same descriptor (compared by identity on the hot paths)."""
from __future__ import annotations

from squall.api.topology import ACKER, Topology
from squall.api.tuple import TICK_STREAM, Source

#: the acker's system streams: a spout starts a tree, a bolt acks an edge, anyone fails a tree
ACK_INIT, ACK_ACK, ACK_FAIL = "__ack_init", "__ack_ack", "__ack_fail"
#: a bolt restarts a tree's timeout at its acker, which tells the tree's spout task the same
ACK_RESET = "__ack_reset"
ACK_STREAMS = (ACK_INIT, ACK_ACK, ACK_FAIL, ACK_RESET)
#: a task's data points on their way to the metrics consumer bolts
METRICS_STREAM = "__metrics"
#: the component id prefix of metrics consumer bolts (squall.runtime.system's)
METRICS_PREFIX = "__metrics_"
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
            declared = spec.streams.get(stream) if spec else None
            src = self._cache[(component, stream)] = Source(
                component, stream, tuple(declared.fields) if declared is not None else (),
                declared is not None and declared.direct)
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


def accepts(topology: Topology, component_id: str) -> dict[tuple[str | None, str], int]:
    """What a task of ``component_id`` takes from other workers: (source component, stream)
    -> the stream's arity (see :data:`squall.runtime.wire.codec.Accepts`). A bolt takes the
    streams it subscribes to; a spout the acker's completions; an acker the acker streams
    from any task; a metrics consumer bolt every task's data points. Anything else arriving
    for the task is dropped whole by the inbox."""
    spec = topology.components[component_id]
    if spec.kind == "acker":
        return {(None, ACK_INIT): 3, (None, ACK_ACK): 2, (None, ACK_FAIL): 2,
                (None, ACK_RESET): 2}
    out: dict[tuple[str | None, str], int] = {}
    if spec.kind == "spout":
        out[(ACKER, ACK_ACK)] = out[(ACKER, ACK_FAIL)] = out[(ACKER, ACK_RESET)] = 1
    for sub in spec.inputs:
        source = topology.components.get(sub.component)
        if source is not None and sub.stream in source.streams:
            out[(sub.component, sub.stream)] = len(source.streams[sub.stream].fields)
    if component_id.startswith(METRICS_PREFIX):
        out[(None, METRICS_STREAM)] = 2
    return out
