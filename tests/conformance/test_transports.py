"""Every installed ``squall.transports`` driver, plus an outside one, passes the contract suite.

The outside transport (``tests/conformance/thirdparty_transport``, distribution
``squall-echo-transport``, entry point ``echo``) is pip-installed into a temporary target
directory put on ``sys.path`` by a session fixture, found through its entry point like any
plugin, and removed again at the end.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

import pytest

from squall import Transport, drivers
from squall.testing.contracts.transport import TransportContract

HERE = Path(__file__).parent
THIRD_PARTY = "echo"
#: what each transport may not do (anything not listed: full contract)
IN_PROCESS = {"local"}
LOSSY_RESTART: set[str] = set()    # transports whose in-flight batches a restart may lose


def _builtin_names() -> list[str]:
    return [n for n in drivers.names("squall.transports") if n != THIRD_PARTY]


@pytest.fixture(scope="session")
def third_party_transport(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Install squall-echo-transport for this session; yields its entry-point name."""
    work = tmp_path_factory.mktemp("echo-transport")
    source, target = work / "src", work / "site"
    shutil.copytree(HERE / "thirdparty_transport", source)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--no-compile", "--disable-pip-version-check",
                    "--target", str(target), str(source)], check=True)
    sys.path.insert(0, str(target))
    drivers.refresh()
    try:
        yield THIRD_PARTY
    finally:
        sys.path.remove(str(target))
        sys.modules.pop("squall_echo_transport", None)
        drivers.refresh()


@pytest.fixture(params=[*_builtin_names(), THIRD_PARTY])
def transport_name(request: pytest.FixtureRequest) -> str:
    if request.param == THIRD_PARTY:
        return str(request.getfixturevalue("third_party_transport"))
    return str(request.param)


class TestTransportContract(TransportContract):
    """The shared suite, once per entry point of ``squall.transports``."""

    @pytest.fixture
    def transport_factory(self, transport_name: str) -> Callable[[dict[str, Any]], Transport]:
        cls = drivers.load("squall.transports", transport_name)
        assert issubclass(cls, Transport)
        return cls  # type: ignore[no-any-return]

    @pytest.fixture
    def network_transport(self, transport_name: str) -> bool:
        return transport_name not in IN_PROCESS

    @pytest.fixture
    def restart_is_lossless(self, transport_name: str) -> bool:
        return transport_name not in LOSSY_RESTART


def test_builtin_transports_are_registered() -> None:
    assert {"local", "zmq", "nng", "grpc"} <= set(_builtin_names())


def test_third_party_transport_is_found_by_entry_point(third_party_transport: str) -> None:
    assert ("echo", "squall-echo-transport 0.1.0") in drivers.entries("squall.transports")
    cls = drivers.driver_class("transport", {"squall.transport": third_party_transport})
    assert cls.__module__ == "squall_echo_transport"
