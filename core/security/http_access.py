"""Who is asking over HTTP, for the UI and the logviewers (the secure-cluster rules).

With ``nimbus.authentication: none`` everyone is an anonymous admin. Otherwise a request needs
``Authorization: Bearer <token>``, a token that ``nimbus.auth.tokens`` maps to a user
(:func:`squall.security.user_for_token`); the user sees only the topologies they own, and the
users in ``nimbus.admins`` see all of them. A link to a topology's logs carries, instead of the
header a followed link cannot send, a signature made with the user's token
(:meth:`Access.log_link_query`, :mod:`squall.security.log_links`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from squall.security import log_links, user_for_token

__all__ = ["Access", "Forbidden", "Unauthorized", "User"]


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
    """Authentication of HTTP requests (the UI's, a logviewer's), from the daemon's conf."""

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
