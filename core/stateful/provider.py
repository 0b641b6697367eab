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

from collections.abc import Mapping
from typing import Any

__all__ = ["Changes", "StateProvider", "namespace"]

#: a prepared checkpoint's changes: the new value of each key, ``None`` where it was deleted
Changes = Mapping[bytes, "bytes | None"]


def namespace(topology_name: str, component_id: str, task: int) -> str:
    """The namespace of one stateful task's state: ``<topology name>/<component>/<task>``
    (the same across restarts, worker moves and resubmits under the same name)."""
    return f"{topology_name}/{component_id}/{task}"


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
