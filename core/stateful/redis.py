"""The ``redis`` state provider: checkpoints in Redis, so state survives ``kill -9`` of
workers.

Options (``topology.state.provider.config``): ``host`` (127.0.0.1), ``port`` (6379), ``db``
(0), ``password`` (none), ``key_prefix`` ("squall:"), ``timeout`` (seconds per call, 2).
A namespace ``NS`` uses three hashes: ``<key_prefix>NS:data`` (the committed map),
``<key_prefix>NS:prepared`` (the prepared changes, each value prefixed by one byte: ``1`` and
the value, or ``0`` for a deleted key) and ``<key_prefix>NS:meta`` (``committed`` and
``prepared`` txids). Each call is one MULTI/EXEC transaction (commit reads the prepared
changes first), so a crash leaves either the old or the new checkpoint, never half of one.
A Redis error (down, refused, timed out) becomes :class:`~squall.errors.StateProviderError`.
An option of the wrong type or range, or one it does not know (a typo would leave the default
in use), is a :class:`~squall.errors.ConfigError` naming it. Needs the ``redis`` extra.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from squall.errors import StateProviderError
from squall.stateful.provider import Changes, Options, StateProvider, checked_options

__all__ = ["RedisStateProvider"]

_PUT, _DEL = b"\x01", b"\x00"


#: option -> (its check, what it must be)
_OPTIONS: Options = {
    "host": (lambda v: isinstance(v, str) and v, "a host name"),
    "port": (lambda v: _int(v) and 0 < v < 65536, "a port from 1 to 65535"),
    "db": (lambda v: _int(v) and v >= 0, "a database number, 0 or more"),
    "password": (lambda v: isinstance(v, str), "a string"),
    "key_prefix": (lambda v: isinstance(v, str), "a string"),
    "timeout": (lambda v: _number(v) and v > 0, "a number of seconds above 0"),
}


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class RedisStateProvider(StateProvider):
    """Checkpoints in Redis (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        super().__init__(conf)
        c = checked_options(self.conf, _OPTIONS, "redis")
        self.host = str(c.get("host") or "127.0.0.1")
        self.port = int(c.get("port") or 6379)
        self.prefix = str(c.get("key_prefix") if c.get("key_prefix") is not None else "squall:")
        timeout = float(c.get("timeout") or 2.0)
        # no retries inside the client: each call runs on a worker's loop thread, and a
        # failed checkpoint is retried by the protocol anyway
        self._client = redis.Redis(host=self.host, port=self.port, db=int(c.get("db") or 0),
                                   password=c.get("password") or None,
                                   socket_timeout=timeout, socket_connect_timeout=timeout,
                                   retry=Retry(NoBackoff(), 0))

    def _keys(self, namespace: str) -> tuple[str, str, str]:
        base = f"{self.prefix}{namespace}"
        return f"{base}:data", f"{base}:prepared", f"{base}:meta"

    def _error(self, what: str, namespace: str, exc: Exception) -> StateProviderError:
        return StateProviderError(f"redis state provider at {self.host}:{self.port}: {what} of "
                                  f"{namespace!r} failed: {exc}")

    def load(self, namespace: str) -> tuple[int, dict[bytes, bytes]]:
        data, _, meta = self._keys(namespace)
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.hget(meta, "committed")
            pipe.hgetall(data)
            committed, values = pipe.execute()
        except redis.RedisError as exc:
            raise self._error("load", namespace, exc) from exc
        return int(committed or 0), dict(values)

    def txids(self, namespace: str) -> tuple[int, int | None]:
        _, _, meta = self._keys(namespace)
        try:
            committed, prepared = self._client.hmget(meta, ["committed", "prepared"])
        except redis.RedisError as exc:
            raise self._error("reading the txids", namespace, exc) from exc
        return int(committed or 0), (int(prepared) if prepared is not None else None)

    def prepare(self, namespace: str, txid: int, changes: Changes) -> None:
        _, prepared, meta = self._keys(namespace)
        encoded = {k: (_DEL if v is None else _PUT + v) for k, v in changes.items()}
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(prepared)
            if encoded:
                pipe.hset(prepared, mapping=encoded)  # type: ignore[arg-type]
            pipe.hset(meta, "prepared", int(txid))
            pipe.execute()
        except redis.RedisError as exc:
            raise self._error(f"prepare of txid {txid}", namespace, exc) from exc

    def commit(self, namespace: str, txid: int) -> None:
        data, prepared, meta = self._keys(namespace)
        committed, ready = self.txids(namespace)
        if ready != txid:
            if committed == txid:
                return
            raise StateProviderError(f"redis state {namespace!r}: cannot commit txid {txid}: "
                                     f"the prepared txid is {ready}")
        try:
            changes = self._client.hgetall(prepared)
            puts = {k: v[1:] for k, v in changes.items() if v[:1] == _PUT}
            deletes = [k for k, v in changes.items() if v[:1] != _PUT]
            pipe = self._client.pipeline(transaction=True)
            if puts:
                pipe.hset(data, mapping=puts)  # type: ignore[arg-type]
            if deletes:
                pipe.hdel(data, *deletes)
            pipe.hset(meta, "committed", int(txid))
            pipe.hdel(meta, "prepared")
            pipe.delete(prepared)
            pipe.execute()
        except redis.RedisError as exc:
            raise self._error(f"commit of txid {txid}", namespace, exc) from exc

    def rollback(self, namespace: str) -> None:
        _, prepared, meta = self._keys(namespace)
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(prepared)
            pipe.hdel(meta, "prepared")
            pipe.execute()
        except redis.RedisError as exc:
            raise self._error("rollback", namespace, exc) from exc

    def close(self) -> None:
        self._client.close()
