"""Where Trident keeps what must survive restarts: JSON values in the cluster state store
(ZooKeeper on a cluster; in LocalCluster, the ``memory`` store of this process), under
``/trident/<topology name>/...``. Writes happen at most once per batch and partition."""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from squall import drivers
from squall.security.credentials import for_runtime


class MetaStore:
    """JSON values under one base path. Opened in the worker; ``close()`` when done."""

    def __init__(self, conf: dict[str, Any], base: str) -> None:
        self.base = base.rstrip("/")
        # a component's conf has no ZooKeeper identity: the worker's (see security.credentials)
        self.store = drivers.driver("state", for_runtime(conf))
        self.store.start()

    def path(self, name: str) -> str:
        return f"{self.base}/{quote(name, safe='')}"

    def get(self, name: str) -> Any:
        raw = self.store.get(self.path(name))
        return json.loads(raw) if raw else None        # b"": a parent made for a child

    def put(self, name: str, value: Any) -> None:
        self.store.put(self.path(name), json.dumps(value).encode())

    def close(self) -> None:
        self.store.close()
