"""Trident states: map states over a backing store, in Storm's three kinds.

======================  ==========================  ==========================================
part                    module                      what it holds
======================  ==========================  ==========================================
kinds of map state      :mod:`.map_state`           ``TransactionalMap``, ``OpaqueMap``,
                                                    ``NonTransactionalMap``: the txid logic
what users pass         :mod:`.factory`             ``MapStateFactory`` (``MemoryMapState``,
                                                    ``RedisMapState``): kind + backend options
backing stores          :mod:`.memory`, `.redis`    ``multi_get`` / ``multi_put`` of raw values
======================  ==========================  ==========================================
"""
from __future__ import annotations
