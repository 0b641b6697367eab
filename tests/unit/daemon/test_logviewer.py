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


def test_every_daemon_log_is_served(tmp_path) -> None:
    """README names drpc.log among the daemon logs (``squall drpc`` writes it beside the
    others); /daemonlog refused it with a 404."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("nimbus", "supervisor", "ui", "drpc"):
        (logs / f"{name}.log").write_text(f"{name} started\n")
    v = LogViewer(logs, "127.0.0.1", 0)
    v.start()
    try:
        for name in ("nimbus", "supervisor", "ui", "drpc"):
            assert get(v, f"/daemonlog?name={name}")[:2] == (200, f"{name} started\n")
    finally:
        v.stop()


def test_it_lists_the_worker_files_it_keeps_of_a_topology_name(tmp_path) -> None:
    """``squall logs NAME`` of a killed topology asks each logviewer which files it still
    keeps of topologies named NAME (nimbus knows the name no more)."""
    import json
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("ci-2-1700000100-6700.log", "ci-2-1700000100-6700.log.1",
                 "ci-2-1700000100-6700.out", "ci-2-1700000100-6700.metrics.log",
                 "ci-1-1700000000-6701.events.log", "ci-x-1-1700000000-6700.log",
                 "cix-3-1700000200-6700.log", "supervisor.log", "notes.txt"):
        (logs / name).write_text("x" * 5)
    v = LogViewer(logs, "127.0.0.1", 0)
    v.start()
    try:
        status, body, headers = get(v, "/list?name=ci")
        assert headers["Content-Type"] == "application/json"
        files = json.loads(body)["files"]
        assert status == 200 and [(f["topology"], f["port"], f["file"]) for f in files] == [
            ("ci-1-1700000000", 6701, "events"), ("ci-2-1700000100", 6700, "log"),
            ("ci-2-1700000100", 6700, "metrics"), ("ci-2-1700000100", 6700, "out")]
        assert all(f["size"] == 5 and f["mtime"] > 0 for f in files)
        assert json.loads(get(v, "/list?name=nosuch")[1]) == {"files": []}
        assert len(json.loads(get(v, "/list")[1])["files"]) == 6     # every topology's
    finally:
        v.stop()


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
    "/log?topology=wc-1-1700000000&port=%C2%B2",      # "²": a digit to str.isdigit only
    "/log?topology=wc-1-1700000000&port=%E2%91%A0",   # "①"
    "/log?topology=wc-1-1700000000&port=6700&file=../../secret",
    "/daemonlog?name=../secret",
    "/daemonlog?name=secret",
    "/etc/passwd",
])
def test_unknown_or_outside_files_are_404(viewer: LogViewer, query: str) -> None:
    status, body, _ = get(viewer, query)
    assert status == 404 and "not served" not in body


def send(v: LogViewer, method: str, path: str) -> tuple[int, bytes, dict[str, str]]:
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", v.port, timeout=10)
    try:
        conn.request(method, path)
        reply = conn.getresponse()
        return reply.status, reply.read(), dict(reply.headers)
    finally:
        conn.close()


def test_other_methods_are_405_and_head_is_get_without_its_body(viewer: LogViewer) -> None:
    # they were the HTTP server's own 501 HTML page
    base = "/log?topology=wc-1-1700000000&port=6700"
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        status, body, headers = send(viewer, method, base)
        assert (status, body) == (405, f"{method} is not served: the logviewer answers GET "
                                       "and HEAD\n".encode()), method
        assert headers["Content-Type"].startswith("text/plain") and \
            headers["Allow"] == "GET, HEAD"
    status, body, headers = send(viewer, "HEAD", base)
    assert (status, body) == (200, b"") and headers["Content-Length"] == "18"
    assert headers["X-Log-Size"] == "18" and headers["X-Log-Id"]
    assert send(viewer, "HEAD", "/log?topology=nosuch&port=1")[:2] == (404, b"")
    status, body, headers = send(viewer, "BREW", base)
    assert status == 501 and headers["Content-Type"].startswith("text/plain")
    assert body.count(b"\n") == 1


def test_a_failure_of_its_own_is_a_500_and_one_log_line(viewer: LogViewer, monkeypatch,
                                                        caplog) -> None:
    # an exception nothing caught dropped the connection with no answer, and a traceback
    import logging

    from squall.daemon import logviewer

    def broken(fd: int) -> str:
        raise RuntimeError("disk on fire")
    monkeypatch.setattr(logviewer, "file_identity", broken)
    caplog.set_level(logging.DEBUG, logger="squall.daemon.logviewer")
    status, body, _ = get(viewer, "/log?topology=wc-1-1700000000&port=6700")
    assert (status, body) == (500, "internal error: RuntimeError\n")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "disk on fire" in errors[0].getMessage()
    assert not errors[0].exc_info
    monkeypatch.undo()
    assert get(viewer, "/log?topology=wc-1-1700000000&port=6700")[0] == 200


def test_the_events_log_of_a_worker_that_sampled_nothing_is_empty_not_404(
        viewer: LogViewer) -> None:
    # the page links every worker to its events log: with debugging never on that was 404
    from squall.daemon.logviewer import NO_EVENTS_NOTE
    events = "/log?topology=wc-1-1700000000&port=6700&file=events"
    status, body, headers = get(viewer, events)
    assert (status, body) == (200, NO_EVENTS_NOTE) and headers["X-Log-Size"] == "0"
    assert "X-Log-Id" not in headers           # no file yet: a reader takes it up later
    assert "squall debug" in body and body.count("\n") == 1
    # a reader following from an offset gets nothing until something is sampled
    assert get(viewer, events + "&start=0")[:2] == (200, "")
    assert get(viewer, events + "&start=-100")[:2] == (200, "")
    # no such worker, or its rotated backup: still 404
    assert get(viewer, "/log?topology=wc-1-1700000000&port=6701&file=events")[0] == 404
    assert get(viewer, events + "&rotated=1")[0] == 404


def test_the_empty_events_log_is_for_the_same_users(tmp_path) -> None:
    from squall.daemon.logviewer_access import LogAccess
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / f"{TID}-6700.log").write_text("alice's worker\n")
    v = LogViewer(logs, "127.0.0.1", 0, LogAccess(SECURE, {TID: "alice"}.get))
    v.start()
    try:
        events = f"/log?topology={TID}&port=6700&file=events"
        assert get_as(v, events, None)[0] == 401
        assert get_as(v, events, "t-bob")[0] == 403
        assert get_as(v, events, "t-alice")[0] == 200
    finally:
        v.stop()


def test_a_rotated_log_keeps_its_identity_and_is_served_as_rotated(tmp_path) -> None:
    from squall.daemon.logviewer import same_log_file
    logs = tmp_path / "logs"
    logs.mkdir()
    live = logs / "wc-1-1700000000-6700.log"
    live.write_text("first\n")
    v = LogViewer(logs, "127.0.0.1", 0)
    v.start()
    try:
        base = "/log?topology=wc-1-1700000000&port=6700"
        assert get(v, base + "&rotated=1")[0] == 404            # no backup yet
        first = get(v, base)[2]["X-Log-Id"]
        with live.open("a") as f:
            f.write("second\n")
        assert get(v, base + "&start=6")[2]["X-Log-Id"] == first   # grown: the same file
        live.rename(logs / "wc-1-1700000000-6700.log.1")           # a rotation
        live.write_text("third\n")
        status, body, headers = get(v, base + "&rotated=1&start=6")
        assert (status, body) == (200, "second\n") and headers["X-Log-Id"] == first
        status, body, headers = get(v, base)
        assert body == "third\n" and not same_log_file(first, headers["X-Log-Id"])
        assert get(v, base + "&rotated=yes")[0] == 400
        assert get(v, base + "&file=out&rotated=1")[0] == 404
    finally:
        v.stop()


def test_log_identities() -> None:
    from squall.daemon.logviewer import same_log_file
    assert same_log_file("fd:10:0a1b2c3d", "fd:10:0a1b2c3d")
    assert same_log_file("fd:10:", "fd:10:0a1b2c3d")           # no whole first line then
    assert not same_log_file("fd:10:0a1b2c3d", "fd:10:99999999")  # a reused inode
    assert not same_log_file("fd:10:0a1b2c3d", "fd:11:0a1b2c3d")


def test_byte_range_rules() -> None:
    assert byte_range(10, None, None) == (0, 10)
    assert byte_range(10, "-3", None) == (7, 3)
    assert byte_range(10, "-30", "2") == (0, 2)
    assert byte_range(10, "8", "5") == (8, 2)
    with pytest.raises(Exception, match="negative"):
        byte_range(10, "0", "-1")


# -- with nimbus.authentication on (API.md section 14) ------------------------------------------
SECURE = {"nimbus.authentication": "token", "nimbus.admins": ["root"],
          "nimbus.auth.tokens": {"t-alice": "alice", "t-bob": "bob", "t-root": "root"}}
TID = "wc-1-1700000000"


@pytest.fixture(scope="module")
def secure_viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LogViewer]:
    from squall.daemon.logviewer_access import LogAccess
    logs = tmp_path_factory.mktemp("secure-logviewer") / "logs"
    logs.mkdir()
    (logs / f"{TID}-6700.log").write_text("alice's worker\n")
    (logs / f"{TID}-6700.log.1").write_text("alice's worker, before\n")
    (logs / f"{TID}-6700.events.log").write_text("sampled emits\n")
    (logs / "nimbus.log").write_text("every user's topologies\n")
    owners = {TID: "alice"}
    v = LogViewer(logs, "127.0.0.1", 0, LogAccess(SECURE, owners.get))
    v.start()
    yield v
    v.stop()


def get_as(v: LogViewer, path: str, token: str | None) -> tuple[int, str, dict[str, str]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(f"http://127.0.0.1:{v.port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


@pytest.mark.parametrize("file", ["log", "events"])
def test_a_worker_log_is_for_its_owner_and_admins(secure_viewer: LogViewer, file: str) -> None:
    path = f"/log?topology={TID}&port=6700&file={file}"
    status, body, headers = get_as(secure_viewer, path, None)
    assert status == 401 and "worker" not in body and "emits" not in body
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert get_as(secure_viewer, path, "t-mallory")[0] == 401
    status, body, _ = get_as(secure_viewer, path, "t-bob")
    assert status == 403 and body.count("\n") == 1 and "another user" in body
    assert get_as(secure_viewer, path, "t-alice")[0] == 200
    assert get_as(secure_viewer, path, "t-root")[0] == 200


def test_a_rotated_log_is_for_the_same_users(secure_viewer: LogViewer) -> None:
    path = f"/log?topology={TID}&port=6700&rotated=1"
    status, body, _ = get_as(secure_viewer, path, None)
    assert status == 401 and "worker" not in body
    status, body, _ = get_as(secure_viewer, path, "t-bob")
    assert status == 403 and "worker" not in body
    assert get_as(secure_viewer, path + "&rotated=x", "t-bob")[0] == 403   # refused first
    assert get_as(secure_viewer, path, "t-alice")[:2] == (200, "alice's worker, before\n")
    assert get_as(secure_viewer, "/daemonlog?name=nimbus&rotated=1", "t-alice")[0] == 403


def test_refusals_come_before_the_file_is_looked_up(secure_viewer: LogViewer) -> None:
    # another user cannot learn which ports or files a topology has
    missing = f"/log?topology={TID}&port=6799"
    assert get_as(secure_viewer, missing, None)[0] == 401
    assert get_as(secure_viewer, missing, "t-bob")[0] == 403
    assert get_as(secure_viewer, missing, "t-alice")[0] == 404
    # a topology whose owner is not known (never seen, gone): admins only
    assert get_as(secure_viewer, "/log?topology=gone-1-1&port=6700", "t-alice")[0] == 403
    assert get_as(secure_viewer, "/log?topology=gone-1-1&port=6700", "t-root")[0] == 404


def test_daemon_logs_are_for_admins(secure_viewer: LogViewer) -> None:
    assert get_as(secure_viewer, "/daemonlog?name=nimbus", None)[0] == 401
    status, body, _ = get_as(secure_viewer, "/daemonlog?name=nimbus", "t-alice")
    assert status == 403 and "nimbus.admins" in body and "every user" not in body
    assert get_as(secure_viewer, "/daemonlog?name=nimbus", "t-root")[:2] == (
        200, "every user's topologies\n")


def test_a_listing_names_only_the_callers_topologies(secure_viewer: LogViewer) -> None:
    import json
    assert get_as(secure_viewer, "/list?name=wc", None)[0] == 401
    assert get_as(secure_viewer, "/list?name=nosuch", None)[0] == 401   # checked first
    assert json.loads(get_as(secure_viewer, "/list?name=wc", "t-bob")[1]) == {"files": []}
    for token in ("t-alice", "t-root"):
        status, body, _ = get_as(secure_viewer, "/list?name=wc", token)
        assert status == 200 and [(f["topology"], f["file"])
                                  for f in json.loads(body)["files"]] == [
            (TID, "events"), (TID, "log")]


def test_a_link_the_ui_signed_opens_that_topologys_logs_without_a_header(
        secure_viewer: LogViewer) -> None:
    import time
    from urllib.parse import urlencode

    from squall.security.log_links import sign
    signed = "&" + urlencode(sign("t-alice", "alice", TID, time.time()))
    path = f"/log?topology={TID}&port=6700"
    assert get_as(secure_viewer, path + signed, None)[:2] == (200, "alice's worker\n")
    assert get_as(secure_viewer, path + signed + "&file=events", None)[0] == 200
    # bob's own signature is bob's: still not his topology
    bobs = "&" + urlencode(sign("t-bob", "bob", TID, time.time()))
    assert get_as(secure_viewer, path + bobs, None)[0] == 403
    expired = "&" + urlencode(sign("t-alice", "alice", TID, time.time() - 7200))
    assert get_as(secure_viewer, path + expired, None)[0] == 401
    # a signed link does not open daemon logs
    assert get_as(secure_viewer, "/daemonlog?name=nimbus" + signed, None)[0] == 401


def test_a_state_store_failure_is_503_not_a_traceback(tmp_path) -> None:
    from squall.daemon.logviewer_access import LogAccess
    from squall.errors import StateError
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / f"{TID}-6700.log").write_text("x\n")

    def owner_of(tid: str) -> str | None:
        raise StateError("ZooKeeper is unreachable")
    v = LogViewer(logs, "127.0.0.1", 0, LogAccess(SECURE, owner_of))
    v.start()
    try:
        assert get_as(v, f"/log?topology={TID}&port=6700", "t-alice")[0] == 503
        assert get_as(v, f"/log?topology={TID}&port=6700", "t-root")[0] == 200
    finally:
        v.stop()


def test_without_authentication_everyone_reads_as_before(tmp_path) -> None:
    from squall.daemon.logviewer_access import LogAccess
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / f"{TID}-6700.log").write_text("open\n")
    (logs / "supervisor.log").write_text("sup\n")
    v = LogViewer(logs, "127.0.0.1", 0, LogAccess({"nimbus.authentication": "none"},
                                                  lambda tid: None))
    v.start()
    try:
        assert get_as(v, f"/log?topology={TID}&port=6700", None)[:2] == (200, "open\n")
        assert get_as(v, "/daemonlog?name=supervisor", None)[:2] == (200, "sup\n")
    finally:
        v.stop()
