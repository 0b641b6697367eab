"""Signed links to a topology's logs (API.md section 14).

The UI authenticates its API calls with ``Authorization: Bearer <token>``, but a link the
browser follows to a supervisor's logviewer cannot carry that header, and the logviewer has no
session of its own. So the UI adds ``as=USER&until=EPOCH&sig=HEX`` to the log links it shows a
user it authenticated: an HMAC-SHA256, keyed with that user's token, of the user, the topology
id and the expiry. The logviewer finds the user's tokens in ``nimbus.auth.tokens`` (every
daemon's conf holds them) and accepts the link for that topology only, until ``until``. No
token travels in the URL, and only a holder of the user's token can make such a link.

Pure functions; nothing here does I/O.
"""
from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

__all__ = ["LINK_SECS", "PARAMS", "sign", "signed_user"]

#: how long a signed link works; the UI's pages refresh every few seconds, so the links shown
#: are always fresh, and one copied elsewhere stops working after this
LINK_SECS = 3600
#: the query parameters of a signed link
PARAMS = ("as", "until", "sig")


def _mac(token: str, user: str, topology_id: str, until: int) -> str:
    message = "\0".join(("squall-log-link", user, topology_id, str(until))).encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def sign(token: str, user: str, topology_id: str, now: float,
         secs: float = LINK_SECS) -> dict[str, str]:
    """The query parameters (:data:`PARAMS`) that let ``user``, who authenticated with
    ``token``, read the logs of ``topology_id`` until ``now + secs``."""
    until = int(now + secs)
    return {"as": user, "until": str(until), "sig": _mac(token, user, topology_id, until)}


def signed_user(conf: Mapping[str, Any], params: Mapping[str, str], topology_id: str,
                now: float) -> str | None:
    """The user a signed link (``params``, the request's query) speaks for, when its signature
    is one of that user's tokens in ``nimbus.auth.tokens`` for ``topology_id`` and it has not
    expired; ``None`` otherwise (no link, forged, expired, another topology's)."""
    user, until, sig = (params.get(p) or "" for p in PARAMS)
    if not user or not sig or not until.isdigit() or int(until) < now:
        return None
    tokens = conf.get("nimbus.auth.tokens") or {}
    found = False
    for token, owner in tokens.items():   # every token of the user, compared in constant time
        if str(owner) == user and hmac.compare_digest(
                _mac(str(token), user, topology_id, int(until)), sig):
            found = True
    return user if found else None
