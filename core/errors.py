"""squall's one exception tree.

Every error squall raises on purpose derives from :class:`SquallError`. Plugins translate
their backend's exceptions at the boundary (``raise TransportError(...) from exc``) so users
catch squall's names, never zmq's or kazoo's.
"""
from __future__ import annotations

__all__ = [
    "SquallError", "ConfigError", "PluginNotFoundError", "PluginLoadError", "TopologyError",
    "TransportError", "SchedulingError", "SerializationError", "StateError", "NotAliveError",
    "AlreadyAliveError", "StateProviderError",
]


class SquallError(Exception):
    """Base of every error squall raises deliberately."""


class ConfigError(SquallError):
    """A configuration file, key or value is wrong (bad YAML, wrong type, unknown driver)."""


class PluginNotFoundError(ConfigError):
    """No entry point of that name in the group; the message lists the available names."""

    def __init__(self, group: str, name: str, available: list[str], hint: str | None = None):
        self.group, self.name, self.available = group, name, sorted(available)
        msg = f"no {group!s} named {name!r}"
        if hint:
            msg += f" (did you mean {hint!r}?)"
        msg += "; available: " + (", ".join(self.available) or "none")
        super().__init__(msg)


class PluginLoadError(SquallError):
    """An entry point exists but could not be imported (often: a missing extra)."""


class TopologyError(SquallError):
    """A topology is invalid; the message names the component, stream or field at fault."""


class TransportError(SquallError):
    """A transport could not bind, connect, send or receive."""


class SchedulingError(SquallError):
    """A scheduler could not place a topology."""


class SerializationError(SquallError):
    """A value could not be encoded or decoded by the configured serializer."""


class StateError(SquallError):
    """The cluster state store failed (connection lost for good, bad node, ...)."""


class StateProviderError(SquallError):
    """A stateful bolt's state provider failed (its backend down, a checkpoint missing)."""


class NotAliveError(SquallError):
    """The named topology is not running."""


class AlreadyAliveError(SquallError):
    """A topology with that name is already running."""
