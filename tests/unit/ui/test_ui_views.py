"""The UI's JSON in Storm's shapes, from nimbus's answers (no server)."""
from __future__ import annotations

from typing import Any

from ui_fakes import topology_info, windows

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
    assert views.component_page(topology_info("wc", "alice"), "__nope", "600", now=0) is None


def test_visualization_has_components_inputs_groupings_and_rates():
    viz = views.visualization(topology_info("wc", "alice"), "600")
    assert set(viz) == {"words", "count"}
    assert viz["count"][":inputs"] == [{":component": "words", ":stream": "default",
                                        ":grouping": "fields", ":fields": ["word"],
                                        ":rate": None}]     # the graph names no counter
    assert viz["words"][":type"] == "spout"
    assert viz["words"][":rate"] == 1000 / 100     # emitted over min(window, uptime)


def test_visualization_rates_count_each_executor_over_its_own_uptime():
    """An executor's counts restart with its worker: after a rebalance or a worker's restart
    a rate is each executor's count over the time it was up, summed (over the topology's
    100 s uptime the spout read 1/s and the edge 8/s)."""
    info = topology_info("wc", "alice")
    words, _, count3 = info["executors"]
    words.update(uptime_secs=10, windows=windows(100, 0, 90, 2.0))      # rebalanced 10 s ago
    count3.update(uptime_secs=20, windows=windows(0, 200, 200, 0.5))    # worker restarted
    info["components"]["words"]["windows"] = windows(100, 0, 90, 2.0)
    info["components"]["count"]["windows"] = windows(0, 800, 800, 0.5)
    edge = info["graph"][0]["inputs"][0]
    for window in ("600", ":all-time"):
        edge["rate_from"] = "target"
        viz = views.visualization(info, window)
        assert viz["words"][":rate"] == 10.0
        assert viz["count"][":inputs"][0][":rate"] == 600 / 100 + 200 / 20
        edge["rate_from"] = "source"
        assert views.visualization(info, window)["count"][":inputs"][0][":rate"] == 10.0


def _streams_info() -> dict[str, Any]:
    """src emits 100 on each of default (-> a), side (no subscriber) and other (-> b, all
    grouping to 2 tasks); a and b each feed join (every count over a 10 s uptime)."""
    from squall import Bolt, Spout, Stream, TopologyBuilder
    from squall.daemon.nimbus_info import topology_graph

    class Src(Spout):
        outputs = [Stream(["n"]), Stream(["n"], name="side"), Stream(["n"], name="other")]

    class Pass(Bolt):
        outputs = ["n"]

        def process(self, tup: Any) -> None:
            pass

    b = TopologyBuilder()
    b.set_spout("src", Src)
    b.set_bolt("a", Pass).shuffle_grouping("src")
    b.set_bolt("b", Pass, 2).all_grouping("src", stream="other")
    b.set_bolt("join", Pass).shuffle_grouping("a").shuffle_grouping("b")

    def counts(emitted: int, transferred: int, executed: int) -> dict[str, Any]:
        return {"emitted": emitted, "transferred": transferred, "executed": executed,
                "acked": 0, "failed": 0}
    components = {"src": {"kind": "spout", **counts(300, 400, 0)},
                  "a": {"kind": "bolt", **counts(100, 100, 100)},
                  "b": {"kind": "bolt", **counts(190, 190, 200)},
                  "join": {"kind": "bolt", **counts(0, 0, 290)}}
    return {"name": "t", "id": "t-1-1", "uptime_secs": 10, "components": components,
            "executors": [], "graph": topology_graph(b.create_topology())}


def test_an_edge_shows_the_tuples_it_carries_or_no_number():
    """Workers count a task's emits over all its streams: src's 30/s (100 of them on a stream
    nobody reads) is no edge's rate. Each edge shows what only it carries: src -> a and
    src -> b the bolt's executed (b's all grouping: 100 tuples to each of its 2 tasks),
    a -> join and b -> join the source's transferred."""
    viz = views.visualization(_streams_info(), ":all-time")
    rates = {(target, i[":component"], i[":stream"]): i[":rate"]
             for target, node in viz.items() for i in node[":inputs"]}
    assert rates == {("a", "src", "default"): 10.0, ("b", "src", "other"): 20.0,
                     ("join", "a", "default"): 10.0, ("join", "b", "default"): 19.0}
    assert viz["src"][":rate"] == 30.0          # the component's own emit rate, all streams


def test_system_components_errors_are_shown_and_their_pages_served():
    """A metrics consumer that raises (``__metrics_<name>``) or a worker that fails to start
    (``__worker``): the topology page lists their errors, their component pages answer, and
    the user's totals stay free of them."""
    errors = {"__metrics_raising": [{"error": "consumer boom", "time_secs": 1000,
                                     "host": "h1", "port": 6700, "task": 5}],
              "__worker": [{"error": "ImportError: no module x", "time_secs": 990,
                            "host": "h1", "port": 6701, "start_failure": True}],
              "__acker": []}
    info = topology_info("wc", "alice", errors=errors)
    info["components"]["__metrics_raising"] = {"kind": "bolt", "executors": 1, "tasks": 1,
                                               "windows": windows(0, 7, 7, 0.1)}
    info["executors"].append({"executor": "5-5", "component": "__metrics_raising",
                              "kind": "bolt", "tasks": [5], "worker": "sup1:6700",
                              "host": "h1", "uptime_secs": 100,
                              "windows": windows(0, 7, 7, 0.1)})
    page = views.topology_page(info, ":all-time", now=1010)
    assert {c: [e["error"] for e in page["errors"][c]] for c in page["errors"]
            if page["errors"][c]} == {"__metrics_raising": ["consumer boom"],
                                      "__worker": ["ImportError: no module x"]}
    assert page["errors"]["__metrics_raising"][0]["errorWorkerLogLink"].endswith("port=6700")
    assert [b["boltId"] for b in page["bolts"]] == ["count"]
    assert page["topologyStats"][-1]["emitted"] == 1000           # no system component's
    consumer = views.component_page(info, "__metrics_raising", ":all-time", now=1010)
    assert consumer is not None and consumer["componentType"] == "bolt"
    assert [x["executed"] for x in consumer["executorStats"]] == [7]
    assert [e["error"] for e in consumer["componentErrors"]] == ["consumer boom"]
    worker = views.component_page(info, "__worker", ":all-time", now=1010)
    assert worker is not None and worker["componentType"] == "system"
    assert worker["executorStats"] == [] and len(worker["componentErrors"]) == 1
    acker = views.component_page(info, "__acker", ":all-time", now=1010)
    assert acker is not None and acker["componentType"] == "acker"


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


def test_history_rates_go_on_through_a_restart_of_one_of_a_components_workers():
    """``count``'s executor on sup1:6701 restarts between two samples (its counts start
    again from 0): the chart shows what both executors counted meanwhile, not a dip to 0
    (the component's total fell, 1000 -> 750)."""
    history = History(size=3)
    kinds = {"words": "spout", "count": "bolt"}
    history.record("wc-1", 100.0, topology_info("wc", "alice"))
    info = topology_info("wc", "alice")
    info["executors"][1]["windows"] = windows(0, 700, 700, 0.5)      # +100 since
    info["executors"][2].update(executor=[3, 3], uptime_secs=5,
                                windows=windows(0, 50, 50, 0.5))      # restarted: 50 since
    info["components"]["count"]["windows"] = windows(0, 750, 750, 0.5)
    history.record("wc-1", 110.0, info)
    [point] = history.series("wc-1", kinds)["components"]["count"]
    assert (point["executed"], point["acked"]) == (15.0, 15.0)


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


def test_history_charts_system_components_apart_from_the_topology():
    history = History(size=5)
    for t, scale in ((100.0, 1), (110.0, 2)):
        info = topology_info("wc", "alice", scale=scale)
        info["components"]["__acker"]["windows"] = windows(0, 500 * scale, 0, 0.0)
        history.record("wc-1", t, info)
    series = history.series("wc-1", {"words": "spout", "count": "bolt", "__acker": "acker"})
    assert series["components"]["__acker"][0]["executed"] == 50.0       # its own chart
    assert series["topology"][0]["emitted"] == 100.0                   # the user's only


def _shared_loop_info() -> dict[str, Any]:
    """Worker sup1:6700 runs the spout, both executors of ``count`` on its loop (each busy
    49.5 s of the 100 s it ran) and ``slow`` on a thread of its own (busy 30 s); worker
    sup1:6701 runs a third ``count`` executor busy 10 s."""
    info = topology_info("wc", "alice")
    slow = windows(0, 1500, 1500, 20.0)
    info["components"]["slow"] = {"kind": "bolt", "executors": 1, "tasks": 1, "windows": slow}

    def bolt(executor: str, comp: str, worker: str, executed: int, ms: float,
             **extra: Any) -> dict[str, Any]:
        return {"executor": executor, "component": comp, "kind": "bolt", "tasks": [1],
                "worker": worker, "host": "h1", "uptime_secs": 100,
                "windows": windows(0, executed, executed, ms), **extra}
    info["executors"][1:] = [bolt("2-2", "count", "sup1:6700", 2475, 20.0),
                             bolt("3-3", "count", "sup1:6700", 2475, 20.0),
                             bolt("4-4", "count", "sup1:6701", 500, 20.0),
                             bolt("5-5", "slow", "sup1:6700", 1500, 20.0, threaded=True)]
    info["graph"].append({"id": "slow", "kind": "bolt", "executors": 1, "tasks": 1,
                          "inputs": []})
    return info


def test_capacity_shows_a_saturated_bolt_whose_executors_share_their_workers_loop():
    """The loop takes turns between a worker's executors: each of the two ``count``
    executors on sup1:6700 could have had the 100 s less the other's 49.5 s, and used all
    but 2 % of it (as a share of the window, 0.495 each: never the bottleneck it is). An
    executor on a thread of its own keeps its share of the window and takes no loop time."""
    info = _shared_loop_info()
    for window in ("600", ":all-time"):
        page = views.component_page(info, "count", window, now=0)
        assert page is not None
        assert [x["capacity"] for x in page["executorStats"]] == ["0.980", "0.980", "0.100"]
        assert [s["capacity"] for s in page["boltStats"]] == ["0.980"] * 4
        bolts = {b["boltId"]: b for b in views.topology_page(info, window, now=0)["bolts"]}
        assert (bolts["count"]["capacity"], bolts["slow"]["capacity"]) == ("0.980", "0.300")
        viz = views.visualization(info, window)
        assert round(viz["count"][":capacity"], 3) == 0.98
    # busier than the window leaves it (measured apart, on different clocks): at most 1
    info["executors"][2]["windows"] = windows(0, 3000, 3000, 20.0)
    page = views.component_page(info, "count", "600", now=0)
    assert page is not None and page["executorStats"][1]["capacity"] == "1.000"


def test_percentiles_come_with_their_samples_and_a_p99_needs_enough_of_them():
    info = topology_info("wc", "alice")
    for stats in (info["components"]["count"], info["executors"][1]):
        for w in stats["windows"].values():
            w["execute_latency_samples"] = 37
            del w["execute_latency_p99_ms"]             # too few samples: left out
    [bolt] = views.topology_page(info, "600", now=0)["bolts"]
    assert bolt["executeLatencyP50"] == "0.400" and bolt["executeLatencyP99"] is None
    assert bolt["executeLatencySamples"] == 37
    page = views.component_page(info, "count", "600", now=0)
    assert page is not None
    assert [(x["executeLatencyP99"], x.get("executeLatencySamples"))
            for x in page["executorStats"]] == [(None, 37), ("2.000", None)]


def test_history_charts_no_p99_where_the_window_has_too_few_samples():
    kinds = {"words": "spout", "count": "bolt"}
    history = History(size=3)
    for i, t in enumerate((100.0, 110.0)):
        info = topology_info("wc", "alice", scale=i + 1)
        for comp in ("words", "count"):
            for w in info["components"][comp]["windows"].values():
                w.pop("execute_latency_p99_ms")
                w.pop("complete_latency_p99_ms")
        history.record("wc-1", t, info)
    series = history.series("wc-1", kinds)
    assert series["topology"][0]["completeLatencyP99"] is None      # a gap, not a zero
    assert series["components"]["count"][0]["execute_latency_p99_ms"] is None
    assert series["components"]["count"][0]["execute_latency_ms"] == 0.5


def test_debug_and_sampling_follow_what_was_switched_at_run_time():
    # the page showed only the submitted topology.debug, and no samplingPct
    info = topology_info("wc", "alice")
    page = views.topology_page(info, ":all-time", now=0)
    assert (page["debug"], page["samplingPct"]) == (False, 0.0)
    info["component_debug"] = {"*": {"enable": True, "samplingpct": 50.0},
                               "count": {"enable": True, "samplingpct": 10.0}}
    page = views.topology_page(info, ":all-time", now=0)
    assert (page["debug"], page["samplingPct"]) == (True, 50.0)
    count = views.component_page(info, "count", ":all-time", now=0)
    words = views.component_page(info, "words", ":all-time", now=0)
    assert count is not None and words is not None
    assert (count["debug"], count["samplingPct"]) == (True, 10.0)
    assert (words["debug"], words["samplingPct"]) == (True, 50.0)
    # submitted with topology.debug, then turned off for one component, then for all
    info["conf"]["topology.debug"] = True
    info["component_debug"] = {"count": {"enable": False}}
    assert views.topology_page(info, ":all-time", now=0)["samplingPct"] == 100.0
    count = views.component_page(info, "count", ":all-time", now=0)
    assert count is not None and (count["debug"], count["samplingPct"]) == (False, 0.0)
    info["component_debug"] = {"*": {"enable": False}}
    assert views.topology_page(info, ":all-time", now=0)["debug"] is False


def test_topology_summary_gives_the_encoded_id():
    from types import SimpleNamespace
    top = SimpleNamespace(id="a b-1-2", name="a b", status="active", status_reason="",
                          uptime_secs=5, num_tasks=1, num_workers=1, num_executors=1)
    [row] = views.topology_summary([top], {})["topologies"]
    assert row["encodedId"] == "a%20b-1-2"
