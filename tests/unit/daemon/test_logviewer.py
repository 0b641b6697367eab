"""The logviewer: a worker's log by topology and port, byte ranges, 404s, no path traversal."""
from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from squall.daemon.logviewer import LogViewer, byte_range


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LogViewer]:
    tmp_path = tmp_path_factory.mktemp("logviewer")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "wc-1-1700000000-6700.log").write_text("line one\nline two\n")
    (logs / "wc-1-1700000000-6700.out").write_text("raw output\n")
    (logs / "supervisor.log").write_text("supervisor started\n")
    (tmp_path / "secret.log").write_text("not served\n")
    v = LogViewer(logs, "127.0.0.1", 0)
    v.start()
    yield v
    v.stop()


def get(v: LogViewer, path: str) -> tuple[int, str, dict[str, str]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{v.port}{path}", timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def test_serves_a_worker_log_by_topology_and_port(viewer: LogViewer) -> None:
    status, body, headers = get(viewer, "/log?topology=wc-1-1700000000&port=6700")
    assert status == 200 and body == "line one\nline two\n"
    assert headers["X-Log-Size"] == "18" and headers["Content-Type"].startswith("text/plain")
    assert get(viewer, "/log?topology=wc-1-1700000000&port=6700&file=out")[1] == "raw output\n"
    assert get(viewer, "/daemonlog?name=supervisor")[1] == "supervisor started\n"


def test_byte_ranges(viewer: LogViewer) -> None:
    base = "/log?topology=wc-1-1700000000&port=6700"
    assert get(viewer, base + "&start=9")[1] == "line two\n"
    assert get(viewer, base + "&start=5&length=3")[1] == "one"
    assert get(viewer, base + "&start=-4")[1] == "two\n"
    assert get(viewer, base + "&start=100")[1] == ""            # past the end: nothing
    assert get(viewer, base + "&start=x")[0] == 400


@pytest.mark.parametrize("query", [
    "/log?topology=nosuch&port=6700",
    "/log?topology=wc-1-1700000000&port=6701",
    "/log?topology=../secret&port=1",
    "/log?topology=..&port=1",
    "/log?topology=wc-1-1700000000&port=abc",
    "/log?topology=wc-1-1700000000&port=6700&file=../../secret",
    "/daemonlog?name=../secret",
    "/daemonlog?name=secret",
    "/etc/passwd",
])
def test_unknown_or_outside_files_are_404(viewer: LogViewer, query: str) -> None:
    status, body, _ = get(viewer, query)
    assert status == 404 and "not served" not in body


def test_byte_range_rules() -> None:
    assert byte_range(10, None, None) == (0, 10)
    assert byte_range(10, "-3", None) == (7, 3)
    assert byte_range(10, "-30", "2") == (0, 2)
    assert byte_range(10, "8", "5") == (8, 2)
    with pytest.raises(Exception, match="negative"):
        byte_range(10, "0", "-1")
