"""Test ids that every process writes alike.

pytest-xdist has each of its processes collect the suite and requires the same test ids
from all of them. ``repr`` of a set lists its items in hash order, and a str's hash changes
with each process's hash seed, so a set among a test's parameters needs :func:`param_id`.

>>> param_id((frozenset({"x", 1, "b"}), {"k": {2, "a"}}, set(), [frozenset()]))
"(frozenset({'b', 'x', 1}), {'k': {'a', 2}}, set(), [frozenset()])"
"""
from __future__ import annotations

from typing import Any


def param_id(value: Any) -> str:
    """``repr(value)`` with the items of each set in it in the order of their own ids,
    through tuples, lists and dicts (a subclass of these is written as its ``repr``)."""
    kind = type(value)
    if kind in (set, frozenset):
        if not value:
            return f"{kind.__name__}()"
        body = "{" + ", ".join(sorted(param_id(v) for v in value)) + "}"
        return body if kind is set else f"frozenset({body})"
    if kind is tuple:
        return "(" + ", ".join(param_id(v) for v in value) + (",)" if len(value) == 1 else ")")
    if kind is list:
        return "[" + ", ".join(param_id(v) for v in value) + "]"
    if kind is dict:
        return "{" + ", ".join(f"{param_id(k)}: {param_id(v)}" for k, v in value.items()) + "}"
    return repr(value)
