"""The Redis backing map: one Redis string per key, ``key_prefix`` + the key's JSON, holding
the stored value's JSON. Reads are one ``MGET`` and writes one ``MSET`` per batch and task.

Needs the ``redis`` extra. Connection errors surface as :class:`squall.errors.StateError`
(raised from the operation, so the batch fails and is replayed).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from squall.errors import StateError
from squall.trident.state.map_state import BackingMap, Key


class RedisBackingMap(BackingMap):
    def __init__(self, *, host: str, port: int, db: int, key_prefix: str,
                 password: str | None = None) -> None:
        try:
            import redis
        except ImportError as exc:
            raise StateError("RedisMapState needs the redis client: pip install "
                             "'squall[redis]'") from exc
        self._errors = redis.RedisError
        self.prefix = key_prefix
        self.client = redis.Redis(host=host, port=port, db=db, password=password)

    def _name(self, key: Key) -> str:
        return self.prefix + json.dumps(list(key), separators=(",", ":"))

    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        if not keys:
            return []
        try:
            raw = self.client.mget([self._name(k) for k in keys])
        except self._errors as exc:
            raise StateError(f"redis map state: {exc}") from exc
        return [None if r is None else json.loads(r) for r in raw]

    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        if not keys:
            return
        try:
            self.client.mset({self._name(k): json.dumps(v) for k, v in zip(keys, values)})
        except self._errors as exc:
            raise StateError(f"redis map state: {exc}") from exc

    def close(self) -> None:
        self.client.close()
