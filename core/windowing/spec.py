"""What a windowed bolt asks for: :class:`Count` and :class:`Duration` (the values users put in
``window`` and ``slide``) and :class:`WindowSpec`, the settings of one component once Storm's
component keys have overridden its class attributes.

Everything here runs at build time (``create_topology``) or when an executor is made; errors
are :class:`squall.TopologyError` with one-line messages naming the component.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from squall.errors import TopologyError

#: Storm's component keys, each overriding one class attribute of a WindowedBolt
LENGTH_COUNT = "topology.bolts.window.length.count"
LENGTH_MS = "topology.bolts.window.length.duration.ms"
SLIDE_COUNT = "topology.bolts.sliding.interval.count"
SLIDE_MS = "topology.bolts.sliding.interval.duration.ms"
TIMESTAMP_FIELD = "topology.bolts.tuple.timestamp.field.name"
MAX_LAG_MS = "topology.bolts.tuple.timestamp.max.lag.ms"
WATERMARK_MS = "topology.bolts.watermark.event.interval.ms"
LATE_STREAM = "topology.bolts.late.tuple.stream"
KEYS = (LENGTH_COUNT, LENGTH_MS, SLIDE_COUNT, SLIDE_MS, TIMESTAMP_FIELD, MAX_LAG_MS,
        WATERMARK_MS, LATE_STREAM)
#: Storm's defaults for event time
DEFAULT_WATERMARK_MS = 1000
DEFAULT_MAX_LAG_MS = 0


class Count:
    """A window length or slide in tuples: ``Count(100)``."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise TopologyError(f"Count takes a positive number of tuples, got {n!r}")
        self.n = n

    def __repr__(self) -> str:
        return f"Count({self.n})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Count) and other.n == self.n

    def __hash__(self) -> int:
        return hash(("count", self.n))


class Duration:
    """A window length, slide, lag or interval in time: ``Duration(seconds=10)``,
    ``Duration(ms=250)``, or both added (``Duration(seconds=1, ms=500)`` is 1500 ms)."""

    __slots__ = ("ms",)

    def __init__(self, seconds: float = 0, ms: int = 0) -> None:
        for name, v in (("seconds", seconds), ("ms", ms)):
            # ``not v >= 0`` refuses NaN too
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v >= 0 \
                    or v == math.inf:
                raise TopologyError(f"Duration {name} must be a finite non-negative number, "
                                    f"got {v!r}")
        try:
            self.ms = int(round(seconds * 1000 + ms))
        except OverflowError:           # finite, but not in ms (seconds=1e308)
            raise TopologyError(f"Duration of {seconds!r:.40} seconds and {ms!r:.40} ms is "
                                "too long to count in ms") from None

    def __repr__(self) -> str:
        return f"Duration(ms={self.ms})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other.ms == self.ms

    def __hash__(self) -> int:
        return hash(("duration", self.ms))


class WindowSpec:
    """One windowed component's settings, resolved and checked (see :meth:`of`).

    ``length`` and ``slide`` are Count or Duration (a slide left out is the length: a
    tumbling window); ``timestamp_field`` turns on event time, with ``max_lag_ms`` and
    ``watermark_ms``; ``late_stream`` names the stream tuples behind the watermark go to."""

    __slots__ = ("late_stream", "length", "max_lag_ms", "slide", "timestamp_field",
                 "watermark_ms")

    def __init__(self, length: Count | Duration, slide: Count | Duration,
                 timestamp_field: str | None = None, max_lag_ms: int = DEFAULT_MAX_LAG_MS,
                 watermark_ms: int = DEFAULT_WATERMARK_MS,
                 late_stream: str | None = None) -> None:
        self.length = length
        self.slide = slide
        self.timestamp_field = timestamp_field
        self.max_lag_ms = max_lag_ms
        self.watermark_ms = watermark_ms
        self.late_stream = late_stream

    @property
    def event_time(self) -> bool:
        return self.timestamp_field is not None

    def hold_ms(self) -> int | None:
        """What must fit in the message timeout, as Storm checks it: window plus slide when
        both are durations (a tumbling window: twice its length), else the one that is a
        duration; None for count windows (their tuples wait for other tuples, not time)."""
        return sum(v.ms for v in (self.length, self.slide) if isinstance(v, Duration)) or None

    def hold_count(self) -> int | None:
        """What must fit in ``topology.max.spout.pending``, as Storm checks it: window plus
        slide when both are counts (a tumbling window: twice its length), else the one that
        is a count; None for duration windows with a duration slide."""
        return sum(v.n for v in (self.length, self.slide) if isinstance(v, Count)) or None

    @classmethod
    def of(cls, component: str, bolt_cls: type, config: Mapping[str, Any]) -> WindowSpec:
        """The settings of ``component`` (a WindowedBolt subclass ``bolt_cls``): its class
        attributes, each overridden by its Storm key in ``config`` when set (not null).
        Raises TopologyError for a missing window, a value of the wrong type or a
        combination squall does not run."""
        where = f"windowed bolt {component!r}"

        def key(name: str, types: tuple[type, ...], positive: bool = True) -> Any:
            v = config.get(name)
            if v is None:
                return None
            if not isinstance(v, types) or isinstance(v, bool) or (
                    positive and isinstance(v, int) and v < 1):
                kind = "a positive integer" if positive else " or ".join(
                    t.__name__ for t in types)
                raise TopologyError(f"{where}: {name} must be {kind}, got {v!r}")
            return v

        length: Any = getattr(bolt_cls, "window", None)
        n, ms = key(LENGTH_COUNT, (int,)), key(LENGTH_MS, (int,))
        if n is not None and ms is not None:
            raise TopologyError(f"{where}: set {LENGTH_COUNT} or {LENGTH_MS}, not both")
        if n is not None:
            length = Count(n)
        elif ms is not None:
            length = Duration(ms=ms)
        if not isinstance(length, (Count, Duration)):
            raise TopologyError(f"{where}: window must be Count(n) or Duration(...), got "
                                f"{length!r} (set the class attribute or {LENGTH_COUNT} / "
                                f"{LENGTH_MS})")
        slide: Any = getattr(bolt_cls, "slide", None)
        n, ms = key(SLIDE_COUNT, (int,)), key(SLIDE_MS, (int,))
        if n is not None and ms is not None:
            raise TopologyError(f"{where}: set {SLIDE_COUNT} or {SLIDE_MS}, not both")
        if n is not None:
            slide = Count(n)
        elif ms is not None:
            slide = Duration(ms=ms)
        if slide is None:
            slide = length
        if not isinstance(slide, (Count, Duration)):
            raise TopologyError(f"{where}: slide must be Count(n), Duration(...) or left out "
                                f"(a tumbling window), got {slide!r}")
        for what, v in (("window", length), ("slide", slide)):
            if isinstance(v, Duration) and v.ms < 1:
                raise TopologyError(f"{where}: a {what} Duration must be at least 1 ms")
        field = key(TIMESTAMP_FIELD, (str,), positive=False)
        if field is None:
            field = getattr(bolt_cls, "timestamp_field", None)
        if field is not None and (not isinstance(field, str) or not field):
            raise TopologyError(f"{where}: timestamp_field must be a field name, got {field!r}")
        late = key(LATE_STREAM, (str,), positive=False)
        if late is None:
            late = getattr(bolt_cls, "late_stream", None)
        if late is not None and (not isinstance(late, str) or not late):
            raise TopologyError(f"{where}: late_stream must be a stream name, got {late!r}")
        lag = _ms(where, "max_lag", key(MAX_LAG_MS, (int,), positive=False),
                  getattr(bolt_cls, "max_lag", None), DEFAULT_MAX_LAG_MS)
        interval = _ms(where, "watermark_interval", key(WATERMARK_MS, (int,)),
                       getattr(bolt_cls, "watermark_interval", None), DEFAULT_WATERMARK_MS)
        if field is None:
            if late is not None:
                raise TopologyError(f"{where}: a late stream needs event time (set "
                                    f"timestamp_field or {TIMESTAMP_FIELD})")
        else:
            if lag < 0:
                raise TopologyError(f"{where}: max_lag must not be negative, got {lag} ms")
            if interval < 1:
                raise TopologyError(f"{where}: watermark_interval must be at least 1 ms")
        return cls(length, slide, field, lag, interval, late)


def _ms(where: str, name: str, from_key: int | None, attr: Any, default: int) -> int:
    if from_key is not None:
        return from_key
    if attr is None:
        return default
    if not isinstance(attr, Duration):
        raise TopologyError(f"{where}: {name} must be a Duration, got {attr!r}")
    return attr.ms
