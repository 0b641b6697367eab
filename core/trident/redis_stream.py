"""``RedisStreamSpout``: an opaque partitioned spout over Redis streams (one partition per
stream key), with a consumer group recording what has committed.

A batch of a stream holds up to ``batch_size`` entries after the previous batch's last
entry id (``XRANGE``), and its metadata is the id range it read. When a batch commits, the
consumer group's last-delivered id moves to where that batch started, the end of the batch
before it (``XGROUP SETID``), so Redis tools (``XINFO GROUPS``) show the topology's progress
one batch behind; a stream without metadata yet starts after the group's last-delivered id
(the group is created at ``0``, the stream's start, unless it exists). Lagging one batch keeps
that start stable while the latest commit may still be replayed. Each entry becomes one row
of ``fields`` (the entry's values of those names, decoded as UTF-8; ``None`` where missing);
``id_field`` adds the entry id.

Opaque: a replayed batch re-reads from the last committed id and may see other entries (if
the stream was trimmed); with an opaque state the counts stay exact. Needs the ``redis``
extra. Each call to Redis waits at most ``timeout`` seconds (to connect, and for each answer;
2 by default): connection errors and a Redis that does not answer in time fail the batch (it
is replayed) instead of holding the worker's loop.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from squall.errors import StateError
from squall.trident.partitioned import (
    OpaqueEmitter, OpaquePartitionedSpout, PartitionCoordinator,
)
from squall.trident.state.redis import DEFAULT_TIMEOUT, checked_timeout, connect
from squall.trident.tuple import TridentCollector


def _client(options: dict[str, Any]) -> Any:
    try:
        import redis  # noqa: F401
    except ImportError as exc:
        raise StateError("RedisStreamSpout needs the redis client: pip install "
                         "'squall[redis]'") from exc
    return connect(host=options["host"], port=options["port"], db=options["db"],
                   password=options.get("password"),
                   timeout=options.get("timeout", DEFAULT_TIMEOUT), decode_responses=True)


class _Coordinator(PartitionCoordinator):
    def __init__(self, streams: list[str]) -> None:
        self.streams = streams

    def get_partitions_for_batch(self) -> Any:
        return list(self.streams)


class _Emitter(OpaqueEmitter):
    def __init__(self, spout: RedisStreamSpout) -> None:
        import redis
        self.errors = redis.RedisError
        self.spout = spout
        self.client = _client(spout.options)
        self.ready: set[str] = set()
        #: txid -> {stream: last id read} of batches not committed yet
        self.emitted: dict[int, dict[str, str]] = {}

    def _group_start(self, stream: str) -> str:
        group = self.spout.group
        if stream not in self.ready:
            try:
                self.client.xgroup_create(stream, group, id="0", mkstream=True)
            except self.errors as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
            self.ready.add(stream)
        for info in self.client.xinfo_groups(stream):
            if info["name"] == group:
                return str(info["last-delivered-id"])
        return "0-0"

    def emit_partition_batch(self, txid: int, collector: TridentCollector, partition: Any,
                             last_partition_meta: Any) -> Any:
        stream = str(partition)
        try:
            start = (last_partition_meta["last"] if last_partition_meta
                     else self._group_start(stream))
            entries = self.client.xrange(stream, min=f"({start}", max="+",
                                         count=self.spout.batch_size)
        except self.errors as exc:
            raise StateError(f"RedisStreamSpout {stream!r}: {exc}") from exc
        fields, id_field = self.spout.fields, self.spout.id_field
        for entry_id, values in entries:
            row = [values.get(f) for f in fields]
            collector.emit([entry_id, *row] if id_field else row)
        last = entries[-1][0] if entries else start
        self.emitted.setdefault(txid, {})[stream] = start
        return {"first": start, "last": last}

    def success(self, txid: int) -> None:
        # the group moves to where this batch started (the end of the one before): until
        # the coordinator has recorded this commit, this batch may be replayed, and a
        # replay without metadata starts at the group's id
        done = self.emitted.pop(txid, {})
        for t in [t for t in self.emitted if t < txid]:
            del self.emitted[t]
        for stream, first in done.items():
            try:
                self.client.xgroup_setid(stream, self.spout.group, id=first)
            except self.errors as exc:     # the group records progress; metadata rules
                raise StateError(f"RedisStreamSpout {stream!r}: {exc}") from exc

    def close(self) -> None:
        self.client.close()


class RedisStreamSpout(OpaquePartitionedSpout):
    """Rows from Redis streams ``streams`` (see the module docstring); ``timeout``: the
    seconds each call to Redis may wait (ValueError unless above 0)."""

    def __init__(self, streams: Sequence[str] | str, fields: Sequence[str], *,
                 host: str = "127.0.0.1", port: int = 6379, db: int = 0,
                 group: str = "squall", batch_size: int = 1000,
                 id_field: str | None = None, password: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.streams = [streams] if isinstance(streams, str) else [str(s) for s in streams]
        if not self.streams:
            raise ValueError("RedisStreamSpout needs at least one stream key")
        if batch_size < 1:
            raise ValueError(f"RedisStreamSpout: batch_size must be >= 1, got {batch_size}")
        self.fields = [str(f) for f in fields]
        self.id_field = id_field
        self.group = group
        self.batch_size = int(batch_size)
        self.options = {"host": host, "port": int(port), "db": int(db), "password": password,
                        "timeout": checked_timeout("RedisStreamSpout", timeout)}

    def output_fields(self) -> list[str]:
        return ([self.id_field] if self.id_field else []) + list(self.fields)

    def get_coordinator(self, conf: dict[str, Any], context: Any) -> PartitionCoordinator:
        return _Coordinator(self.streams)

    def get_emitter(self, conf: dict[str, Any], context: Any) -> OpaqueEmitter:
        return _Emitter(self)
