"""The UI's JSON in Storm's shapes, from nimbus's answers (no server)."""
from __future__ import annotations

from ui_fakes import topology_info

from squall.ui import views
from squall.ui.history import History


def test_durations_and_window_hints_read_as_storms():
    assert views.pretty_duration(5) == "5s"
    assert views.pretty_duration(3723) == "1h 2m 3s"
    assert views.pretty_duration(90061) == "1d 1h 1m 1s"
    assert [views.window_hint(w) for w in views.WINDOWS] == [
        "10m 0s", "3h 0m 0s", "1d 0h 0m 0s", "All time"]


def test_topology_page_has_storms_fields_per_window_and_leaves_system_components_out():
    page = views.topology_page(topology_info("wc", "alice"), "600", now=1_700_000_100)
    assert page["id"] == "wc-1-1700000000" and page["name"] == "wc"
    assert page["status"] == "ACTIVE" and page["windowHint"] == "10m 0s"
    assert [s["window"] for s in page["topologyStats"]] == list(views.WINDOWS)
    stats = page["topologyStats"][0]
    # emitted over the user's components only (the acker's 5 are not counted)
    assert stats["emitted"] == 1000 and stats["acked"] == 900
    assert stats["completeLatency"] == "20.000"
    [spout] = page["spouts"]
    assert spout["spoutId"] == "words" and spout["completeLatency"] == "20.000"
    [bolt] = page["bolts"]
    assert bolt["boltId"] == "count" and bolt["executed"] == 1000
    assert bolt["executeLatency"] == "0.500" and bolt["processLatency"] == "1.000"
    assert (bolt["executeLatencyP50"], bolt["executeLatencyP99"]) == ("0.400", "2.000")
    assert spout["completeLatencyP99"] == "60.000"
    # capacity: the busiest executor, 600 executed * 0.5 ms over min(600 s, 100 s uptime)
    assert bolt["capacity"] == "0.003"
    assert page["msgTimeout"] == 30


def test_secrets_never_reach_the_configuration_view():
    page = views.topology_page(topology_info("wc", "alice"), ":all-time", now=0)
    assert page["configuration"]["my.password"] == "******"
    assert "hunter2" not in str(page)


def test_workers_link_to_their_logs_only_where_a_log_viewer_runs():
    page = views.topology_page(topology_info("wc", "alice"), ":all-time", now=0)
    links = [w["workerLogLink"] for w in page["workers"]]
    assert links == ["http://h1:8000/log?topology=wc-1-1700000000&port=6700",
                     "http://h1:8000/log?topology=wc-1-1700000000&port=6701"]
    assert page["workers"][0]["componentNumTasks"] == {"words": 1, "count": 1}
    bare = views.topology_page(topology_info("wc", "alice", logviewer=None), ":all-time", now=0)
    assert [w["workerLogLink"] for w in bare["workers"]] == ["", ""]


def test_errors_come_newest_first_with_time_worker_task_and_the_whole_traceback():
    trace = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad"
    errors = {"count": [
        {"error": "old", "time_secs": 1000, "host": "h1", "port": 6700, "task": 2},
        {"error": trace, "time_secs": 2000, "host": "h1", "port": 6701, "task": 3}]}
    info = topology_info("wc", "alice", errors=errors)
    page = views.component_page(info, "count", ":all-time", now=2010)
    assert page is not None
    first, second = page["componentErrors"]
    assert first["error"] == trace and first["errorTime"] == 2000
    assert first["errorLapsedSecs"] == 10 and first["task"] == 3
    assert (first["errorHost"], first["errorPort"]) == ("h1", 6701)
    assert first["errorWorkerLogLink"].endswith("port=6701")
    assert second["error"] == "old"
    [bolt] = views.topology_page(info, ":all-time", now=2010)["bolts"]
    assert bolt["lastError"] == trace and bolt["errorPort"] == 6701


def test_component_page_lists_executors_with_their_worker_and_window_stats():
    page = views.component_page(topology_info("wc", "alice"), "count", "600", now=0)
    assert page is not None and page["componentType"] == "bolt"
    assert [s["window"] for s in page["boltStats"]] == list(views.WINDOWS)
    assert [(x["id"], x["port"], x["executed"]) for x in page["executorStats"]] == [
        ("[2-2]", 6700, 600), ("[3-3]", 6701, 400)]
    assert page["executorStats"][0]["capacity"] == "0.003"
    assert page["executorStats"][0]["executeLatencyP99"] == "2.000"
    assert views.component_page(topology_info("wc", "alice"), "nope", "600", now=0) is None
    assert views.component_page(topology_info("wc", "alice"), "__acker", "600", now=0) is None


def test_visualization_has_components_inputs_groupings_and_rates():
    viz = views.visualization(topology_info("wc", "alice"), "600")
    assert set(viz) == {"words", "count"}
    assert viz["count"][":inputs"] == [{":component": "words", ":stream": "default",
                                        ":grouping": "fields", ":fields": ["word"]}]
    assert viz["words"][":type"] == "spout"
    assert viz["words"][":rate"] == 1000 / 100     # emitted over min(window, uptime)


def test_history_turns_samples_into_rates_and_forgets_killed_topologies():
    history = History(size=3)
    kinds = {"words": "spout", "count": "bolt"}
    for i, t in enumerate((100.0, 110.0, 120.0, 130.0)):
        history.record("wc-1", t, topology_info("wc", "alice", scale=i + 1))
    series = history.series("wc-1", kinds)
    # three samples kept (110, 120, 130): two intervals of 10 s, 1000 emitted in each
    assert [p["time"] for p in series["topology"]] == [120.0, 130.0]
    assert series["topology"][0]["emitted"] == 100.0
    assert series["topology"][0]["acked"] == 90.0
    assert series["components"]["count"][1]["executed"] == 100.0
    assert series["topology"][0]["completeLatency"] == 20.0
    assert series["topology"][0]["completeLatencyP99"] == 60.0
    history.keep([])
    assert history.series("wc-1", kinds) == {"topology": [], "components": {}}


def test_a_repeated_sample_waits_for_the_workers_next_report():
    history = History(size=10, idle_secs=15)
    kinds = {"words": "spout", "count": "bolt"}
    history.record("wc-1", 100.0, topology_info("wc", "alice", scale=1))
    history.record("wc-1", 101.0, topology_info("wc", "alice", scale=1))   # no new report yet
    history.record("wc-1", 102.0, topology_info("wc", "alice", scale=2))
    assert [p["emitted"] for p in history.series("wc-1", kinds)["topology"]] == [500.0]
    history.record("wc-1", 120.0, topology_info("wc", "alice", scale=2))   # idle: zero
    assert [p["emitted"] for p in history.series("wc-1", kinds)["topology"]] == [500.0, 0.0]


def test_components_no_worker_reported_yet_are_listed_with_zero_counts():
    """Before the first beats, and while a rebalance restarts the workers, the graph still
    names every component: the pages list them (they said 'no component' and listed none)."""
    info = {**topology_info("wc", "alice"), "components": {}, "executors": [], "workers": []}
    page = views.topology_page(info, "600", now=0)
    assert [s["spoutId"] for s in page["spouts"]] == ["words"]
    assert [b["boltId"] for b in page["bolts"]] == ["count"]
    assert page["bolts"][0]["executed"] == 0 and page["topologyStats"][0]["emitted"] == 0
    component = views.component_page(info, "count", "600", now=0)
    assert component is not None and component["componentType"] == "bolt"
    assert component["executorStats"] == [] and component["executors"] == 2
