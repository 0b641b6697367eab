"""Where Trident keeps what must survive restarts: JSON values in the cluster state store
(ZooKeeper on a cluster; in LocalCluster, the ``memory`` store of this process), under
``/trident/<topology name>/...``. Writes happen at most once per batch and partition."""
from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote, unquote

from squall import drivers
from squall.security.credentials import for_runtime


class MetaStore:
    """JSON values under one base path. Opened in the worker; ``close()`` when done."""

    def __init__(self, conf: dict[str, Any], base: str) -> None:
        self.base = base.rstrip("/")
        # a component's conf has no ZooKeeper identity: the worker's (see security.credentials)
        self.store = drivers.driver("state", for_runtime(conf))
        self.store.start()
        self.owner = True

    def within(self, name: str) -> MetaStore:
        """The values under ``name`` (a node may hold a value and values under it), over
        this store's connection: close this store, not the view."""
        view = copy.copy(self)
        view.base = self.path(name)
        view.owner = False
        return view

    def path(self, name: str) -> str:
        return f"{self.base}/{quote(name, safe='')}"

    def get(self, name: str) -> Any:
        raw = self.store.get(self.path(name))
        return json.loads(raw) if raw else None        # b"": a parent made for a child

    def put(self, name: str, value: Any) -> None:
        self.store.put(self.path(name), json.dumps(value).encode())

    def delete(self, name: str) -> None:
        """Remove ``name`` and the values under it (nothing when absent)."""
        self.store.delete(self.path(name), recursive=True)

    def delete_path(self, path: str) -> None:
        """Remove the node at ``path`` below this base, its names as they are (not quoted as
        :meth:`delete`'s), and the values under it (nothing when absent)."""
        self.store.delete(f"{self.base}/{path}", recursive=True)

    def names(self) -> list[str]:
        """The names values are kept under here."""
        return [unquote(n) for n in self.store.children(self.base)]

    def close(self) -> None:
        if self.owner:
            self.store.close()
