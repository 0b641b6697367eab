"""squall's one exception tree.

Every error squall raises on purpose derives from :class:`SquallError`. Plugins translate
their backend's exceptions at the boundary (``raise TransportError(...) from exc``) so users
catch squall's names, never zmq's or kazoo's.
"""
from __future__ import annotations

__all__ = [
    "SquallError", "ConfigError", "PluginNotFoundError", "PluginLoadError", "TopologyError",
    "TransportError", "SchedulingError", "SerializationError", "StateError", "NotAliveError",
    "BeingKilledError", "AlreadyAliveError", "MultilangError", "AuthenticationError", "AuthorizationError",
    "DRPCError", "StateProviderError",
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


class MultilangError(SquallError):
    """A multi-lang subprocess could not start, broke the protocol, died or stopped answering."""


class StateProviderError(SquallError):
    """A stateful bolt's state provider failed (its backend down, a checkpoint missing)."""


class NotAliveError(SquallError):
    """The named topology is not running."""


class BeingKilledError(NotAliveError):
    """The named topology is in its kill wait: only another kill acts on it (the UI answers
    400, a refusal, not 404: the topology is known)."""


class AlreadyAliveError(SquallError):
    """A topology with that name is already running."""


class AuthenticationError(SquallError):
    """A caller could not be authenticated: no credentials, an unknown token, no valid client
    certificate (nimbus and DRPC with ``nimbus.authentication`` on)."""


class AuthorizationError(SquallError):
    """An authenticated caller asked for something it may not do (another user's topology)."""


class DRPCError(SquallError):
    """A DRPC request that could not be answered: no topology serves the function, it timed
    out (``drpc.request.timeout.secs``), or the server is gone."""
