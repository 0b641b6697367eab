"""OpenMetrics text of a worker's beat, the endpoint serving it, the prometheus consumer."""
from __future__ import annotations

import doctest
import urllib.error
import urllib.request

import pytest

from squall import drivers
from squall.errors import ConfigError
from squall.metrics import openmetrics
from squall.metrics.openmetrics import MetricsEndpoint, metric_name, render, worker_families
from squall.metrics.prometheus import PrometheusMetricsConsumer
from squall.spi.metrics import DataPoint, TaskInfo

BEAT = {
    "executors": {
        "[1, 1]": {"component": "split", "kind": "bolt", "emitted": 40, "transferred": 40,
                   "acked": 10, "failed": 1, "executed": 11, "execute_latency_ms": 0.5,
                   "process_latency_ms": 0.25, "complete_latency_ms": 0.0, "queued": 3,
                   "uptime_secs": 9},
        "[2, 2]": {"component": "words", "kind": "spout", "emitted": 10, "transferred": 10,
                   "acked": 9, "failed": 0, "executed": 0, "complete_latency_ms": 4.5,
                   "queued": 0, "uptime_secs": 9},
    },
    "worker": {"loop_passes": 100, "sent_bytes": 2048},
    "uptime_secs": 10,
}


def test_doctests() -> None:
    assert doctest.testmod(openmetrics).failed == 0


def test_metric_names() -> None:
    assert metric_name("__emit-count") == "emit_count"
    assert metric_name("9lives") == "m_9lives"
    assert metric_name("a.b c") == "a_b_c"


def test_worker_families_render_counters_and_gauges() -> None:
    text = render(worker_families(BEAT, "wc-1-1", "h1", 6700))
    lines = text.splitlines()
    assert lines[-1] == "# EOF"
    assert "# TYPE squall_emitted counter" in lines
    assert ('squall_emitted_total{component="split",executor="[1, 1]",host="h1",kind="bolt",'
            'port="6700",topology="wc-1-1"} 40') in lines
    assert any(x.startswith("squall_failed_total{component=\"split\"") and x.endswith(" 1")
               for x in lines)
    # complete latency only for spouts
    complete = [x for x in lines if x.startswith("squall_complete_latency_ms{")]
    assert len(complete) == 1 and 'component="words"' in complete[0] and complete[0].endswith(
        " 4.5")
    assert 'squall_worker_sent_bytes_total{host="h1",port="6700",topology="wc-1-1"} 2048' in lines
    assert "# TYPE squall_worker_idle_waits counter" not in lines      # no value: no family


def test_endpoint_serves_the_latest_text() -> None:
    ep = MetricsEndpoint("127.0.0.1", 0)
    ep.start()
    try:
        url = f"http://127.0.0.1:{ep.port}"
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            assert r.read().decode() == "# EOF\n"
            assert r.headers["Content-Type"].startswith("application/openmetrics-text")
        ep.update(render(worker_families(BEAT, "t", "h", 1)))
        with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
            assert "squall_acked_total" in r.read().decode()
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(url + "/other", timeout=10)
        assert err.value.code == 404
    finally:
        ep.stop()


def test_prometheus_consumer_is_registered_and_serves_data_points() -> None:
    assert "prometheus" in dict(drivers.entries("squall.metrics_consumers"))
    consumer = PrometheusMetricsConsumer()
    consumer.prepare({}, {"port": 0, "host": "127.0.0.1"}, None)
    try:
        info = TaskInfo("wc-1-1", "split", 3, "h1", 6700, 1700000000.0, 60.0)
        consumer.handle(info, [DataPoint("__emit-count", 12),
                               DataPoint("__receive", {"population": 2, "capacity": 100}),
                               DataPoint("words", {"the": 3}), DataPoint("note", "text")])
        consumer.handle(info, [DataPoint("__emit-count", 7)])       # the newest bucket wins
        assert consumer.endpoint is not None
        with urllib.request.urlopen(f"http://127.0.0.1:{consumer.endpoint.port}/metrics",
                                    timeout=10) as r:
            text = r.read().decode()
    finally:
        consumer.cleanup()
    labels = 'component="split",host="h1",port="6700",task="3",topology="wc-1-1"'
    assert f"squall_emit_count{{{labels}}} 7" in text
    assert f"squall_receive_population{{{labels}}} 2" in text
    assert f"squall_words_the{{{labels}}} 3" in text
    assert "note" not in text and text.endswith("# EOF\n")


def _scrape(consumer: PrometheusMetricsConsumer) -> str:
    assert consumer.endpoint is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{consumer.endpoint.port}/metrics",
                                timeout=10) as r:
        return r.read().decode()


@pytest.mark.parametrize("user_first", [False, True])
def test_prometheus_keeps_squalls_series_apart_from_a_user_metric_named_alike(
        user_first: bool, caplog: pytest.LogCaptureFixture) -> None:
    consumer = PrometheusMetricsConsumer()
    consumer.prepare({}, {"port": 0, "host": "127.0.0.1"}, None)
    info = TaskInfo("wc-1-1", "split", 3, "h1", 6700, 1700000000.0, 60.0)
    ours, theirs = DataPoint("__emit-count", 5000), DataPoint("emit-count", 7)
    try:
        for _ in range(2):
            consumer.handle(info, [theirs, ours] if user_first else [ours, theirs])
            consumer.handle(info, [DataPoint("req_count", 1), DataPoint("req.count", 2)])
        text = _scrape(consumer)
    finally:
        consumer.cleanup()
    labels = 'component="split",host="h1",port="6700",task="3",topology="wc-1-1"'
    assert f"squall_emit_count{{{labels}}} 5000" in text
    assert f"squall_user_emit_count{{{labels}}} 7" in text
    assert f"squall_req_count{{{labels}}} 1" in text      # the later one is left out, said once
    said = [r.getMessage() for r in caplog.records if "both read as" in r.getMessage()]
    assert said == ["prometheus consumer: metrics 'req_count' and 'req.count' both read as "
                    "squall_req_count; 'req.count' is left out (rename one)"]


def test_prometheus_leaves_out_a_map_key_that_reads_as_another_series(
        caplog: pytest.LogCaptureFixture) -> None:
    # a MultiCountMetric's scopes "a b" and "a\\b" both read as squall_words_a_b: the later
    # overwrote the earlier, one value shown for another; so did a user metric over a key of
    # one of squall's maps
    consumer = PrometheusMetricsConsumer()
    consumer.prepare({}, {"port": 0, "host": "127.0.0.1"}, None)
    info = TaskInfo("wc-1-1", "split", 3, "h1", 6700, 1700000000.0, 60.0)
    points = [DataPoint("receive-population", 4), DataPoint("__receive", {"population": 2}),
              DataPoint("words", {"a b": 19, "a\\b": 76, "c": {"d": 1}})]
    try:
        for _ in range(2):
            consumer.handle(info, points)
        text = _scrape(consumer)
    finally:
        consumer.cleanup()
    labels = 'component="split",host="h1",port="6700",task="3",topology="wc-1-1"'
    assert f"squall_words_a_b{{{labels}}} 19" in text
    assert f"squall_words_c_d{{{labels}}} 1" in text
    assert f"squall_receive_population{{{labels}}} 2" in text
    assert f"squall_user_receive_population{{{labels}}} 4" in text
    said = [r.getMessage() for r in caplog.records if "both read as" in r.getMessage()]
    assert said == ["prometheus consumer: metrics words['a b'] and words['a\\\\b'] both read "
                    "as squall_words_a_b; words['a\\\\b'] is left out (rename one)"]


def test_prometheus_renders_at_each_scrape_not_at_each_handle() -> None:
    consumer = PrometheusMetricsConsumer()
    consumer.prepare({}, {"port": 0, "host": "127.0.0.1"}, None)
    renders = 0
    real = consumer._render

    def counted() -> str:
        nonlocal renders
        renders += 1
        return real()
    assert consumer.endpoint is not None
    consumer.endpoint.render_with(counted)
    try:
        for task in range(200):         # one bucket of 200 tasks
            consumer.handle(TaskInfo("t", "c", task, "h", 1, 0.0, 60.0),
                            [DataPoint("__emit-count", task)])
        assert renders == 0
        assert 'task="199"' in _scrape(consumer) and renders == 1
    finally:
        consumer.cleanup()


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _series_of(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{")]


def test_prometheus_keeps_one_series_per_task_when_a_rebalance_moves_it() -> None:
    clock = _Clock()
    consumer = PrometheusMetricsConsumer(clock)
    consumer.prepare({}, {"port": 0, "host": "127.0.0.1"}, None)
    try:
        for task, port in ((1, 6700), (2, 6701)):
            consumer.handle(TaskInfo("wc-1-1", "src", task, "h1", port, 100.0, 10.0),
                            [DataPoint("__emit-count", 5)])
        clock.now += 10
        # task 2 moved to h2:6702; task 1 stayed
        consumer.handle(TaskInfo("wc-1-1", "src", 2, "h2", 6702, 110.0, 10.0),
                        [DataPoint("__emit-count", 923)])
        consumer.handle(TaskInfo("wc-1-1", "src", 1, "h1", 6700, 110.0, 10.0),
                        [DataPoint("__emit-count", 7)])
        # a bucket the old worker sent before it stopped, arriving late, changes nothing
        consumer.handle(TaskInfo("wc-1-1", "src", 2, "h1", 6701, 100.0, 10.0),
                        [DataPoint("__emit-count", 0)])
        rows = _series_of(_scrape(consumer), "squall_emit_count")
    finally:
        consumer.cleanup()
    assert rows == [
        'squall_emit_count{component="src",host="h1",port="6700",task="1",topology="wc-1-1"} 7',
        'squall_emit_count{component="src",host="h2",port="6702",task="2",topology="wc-1-1"} 923']


def test_prometheus_drops_the_series_of_a_task_that_stopped_reporting() -> None:
    clock = _Clock()
    consumer = PrometheusMetricsConsumer(clock)
    consumer.prepare({}, {"port": 0, "host": "127.0.0.1"}, None)
    try:
        for task in (1, 2):
            consumer.handle(TaskInfo("wc-1-1", "b", task, "h", 6700, 100.0, 10.0),
                            [DataPoint("__execute-count", task), DataPoint("gone", 1)])
        for bucket in range(1, 4):      # task 1 keeps reporting (not "gone"); task 2 stops
            clock.now += 10
            consumer.handle(TaskInfo("wc-1-1", "b", 1, "h", 6700, 100.0 + 10 * bucket, 10.0),
                            [DataPoint("__execute-count", 1)])
            text = _scrape(consumer)
            if bucket < 3:              # two buckets missed: still served
                assert len(_series_of(text, "squall_execute_count")) == 2
        assert _series_of(text, "squall_execute_count") == [
            'squall_execute_count{component="b",host="h",port="6700",task="1",'
            'topology="wc-1-1"} 1']
        assert "squall_gone" not in text
    finally:
        consumer.cleanup()


def test_prometheus_forgets_the_names_of_map_keys_whose_series_expired() -> None:
    # a map whose keys change (one per user) grew the consumer's name tables for good
    clock = _Clock()
    consumer = PrometheusMetricsConsumer(clock)
    consumer.prepare({}, {"port": 0, "host": "127.0.0.1"}, None)
    try:
        for bucket in range(200):
            clock.now += 10
            consumer.handle(TaskInfo("wc-1-1", "b", 1, "h", 6700, 100.0 + 10 * bucket, 10.0),
                            [DataPoint("by_user", {f"u{bucket}": 1})])
        served = [line for line in _scrape(consumer).splitlines()
                  if line.startswith("squall_by_user_u")]
        assert len(served) <= 3, served
        assert len(consumer._by_source) <= 5, len(consumer._by_source)  # what it remembers
    finally:
        consumer.cleanup()


@pytest.mark.parametrize("argument", [{"port": "x"}, {"port": 70000}, {"nope": 1}, [1]])
def test_prometheus_consumer_rejects_bad_arguments(argument: object) -> None:
    with pytest.raises(ConfigError, match="prometheus"):
        PrometheusMetricsConsumer().prepare({}, argument, None)
