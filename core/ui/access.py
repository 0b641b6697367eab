"""Who is asking the UI, and what they may see (API.md §14, the UI bullet).

With ``nimbus.authentication: none`` everyone is an anonymous admin. Otherwise every API call,
action and ``/metrics`` scrape needs ``Authorization: Bearer <token>``, a token that
``nimbus.auth.tokens`` maps to a user (:func:`squall.security.user_for_token`); the user sees
only the topologies they own, and the users in ``nimbus.admins`` see all of them. The UI talks
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
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from squall.security import log_links, user_for_token

__all__ = ["Access", "Clients", "Forbidden", "Unauthorized", "User"]


class Unauthorized(Exception):
    """No token, or one that ``nimbus.auth.tokens`` does not know (HTTP 401)."""


class Forbidden(Exception):
    """A request that may not be served whoever sends it (HTTP 403)."""


@dataclass(frozen=True)
class User:
    """The caller: ``name`` (None when authentication is off), the ``token`` it sent, and
    whether it is an admin (sees and acts on every topology)."""
    name: str | None
    token: str | None
    admin: bool

    def sees(self, owner: str | None) -> bool:
        """True if this user may see and act on a topology owned by ``owner``."""
        return self.admin or (self.name is not None and owner == self.name)


class Access:
    """Authentication of the UI's requests, from the UI's conf."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        mode = str(conf.get("nimbus.authentication") or "none").lower()
        self.enabled = mode != "none"
        self._conf = conf
        self._admins = {str(a) for a in conf.get("nimbus.admins") or ()}

    def user(self, authorization: str | None) -> User:
        """The user of a request whose ``Authorization`` header is ``authorization``; raises
        Unauthorized (with a one-line reason that names no token) when authentication is on and
        the header holds no known bearer token."""
        if not self.enabled:
            return User(None, None, admin=True)
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("authentication required: send Authorization: Bearer <token>")
        name = user_for_token(self._conf, token.strip())
        if name is None:
            raise Unauthorized("unknown token")
        return User(name, token.strip(), admin=name in self._admins)

    def log_link_query(self, user: User, topology_id: str, now: float) -> str:
        """What to append to the links to ``topology_id``'s logs shown to ``user`` so that a
        logviewer lets the browser in (``&as=..&until=..&sig=..``, see
        :mod:`squall.security.log_links`); ``""`` when authentication is off."""
        if not self.enabled or user.name is None or user.token is None:
            return ""
        return "&" + urlencode(log_links.sign(user.token, user.name, topology_id, now))


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
