"""``squall ui`` against a real cluster: the JSON API, the pages, the actions, and its errors."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

from squall.daemon.dev_zookeeper import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _get(url: str, method: str = "GET") -> tuple[int, str]:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _json(url: str, method: str = "GET") -> tuple[int, Any]:
    status, body = _get(url, method)
    return status, json.loads(body)


def test_ui_shows_the_cluster_and_acts_on_topologies(squall_cluster, wordcount):
    c = squall_cluster
    nimbus = c.start_nimbus()
    c.start_supervisor("sup1")
    c.wait_ready(supervisors=1)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=1",
             "-c", "test.sentences=1000000", "-c", "test.emit.per.sec=50")
    port = free_port()
    ui = subprocess.Popen([sys.executable, "-m", "squall.cli.main", "--config",
                           str(c.config_file), "ui", "--host", "127.0.0.1", "--port", str(port)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        def up() -> bool:
            try:
                return _get(f"{base}/api/v1/cluster/summary")[0] == 200
            except OSError:
                return False
        c.wait(up, 30, "squall ui did not answer")

        status, summary = _json(f"{base}/api/v1/cluster/summary")
        assert status == 200 and summary["supervisors"] == 1 and summary["topologies"] == 1
        assert summary["slotsTotal"] == 2 and summary["leader"]
        status, sups = _json(f"{base}/api/v1/supervisor/summary")
        assert status == 200 and len(sups) == 1 and len(sups[0]["slots"]) == 2
        status, tops = _json(f"{base}/api/v1/topology/summary")
        assert status == 200 and [(t["name"], t["status"]) for t in tops] == [("wc", "active")]

        def counted() -> dict[str, Any]:
            comps = _json(f"{base}/api/v1/topology/wc")[1].get("components") or {}
            return comps if comps.get("count", {}).get("executed", 0) > 0 else {}
        comps = c.wait(counted, 60, "the count bolt's executed count never showed")
        assert {"sentences", "split", "count"} <= set(comps)

        status, page = _get(f"{base}/")
        assert status == 200 and 'href="/topology/wc"' in page
        status, page = _get(f"{base}/topology/wc")
        assert status == 200 and "split" in page and "count" in page

        # actions, as the buttons send them
        assert _json(f"{base}/api/v1/topology/wc/deactivate", "POST") == (
            200, {"topology": "wc", "action": "deactivate", "ok": True})
        assert c.listed() == {"wc": "inactive"}
        assert _json(f"{base}/api/v1/topology/wc/activate", "POST")[0] == 200
        assert c.listed() == {"wc": "active"}

        # mistakes: one clear line each, and the ui keeps serving
        status, err = _json(f"{base}/api/v1/topology/nope")
        assert status == 404 and "nope" in err["error"]
        status, err = _json(f"{base}/api/v1/topology/wc/rebalance?executors=split", "POST")
        assert status == 400 and "split" in err["error"]
        status, err = _json(f"{base}/api/v1/topology/wc/rebalance?workers=x", "POST")
        assert status == 400 and "workers" in err["error"]
        assert _get(f"{base}/api/v1/nothing")[0] == 404
        assert _get(f"{base}/api/v1/topology/wc", "POST")[0] == 405
        assert _get(f"{base}/topology/nope")[0] == 404

        status, _ = _json(f"{base}/api/v1/topology/wc/rebalance?executors=split=1&wait=0",
                          "POST")
        assert status == 200

        def one_split() -> bool:
            comps = _json(f"{base}/api/v1/topology/wc")[1].get("components") or {}
            return comps.get("split", {}).get("executors") == 1
        c.wait(one_split, 60, "rebalance through the ui did not leave one split executor")

        assert _json(f"{base}/api/v1/topology/wc/kill?wait=0", "POST")[0] == 200
        c.wait(lambda: _json(f"{base}/api/v1/topology/summary")[1] == [], 60,
               "the killed topology stayed listed")

        # no nimbus: 503 with the reason, and the ui is still up
        nimbus.terminate()
        status, err = _json(f"{base}/api/v1/cluster/summary")
        assert status == 503 and "nimbus" in err["error"]
        assert ui.poll() is None
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        out, errors = ui.communicate(timeout=30)
    assert ui.returncode == 0, errors
    assert "Traceback" not in errors


def test_ui_on_a_port_in_use_is_one_clear_line(squall_cluster):
    c = squall_cluster
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = c.squall("ui", "--host", "127.0.0.1", "--port", str(port), check=False)
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1 and f"127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr
