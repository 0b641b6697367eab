"""Build-time checks of windowed bolts, called by ``TopologyBuilder.create_topology`` once
every component's streams are known and before subscriptions are checked."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from squall.api.topology import ComponentSpec
from squall.api.tuple import Stream
from squall.errors import TopologyError
from squall.windowing.bolt import WindowedBolt
from squall.windowing.spec import TIMESTAMP_FIELD, WindowSpec

TIMEOUT_KEY = "topology.message.timeout.secs"
TIMEOUTS_KEY = "topology.enable.message.timeouts"
PENDING_KEY = "topology.max.spout.pending"


def is_windowed(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, WindowedBolt)


def complete_windowed(specs: Mapping[str, ComponentSpec], conf: Mapping[str, Any] | None
                      ) -> None:
    """Check every windowed bolt of ``specs`` and declare its late stream.

    Raises TopologyError when a windowed bolt defines ``process`` or ``process_batch``
    instead of ``process_window``, asks for a thread of its own, has settings
    :meth:`WindowSpec.of` rejects, holds tuples (duration window plus slide) longer than
    ``topology.message.timeout.secs`` (``conf``, else the default; see
    :func:`_check_timeout`), waits for more tuples (count window plus slide) than
    ``topology.max.spout.pending`` lets a spout task have in flight (see
    :func:`_check_pending`), has a late stream while its inputs' fields differ, or has a
    timestamp field that one of its input streams lacks (every tuple of that stream would
    fail). A windowed bolt whose own config sets a key of
    :data:`squall.config.TOPOLOGY_KEYS` (its message timeout, say) is a ConfigError."""
    fields_of: dict[str, str] = {}      # event-time bolt -> its timestamp field
    for spec in specs.values():
        cls = spec.cls
        if spec.kind != "bolt" or not is_windowed(cls):
            continue
        assert cls is not None
        where = f"windowed bolt {spec.id!r}"
        if cls.process is not WindowedBolt.process or hasattr(cls, "process_batch"):
            raise TopologyError(f"{where}: {cls.__qualname__} defines process or "
                                "process_batch; a WindowedBolt takes its tuples in "
                                "process_window")
        if cls.process_window is WindowedBolt.process_window:
            raise TopologyError(f"{where}: {cls.__qualname__} defines no process_window")
        merged = {**(conf or {}), **spec.config}
        if getattr(cls, "dedicated_thread", False) or merged.get(
                "topology.executor.dedicated.thread"):
            raise TopologyError(f"{where}: windowed bolts run on their worker's loop, not on "
                                "a thread of their own")
        ws = WindowSpec.of(spec.id, cls, merged)
        _check_timeout(where, ws, merged)
        _check_pending(where, ws, merged)
        if ws.late_stream is not None:
            _declare_late(spec, ws.late_stream, specs)
        if ws.timestamp_field is not None:
            fields_of[spec.id] = ws.timestamp_field
    # once every late stream is declared: a windowed bolt may take another's
    for cid, field in fields_of.items():
        _check_timestamp_field(specs[cid], field, specs)


def check_timeouts(topology: Any, conf: Mapping[str, Any]) -> None:
    """At submit time (the ``squall_validate_topology`` hook): raise TopologyError when a
    windowed bolt's window plus slide does not fit in the message timeout or the max spout
    pending of the conf it is submitted with (``create_topology`` checked the conf it was
    given, if any), when that
    conf names a late stream the topology was built without (its worker could not emit
    on it), or when it names a timestamp field an input stream lacks."""
    from squall.config import component_conf
    for spec in topology.components.values():
        if spec.kind == "bolt" and is_windowed(spec.cls):
            where = f"windowed bolt {spec.id!r}"
            merged = component_conf(conf, spec.config)     # as the worker merges it
            ws = WindowSpec.of(spec.id, spec.cls, merged)
            _check_timeout(where, ws, merged)
            _check_pending(where, ws, merged)
            if ws.late_stream is not None and ws.late_stream not in spec.streams:
                raise TopologyError(
                    f"{where}: its late stream {ws.late_stream!r} (topology.bolts.late."
                    "tuple.stream in the submitted conf) was not declared when the topology "
                    "was built; give the key to create_topology() or set late_stream on "
                    "the class")
            if ws.timestamp_field is not None:
                _check_timestamp_field(spec, ws.timestamp_field, topology.components)


def _check_timeout(where: str, ws: WindowSpec, merged: Mapping[str, Any]) -> None:
    """TopologyError when a duration window plus slide holds tuples longer than the message
    timeout, which would fail them before they leave their last window. Nothing times out
    with ``topology.enable.message.timeouts`` false or without ackers
    (``topology.acker.executors`` 0): then any duration goes."""
    hold = ws.hold_ms()
    if hold is None or not merged.get(TIMEOUTS_KEY, True) \
            or merged.get("topology.acker.executors") == 0:
        return
    timeout = merged.get(TIMEOUT_KEY)
    if timeout is None:
        from squall import config
        timeout = config.defaults().get(TIMEOUT_KEY) or 30
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
        raise TopologyError(f"{TIMEOUT_KEY} must be a number, got {timeout!r}")
    if hold > timeout * 1000:
        raise TopologyError(f"{where}: window plus slide ({hold} ms) does not fit in "
                            f"{TIMEOUT_KEY} ({timeout} s): its tuples would time out before "
                            "leaving their last window; shorten the window or raise the "
                            "timeout")


def _check_pending(where: str, ws: WindowSpec, merged: Mapping[str, Any]) -> None:
    """TopologyError when the window's counts (count length plus count slide, either alone
    when the other is a duration: :meth:`WindowSpec.hold_count`) exceed a set
    ``topology.max.spout.pending``, as Storm refuses them. A window that waits for more
    tuples than a spout task may have in flight can fill only with tuples that have timed
    out and are replayed again and again (none is ever acked). Storm's rule is kept as it
    is: it compares with the limit of one spout task, though a bolt fed by several spout
    tasks (or by a bolt emitting several tuples per input) may see more in flight, and it
    counts the slide, so it also refuses a few windows that would run (a tumbling
    ``Count(n)`` with ``n`` pending): what Storm accepts is accepted. Without ackers
    (``topology.acker.executors`` 0) the limit does nothing, and nothing is checked."""
    count = ws.hold_count()
    pending = merged.get(PENDING_KEY)
    if count is None or not isinstance(pending, int) or isinstance(pending, bool) \
            or merged.get("topology.acker.executors") == 0:
        return
    if count > pending:
        raise TopologyError(f"{where}: window plus slide ({count} tuples) is more than "
                            f"{PENDING_KEY} ({pending}): a spout task may not have enough "
                            "tuples in flight to fill the window, whose tuples would time out "
                            f"and be replayed again and again; shorten the window or raise "
                            f"{PENDING_KEY}")


def _declare_late(spec: ComponentSpec, name: str, specs: Mapping[str, ComponentSpec]) -> None:
    where = f"windowed bolt {spec.id!r}"
    if name.startswith("__"):
        raise TopologyError(f"{where}: late stream {name!r}: stream names starting with '__' "
                            "are reserved")
    if name in spec.streams:
        raise TopologyError(f"{where} declares stream {name!r}, its late stream: the late "
                            "stream is declared for it, with its input's fields")
    fields: set[tuple[str, ...]] = set()
    for inp in spec.inputs:
        source = specs.get(inp.component)
        stream = source.streams.get(inp.stream) if source is not None else None
        if stream is not None:          # an unknown input is reported by the input checks
            fields.add(stream.fields)
    if len(fields) > 1:
        raise TopologyError(f"{where}: its inputs have different fields "
                            f"({', '.join(str(list(f)) for f in sorted(fields))}), so its late "
                            f"stream {name!r} cannot take their fields")
    spec.streams[name] = Stream(next(iter(fields)) if fields else (), name)


def _check_timestamp_field(spec: ComponentSpec, field: str,
                           specs: Mapping[str, ComponentSpec]) -> None:
    """TopologyError when an input stream of event-time bolt ``spec`` lacks its timestamp
    field ``field``: the bolt would fail every tuple of that stream at run time."""
    lacking = []
    streams = []
    for inp in spec.inputs:
        source = specs.get(inp.component)
        stream = source.streams.get(inp.stream) if source is not None else None
        if stream is None:              # an unknown input is reported by the input checks
            continue
        streams.append(f"{inp.component}:{inp.stream} {list(stream.fields)}")
        if field not in stream.fields:
            lacking.append(f"{inp.component}:{inp.stream}")
    if lacking:
        raise TopologyError(f"windowed bolt {spec.id!r}: timestamp field {field!r} "
                            f"(timestamp_field or {TIMESTAMP_FIELD}) is not a field of "
                            f"{', '.join(lacking)}; its input streams' fields: "
                            f"{'; '.join(streams)}")
