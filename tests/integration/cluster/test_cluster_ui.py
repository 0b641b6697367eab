"""``squall ui`` against a real cluster (nimbus, a supervisor, worker processes, ZooKeeper): the
JSON API in Storm's shapes, ``/metrics``, the actions, authentication, and the pages in a real
browser (Debian's chromium, driven by selenium).

One cluster and one UI process serve the whole module (starting them is most of the time); the
tests run in file order and the last one kills the topology and stops nimbus.
"""
from __future__ import annotations

import getpass
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from squall.daemon.ports import free_port
from squall.testing.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _load_harness() -> Any:
    """The cluster test harness class of this directory's conftest (loaded by path: a bare
    ``import conftest`` finds whichever conftest pytest imported last)."""
    spec = importlib.util.spec_from_file_location("ui_cluster_harness",
                                                  Path(__file__).with_name("conftest.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.ClusterHarness


ClusterHarness = _load_harness()


def _call(url: str, method: str = "GET", body: bytes | None = None,
          headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
    if method == "POST" and body is None:
        body = b""
    req = urllib.request.Request(url, method=method, data=body, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, raw, kind = resp.status, resp.read(), resp.headers["Content-Type"]
    except urllib.error.HTTPError as exc:
        status, raw, kind = exc.code, exc.read(), exc.headers["Content-Type"] or ""
    return status, json.loads(raw) if "json" in kind else raw.decode()


class UiProcess:
    """``squall ui`` as a subprocess on a free port."""

    def __init__(self, cluster: Any, *overrides: str) -> None:
        self.port = free_port()
        args = [sys.executable, "-m", "squall.cli.main", "--config", str(cluster.config_file),
                "-c", "ui.sample.secs=1"]
        for item in overrides:
            args += ["-c", item]
        self.proc = subprocess.Popen([*args, "ui", "--port", str(self.port)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"

        def up() -> bool:
            assert self.proc.poll() is None, self.proc.communicate()[1]
            try:
                return _call(f"{self.base}/")[0] == 200
            except OSError:
                return False
        cluster.wait(up, 60, "squall ui did not answer")

    def call(self, path: str, method: str = "GET", body: bytes | None = None,
             headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
        return _call(self.base + path, method, body, headers)

    def stop(self) -> str:
        """SIGTERM; returns its stderr (AssertionError unless it exited 0)."""
        os.killpg(self.proc.pid, signal.SIGTERM)
        _, errors = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, errors
        return errors


@pytest.fixture(scope="module")
def cluster(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory,
            wordcount: Any) -> Iterator[Any]:
    """Nimbus, one supervisor and the word count topology ``wc`` at 150 sentences/s per spout
    task (two): the browser test waits for 1,000 emitted, out before its first page loads."""
    if not zookeeper.is_running():
        zookeeper.start()
    root = f"/squall-tests/ui-{uuid.uuid4().hex[:8]}"
    conf = {**zookeeper.conf(root),
            "squall.state": "zookeeper", "storm.zookeeper.session.timeout": 10000,
            "storm.zookeeper.connection.timeout": 10000}
    c = ClusterHarness(tmp_path_factory.mktemp("ui-cluster"), conf)
    try:
        c.start_nimbus()
        c.start_supervisor("sup1")
        c.wait_ready(supervisors=1)
        c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=1",
                 "-c", "test.sentences=1000000", "-c", "test.emit.per.sec=150")
        yield c
    finally:
        c.close()
        _delete_chroot(zookeeper.hosts, root)
    assert not c.daemon_tracebacks(), "\n".join(c.daemon_tracebacks())


def _delete_chroot(hosts: str, root: str) -> None:
    from kazoo.client import KazooClient
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=10)
    try:
        client.delete(root, recursive=True)
    finally:
        client.stop()
        client.close()


@pytest.fixture(scope="module")
def ui(cluster: Any) -> Iterator[UiProcess]:
    proc = UiProcess(cluster)

    def counted() -> bool:
        status, page = proc.call("/api/v1/topology/wc")
        return status == 200 and any(b["boltId"] == "count" and b["executed"] > 0
                                     for b in page["bolts"])
    cluster.wait(counted, 90, "the count bolt's executed count never showed in the ui")
    yield proc
    errors = proc.stop()
    assert "Traceback" not in errors


# -- the JSON API --------------------------------------------------------------------------------
def test_json_api_answers_in_storms_shapes(cluster, ui):
    status, summary = ui.call("/api/v1/cluster/summary")
    assert status == 200 and summary["supervisors"] == 1 and summary["topologies"] == 1
    assert summary["slotsTotal"] == 2 and summary["slotsUsed"] == 1 and summary["slotsFree"] == 1
    status, sups = ui.call("/api/v1/supervisor/summary")
    assert [s["slotsTotal"] for s in sups["supervisors"]] == [2]
    status, nimbuses = ui.call("/api/v1/nimbus/summary")
    assert [n["status"] for n in nimbuses["nimbuses"]] == ["Leader"]
    assert nimbuses["nimbuses"][0]["port"] == cluster.nimbus_ports[0]
    status, tops = ui.call("/api/v1/topology/summary")
    [top] = tops["topologies"]
    assert (top["name"], top["status"], top["workersTotal"]) == ("wc", "ACTIVE", 1)

    # by id or by name, every window
    for window in ("600", "10800", "86400", ":all-time"):
        status, by_id = ui.call(f"/api/v1/topology/{top['id']}?window={window}")
        assert status == 200 and by_id["id"] == top["id"] and by_id["window"] == window
    status, by_name = ui.call("/api/v1/topology/wc?window=600")
    assert by_name["id"] == top["id"]
    assert [s["spoutId"] for s in by_name["spouts"]] == ["sentences"]
    assert sorted(b["boltId"] for b in by_name["bolts"]) == ["count", "split"]
    assert [s["window"] for s in by_name["topologyStats"]] == [
        "600", "10800", "86400", ":all-time"]
    assert by_name["configuration"]["topology.workers"] == 1

    # workers link to their logs exactly where their supervisor runs a log viewer
    [worker] = by_name["workers"]
    record = cluster.state.get_supervisor(worker["supervisorId"]) or {}
    if record.get("logviewer_port"):
        assert worker["workerLogLink"] == (
            f"http://{worker['host']}:{record['logviewer_port']}/log?topology={top['id']}"
            f"&port={worker['port']}")
    else:
        assert worker["workerLogLink"] == ""

    status, comp = ui.call(f"/api/v1/topology/{top['id']}/component/split?window=600")
    assert status == 200 and comp["componentType"] == "bolt" and comp["executors"] == 2
    assert len(comp["executorStats"]) == 2
    assert all(x["port"] == worker["port"] for x in comp["executorStats"])

    status, viz = ui.call("/api/v1/topology/wc/visualization?window=600")
    assert set(viz) == {"sentences", "split", "count"}
    assert [(i[":component"], i[":grouping"]) for i in viz["count"][":inputs"]] == [
        ("split", "fields")]
    assert viz["sentences"][":rate"] > 0


def test_metrics_endpoint_is_scrapable(ui):
    from prometheus_client.parser import text_string_to_metric_families

    def executed() -> float:
        status, text = ui.call("/metrics")
        assert status == 200
        families = {f.name: f for f in text_string_to_metric_families(text)}
        return sum(s.value for s in families["squall_component_executed"].samples
                   if s.labels["topology"] == "wc" and s.labels["component"] == "count")
    assert wait_until(executed, timeout=60) > 0


def test_actions_and_mistakes(cluster, ui):
    assert ui.call("/api/v1/topology/wc/deactivate", "POST")[1]["status"] == "success"
    assert cluster.listed() == {"wc": "inactive"}
    assert ui.call("/api/v1/topology/wc/activate", "POST")[0] == 200
    assert cluster.listed() == {"wc": "active"}

    status, err = ui.call("/api/v1/topology/nope")
    assert status == 404 and "nope" in err["error"]
    status, err = ui.call("/api/v1/topology/wc/rebalance/0", "POST",
                          b'{"rebalanceOptions": {"executors": {"nope": 2}}}')
    assert status == 400 and "nope" in err["error"]
    status, err = ui.call("/api/v1/topology/wc/kill/0", "POST",
                          headers={"Origin": "http://elsewhere.example"})
    assert status == 403
    assert cluster.listed() == {"wc": "active"}

    status, _ = ui.call("/api/v1/topology/wc/rebalance/0", "POST",
                        b'{"rebalanceOptions": {"executors": {"split": 1}}}')
    assert status == 200

    def one_split() -> bool:
        comp = ui.call("/api/v1/topology/wc/component/split")[1]
        return comp.get("executors") == 1
    cluster.wait(one_split, 90, "rebalance through the ui did not leave one split executor")


def test_authentication_and_ownership(cluster):
    owner = getpass.getuser()
    tokens = json.dumps({"t-owner": owner, "t-other": "mallory"})
    secured = UiProcess(cluster, "nimbus.authentication=token",
                        f"nimbus.auth.tokens={tokens}")
    try:
        assert secured.call("/api/v1/topology/summary")[0] == 401
        assert secured.call("/api/v1/topology/wc/kill/0", "POST")[0] == 401
        assert secured.call("/metrics")[0] == 401
        mine = secured.call("/api/v1/topology/summary",
                            headers={"Authorization": "Bearer t-owner"})
        assert [t["name"] for t in mine[1]["topologies"]] == ["wc"]
        theirs = secured.call("/api/v1/topology/summary",
                              headers={"Authorization": "Bearer t-other"})
        assert theirs == (200, {"topologies": []})
        assert secured.call("/api/v1/topology/wc/deactivate", "POST",
                            headers={"Authorization": "Bearer t-other"})[0] == 404
        assert cluster.listed() == {"wc": "active"}
    finally:
        errors = secured.stop()
    assert "t-owner" not in errors and "Traceback" not in errors


# -- the pages, in a browser ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, "apt-get install chromium chromium-driver (./dev setup)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1800",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _screenshot(driver: Any, element: Any, path: Path) -> Any:
    """Save ``element``'s screenshot to ``path`` and return it as a PIL image."""
    from PIL import Image
    png = element.screenshot_as_png
    path.write_bytes(png)
    return Image.open(io.BytesIO(png)).convert("RGB")


def _non_background(image: Any, background: tuple[int, int, int]) -> int:
    """How many pixels differ from ``background``."""
    return sum(count for count, color in image.getcolors(image.width * image.height)
               if color != background)


def _retry(action: Any) -> Any:
    """``action()``, again while the element it used was replaced by a refresh meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException

    def attempt() -> Any:
        try:
            return action() or True
        except StaleElementReferenceException:
            return False
    return wait_until(attempt, timeout=30)


def _text(driver: Any, element_id: str) -> str:
    from selenium.webdriver.common.by import By
    return str(_retry(lambda: driver.find_element(By.ID, element_id).text))


def _click(driver: Any, by: str, value: str) -> None:
    _retry(lambda: driver.find_element(by, value).click())


def _loaded(driver: Any) -> bool:
    main = driver.find_element("id", "main")
    return main.get_attribute("data-loaded") == "1"


def test_pages_in_a_browser(cluster, ui, browser, tmp_path):
    from selenium.webdriver.common.by import By
    driver = browser
    driver.get(ui.base + "/")
    wait_until(lambda: _loaded(driver), timeout=60)
    topologies = _text(driver, "topologies")
    assert "wc" in topologies and "ACTIVE" in topologies
    assert "127.0.0.1" in _text(driver, "supervisors")
    page = _screenshot(driver, driver.find_element(By.TAG_NAME, "body"), tmp_path / "cluster.png")
    assert _non_background(page, (255, 255, 255)) > 1000

    _click(driver, By.LINK_TEXT, "wc")
    wait_until(lambda: "/topology/" in driver.current_url and _loaded(driver)
               and driver.find_elements(By.ID, "bolts-table"), timeout=60)
    bolts = _text(driver, "bolts-table")
    assert "split" in bolts and "count" in bolts
    assert "sentences" in _text(driver, "spouts-table")
    # thousands separators once the spout has emitted 1,000 tuples
    wait_until(lambda: re.search(r"\d,\d{3}", _text(driver, "spouts-table")),
               timeout=90)
    assert "topology.workers" in _text(driver, "configuration-table")
    page = _screenshot(driver, driver.find_element(By.TAG_NAME, "body"),
                       tmp_path / "topology.png")
    assert _non_background(page, (255, 255, 255)) > 1000

    graph = driver.find_element(By.ID, "graph")
    assert graph.size["width"] > 0 and graph.size["height"] > 0
    canvases = graph.find_elements(By.TAG_NAME, "canvas")
    assert canvases and all(c.size["width"] > 0 for c in canvases)
    picture = _screenshot(driver, graph, tmp_path / "graph.png")
    assert _non_background(picture, (255, 255, 255)) > 500     # nodes, edges, labels drawn
    # each edge is its source's only subscriber: each shows its own tuples per second, and
    # each component what it emits
    edges = driver.execute_script("return state.graph.cy.edges().map(e => e.data('label'))")
    assert sorted(e.split(" · ")[0] for e in edges) == ["fields", "shuffle"]
    assert all(re.fullmatch(r"\w+ · [\d,.]+/s", e) for e in edges), edges
    nodes = driver.execute_script("return state.graph.cy.nodes().map(n => n.data('label'))")
    assert all(re.search(r"emits [\d,.]+/s$", n) for n in nodes), nodes

    # the charts fill as the ui samples (every second here)
    def charted() -> bool:
        return driver.execute_script(
            "const c = Chart.getChart('chart-throughput');"
            "return c ? c.data.datasets[0].data.length : 0") >= 2
    wait_until(charted, timeout=90)
    chart = _screenshot(driver, driver.find_element(By.ID, "chart-throughput"),
                        tmp_path / "throughput.png")
    assert _non_background(chart, (255, 255, 255)) > 200

    # scrolling survives a refresh
    driver.execute_script("window.scrollTo(0, 600)")
    before = _text(driver, "status")
    wait_until(lambda: _text(driver, "status") != before, timeout=30)
    assert driver.execute_script("return window.scrollY") == 600

    # a window button reloads the figures for that window
    _click(driver, By.CSS_SELECTOR, "button[data-window='600']")
    wait_until(lambda: "window=600" in driver.current_url, timeout=30)

    _click(driver, By.LINK_TEXT, "count")
    wait_until(lambda: "/component/count" in driver.current_url
               and driver.find_elements(By.ID, "executors-table"), timeout=60)
    executors = _text(driver, "executors-table")
    assert re.search(r"\[\d+-\d+\]", executors) and "127.0.0.1" in executors
    page = _screenshot(driver, driver.find_element(By.TAG_NAME, "body"),
                       tmp_path / "component.png")
    assert _non_background(page, (255, 255, 255)) > 1000
    # no script error and nothing the page's content security policy refused
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def _read_url(url: str) -> str:
    """The body at ``url``, or ``""`` while it cannot be read."""
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return str(reply.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError):
        return ""


def test_kill_with_confirm_in_a_browser(cluster, ui, browser):
    from selenium.webdriver.common.by import By
    driver = browser
    driver.get(ui.base + "/topology/wc")
    wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "#kill button"), timeout=60)
    # a log level and debug sampling set from the page reach the cluster state
    tid = cluster.state.find_topology_id("wc")

    def type_logger() -> None:
        logger = driver.find_element(By.CSS_SELECTOR, "#loglevel input[name=logger]")
        logger.clear()
        logger.send_keys("squall.ui.test")
    _retry(type_logger)
    _click(driver, By.CSS_SELECTOR, "#loglevel button")
    cluster.wait(lambda: "squall.ui.test" in json.dumps(cluster.state.get_log_config(tid)),
                 30, "the log level set from the page did not reach the workers' config")
    _click(driver, By.CSS_SELECTOR, "#debug button[name=on]")
    cluster.wait(lambda: (cluster.state.get_storm(tid) or {}).get("component_debug"), 30,
                 "debug switched on from the page was not recorded")
    # ... and the worker's row links to the events log the sampled emits go to
    events = str(_retry(lambda: driver.find_element(
        By.CSS_SELECTOR, "#workers-table a.events").get_attribute("href")))
    cluster.wait(lambda: "split" in _read_url(events), 60,
                 f"no sampled emit of split in the events log at {events}")
    _click(driver, By.CSS_SELECTOR, "#kill button")
    alert = driver.switch_to.alert
    assert "wc" in alert.text
    alert.dismiss()                          # cancelled: nothing happens
    assert cluster.listed() == {"wc": "active"}
    _click(driver, By.CSS_SELECTOR, "#kill button")
    driver.switch_to.alert.accept()
    cluster.wait(lambda: ui.call("/api/v1/topology/summary")[1] == {"topologies": []}, 90,
                 "the topology killed from the page stayed listed")
    wait_until(lambda: driver.current_url.rstrip("/") == ui.base, timeout=30)

    # no nimbus: 503 with the reason, and the ui keeps serving
    cluster.daemons[0].terminate()
    status, err = ui.call("/api/v1/cluster/summary")
    assert status == 503 and "nimbus" in err["error"]
    assert ui.proc.poll() is None


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
