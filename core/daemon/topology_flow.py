"""The order in which tuples flow through a topology's components (for views such as
``squall monitor``).

>>> flow_order({"count": ["split"], "split": ["words"], "words": [], "__acker": ["count"]})
['words', 'split', 'count', '__acker']
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def flow_order(inputs: Mapping[str, Sequence[str]]) -> list[str]:
    """Components (``component -> the components it subscribes to``) in layers: each layer the
    components whose feeders are all in earlier layers (ties by name; a cycle is cut at its
    first name). Inputs from system components (``__`` names: ackers, metrics) are ignored,
    and system components come last."""
    user = [c for c in inputs if not c.startswith("__")]
    placed: list[str] = []
    done: set[str] = set()
    left = set(user)
    while left:
        ready = sorted(c for c in left
                       if all(p in done or p not in left for p in inputs.get(c, ())
                              if not p.startswith("__")))
        layer = ready or [min(left)]
        placed += layer
        done.update(layer)
        left.difference_update(layer)
    return placed + sorted(c for c in inputs if c.startswith("__"))


def topology_inputs(topology: Any) -> dict[str, list[str]]:
    """``component -> the components it subscribes to`` of a :class:`~squall.api.topology.
    Topology`."""
    return {cid: sorted({i.component for i in spec.inputs})
            for cid, spec in topology.components.items()}
