"""Windows (API.md section 10): Storm's windowed bolts.

``from squall import WindowedBolt, Count, Duration``. A map, stage by stage:

========================  =================================  ===============================
stage                     module                             where to start reading
========================  =================================  ===============================
what users write          :mod:`.bolt`                       ``WindowedBolt``
window and slide values   :mod:`.spec`                       ``Count``, ``Duration``,
                                                             ``WindowSpec.of`` (Storm's keys)
build-time checks         :mod:`.topology`                   ``complete_windowed`` (timeout,
                                                             max spout pending, late
                                                             stream, timestamp field)
running the bolt          :mod:`.executor`                   ``WindowedBoltExecutor``
processing-time windows   :mod:`.processing`                 ``ProcessingWindows.add``,
                                                             ``on_time``
event-time windows        :mod:`.event_time`                 ``EventWindows.add``, ``advance``
event-time count windows  :mod:`.event_count`                ``EventCountWindows.advance``
failed event-time window  :mod:`.replays`                    ``FailedWindows.take``, ``ready``
what process_window gets  :mod:`.window`                     ``Window``
========================  =================================  ===============================

Windows are held by the bolt's executor on the worker's loop thread; the window classes
decide, the executor acks, emits and fails. Importing this package does not import the
runtime (``.executor`` does).
"""
from __future__ import annotations

from squall.windowing.bolt import WindowedBolt
from squall.windowing.spec import Count, Duration, WindowSpec
from squall.windowing.window import Window

__all__ = ["Count", "Duration", "Window", "WindowSpec", "WindowedBolt"]
