"""A supervisor whose credentials nimbus refuses says so once, naming the setting to fix, and
keeps retrying quietly (the operator may fix nimbus's side); other failures stay warnings."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from squall.daemon import nimbus_client
from squall.daemon.supervisor import Supervisor
from squall.daemon.nimbus_client import NimbusUnavailableError
from squall.errors import AuthenticationError, SquallError


class FakeClient:
    """Stands in for NimbusClient: every download raises ``FakeClient.error``."""

    error: SquallError | None = None

    def __init__(self, conf: Any, **_: Any) -> None:
        pass

    def download(self, tid: str, file: str) -> bytes:
        assert self.error is not None
        raise self.error

    def close(self) -> None:
        pass


@pytest.fixture
def supervisor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Supervisor:
    monkeypatch.setattr(nimbus_client, "NimbusClient", FakeClient)
    return Supervisor({"storm.local.dir": str(tmp_path), "nimbus.authentication": "token",
                       "squall.auth.token": "wrong"})


def _lines(caplog: Any, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == level and r.name.startswith("squall")]


def test_an_unknown_token_is_one_error_then_quiet_retries(supervisor: Supervisor,
                                                           caplog: Any) -> None:
    FakeClient.error = AuthenticationError(
        "nimbus refused the call: unknown token (check squall.auth.token)")
    with caplog.at_level(logging.DEBUG, logger="squall"):
        for _ in range(5):
            assert supervisor.ensure_code("wc-1-1") is False
    errors = _lines(caplog, logging.ERROR)
    assert len(errors) == 1 and "unknown token" in errors[0]
    assert "squall.auth.token" in errors[0] and "nimbus.admins" in errors[0]
    assert _lines(caplog, logging.WARNING) == []
    assert len([m for m in _lines(caplog, logging.DEBUG) if "unknown token" in m]) == 4


def test_other_failures_stay_warnings(supervisor: Supervisor, caplog: Any) -> None:
    FakeClient.error = NimbusUnavailableError("no nimbus leader answered")
    with caplog.at_level(logging.WARNING, logger="squall"):
        assert supervisor.ensure_code("wc-1-1") is False
        FakeClient.error = AuthenticationError("nimbus refused the call: unknown token")
        supervisor.ensure_code("wc-1-1")
        supervisor.ensure_code("wc-1-1")
    assert len(_lines(caplog, logging.WARNING)) == 1
    assert len(_lines(caplog, logging.ERROR)) == 1
