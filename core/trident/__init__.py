"""Trident: batches with transaction ids, processed concurrently, committed in txid order.

>>> from squall.trident import TridentTopology, FixedBatchSpout, Count, MemoryMapState

A :class:`TridentTopology` records streams of operations; ``build()`` compiles them into an
ordinary topology that runs in LocalCluster and on a cluster.

======================  ==========================  =========================================
stage                   module                      where to start reading
======================  ==========================  =========================================
the fluent API          :mod:`.topology`, `.stream` ``TridentTopology``, ``Stream``
user operations         :mod:`.operations`,         ``Function``, ``Filter``, ...,
                        :mod:`.aggregators`         ``Count``, ``Sum``, ...
batch spouts            :mod:`.spout`               ``BatchSpout``, ``FixedBatchSpout``
partitioned spouts      :mod:`.partitioned`         ``TransactionalSpout``,
                                                    ``OpaquePartitionedSpout``
a Redis stream spout    :mod:`.redis_stream`        ``RedisStreamSpout``
states                  :mod:`.state`               ``MemoryMapState``, ``RedisMapState``
group and state keys    :mod:`.keys`                ``canonical``, ``GroupKey``
the recorded graph      :mod:`.graph`               ``Node`` kinds
graph -> topology       :mod:`.compile`             ``compile_graph``
how objects travel      :mod:`.plan`                ``to_json`` / ``from_json``
in the workers          :mod:`.runtime`             coordinator, ``TridentBolt``
======================  ==========================  =========================================
"""
from __future__ import annotations

from squall.trident.aggregators import (
    Aggregator, CombinerAggregator, Count, Max, Min, ReducerAggregator, Sum,
)
from squall.trident.operations import (
    Consumer, Filter, FilterNull, FlatMapFunction, Function, MapFunction, Operation,
)
from squall.trident.partitioned import (
    OpaqueEmitter, OpaquePartitionedSpout, PartitionCoordinator, PartitionEmitter,
    TransactionalEmitter, TransactionalSpout,
)
from squall.trident.query import MapGet, QueryFunction, StateUpdater
from squall.trident.redis_stream import RedisStreamSpout
from squall.trident.spout import BatchSpout, FixedBatchSpout
from squall.trident.state.factory import MapStateFactory, MemoryMapState, RedisMapState
from squall.trident.stream import GroupedStream, Stream, TridentState
from squall.trident.topology import TridentTopology
from squall.trident.tuple import TridentCollector, TridentTuple

__all__ = [
    "Aggregator", "BatchSpout", "CombinerAggregator", "Consumer", "Count", "Filter",
    "FilterNull", "FixedBatchSpout", "FlatMapFunction", "Function", "GroupedStream",
    "MapFunction", "MapGet", "MapStateFactory", "Max", "MemoryMapState", "Min",
    "OpaqueEmitter", "OpaquePartitionedSpout", "Operation", "PartitionCoordinator",
    "PartitionEmitter", "QueryFunction", "RedisMapState", "RedisStreamSpout",
    "ReducerAggregator", "StateUpdater", "Stream", "Sum", "TransactionalEmitter",
    "TransactionalSpout", "TridentCollector", "TridentState", "TridentTopology", "TridentTuple",
]
