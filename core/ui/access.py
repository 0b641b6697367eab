"""Who is asking the UI, and what they may see (API.md §14, the UI bullet).

With ``nimbus.authentication: none`` everyone is an anonymous admin. Otherwise every API call,
action and ``/metrics`` scrape needs ``Authorization: Bearer <token>``
(:mod:`squall.security.http_access`, which the logviewers use too, re-exported here); the user
sees only the topologies they own, and the users in ``nimbus.admins`` see all of them. The UI talks
to nimbus on the user's behalf with a client whose conf carries the user's token as
``squall.auth.token`` (:class:`Clients`), so nimbus authorizes the same request again. The
links to workers' logs it shows a user carry a signature made with the user's token
(:meth:`Access.log_link_query`), which the supervisors' logviewers check in place of the
``Authorization`` header a followed link cannot send.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from squall.security.http_access import Access, Forbidden, Unauthorized, User

__all__ = ["Access", "Clients", "Forbidden", "Unauthorized", "User"]


class Clients:
    """One nimbus client per token (the UI's own for ``None``), the ``size`` most recently used
    kept open. Thread-safe."""

    def __init__(self, conf: Mapping[str, Any], make: Callable[[Mapping[str, Any]], Any],
                 size: int = 32) -> None:
        self._conf = dict(conf)
        self._make = make
        self._size = size
        self._own = make(self._conf)
        self._by_token: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def for_user(self, user: User) -> Any:
        """The client that calls nimbus as ``user`` (the UI's own when it sent no token)."""
        if user.token is None:
            return self._own
        with self._lock:
            client = self._by_token.get(user.token)
            if client is None:
                client = self._make({**self._conf, "squall.auth.token": user.token})
                self._by_token[user.token] = client
                if len(self._by_token) > self._size:
                    _, old = self._by_token.popitem(last=False)
                    _close(old)
            else:
                self._by_token.move_to_end(user.token)
            return client

    def drpc_functions(self, user: User) -> list[dict[str, Any]]:
        """What the DRPC servers of ``drpc.servers`` serve, asked with ``user``'s token (the
        UI's own when it sent none); ``[]`` when no DRPC server is configured."""
        from squall.drpc.client import DRPCClient, server_addresses
        if not server_addresses(self._conf):
            return []
        conf = self._conf if user.token is None else {**self._conf,
                                                      "squall.auth.token": user.token}
        return DRPCClient(conf).functions()

    @property
    def own(self) -> Any:
        """The UI's own client (its conf's ``squall.auth.token``), for sampling."""
        return self._own

    def close(self) -> None:
        with self._lock:
            for client in (self._own, *self._by_token.values()):
                _close(client)
            self._by_token.clear()


def _close(client: Any) -> None:
    close = getattr(client, "close", None)
    if close is not None:
        close()
