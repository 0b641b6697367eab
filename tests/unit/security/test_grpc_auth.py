"""The reusable gRPC authentication pieces: what they accept and refuse before any call."""
from __future__ import annotations

from pathlib import Path

import pytest

from squall.errors import ConfigError
from squall.security import certs
from squall.security.grpc_auth import (
    AuthInterceptor,
    channel_credentials,
    client_channel,
    server_credentials,
)


def test_token_mode_without_tokens_cannot_start() -> None:
    with pytest.raises(ConfigError, match="nimbus.auth.tokens is empty"):
        AuthInterceptor({"nimbus.authentication": "token"})
    assert AuthInterceptor({"nimbus.authentication": "token",
                            "nimbus.auth.tokens": {"t": "alice"}}).mode == "token"


def test_plaintext_unless_tls_files_are_given(tmp_path: Path) -> None:
    assert server_credentials({}) is None and channel_credentials({}) is None
    ca = certs.make_ca("test CA")
    me = certs.issue(ca, "alice")
    files = {"squall.tls.ca": str(certs.write_private(tmp_path / "ca.crt", ca.cert)),
             "squall.tls.cert": str(certs.write_private(tmp_path / "a.crt", me.cert)),
             "squall.tls.key": str(certs.write_private(tmp_path / "a.key", me.key))}
    assert server_credentials(files) is not None
    assert channel_credentials({"squall.tls.ca": files["squall.tls.ca"]}) is not None
    client_channel({**files, "squall.auth.token": "t"}, "127.0.0.1:1").close()


def test_mtls_names_the_missing_or_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="squall.tls.cert, squall.tls.key"):
        channel_credentials({"nimbus.authentication": "mtls", "squall.tls.ca": "ca.pem"})
    missing = {"nimbus.authentication": "mtls", "squall.tls.ca": str(tmp_path / "nope.pem"),
               "squall.tls.cert": "c", "squall.tls.key": "k"}
    with pytest.raises(ConfigError, match="squall.tls.ca: cannot read"):
        server_credentials(missing)
