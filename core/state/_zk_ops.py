"""Raw operations of the ``zookeeper`` store on a kazoo client, one attempt each.

Each takes the kazoo client and ``t``, the seconds this attempt may wait for an answer; the
store's retry loop (:meth:`ZooKeeperStateStore._call`) repeats them across connection losses
and translates what they raise with :func:`translate`. kazoo is imported inside the functions.
"""
from __future__ import annotations

from typing import Any

from squall.errors import StateError
from squall.state._paths import join

# (token) for a data watch: (czxid, mzxid); for a child watch: (czxid, pzxid); None: absent


def read_data(c: Any, path: str, watch: Any, t: float) -> tuple[bytes | None, Any]:
    """``(data, token)``; with ``watch`` set on the node (or on its creation when absent)."""
    from kazoo.exceptions import NoNodeError
    while True:
        try:
            data, stat = c.get_async(path, watch).get(timeout=t)
            return data, (stat.czxid, stat.mzxid)
        except NoNodeError:
            if watch is None or c.exists_async(path, watch).get(timeout=t) is None:
                return None, None
            # created between the two calls: read it


def read_children(c: Any, path: str, watch: Any, t: float) -> tuple[list[str], Any]:
    """``(sorted names, token)``; with ``watch`` set like :func:`read_data`."""
    from kazoo.exceptions import NoNodeError
    while True:
        try:
            names, stat = c.get_children_async(path, watch, include_data=True).get(timeout=t)
            return sorted(names), (stat.czxid, stat.pzxid)
        except NoNodeError:
            if watch is None or c.exists_async(path, watch).get(timeout=t) is None:
                return [], None


def put(c: Any, path: str, data: bytes, ephemeral: bool, t: float) -> bool:
    """Set or create ``path``; True when it created (or took over) an ephemeral node."""
    from kazoo.exceptions import NodeExistsError, NoNodeError
    while True:
        try:
            stat = c.set_async(path, data).get(timeout=t)
            owner = stat.ephemeralOwner
            if not ephemeral or owner == 0 or owner == c.client_id[0]:
                return False
            if _take_over(c, path, data, stat.version, t):
                return True
            continue  # changed meanwhile: go round again
        except NoNodeError:
            pass
        try:
            c.create_async(path, data, ephemeral=ephemeral, makepath=True).get(timeout=t)
            return ephemeral
        except NodeExistsError:
            continue  # created meanwhile: overwrite it


def _take_over(c: Any, path: str, data: bytes, version: int, t: float) -> bool:
    """Replace another session's ephemeral node by ours in one transaction; False when the
    node changed or vanished first."""
    tx = c.transaction()
    tx.delete(path, version=version)
    tx.create(path, data, ephemeral=True)
    results = tx.commit_async().get(timeout=t)
    return not any(isinstance(r, Exception) for r in results)


def delete(c: Any, path: str, recursive: bool, t: float) -> None:
    """Delete ``path`` (children first with ``recursive``); absent nodes are fine."""
    from kazoo.exceptions import NoNodeError, NotEmptyError
    while True:
        if recursive:
            try:
                names = c.get_children_async(path).get(timeout=t)
            except NoNodeError:
                return
            for name in names:
                delete(c, join(path, name), True, t)
        try:
            c.delete_async(path).get(timeout=t)
            return
        except NoNodeError:
            return
        except NotEmptyError:
            if not recursive:
                raise
            # a child appeared meanwhile: go round again


def retryable() -> tuple[type[BaseException], ...]:
    """Errors that mean "the connection is not there right now": wait and try again."""
    from kazoo.exceptions import ConnectionLoss, OperationTimeoutError, SessionExpiredError
    from kazoo.handlers.threading import KazooTimeoutError

    # ConnectionClosedError (our own close) is a SessionExpiredError: callers catch it first
    return (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError)


def translate(exc: BaseException, what: str) -> StateError:
    """A StateError saying what failed, for a kazoo exception that retrying will not fix."""
    from kazoo.exceptions import (
        ConnectionClosedError,
        NoAuthError,
        NoChildrenForEphemeralsError,
        NodeExistsError,
        NoNodeError,
        NotEmptyError,
    )
    reasons = [
        (ConnectionClosedError, "the zookeeper state store is closed"),
        (NodeExistsError, "node exists"),
        (NoNodeError, "parent node does not exist"),
        (NotEmptyError, "node has children (use recursive)"),
        (NoAuthError, "not authorized (check storm.zookeeper.auth.scheme and .payload)"),
        (NoChildrenForEphemeralsError, "parent is ephemeral (ephemeral nodes have no children)"),
    ]
    for kind, reason in reasons:
        if isinstance(exc, kind):
            return StateError(f"{what}: {reason}")
    return StateError(f"{what}: {type(exc).__name__}: {exc}")
