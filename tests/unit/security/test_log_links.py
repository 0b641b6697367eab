"""Signed log links: only the holder of a user's token makes one, for one topology, until it
expires."""
from __future__ import annotations

from squall.security.log_links import LINK_SECS, sign, signed_user

CONF = {"nimbus.auth.tokens": {"t-alice": "alice", "t-alice-2": "alice", "t-bob": "bob"}}
TID = "wc-1-1700000000"


def test_a_link_signed_with_a_users_token_speaks_for_that_user_until_it_expires() -> None:
    params = sign("t-alice", "alice", TID, now=1000.0)
    assert set(params) == {"as", "until", "sig"} and "t-alice" not in str(params)
    assert signed_user(CONF, params, TID, now=1000.0) == "alice"
    assert signed_user(CONF, params, TID, now=1000.0 + LINK_SECS) == "alice"
    assert signed_user(CONF, params, TID, now=1001.0 + LINK_SECS) is None     # expired
    # any of the user's tokens signs
    assert signed_user(CONF, sign("t-alice-2", "alice", TID, 1000.0), TID, 1000.0) == "alice"


def test_forged_borrowed_or_altered_links_speak_for_nobody() -> None:
    params = sign("t-alice", "alice", TID, now=1000.0)
    assert signed_user(CONF, params, "other-2-1700000000", 1000.0) is None    # another topology
    assert signed_user(CONF, {**params, "as": "bob"}, TID, 1000.0) is None
    assert signed_user(CONF, {**params, "until": str(int(params["until"]) + 1)}, TID,
                       1000.0) is None
    assert signed_user(CONF, sign("t-bob", "alice", TID, 1000.0), TID, 1000.0) is None
    assert signed_user(CONF, sign("guessed", "alice", TID, 1000.0), TID, 1000.0) is None
    assert signed_user(CONF, {}, TID, 1000.0) is None
    assert signed_user(CONF, {**params, "until": "soon"}, TID, 1000.0) is None
    assert signed_user({}, params, TID, 1000.0) is None              # no tokens: nobody
