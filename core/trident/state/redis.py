"""The Redis backing map: one Redis string per key, holding the stored value. Reads are one
``MGET`` and writes one ``MSET`` per batch and task.

A value (the kind's layout, e.g. ``[txid, value]``) that JSON gives back as it was (str,
int, float, bool, None, lists of them and dicts of them under str keys: :func:`_json_plain`)
is stored as its JSON text, the bytes earlier releases wrote and read, so a worker of an
earlier release reads it during a rolling upgrade or after a rollback. Any other value (a
dict with int keys, a ``Decimal``, a date, bytes, a set, a registered type, and a tuple
where the serializer keeps tuples) is :data:`FORMAT` + its bytes from the topology's
serializer as a stateful bolt's are (:func:`squall.stateful.values.value_codec`: with
``msgpack`` a tuple stays a tuple, a dict keeps its int keys), so it is read back as it was;
earlier releases cannot read it. A value without :data:`FORMAT` is read as JSON (JSON
written before gave a tuple back as a list and a dict's int keys as str).

A key is named ``key_prefix`` + the JSON of its values when they are str, numbers, bools,
None, and lists or tuples of them (the names such keys always had); any other key (holding a
``Decimal``, a date, bytes, a set, a dict, a registered type) is named ``key_prefix`` + ``~``
+ the serializer's bytes of it, its sets and dicts in a fixed order, so every process names
it alike.

Needs the ``redis`` extra. Each call to Redis waits at most ``timeout`` seconds (to connect,
and for each answer; 2 by default, as the ``redis`` state provider), so a Redis that stopped
answering fails the batch instead of holding the worker's loop. A Redis error (down, refused,
timed out), a value or key the
serializer refuses and a stored value it cannot read surface as
:class:`squall.errors.StateError` naming the state (its ``key_prefix``), raised from the
operation: the batch fails, is reported as the component's error and is replayed.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from squall.errors import SerializationError, StateError
from squall.spi.serializer import Serializer
from squall.trident.state.map_state import BackingMap, Key

__all__ = ["DEFAULT_TIMEOUT", "FORMAT", "RedisBackingMap", "checked_timeout", "connect"]

#: seconds a call to Redis may wait to connect, and for each answer (as the ``redis`` state
#: provider's ``timeout``)
DEFAULT_TIMEOUT = 2.0

#: the first byte of a value the serializer wrote: JSON text (ASCII) never starts with it,
#: and msgpack never uses it
FORMAT = b"\xc1"
#: after ``key_prefix``, what names a key JSON does not write (a JSON name starts with ``[``)
TYPED_KEY = b"~"


class RedisBackingMap(BackingMap):
    """The map in Redis (see the module docstring). ``serializer``: the topology's (the
    default ``msgpack`` one when None). Called from the worker's loop thread; each call
    blocks on one Redis round trip, for at most ``timeout`` seconds (then StateError)."""

    def __init__(self, *, host: str, port: int, db: int, key_prefix: str,
                 password: str | None = None, serializer: Serializer | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        try:
            import redis
        except ImportError as exc:
            raise StateError("RedisMapState needs the redis client: pip install "
                             "'squall[redis]'") from exc
        from squall.stateful.values import value_codec
        if serializer is None:
            from squall.serializers.msgpack import MsgpackSerializer
            serializer = MsgpackSerializer()
        self._errors = redis.RedisError
        self.prefix = key_prefix
        self._name_prefix = key_prefix.encode()
        self._typed_prefix = self._name_prefix + TYPED_KEY
        self._key_dumps = serializer.dumps
        self._dumps, self._loads = value_codec(serializer)
        # a tuple is stored as a JSON list unless the serializer would give it back a tuple
        self._plain_seqs = _PLAIN_SEQS if _keeps_tuples(self._dumps, self._loads) else (
            _PLAIN_SEQS | {tuple})
        self.client = connect(host=host, port=port, db=db, password=password,
                              timeout=timeout)

    def _fail(self, what: str) -> StateError:
        return StateError(f"redis map state {self.prefix!r}: {what}")

    def key_name(self, key: Key) -> bytes:
        """The Redis key that holds ``key``'s value (the same in every process)."""
        if _json_named(key):
            return self._name_prefix + json.dumps(list(key), separators=(",", ":")).encode()
        try:
            return self._typed_prefix + self._key_dumps(_canonical(key, self._key_dumps))
        except Exception as exc:
            raise self._fail(f"cannot name the key {key!r:.80}: {exc}") from exc

    def encode(self, key: Key, value: Any) -> bytes:
        """What Redis holds for ``value`` (stored under ``key``): its JSON text when JSON
        gives it back as it was, else :data:`FORMAT` + the serializer's bytes of it. The
        check walks the value's classes and encodes nothing (a ``[txid, count]``: three)."""
        try:
            if _json_plain(value, self._plain_seqs):
                # as earlier releases wrote it (json.dumps' default separators, ASCII)
                return json.dumps(value).encode()
        except (ValueError, RecursionError):
            pass    # an int too long for str(), or nested too deep: the serializer says
        try:
            return FORMAT + self._dumps(value)
        except Exception as exc:
            raise self._fail(f"cannot store the value of key {key!r:.80}: {exc}") from exc

    def decode(self, key: Key, raw: bytes) -> Any:
        """The value Redis holds as ``raw`` (under ``key``)."""
        try:
            if raw[:1] == FORMAT:
                return self._loads(raw[1:])
            return json.loads(raw)          # written before values were serialized
        except Exception as exc:
            raise self._fail(f"cannot read the value of key {key!r:.80} ({len(raw)} bytes; "
                             f"written with another serializer?): {exc}") from exc

    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        if not keys:
            return []
        names = [self.key_name(k) for k in keys]
        try:
            # bytes: the client is made without decode_responses
            raw: list[bytes | None] = self.client.mget(names)  # type: ignore[assignment]
        except self._errors as exc:
            raise self._fail(str(exc)) from exc
        return [None if r is None else self.decode(k, r) for k, r in zip(keys, raw)]

    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        if not keys:
            return
        # every value is encoded before the write: one the serializer refuses writes none
        entries = {self.key_name(k): self.encode(k, v) for k, v in zip(keys, values)}
        try:
            self.client.mset(entries)
        except self._errors as exc:
            raise self._fail(str(exc)) from exc

    def close(self) -> None:
        self.client.close()


def checked_timeout(owner: str, timeout: Any) -> float:
    """``timeout`` as seconds; ValueError naming ``owner`` unless it is a number above 0."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{owner}: timeout must be a number of seconds above 0, got "
                         f"{timeout!r}")
    return float(timeout)


def connect(*, host: str, port: int, db: int, password: str | None, timeout: float,
            **options: Any) -> Any:
    """A Redis client whose calls wait at most ``timeout`` seconds to connect and for each
    answer, and are not retried inside the client (a failed batch is replayed). ``options``:
    more of ``redis.Redis``'s (``decode_responses``). Needs the ``redis`` package."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    return redis.Redis(host=host, port=port, db=db, password=password,
                       socket_timeout=timeout, socket_connect_timeout=timeout,
                       retry=Retry(NoBackoff(), 0), **options)


#: the classes JSON writes and reads back as themselves (exact classes: a subclass, or a
#: registered one, comes back as its base class from JSON)
_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))
#: the sequences JSON gives back as they were
_PLAIN_SEQS = frozenset((list,))


def _json_plain(value: Any, seqs: frozenset[type]) -> bool:
    """Whether JSON gives ``value`` back equal and of the same types: it is a str, an int, a
    float (JSON writes every float by its repr, NaN and infinities too), a bool, None, or a
    sequence of a class in ``seqs`` or a dict with str keys holding such values."""
    cls = value.__class__
    if cls in _JSON_SCALARS:
        return True
    if cls in seqs:
        for v in value:
            if not _json_plain(v, seqs):
                return False
        return True
    if cls is dict:
        for k, v in value.items():
            if k.__class__ is not str or not _json_plain(v, seqs):
                return False
        return True
    return False


def _keeps_tuples(dumps: Callable[[Any], bytes], loads: Callable[[bytes], Any]) -> bool:
    """Whether the serializer gives a tuple back as a tuple (``msgpack``: yes; ``json``:
    as a list). One that refuses an empty tuple is taken to keep them."""
    try:
        return loads(dumps(())).__class__ is tuple
    except SerializationError:
        return True


def _json_named(values: Any) -> bool:
    """Whether a key is named by its JSON, as keys always were: its values are str, numbers,
    bools, None, and lists or tuples of them (JSON writes each kind apart, ``1``, ``1.0`` and
    ``true`` too; a dict is not, as JSON would write its int keys as str)."""
    for v in values:
        cls = v.__class__
        if cls is str or cls is int or cls is float or cls is bool or v is None:
            continue
        if isinstance(v, (list, tuple)):
            if not _json_named(v):
                return False
        elif not isinstance(v, (str, int, float)):  # subclasses: JSON writes their base type
            return False
    return True


def _canonical(value: Any, dumps: Callable[[Any], bytes]) -> Any:
    """``value`` as the serializer names it: lists and tuples as lists (a tuple is a list
    once its row crossed workers), a set as ``{"set": its items}`` and a dict as ``{"dict":
    its [key, value] pairs}``, sorted by their bytes, so that its name does not depend on
    its iteration order (a set's differs between processes). Only these tagged dicts are
    dicts in the form, so no two keys share it."""
    if isinstance(value, (list, tuple)):
        return [_canonical(v, dumps) for v in value]
    if isinstance(value, (set, frozenset)):
        return {"set": sorted((_canonical(v, dumps) for v in value), key=dumps)}
    if isinstance(value, dict):
        return {"dict": sorted(([_canonical(k, dumps), _canonical(v, dumps)]
                                for k, v in value.items()), key=dumps)}
    return value
