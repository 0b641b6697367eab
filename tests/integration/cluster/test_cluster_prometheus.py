"""Scraping a real cluster: every worker's /metrics (found through its beat's metrics_port)
and the ``prometheus`` metrics consumer's endpoint."""
from __future__ import annotations

import re
import urllib.request

import pytest

from squall.daemon.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def scrape(host: str, port: int) -> str:
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("application/openmetrics-text")
        return reply.read().decode()


def total(text: str, family: str, **labels: str) -> float:
    """Sum of a family's samples whose labels include ``labels``."""
    out = 0.0
    for line in text.splitlines():
        m = re.match(rf"^{family}\{{(.*)\}} (\S+)$", line)
        if m and all(f'{k}="{v}"' in m.group(1) for k, v in labels.items()):
            out += float(m.group(2))
    return out


def test_workers_and_the_prometheus_consumer_are_scraped(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus()
    c.start_supervisor("sup1")
    c.start_supervisor("sup2")
    c.wait_ready(supervisors=2)
    consumer_port = free_port()
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
             "-c", "test.sentences=1000000", "-c", "test.emit.per.sec=50",
             "-c", "topology.builtin.metrics.bucket.size.secs=1",
             "-c", "topology.metrics.consumer.register="
                   f"[{{class: prometheus, argument: {{port: {consumer_port}}}}}]")
    tid = c.state.find_topology_id("wc")
    c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 20, 60, "no acks")
    c.wait(lambda: len([b for b in c.state.worker_beats(tid).values()
                        if b.get("metrics_port")]) == 2, 30, "workers publish no metrics_port")

    def acked_by_spouts() -> float:
        texts = [scrape(str(b["host"]), int(b["metrics_port"]))
                 for b in c.state.worker_beats(tid).values()]
        assert all(t.endswith("# EOF\n") for t in texts)
        return sum(total(t, "squall_acked_total", component="sentences", kind="spout")
                   for t in texts)
    first = acked_by_spouts()
    c.wait(lambda: acked_by_spouts() > first, 30, "spout acks did not grow on /metrics")
    texts = [scrape(str(b["host"]), int(b["metrics_port"]))
             for b in c.state.worker_beats(tid).values()]
    assert sum(total(t, "squall_executed_total", component="count") for t in texts) > 0
    assert any("squall_worker_loop_passes_total{" in t for t in texts)

    # the consumer's endpoint holds per-task buckets of every component
    c.wait(lambda: total(scrape("127.0.0.1", consumer_port), "squall_ack_count",
                         component="count") > 0, 60, "no count acks at the consumer")
    text = scrape("127.0.0.1", consumer_port)
    assert 'component="sentences"' in text and "squall_receive_capacity{" in text

    # squall list: workers, executors, tasks and uptime under a header
    head, row = c.squall("list").stdout.splitlines()
    assert head.split() == ["NAME", "STATUS", "WORKERS", "EXECUTORS", "TASKS", "UPTIME"]
    name, status, workers, executors, tasks, *uptime = row.split()
    info = c.client().topology_info("wc")
    assert (name, status, int(workers)) == ("wc", "active", 2)
    assert (int(executors), int(tasks)) == (info["num_executors"], info["num_tasks"])
    assert uptime[-1].endswith("s") or uptime[-1].endswith("m")

    # squall monitor --once: components in flow order, live rates
    out = c.squall("monitor", "wc", "--once", "--interval", "2").stdout
    rows = [line.split() for line in out.splitlines()[2:] if line.strip()]
    assert rows[0][:4] == ["COMPONENT", "KIND", "EXEC", "TASKS"]
    assert [r[0] for r in rows[1:4]] == ["sentences", "split", "count"]
    assert float(rows[1][4].replace(",", "")) > 0           # the spout emits now
    assert rows[1][11].replace(",", "").isdigit() and rows[2][11] == "-"   # spouts' pending
    c.squall("kill", "wc", "--wait", "0")
