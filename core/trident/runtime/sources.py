"""Where a source bolt's batches come from: a batch spout, or DRPC requests.

``rows_for(txid)`` gives the batch's rows and metadata; a replay of a txid gets the same
(a DRPC request stays bound to its txid until it commits). ``committed(txid)`` follows the
txid's commit. Run on the worker's loop thread.
"""
from __future__ import annotations

import logging
from typing import Any

from squall.drpc import local as local_drpc
from squall.trident import plan
from squall.trident.runtime.evaluate import Rows, result_json
from squall.trident.tuple import TridentCollector

log = logging.getLogger(__name__)


class SpoutSource:
    def __init__(self, node: dict[str, Any]) -> None:
        self.spout = plan.from_json(node["op"])

    def open(self, conf: dict[str, Any], context: Any) -> None:
        self.spout.open(conf, context)

    def rows_for(self, txid: int) -> tuple[Rows, dict[str, Any]]:
        collector = TridentCollector()
        self.spout.emit_batch(txid, collector)
        return collector.out, {}

    def committed(self, txid: int) -> None:
        self.spout.ack(txid)

    def close(self) -> None:
        self.spout.close()


class DRPCSource:
    """One waiting request per batch (none: an empty batch)."""

    def __init__(self, node: dict[str, Any]) -> None:
        self.function: str = node["params"]["function"]
        self.service: str = node["params"]["service"]
        self.requests: dict[int, tuple[str, str]] = {}

    def open(self, conf: dict[str, Any], context: Any) -> None:
        pass

    def rows_for(self, txid: int) -> tuple[Rows, dict[str, Any]]:
        request = self.requests.get(txid)
        if request is None:
            drpc = local_drpc.lookup(self.service)
            request = drpc.take(self.function) if drpc is not None else None
            if request is None:
                return [], {}
            self.requests[txid] = request
        return [(request[1],)], {"drpc": [self.service, request[0]]}

    def committed(self, txid: int) -> None:
        self.requests.pop(txid, None)

    def close(self) -> None:
        pass


def deliver(meta: dict[str, Any], rows: Rows) -> None:
    """Return a DRPC batch's result rows to the caller (the ``return`` node)."""
    target = meta.get("drpc")
    if not target:
        return
    service, request_id = target
    drpc = local_drpc.lookup(service)
    if drpc is None:
        log.warning("DRPC result for request %s dropped: its LocalDRPC is shut down",
                    request_id)
        return
    drpc.respond(request_id, result_json(rows))


def make_source(node: dict[str, Any]) -> SpoutSource | DRPCSource:
    return DRPCSource(node) if node["kind"] == "drpc" else SpoutSource(node)
