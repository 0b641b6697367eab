"""What a DRPC function may be called: one rule for the DRPC server, ``LocalDRPC`` and the
topologies that serve a function, so a name that builds and runs in a LocalCluster is a name a
cluster's DRPC servers take.

>>> function_problem("words") is None
True
>>> function_problem("a/b")
"contains '/'"
"""
from __future__ import annotations

#: the longest function name a DRPC server takes (it is part of every request's URL)
MAX_FUNCTION_CHARS = 256

#: the rule, as the errors that quote :func:`function_problem` end
RULE = f"a DRPC function name is a non-empty str without '/' of at most {MAX_FUNCTION_CHARS} " \
       "characters"


def function_problem(function: object) -> str | None:
    """Why ``function`` cannot name a DRPC function (``None`` when it can); each caller
    raises its own error with it and :data:`RULE`."""
    if not isinstance(function, str):
        return f"is a {type(function).__name__}"
    if not function:
        return "is empty"
    if len(function) > MAX_FUNCTION_CHARS:
        return f"has {len(function)} characters"
    if "/" in function:
        return "contains '/'"
    return None


def shown(function: object) -> str:
    """``function`` as an error line quotes it: its repr, cut after 60 characters."""
    text = repr(function)
    return text if len(text) <= 60 else f"{text[:60]}..."
