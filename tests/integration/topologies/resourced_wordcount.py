"""The acked word count of ``acked_wordcount.py`` with a split bolt that asks for
:data:`SPLIT_CPU` cpu slots per executor through ``set_resources`` (for the ``multidim``
scheduler; the other components need the ``topology.component.*`` defaults)."""
from __future__ import annotations

from acked_wordcount import CountBolt, RecordingSpout, SplitBolt

from squall import TopologyBuilder

SPLIT_CPU = 3


def build():
    b = TopologyBuilder()
    b.set_spout("sentences", RecordingSpout, parallelism=2)
    b.set_bolt("split", SplitBolt, parallelism=2).shuffle_grouping("sentences") \
        .set_resources(cpu=SPLIT_CPU)
    b.set_bolt("count", CountBolt, parallelism=2).fields_grouping("split", ["word"])
    return b.create_topology()


topology = build()
