"""The state provider SPI: where stateful bolts keep their checkpoints.

A provider stores, per *namespace* (one per stateful task, see :func:`namespace`), a
committed map of ``bytes -> bytes`` with the txid of the checkpoint that produced it, and at
most one *prepared* checkpoint: a txid and its changes (a value, or ``None`` for a deleted
key) not yet applied. Storm's ``State.prepareCommit(txid)``, ``commit(txid)`` and
``rollback()``, with the namespace passed to every call so one provider serves every task of
an executor. Keys and values are opaque bytes: the runtime encodes them with the topology's
serializer.

Providers are entry points of the group ``squall.state_providers`` chosen by
``topology.state.provider``, constructed as ``cls(options)`` with the mapping of
``topology.state.provider.config``. Every method is called from a worker's loop thread (or the
checkpoint spout's), may block on its backend for a bounded time (a few seconds at most) and
raises :class:`~squall.errors.StateProviderError` when the backend fails; the runtime then
leaves the checkpoint uncommitted and tries again later.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from squall.errors import ConfigError

__all__ = ["Changes", "Options", "StateProvider", "checked_options", "namespace",
           "task_id_namespace"]

#: a provider's options: name -> (a check of a non-null value, what the value must be)
Options = Mapping[str, "tuple[Callable[[Any], Any], str]"]

#: a prepared checkpoint's changes: the new value of each key, ``None`` where it was deleted
Changes = Mapping[bytes, "bytes | None"]


def namespace(topology_name: str, component_id: str, index: int) -> str:
    """The namespace of one stateful task's state: ``<topology name>/<component>/index-<i>``,
    ``index`` the task's position among its component's tasks (0 to parallelism - 1). The
    same across restarts, worker moves, and resubmits under the same name that add, remove or
    change other components (which move task ids, not a task's index)."""
    return f"{topology_name}/{component_id}/index-{index}"


def task_id_namespace(topology_name: str, component_id: str, task_id: int) -> str:
    """The namespace squall kept a stateful task's state under before :func:`namespace`:
    ``<topology name>/<component>/<task id>``. Read once to carry such state over (see
    :meth:`squall.stateful.keeper.StateKeeper.recover`); never written."""
    return f"{topology_name}/{component_id}/{task_id}"


def checked_options(conf: Mapping[str, Any], options: Options, provider: str
                    ) -> Mapping[str, Any]:
    """``conf`` when each option is one of ``options`` and passes its check (null: its
    default); else ConfigError naming the first that does not (a misspelt option would
    otherwise leave the default in use without a word)."""
    import difflib
    where = "topology.state.provider.config"
    for key, value in conf.items():
        if key not in options:
            close = difflib.get_close_matches(str(key), options, n=1)
            raise ConfigError(f"{where}: the {provider} state provider has no option {key!r}"
                              + (f" (did you mean {close[0]!r}?)" if close else "")
                              + f"; it takes {', '.join(options)}")
        check, what = options[key]
        if value is not None and not check(value):
            raise ConfigError(f"{where}.{key} must be {what}, got {value!r}")
    return conf


class StateProvider:
    """Base class of the ``squall.state_providers`` drivers (see the module docstring).

    ``txid`` values are positive integers; 0 means "nothing committed yet". A namespace never
    written reads as committed txid 0 with an empty map and nothing prepared."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)

    def load(self, namespace: str) -> tuple[int, dict[bytes, bytes]]:
        """The committed txid and a copy of the committed map (what is prepared is not in
        it)."""
        raise NotImplementedError

    def txids(self, namespace: str) -> tuple[int, int | None]:
        """``(committed txid, prepared txid or None)``."""
        raise NotImplementedError

    def prepare(self, namespace: str, txid: int, changes: Changes) -> None:
        """Store ``changes`` durably as the prepared checkpoint ``txid``, replacing any
        earlier prepared one. The committed map does not change."""
        raise NotImplementedError

    def commit(self, namespace: str, txid: int) -> None:
        """Apply the prepared checkpoint ``txid`` to the committed map atomically and make
        ``txid`` the committed txid. Committing the txid already committed does nothing;
        any other txid that is not the prepared one raises StateProviderError."""
        raise NotImplementedError

    def rollback(self, namespace: str) -> None:
        """Discard the prepared checkpoint, if any; the committed map does not change."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections; calling it again does nothing."""
