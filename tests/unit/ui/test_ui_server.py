"""The UI's web server (real uvicorn on 127.0.0.1) over a fake nimbus: routes, errors, access
control, origin checks, broken clients and ``/metrics``."""
from __future__ import annotations

import json
import logging
import socket

import pytest
from ui_fakes import topology_info, windows
from prometheus_client.parser import text_string_to_metric_families

from squall.testing.waiting import wait_until

ALICE = {"Authorization": "Bearer t-alice"}
ROOT = {"Authorization": "Bearer t-root"}


def test_a_component_id_with_a_slash_has_its_page_api_and_debug(open_ui, nimbus):
    """The page links to /topology/ID/component/parse%2Fjson; the server sees the decoded
    path, so a one-segment route answered 404."""
    _, http = open_ui
    info = nimbus.topologies["wc"]
    for cid in ("parse/json", "odd/debug/enable/5"):
        info["components"][cid] = {"kind": "bolt", "executors": 1, "tasks": 1,
                                   "windows": windows(0, 3, 3, 0.5)}
    info["graph"].append({"id": "parse/json", "kind": "bolt", "executors": 1, "tasks": 1,
                          "inputs": []})
    status, comp = http.call("/api/v1/topology/wc/component/parse%2Fjson?window=600")
    assert status == 200 and comp["id"] == "parse/json" and comp["componentType"] == "bolt"
    assert comp["encodedId"] == "parse%2Fjson"
    status, page = http.call("/topology/wc/component/parse%2Fjson")
    assert status == 200 and "<main" in page
    assert http.call("/api/v1/topology/wc/component/parse%2Fjson/debug/enable/10",
                     "POST")[0] == 200
    # an id that ends like a debug path is still told apart: the last two segments are
    # the action and the percentage
    assert http.call("/api/v1/topology/wc/component/odd%2Fdebug%2Fenable%2F5/debug/disable/0",
                     "POST")[0] == 200
    assert nimbus.calls == [(None, "debug", "wc", "parse/json", True, 10.0),
                            (None, "debug", "wc", "odd/debug/enable/5", False, 0.0)]
    status, err = http.call("/api/v1/topology/wc/component/parse%2Fnope")
    assert status == 404 and "parse/nope" in err["error"]


def test_topology_by_id_or_name_component_and_visualization(open_ui):
    _, http = open_ui
    by_name = http.call("/api/v1/topology/wc?window=600")
    by_id = http.call("/api/v1/topology/wc-1-1700000000?window=600")
    assert by_name == by_id and by_name[0] == 200
    status, comp = http.call("/api/v1/topology/wc-1-1700000000/component/count")
    assert status == 200 and comp["componentType"] == "bolt"
    status, viz = http.call("/api/v1/topology/wc/visualization")
    assert status == 200 and set(viz) == {"words", "count"}
    status, nimbuses = http.call("/api/v1/nimbus/summary")
    assert nimbuses["nimbuses"] == [{"host": "n1", "port": 6627, "status": "Leader"},
                                    {"host": "n2", "port": 6627, "status": "Not a Leader"}]
    status, sups = http.call("/api/v1/supervisor/summary")
    assert sups["supervisors"][0]["slotsTotal"] == 3 and sups["supervisors"][0]["uptime"] \
        == "1h 1m 40s"


def test_an_action_on_a_topology_being_killed_is_a_refusal_not_an_unknown_topology(
        open_ui, nimbus):
    # nimbus refuses it (the topology is known, in its kill wait): 400, as README says of
    # what nimbus refuses; it was 404, as for a topology nobody knows
    _, http = open_ui
    nimbus.killing.add("wc")
    status, err = http.call("/api/v1/topology/wc/activate", "POST")
    assert status == 400 and "is being killed" in err["error"]
    assert http.call("/api/v1/topology/wc/kill/0", "POST")[0] == 200
    assert http.call("/api/v1/topology/nope/activate", "POST")[0] == 404


def test_mistakes_are_one_clear_line_each(open_ui, nimbus):
    _, http = open_ui
    assert http.call("/api/v1/topology/nope") == (
        404, {"error": "no topology named 'nope' is running"})
    status, err = http.call("/api/v1/topology/wc?window=7")
    assert status == 400 and "window" in err["error"]
    status, err = http.call("/api/v1/topology/wc/component/nope")
    assert status == 404 and "nope" in err["error"]
    assert http.call("/api/v1/nothing")[0] == 404
    assert http.call("/api/v1/topology/wc", "POST")[0] == 405
    assert http.call("/api/v1/topology/wc/explode", "POST")[0] == 404
    status, err = http.call("/api/v1/topology/wc/kill/soon", "POST")
    assert status == 400 and "soon" in err["error"]
    status, err = http.call("/api/v1/topology/wc/rebalance/0", "POST", b"{not json")
    assert status == 400 and "JSON" in err["error"]
    status, err = http.call("/api/v1/topology/wc/rebalance/0", "POST",
                            b'{"rebalanceOptions": {"executors": {"count": 0}}}')
    assert status == 400 and "count" in err["error"]
    nimbus.refuse_rebalance = True
    status, err = http.call("/api/v1/topology/wc/rebalance/0", "POST",
                            b'{"rebalanceOptions": {"executors": {"nope": 2}}}')
    assert status == 400 and "nope" in err["error"]
    assert nimbus.calls == []


def test_a_wait_that_never_ends_or_is_no_number_is_refused(open_ui, nimbus):
    # 1e309 is an infinite float: the topology stayed rebalancing for ever; nan was taken for 0
    _, http = open_ui
    for action in ("rebalance", "kill"):
        for wait in ("inf", "1e309", "-inf", "nan"):
            status, err = http.call(f"/api/v1/topology/wc/{action}/{wait}", "POST")
            assert (status, err) == (400, {"error": f"wait time {wait!r} is not a finite "
                                                    "number of seconds"}), (action, wait)
    assert nimbus.calls == []


def test_actions_answer_as_storms_and_reach_nimbus(open_ui, nimbus):
    _, http = open_ui
    assert http.call("/api/v1/topology/wc-1-1700000000/deactivate", "POST") == (200, {
        "topologyOperation": "deactivate", "topologyId": "wc-1-1700000000",
        "status": "success"})
    assert http.call("/api/v1/topology/wc/activate", "POST")[0] == 200
    body = b'{"rebalanceOptions": {"numWorkers": 3, "executors": {"count": "4"}}}'
    assert http.call("/api/v1/topology/wc/rebalance/2", "POST", body)[0] == 200
    assert http.call("/api/v1/topology/wc/kill/0", "POST")[0] == 200
    assert nimbus.calls == [(None, "deactivate", "wc"), (None, "activate", "wc"),
                            (None, "rebalance", "wc", 2.0, 3, {"count": 4}),
                            (None, "kill", "wc", 0.0)]


def test_debug_and_log_levels_take_storms_paths_and_reach_nimbus(open_ui, nimbus):
    _, http = open_ui
    status, body = http.call("/api/v1/topology/wc/debug/enable/10", "POST")
    assert status == 200 and body["topologyOperation"] == "debug" and body["debug"] is True
    assert http.call("/api/v1/topology/wc-1-1700000000/component/count/debug/disable/100",
                     "POST")[0] == 200
    # a disable's percentage means nothing: 0 is fine (it was a 400)
    assert http.call("/api/v1/topology/wc/component/count/debug/disable/0", "POST")[0] == 200
    levels = (b'{"namedLoggerLevels": {"ROOT": {"target_level": "debug", "timeout": 30},'
              b' "squall.worker": {"target_level": "INFO", "timeout": 30},'
              b' "mine": {"target_level": "RESET"}}}')
    assert http.call("/api/v1/topology/wc/logconfig", "POST", levels)[0] == 200
    assert nimbus.calls == [
        (None, "debug", "wc", None, True, 10.0), (None, "debug", "wc", "count", False, 100.0),
        (None, "debug", "wc", "count", False, 0.0),
        (None, "logconfig", "wc", {"mine": "RESET"}, 0.0),
        (None, "logconfig", "wc", {"ROOT": "DEBUG", "squall.worker": "INFO"}, 30.0)]
    # mistakes: one clear line each, nothing reaches nimbus
    nimbus.calls.clear()
    for path, body, status, words in (
            ("/api/v1/topology/wc/debug/maybe/10", b"", 404, "enable or disable"),
            ("/api/v1/topology/wc/debug/enable/0", b"", 400, "sampling percentage"),
            ("/api/v1/topology/wc/component/nope/debug/enable/5", b"", 404, "no component"),
            ("/api/v1/topology/wc/logconfig", b"{}", 400, "namedLoggerLevels"),
            ("/api/v1/topology/wc/logconfig",
             b'{"namedLoggerLevels": {"x": {"target_level": "INFO", "timeout": -1}}}', 400,
             "timeout"),
            ("/api/v1/topology/wc/logconfig",      # JSON Infinity: a level never reverting
             b'{"namedLoggerLevels": {"x": {"target_level": "INFO", "timeout": Infinity}}}',
             400, "timeout must be a finite number"),
            ("/api/v1/topology/wc/logconfig",
             b'{"namedLoggerLevels": {"x": {"target_level": "INFO", "timeout": NaN}}}',
             400, "timeout must be a finite number")):
        got_status, got = http.call(path, "POST", body)
        assert got_status == status and words in got["error"], (path, got)
    assert nimbus.calls == []


def test_a_post_from_another_origin_is_refused_even_without_authentication(open_ui, nimbus):
    ui, http = open_ui
    evil = {"Origin": "http://evil.example"}
    status, err = http.call("/api/v1/topology/wc/kill/0", "POST", headers=evil)
    assert status == 403 and "evil.example" in err["error"]
    own = {"Origin": f"http://127.0.0.1:{ui.port}"}
    assert http.call("/api/v1/topology/wc/deactivate", "POST", headers=own)[0] == 200
    assert nimbus.calls == [(None, "deactivate", "wc")]
    # DNS rebinding: another site's name made to resolve to 127.0.0.1, in Origin and Host
    rebound = {"Origin": f"http://attacker.example:{ui.port}",
               "Host": f"attacker.example:{ui.port}"}
    status, err = http.call("/api/v1/topology/wc/kill/0", "POST", headers=rebound)
    assert status == 403 and "answers only to loopback names" in err["error"]
    assert http.call("/api/v1/topology/summary", headers=rebound)[0] == 403   # reads too
    local = {"Origin": f"http://localhost:{ui.port}", "Host": f"localhost:{ui.port}"}
    assert http.call("/api/v1/topology/wc/activate", "POST", headers=local)[0] == 200
    assert nimbus.calls == [(None, "deactivate", "wc"), (None, "activate", "wc")]


def test_with_authentication_every_call_needs_a_known_token(secure_ui, nimbus):
    _, http = secure_ui
    for path in ("/api/v1/cluster/summary", "/api/v1/topology/summary",
                 "/api/v1/topology/wc", "/metrics"):
        assert http.call(path)[0] == 401
        assert http.call(path, headers={"Authorization": "Bearer wrong"})[0] == 401
    status, err = http.call("/api/v1/topology/wc/kill/0", "POST")
    assert status == 401 and "t-" not in err["error"]
    assert nimbus.calls == []
    # the page itself loads (it asks for the token)
    assert http.call("/")[0] == 200


def test_a_user_sees_and_acts_on_only_their_topologies(secure_ui, nimbus):
    _, http = secure_ui
    status, tops = http.call("/api/v1/topology/summary", headers=ALICE)
    assert status == 200 and [t["name"] for t in tops["topologies"]] == ["wc"]
    assert http.call("/api/v1/cluster/summary", headers=ALICE)[1]["topologies"] == 1
    # bob's topology is answered as one that does not exist
    assert http.call("/api/v1/topology/other", headers=ALICE)[0] == 404
    assert http.call("/api/v1/topology/other/kill/0", "POST", headers=ALICE)[0] == 404
    assert http.call("/api/v1/topology/wc/deactivate", "POST", headers=ALICE)[0] == 200
    # nimbus is called with the user's own token, so it can authorize the request too
    assert nimbus.calls == [("t-alice", "deactivate", "wc")]
    status, tops = http.call("/api/v1/topology/summary", headers=ROOT)
    assert sorted(t["name"] for t in tops["topologies"]) == ["other", "wc"]


def test_metrics_are_prometheus_text_of_what_the_user_may_see(secure_ui):
    ui, http = secure_ui
    wait_until(lambda: ui.view.latest(_root())[1], timeout=30)

    def families(headers: dict[str, str]) -> dict[str, list]:
        status, text = http.call("/metrics", headers=headers)
        assert status == 200
        return {f.name: f.samples for f in text_string_to_metric_families(text)}

    metrics = families(ALICE)
    executed = {(s.labels["topology"], s.labels["component"], s.labels["executor"]): s.value
                for s in metrics["squall_component_executed"]}
    assert executed == {("wc", "words", "1-1"): 0, ("wc", "count", "2-2"): 600,
                        ("wc", "count", "[3, 3]"): 400}
    latency = {(s.labels["component"], s.labels["latency"], s.labels["stat"]): s.value
               for s in metrics["squall_component_latency_ms"]}
    assert latency[("count", "execute", "mean")] == 0.5
    assert latency[("count", "execute", "p99")] == 2.0
    assert latency[("words", "complete", "p50")] == 18.0
    assert metrics["squall_cluster_supervisors"][0].value == 1
    everything = families(ROOT)
    assert {s.labels["topology"] for s in everything["squall_component_emitted"]} == {
        "wc", "other"}


def test_a_worker_restart_resets_only_its_executors_counters():
    """kill -9 of one of two workers: its executors count from 0 again. Summed per component,
    the counter dropped and Prometheus (a drop is a restart from 0) counted the surviving
    executors' totals again; per executor, its reset rule counts what was really done."""
    from squall.ui import prometheus

    def scrape(info: dict) -> dict[tuple, float]:
        text = prometheus.render(None, [info])
        return {tuple(sorted(s.labels.items())): s.value
                for f in text_string_to_metric_families(text) if f.name == "squall_component_acked"
                for s in f.samples if s.labels["component"] == "count"}

    before = topology_info("wc", "alice")          # count: 600 on sup1:6700, 400 on :6701
    after = topology_info("wc", "alice")
    after["executors"][1]["windows"] = windows(0, 700, 700, 0.5)    # +100 on sup1:6700
    after["executors"][2]["windows"] = windows(0, 50, 50, 0.5)      # restarted, 50 since
    first, second = scrape(before), scrape(after)
    assert set(first) == set(second) and len(first) == 2
    # Prometheus's increase(): a series that went down restarted from 0
    increase = sum(second[k] - first[k] if second[k] >= first[k] else second[k] for k in first)
    assert increase == 150


def _root():
    from squall.ui.access import User
    return User("root", "t-root", admin=True)


def test_history_fills_from_the_sampler(open_ui, nimbus):
    ui, http = open_ui

    polls = [1]

    def grown() -> bool:        # the counts grow between the sampler's samples
        polls[0] += 1
        nimbus.topologies["wc"] = topology_info("wc", "alice", scale=polls[0])
        return len(http.call("/api/v1/topology/wc/history")[1]["topology"]) >= 2
    wait_until(grown, timeout=30)
    status, series = http.call("/api/v1/topology/wc/history")
    assert status == 200 and series["topology"][-1]["emitted"] > 0
    assert "count" in series["components"]


def test_a_post_whose_body_never_arrives_does_nothing_and_logs_one_line(open_ui, nimbus,
                                                                        caplog):
    ui, _ = open_ui
    caplog.set_level(logging.INFO, logger="squall.ui")
    with socket.create_connection(("127.0.0.1", ui.port)) as sock:
        sock.sendall(b"POST /api/v1/topology/wc/rebalance/0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 500\r\n\r\n"
                     b'{"rebalanceOptions": ')
    wait_until(lambda: any("went away" in r.getMessage() for r in caplog.records), timeout=30)
    assert nimbus.calls == []
    assert not [r for r in caplog.records if r.exc_info]


def test_a_client_that_goes_away_mid_answer_is_no_traceback(open_ui, caplog):
    ui, http = open_ui
    caplog.set_level(logging.DEBUG)
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", ui.port)) as sock:
            sock.sendall(b"GET /static/vendor/cytoscape-3.34.4.min.js HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.recv(100)
    assert http.call("/api/v1/cluster/summary")[0] == 200     # still serving
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_a_port_in_use_is_one_config_error(nimbus):
    from squall.errors import ConfigError
    from squall.ui import UiServer
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ui = UiServer({}, host="127.0.0.1", port=port, make_client=nimbus.client)
        with pytest.raises(ConfigError, match=f"127.0.0.1:{port}"):
            ui.start()
        ui.stop()


def test_ui_port_zero_takes_a_free_port_and_a_port_out_of_range_is_one_config_error(nimbus):
    from squall.errors import ConfigError
    from squall.ui import UiServer
    ui = UiServer({"ui.port": 0, "ui.host": "127.0.0.1"}, make_client=nimbus.client)
    try:
        assert ui.start() not in (0, 8080)
    finally:
        ui.stop()
    for bad in (-5, 70000):
        with pytest.raises(ConfigError, match=f"ui.port must be a port number .* got {bad}"):
            UiServer({"ui.port": bad}, make_client=nimbus.client)


def test_binds_loopback_by_default(nimbus):
    from squall.config import load_config
    from squall.ui import UiServer
    conf = load_config()
    assert conf["ui.host"] == "127.0.0.1"
    assert UiServer(conf, make_client=nimbus.client).host == "127.0.0.1"


def test_the_drpc_functions_the_cluster_serves_are_listed(nimbus):
    from squall.drpc import Call, Caller, DRPCServer
    from squall.errors import DRPCError
    from ui_fakes import serve

    drpc = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                       "drpc.request.timeout.secs": 0.2}).start()
    try:
        from squall import DRPCClient
        conf = {"drpc.servers": [f"127.0.0.1:{drpc.port}"]}
        with pytest.raises(DRPCError, match="timed out"):       # asked, served by nobody
            DRPCClient({**conf, "drpc.request.timeout.secs": 0.2}).execute("nosuch", "a b")
        # a topology serving count fetches it (no request waits)
        assert drpc.handle(Call("fetch", function="count"), Caller("grpc", "ipv4:127.0.0.1:1")) \
            == []
        for _, http in serve(conf, nimbus):
            status, body = http.call("/api/v1/drpc/summary")
            assert status == 200
            functions = body["functions"]
            assert [{k: v for k, v in f.items() if k != "lastFetchSecsAgo"}
                    for f in functions] == [{
                        "server": f"127.0.0.1:{drpc.port}", "function": "count", "waiting": 0,
                        "inFlight": 0}]
            assert 0 <= functions[0]["lastFetchSecsAgo"] < 60
    finally:
        drpc.stop()
    for _, http in serve({}, nimbus):                              # no DRPC servers: none
        assert http.call("/api/v1/drpc/summary") == (200, {"functions": []})


def test_log_links_shown_to_a_user_carry_a_signature_for_them_and_that_topology(secure_ui):
    import time
    from urllib.parse import parse_qs, urlsplit

    from squall.security.log_links import signed_user
    server, http = secure_ui
    status, page = http.call("/api/v1/topology/wc", headers=ALICE)
    assert status == 200
    status, comp = http.call("/api/v1/topology/wc/component/count", headers=ALICE)
    assert status == 200
    links = ([w["workerLogLink"] for w in page["workers"]]
             + [x["workerLogLink"] for x in comp["executorStats"]])
    assert links and all(link.startswith("http://h1:8000/log?topology=wc-1-1700000000&port=")
                         for link in links)
    for link in links:
        query = {k: v[-1] for k, v in parse_qs(urlsplit(link).query).items()}
        assert "t-alice" not in link
        # what the logviewer checks, with the cluster's tokens
        assert signed_user(server.conf, query, "wc-1-1700000000", time.time()) == "alice"
        assert signed_user(server.conf, query, "other-1-1700000000", time.time()) is None


def test_log_links_are_plain_without_authentication(open_ui):
    _, http = open_ui
    page = http.call("/api/v1/topology/wc")[1]
    assert [w["workerLogLink"] for w in page["workers"]] == [
        "http://h1:8000/log?topology=wc-1-1700000000&port=6700",
        "http://h1:8000/log?topology=wc-1-1700000000&port=6701"]


def test_a_rebalance_count_that_is_no_whole_number_from_1_to_int32_max_is_a_400(open_ui,
                                                                               nimbus):
    # 3000000000 and 99999999999 were a 500 (protobuf's int32 fields), 1.7 and true taken
    # for 1
    _, http = open_ui
    for options, field in (({"numWorkers": 3000000000}, "numWorkers=3000000000"),
                           ({"executors": {"count": 99999999999}},
                            "executors of 'count'=99999999999"),
                           ({"numWorkers": 1.7}, "numWorkers=1.7"),
                           ({"numWorkers": True}, "numWorkers=true"),
                           ({"executors": {"count": False}}, "executors of 'count'=false"),
                           ({"numWorkers": "-2"}, 'numWorkers="-2"'),
                           ({"executors": {"count": 2.5}}, "executors of 'count'=2.5")):
        body = json.dumps({"rebalanceOptions": options}).encode()
        status, err = http.call("/api/v1/topology/wc/rebalance/0", "POST", body)
        assert (status, err) == (400, {"error": f"{field}: expected a whole number from 1 to "
                                                "2147483647"}), options
    status, err = http.call("/api/v1/topology/wc/rebalance/0", "POST",
                            b'{"rebalanceOptions": {"executors": [["count", 2]]}}')
    assert status == 400 and "executors must be an object" in err["error"]
    assert nimbus.calls == []
    body = b'{"rebalanceOptions": {"numWorkers": 2147483647}}'
    assert http.call("/api/v1/topology/wc/rebalance/0", "POST", body)[0] == 200


def test_a_rebalance_answers_what_it_will_not_get_as_the_cli_notes_it(open_ui, nimbus):
    _, http = open_ui
    body = b'{"rebalanceOptions": {"numWorkers": 9, "executors": {"count": 50}}}'
    status, answer = http.call("/api/v1/topology/wc/rebalance/0", "POST", body)
    assert status == 200 and answer["status"] == "success"
    assert answer["notes"] == [
        "count: 50 executors asked, it gets 2: it has 2 tasks (fixed at submit; raise them "
        "with set_num_tasks)",
        "9 workers asked, at most 3 can run: the cluster has 1 free slot and the topology "
        "holds 2"]
    status, answer = http.call("/api/v1/topology/wc/rebalance/0", "POST",
                               b'{"rebalanceOptions": {"executors": {"count": 2}}}')
    assert status == 200 and answer["notes"] == []
    assert [c[1] for c in nimbus.calls] == ["rebalance", "rebalance"]


def test_a_wait_beyond_a_day_is_refused(open_ui, nimbus):
    # kill/1e300 was taken, and nimbus's messages printed a 300-digit wait
    _, http = open_ui
    for action in ("kill", "rebalance"):
        status, err = http.call(f"/api/v1/topology/wc/{action}/1e300", "POST")
        assert (status, err) == (400, {"error": "wait time '1e300' is more than 86400 "
                                                "seconds (a day)"})
    assert nimbus.calls == []
    assert http.call("/api/v1/topology/wc/kill/86400", "POST")[0] == 200


def test_a_method_a_path_does_not_take_and_a_missing_static_file_answer_json(open_ui):
    # they were Starlette's own text/plain "Method Not Allowed" and "Not Found"
    _, http = open_ui
    for method in ("PATCH", "OPTIONS", "DELETE"):
        assert http.call("/api/v1/topology/wc", method) == (
            405, {"error": f"{method} is not allowed on /api/v1/topology/wc; allowed: GET, "
                           "HEAD"})
    assert http.call("/static/nope.js") == (404, {"error": "no GET /static/nope.js"})
    assert http.call("/static/app.js", "POST") == (
        405, {"error": "POST is not allowed on /static/app.js; allowed: GET, HEAD"})


def test_metrics_say_when_nimbus_stopped_answering_and_how_old_the_sample_is(open_ui, nimbus):
    # while nimbus was down the last sample was served as current: flat counters read as a
    # stalled topology
    ui, http = open_ui

    def scrape() -> dict[str, list]:
        status, text = http.call("/metrics")
        assert status == 200
        return {f.name: f.samples for f in text_string_to_metric_families(text)}

    def value(metrics: dict[str, list], name: str) -> float:
        [sample] = metrics[name]
        return sample.value

    wait_until(lambda: value(scrape(), "squall_ui_nimbus_up") == 1, timeout=30)
    sampled = value(scrape(), "squall_ui_last_sample_timestamp_seconds")
    assert sampled > 1_700_000_000
    nimbus.down = True
    wait_until(lambda: value(scrape(), "squall_ui_nimbus_up") == 0, timeout=30)
    stale = scrape()
    # the newest sample is still served, with the time it was taken
    assert value(stale, "squall_ui_last_sample_timestamp_seconds") >= sampled
    assert {s.labels["topology"] for s in stale["squall_component_emitted"]} == {"wc", "other"}
    frozen = value(stale, "squall_ui_last_sample_timestamp_seconds")
    assert value(scrape(), "squall_ui_last_sample_timestamp_seconds") == frozen
    nimbus.down = False
    wait_until(lambda: value(scrape(), "squall_ui_nimbus_up") == 1, timeout=30)
    assert value(scrape(), "squall_ui_last_sample_timestamp_seconds") > frozen


def test_metrics_before_the_first_sample_say_there_is_none(nimbus):
    from squall.ui import prometheus
    families = {f.name: f.samples
                for f in text_string_to_metric_families(prometheus.render(None, []))}
    assert families["squall_ui_nimbus_up"][0].value == 0
    assert families["squall_ui_last_sample_timestamp_seconds"][0].value == 0
