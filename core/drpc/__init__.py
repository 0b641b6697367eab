"""DRPC: distributed remote procedure calls answered by Trident topologies.

A caller's ``execute(function, args)`` becomes a request; a topology built with
``TridentTopology.new_drpc_stream(function, drpc)`` takes it as a batch of one row
``(args,)`` and its stream's last output rows are the result, returned as their JSON
(e.g. ``[[17]]``).

==================  ==================  =====================================================
part                module              what it does
==================  ==================  =====================================================
in one process      :mod:`.local`       ``LocalDRPC``: queues per function, waits for results
the server          :mod:`.server`      ``DRPCServer.handle``: every call, in one place
its book            :mod:`.requests`    ``RequestBook``: waiting, leased, answered requests
its wire fronts     :mod:`.fronts`      gRPC servicer, HTTP handler (``GET /drpc/f/args``)
HTTP hang-ups       :mod:`.hangups`     watches waiting HTTP callers' connections: one that
                                        closes frees its request
why not answered    :mod:`.failures`    ``DRPCError`` kinds, each one status on both fronts
clients             :mod:`.client`      ``DRPCClient`` (callers), ``Invocations`` (topologies:
                                        fetch, renew, give back)
==================  ==================  =====================================================
"""
from __future__ import annotations

from squall.drpc.client import DRPCClient
from squall.drpc.local import LocalDRPC
from squall.drpc.server import Call, Caller, DRPCServer

__all__ = ["Call", "Caller", "DRPCClient", "DRPCServer", "LocalDRPC"]
