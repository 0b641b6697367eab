"""``-c KEY=VALUE`` overrides checked against the settings a benchmark's cases make.

A case's name promises its settings ("acking on" is ackers and ids on the spout's tuples): an
override of one of them would run another case under the same name (``-c
topology.acker.executors=0`` turned "acking on" off without a word). Each benchmark names the
keys its cases set, and what sets them; an override of one is refused before anything runs.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from squall.config import parse_override
from squall.errors import ConfigError


def clashes(conf: Mapping[str, Any], owned: Mapping[str, str], option: str = "-c") -> list[str]:
    """One line per key of ``conf`` (given by ``option``) that the cases set themselves
    (``owned``: key -> what sets it), in ``owned``'s order; empty when none is."""
    return [f"{option} {key} is set by {why}; it cannot be overridden"
            for key, why in owned.items() if key in conf]


def parse(items: Iterable[str], owned: Mapping[str, str], option: str = "-c") -> dict[str, Any]:
    """The overrides ``items`` (``KEY=VALUE``, a YAML value each, given by ``option``) as a
    conf; raises ``ValueError`` with one line naming the first malformed item or the keys
    that clash with ``owned``."""
    conf: dict[str, Any] = {}
    for item in items:
        try:
            key, value = parse_override(item)
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc
        conf[key] = value
    bad = clashes(conf, owned, option)
    if bad:
        raise ValueError("; ".join(bad))
    return conf
