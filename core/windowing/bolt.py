"""The windowed bolt users subclass: :class:`WindowedBolt`."""
from __future__ import annotations

from typing import Any, ClassVar

from squall.api.component import Bolt
from squall.errors import TopologyError
from squall.windowing.spec import Count, Duration
from squall.windowing.window import Window


class WindowedBolt(Bolt):
    """A bolt that sees its input as windows (Storm's ``BaseWindowedBolt``).

    Set ``window`` (``Count(n)`` or ``Duration(seconds=.., ms=..)``) and optionally ``slide``
    (left out: a tumbling window, slide = window), and define ``process_window(window)``.
    Storm's component keys override these attributes in the component config
    (``topology.bolts.window.length.count`` / ``.duration.ms``,
    ``topology.bolts.sliding.interval.count`` / ``.duration.ms``,
    ``topology.bolts.tuple.timestamp.field.name``, ``topology.bolts.tuple.timestamp.max.lag.ms``,
    ``topology.bolts.watermark.event.interval.ms``, ``topology.bolts.late.tuple.stream``).

    Processing time (no ``timestamp_field``): a count slide evaluates after every ``slide``
    tuples, a duration slide every ``slide`` on the executor's timer (its own loop thread,
    no thread per bolt); a duration window holds what arrived in ``[end - window, end)``,
    a count window the last ``window`` tuples (``start``: the oldest one's arrival time). A
    window holding no tuple is not evaluated; the tuples that left meanwhile are in the
    ``expired`` of the next window evaluated. See :mod:`squall.windowing.processing`.
    Event time (``timestamp_field``, int ms since the epoch): duration windows are aligned
    to multiples of the slide and evaluated in order, each once (but for a failed one,
    below), when the watermark (the least over every input task of its latest timestamp,
    minus ``max_lag``, computed every ``watermark_interval``) passes their end; tuples
    behind the watermark go to ``late_stream`` (declared automatically with the input's
    fields), or are acked and dropped when there is none. See
    :mod:`squall.windowing.event_time` for how a quiet input task is treated. Count windows
    and slides on event time take the tuples the watermark covers (timestamp at or behind
    it) in timestamp order, as processing time takes them in arrival order: a count slide
    evaluates every ``slide`` of them (``end``: the last one's timestamp), a count window
    holds the last ``window`` of them (``start``: the oldest one's timestamp); see
    :mod:`squall.windowing.event_count`.

    Acking: an input tuple is acked when it leaves the last window that holds it; emits in
    ``process_window`` (without ``anchors=``) are anchored to every tuple of the window.
    The bolt must not ack or fail its inputs itself; when its windows hold them longer than
    ``topology.message.timeout.secs`` (a count window on a slow input) it keeps their trees
    alive as a plain bolt does, calling ``reset_timeout(tup)`` on the window's tuples (in
    each ``process_window``, say). An exception escaping
    ``process_window`` is reported and fails every tuple of that window at once (in Storm
    the exception takes the worker down and the tuples it held time out): they leave the
    bolt's windows, and the spout's replays come back as new tuples. On event time they
    come back behind the watermark: a tuple that arrives there within twice
    ``topology.message.timeout.secs`` of the failure, with a timestamp from the failed
    window's earliest to its end, is held for that window, which is evaluated again (same
    ``start`` and ``end``, after the windows evaluated meanwhile) once as many tuples as it
    held are back, or half the message timeout after the first came back (then a later one
    is late). See :mod:`squall.windowing.replays`. Only that failure is remembered: the
    replay of a tuple whose window was evaluated (its emits failed downstream, or it timed
    out), and after a worker restarts any replay older than the new worker's watermark, is
    late (the late stream, or acked unprocessed): declare ``late_stream`` where that
    matters. With ``topology.worker.die.on.error`` the worker stops, as in Storm.

    >>> from squall import WindowedBolt, Count
    >>> class Sums(WindowedBolt):
    ...     outputs = ["total"]
    ...     window = Count(3)
    ...     def process_window(self, window):
    ...         self.emit([sum(t.values[0] for t in window.tuples)])
    """

    #: the window length: Count(n) or Duration(...)
    window: ClassVar[Count | Duration | None] = None
    #: how far each window moves on: Count or Duration; None: tumbling (= window)
    slide: ClassVar[Count | Duration | None] = None
    #: event time: the field holding each tuple's timestamp (int ms since the epoch)
    timestamp_field: ClassVar[str | None] = None
    #: event time: how far behind the latest timestamp a tuple may be and still count
    max_lag: ClassVar[Duration | None] = None
    #: event time: how often the watermark is computed (default 1 s)
    watermark_interval: ClassVar[Duration | None] = None
    #: event time: the stream late tuples go to (None: they are acked and dropped)
    late_stream: ClassVar[str | None] = None

    def process_window(self, window: Window) -> None:
        """Handle one window; called on the executor's thread, each window once."""
        raise NotImplementedError(f"{type(self).__name__} defines no process_window")

    def process(self, tup: Any) -> None:
        """Not called: a windowed bolt's tuples reach it through ``process_window``."""
        raise TopologyError(f"{type(self).__name__} is a WindowedBolt: its tuples reach it "
                            "through process_window, on the windowed bolt executor")
