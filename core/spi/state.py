"""The cluster state store SPI (``squall.state_stores``, chosen with ``squall.state``).

A small hierarchical key/value store with ZooKeeper's semantics: absolute paths like ``/a/b``
(at most :data:`MAX_PATH_BYTES`), byte values (at most :data:`MAX_VALUE_BYTES`), ephemeral
nodes bound to this client (they vanish when it closes or its session is lost for good),
sequential nodes (a 10-digit, zero-padded, increasing suffix), and watches that fire once per
registration. The ``memory`` driver implements
it in-process for local mode; the ``zookeeper`` driver on a real ensemble.

Watches are one-shot and best-effort signals, not a change log: a callback receives the watched
path, runs on a thread owned by the store (never the caller's, never while the store holds an
internal lock), must not block for long, and may call the store (typically to re-read and set a
new watch). Several changes may coalesce into one firing. Daemons therefore also re-read their
state periodically (nimbus every ``nimbus.monitor.freq.secs``, supervisors every
``supervisor.monitor.frequency.secs``) so a missed signal only delays them.

Every method may be called from any thread. Errors are :class:`~squall.errors.StateError`
(unreachable store, node exists, parent missing, not empty, closed store, bad path); a value that
is not bytes is a ``TypeError``.
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

WatchCallback = Callable[[str], None]

#: Largest value a node may hold (ZooKeeper's packet limit is about 1 MiB).
MAX_VALUE_BYTES = 1_000_000
#: Longest node path, in UTF-8 bytes: a request carries its path and value together, and
#: ZooKeeper drops the connection of a client whose request is over its limit (``jute.maxbuffer``,
#: 1 MiB less a byte) instead of answering it
MAX_PATH_BYTES = 16_384

# characters ZooKeeper refuses in a path: controls, surrogates and private use, the
# U+FFF0-U+FFFF specials, and everything outside the Basic Multilingual Plane (surrogate pairs
# in ZooKeeper's UTF-16 strings)
_REFUSED_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\U0010ffff]")


def node_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be one segment of a node path (``None`` when it can): empty, ``.``
    or ``..``, a ``/``, or a character ZooKeeper refuses (a control character, a surrogate or
    private-use character, U+FFF0-U+FFFF, or one outside the Basic Multilingual Plane such as
    an emoji). Letters of any script in the Basic Multilingual Plane are fine.

    >>> node_name_problem("compteur-données") is None
    True
    >>> node_name_problem("a/b")
    "contains '/'"
    """
    if not name:
        return "is empty"
    if name in (".", ".."):
        return f"is {name!r}"
    if "/" in name:
        return "contains '/'"
    bad = _REFUSED_CHARS.search(name)
    if bad is not None:
        return (f"contains {bad.group()!r} (U+{ord(bad.group()):04X}), which the cluster state "
                "store cannot hold in a path: no control, private-use or surrogate characters, "
                "none past U+FFEF (such as emoji)")
    return None


class LeaderElection(ABC):
    """One candidacy in the election held under a path (see :meth:`StateStore.leader_election`).

    Candidates are ephemeral sequential nodes under the election path holding the candidate's
    identifier (UTF-8); the lowest sequence number leads. When the leader's client closes or
    loses its session, the next candidate takes over.
    """

    @abstractmethod
    def run(self, func: Callable[[], Any]) -> bool:
        """Block until this candidate leads, call ``func()``, then give up leadership.

        Leadership is released when ``func`` returns or raises (the exception propagates).
        Returns ``True`` after ``func`` ran, ``False`` when :meth:`cancel` was called (before or
        while waiting) or the store was closed before this candidate was elected. ``func``
        should return promptly once :attr:`is_leader` turns ``False`` (session lost) and the
        caller may then ``run`` again to re-contend. Raises StateError when the store fails.
        Call it from a thread of your own; one ``run`` at a time per election object.
        """

    @abstractmethod
    def cancel(self) -> None:
        """Withdraw: a waiting :meth:`run` returns ``False``. Does not interrupt a running
        ``func``. Idempotent; may be called from any thread."""

    @property
    @abstractmethod
    def is_leader(self) -> bool:
        """``True`` while this candidate holds leadership (between election and release, and
        as long as its client is connected with the session it was elected in)."""

    @abstractmethod
    def contenders(self) -> list[str]:
        """Identifiers of the current candidates, the leader first (``[]`` when none)."""


class StateStore(ABC):
    name: str = ""
    #: True when the tree lives in this process (clients in other processes never see it):
    #: LocalCluster's kind. A cluster's daemons, each a process of its own, refuse such a store
    #: when they start (:func:`squall.daemon.validate.check_state_store`)
    in_process: bool = False

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        self.conf: dict[str, Any] = dict(conf or {})

    def start(self) -> None:
        """Connect (a no-op for in-process stores). Raises StateError when unreachable within
        the configured connection timeout. Returns once usable."""

    @abstractmethod
    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = True) -> str:
        """Create a node and return its path (with the sequence suffix when ``sequence``).

        Raises StateError if it exists (use :meth:`put` to create or overwrite), if its parent
        is missing and ``makepath`` is false, or if the parent is ephemeral (ephemeral nodes
        have no children). Parents created by ``makepath`` are persistent. With ``sequence``
        the path may end in ``/`` (the name is then the bare 10-digit number)."""

    @abstractmethod
    def put(self, path: str, data: bytes, *, ephemeral: bool = False) -> None:
        """Create or overwrite a node, creating parents. Overwriting keeps the node's kind,
        with one exception: an ephemeral ``put`` on an ephemeral node owned by another session
        takes the node over in one atomic step (readers see the old or the new node, never
        none), so it then lives as long as this store's session. A restarted daemon uses that
        to replace the registration its previous life left behind."""

    @abstractmethod
    def get(self, path: str, watch: WatchCallback | None = None) -> bytes | None:
        """Return the node's data or ``None`` if absent; ``watch`` fires once on change/delete
        (or creation, when absent)."""

    @abstractmethod
    def children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        """Return child names (not paths), sorted; ``[]`` if the node is absent. ``watch`` fires
        once when a child is added or removed or the node is deleted (or created, when absent);
        not on data changes."""

    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def delete(self, path: str, *, recursive: bool = False) -> None:
        """Delete a node (and its subtree with ``recursive``); absent nodes are ignored.
        Raises StateError for a node with children when not ``recursive``, and for ``/``."""

    def add_reconnect_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after the session was lost and a new one established
        (ephemeral nodes already re-created and watches re-set by the store). It runs on a
        store thread. Default: never happens."""

    def leader_election(self, path: str, identifier: str) -> LeaderElection:
        """Return a :class:`LeaderElection` candidacy under ``path`` for ``identifier``
        (no I/O until :meth:`LeaderElection.run`)."""
        raise NotImplementedError

    @abstractmethod
    def close(self) -> None:
        """Disconnect; this client's ephemeral nodes go away, its pending watches are dropped
        and its waiting elections return ``False``. Idempotent."""
