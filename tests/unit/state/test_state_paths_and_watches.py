"""Shared path rules and the zookeeper store's watch book-keeping (no server needed)."""
from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest
from squall.errors import StateError
from squall.state._paths import check_path, check_value, parent_of
from squall.state._zk_watches import WatchRegistry


@pytest.mark.parametrize("path", ["/", "/a", "/a/b-c_d.e", "/风暴/⚡"])
def test_valid_paths(path: str) -> None:
    assert check_path(path) == path


@pytest.mark.parametrize("path", ["", "a", "/a/", "//a", "/a//b", "/.", "/a/..", "/a\x00b",
                                  "/a/\U0001f680", "/a\x01", "/a\x9f", "/\ud800", "/\uf8ff",
                                  "/\ufff0"])
def test_invalid_paths(path: str) -> None:
    with pytest.raises(StateError):
        check_path(path)


def test_a_sequence_prefix_may_end_in_a_slash() -> None:
    assert check_path("/q/", sequence=True) == "/q/"
    assert parent_of("/q/x") == "/q" and parent_of("/q") == "/"


def test_values_are_bytes() -> None:
    assert check_value(bytearray(b"ab")) == b"ab"
    with pytest.raises(TypeError, match="bytes"):
        check_value("text")


def _event(kind: str) -> SimpleNamespace:
    return SimpleNamespace(type=kind)


def test_a_watch_fires_once_and_ignores_connection_loss() -> None:
    registry, fired = WatchRegistry(), []
    watch = registry.pending("data", "/a", print, fired.append)
    assert registry.pending("data", "/a", print, fired.append) is watch  # one per callback
    watch(_event("NONE"))
    assert fired == []
    watch(_event("CHANGED"))
    watch(_event("CHANGED"))
    assert fired == [watch]
    assert registry.pending("data", "/a", print, fired.append) is not watch


def test_reset_rearms_unchanged_watches_and_fires_changed_ones() -> None:
    registry, fired, rearmed = WatchRegistry(), [], []
    same = registry.pending("data", "/same", print, fired.append)
    same.token = (1, 1)
    changed = registry.pending("children", "/changed", print, fired.append)
    changed.token = (2, 2)
    tokens = {"/same": (1, 1), "/changed": (2, 5)}

    def reregister(watch):  # type: ignore[no-untyped-def]
        rearmed.append(watch.path)
        return tokens[watch.path]

    registry.reset(reregister, fired.append)
    assert sorted(rearmed) == ["/changed", "/same"]
    assert fired == [changed]
    registry.reset(reregister, fired.append)
    assert rearmed.count("/changed") == 1  # fired watches are no longer owed


def test_importing_squall_and_the_store_modules_does_not_import_kazoo() -> None:
    code = ("import sys, squall, squall.state.zookeeper, squall.daemon.dev_zookeeper; "
            "assert 'kazoo' not in sys.modules, 'kazoo imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
