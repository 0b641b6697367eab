"""How operations, spouts and states travel to the workers: as JSON in the component config.

An object becomes ``{"class": "module:qualname", "state": {attribute: value}}`` (its
attributes must be JSON values) and is rebuilt in the worker without calling ``__init__``.
Nothing is pickled: the class is imported from the topology's code package.
"""
from __future__ import annotations

import json
from typing import Any

from squall.api.topology import class_ref, resolve_class
from squall.errors import TopologyError


def to_json(obj: Any, what: str) -> dict[str, Any]:
    """``obj`` as JSON; TopologyError naming ``what`` when it cannot travel."""
    cls = type(obj)
    if "<locals>" in cls.__qualname__:
        raise TopologyError(f"{what}: {cls.__qualname__} is defined inside a function; define "
                            "Trident operations at module level (they are imported in the "
                            "worker)")
    state = dict(getattr(obj, "__dict__", {}))
    try:
        json.dumps(state)
    except (TypeError, ValueError) as exc:
        raise TopologyError(f"{what}: {cls.__qualname__}'s attributes must be JSON values to "
                            f"travel to the workers ({exc})") from None
    return {"class": class_ref(cls), "state": state}


def from_json(d: dict[str, Any]) -> Any:
    """The object ``to_json`` described (its class imported, ``__init__`` not called)."""
    cls = resolve_class(d["class"])
    obj = cls.__new__(cls)
    obj.__dict__.update(d.get("state") or {})
    return obj
