"""What a topology names a state by: a kind and a backend with its options.

``MemoryMapState()`` / ``MemoryMapState.transactional()`` / ``.opaque()`` /
``.non_transactional()`` and ``RedisMapState(host=, port=, db=, key_prefix=, timeout=)`` /
``RedisMapState.transactional(...)`` and likewise return a :class:`MapStateFactory` (the
class called itself is the transactional kind); it travels to the workers as JSON and
``make_state(context.memory_stores, serializer)`` builds the task's
:class:`~squall.trident.state.map_state.MapState` there (a Redis one stores its values with
the topology's ``serializer``).
"""
from __future__ import annotations

import uuid
from typing import Any

from squall.runtime.memory_stores import MemoryStores
from squall.spi.serializer import Serializer
from squall.trident.state.map_state import KINDS, BackingMap, MapState
from squall.trident.state.redis import DEFAULT_TIMEOUT


class MapStateFactory:
    """A state's kind and backend; built by the ``*MapState`` classes, not directly."""

    def __init__(self, backend: str, kind: str, options: dict[str, Any]) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown map state kind {kind!r}; kinds: {', '.join(KINDS)}")
        self.backend = backend
        self.kind = kind
        self.options = options

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "kind": self.kind, "options": dict(self.options)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> MapStateFactory:
        return cls(d["backend"], d["kind"], dict(d["options"]))

    def make_state(self, stores: MemoryStores | None = None,
                   serializer: Serializer | None = None) -> MapState:
        """The task's state; a memory one keeps its map in ``stores``, its worker's
        (``context.memory_stores``; None: stores of its own); a Redis one encodes keys and
        values with ``serializer``, the topology's (None: the default ``msgpack``)."""
        return KINDS[self.kind](self._backing(stores, serializer))

    def _backing(self, stores: MemoryStores | None,
                 serializer: Serializer | None) -> BackingMap:
        if self.backend == "memory":
            from squall.trident.state.memory import MemoryBackingMap
            return MemoryBackingMap(self.options["id"],
                                    stores if stores is not None else MemoryStores())
        if self.backend == "redis":
            from squall.trident.state.redis import RedisBackingMap
            return RedisBackingMap(**self.options, serializer=serializer)
        raise ValueError(f"unknown map state backend {self.backend!r}")

    @property
    def state_id(self) -> str:
        """The memory state's id (see :func:`squall.trident.state.memory.stored`)."""
        return str(self.options.get("id", ""))

    @property
    def store(self) -> tuple[Any, ...]:
        """Where the state's values live: two states of one topology with the same ``store``
        read and write the same keys (memory: its id; Redis: its server, db and key prefix)."""
        if self.backend == "memory":
            return (self.backend, self.state_id)
        o = self.options
        return (self.backend, o.get("host"), o.get("port"), o.get("db"), o.get("key_prefix"))

    def describe(self) -> str:
        """The state as an error line names it."""
        if self.backend == "memory":
            return f"MemoryMapState {self.state_id!r}"
        o = self.options
        return (f"RedisMapState at {o.get('host')}:{o.get('port')} db {o.get('db')} with "
                f"key_prefix {o.get('key_prefix')!r}")

    def __repr__(self) -> str:
        return f"MapStateFactory({self.backend!r}, {self.kind!r})"


class MemoryMapState:
    """A map state in its workers' memory (LocalCluster, tests, one-worker topologies; see
    :mod:`squall.trident.state.memory`).

    ``MemoryMapState()`` is transactional; ``state_id`` names it (one is made up otherwise)."""

    def __new__(cls, state_id: str | None = None) -> MapStateFactory:  # type: ignore[misc]
        return cls.transactional(state_id)

    @staticmethod
    def _make(kind: str, state_id: str | None) -> MapStateFactory:
        return MapStateFactory("memory", kind, {"id": state_id or f"mem-{uuid.uuid4().hex}"})

    @classmethod
    def transactional(cls, state_id: str | None = None) -> MapStateFactory:
        return cls._make("transactional", state_id)

    @classmethod
    def opaque(cls, state_id: str | None = None) -> MapStateFactory:
        return cls._make("opaque", state_id)

    @classmethod
    def non_transactional(cls, state_id: str | None = None) -> MapStateFactory:
        return cls._make("non_transactional", state_id)


class RedisMapState:
    """A map state in Redis: one string per key, named ``key_prefix`` + the key's JSON,
    holding the value as the topology's serializer writes it (see
    :mod:`squall.trident.state.redis`).

    ``RedisMapState(...)`` is transactional, with the keywords of :meth:`transactional`.
    ``timeout``: the seconds each call to Redis may wait to connect and for its answer (2);
    a Redis that does not answer in time fails the batch, which is replayed. ValueError for
    a timeout not above 0."""

    def __new__(cls, host: str = "127.0.0.1", port: int = 6379,  # type: ignore[misc]
                db: int = 0, key_prefix: str = "trident:", password: str | None = None,
                timeout: float = DEFAULT_TIMEOUT) -> MapStateFactory:
        return cls.transactional(host, port, db, key_prefix, password, timeout)

    @staticmethod
    def _make(kind: str, host: str, port: int, db: int, key_prefix: str,
              password: str | None, timeout: float) -> MapStateFactory:
        from squall.trident.state.redis import checked_timeout
        return MapStateFactory("redis", kind, {
            "host": host, "port": int(port), "db": int(db), "key_prefix": key_prefix,
            "password": password, "timeout": checked_timeout("RedisMapState", timeout)})

    @classmethod
    def transactional(cls, host: str = "127.0.0.1", port: int = 6379, db: int = 0,
                      key_prefix: str = "trident:", password: str | None = None,
                      timeout: float = DEFAULT_TIMEOUT) -> MapStateFactory:
        return cls._make("transactional", host, port, db, key_prefix, password, timeout)

    @classmethod
    def opaque(cls, host: str = "127.0.0.1", port: int = 6379, db: int = 0,
               key_prefix: str = "trident:", password: str | None = None,
               timeout: float = DEFAULT_TIMEOUT) -> MapStateFactory:
        return cls._make("opaque", host, port, db, key_prefix, password, timeout)

    @classmethod
    def non_transactional(cls, host: str = "127.0.0.1", port: int = 6379, db: int = 0,
                          key_prefix: str = "trident:", password: str | None = None,
                          timeout: float = DEFAULT_TIMEOUT) -> MapStateFactory:
        return cls._make("non_transactional", host, port, db, key_prefix, password, timeout)
