"""Nimbus's parts on their own: the code store, leadership, the reads, and the lifecycle's
refusals, each with the narrow collaborators it is handed (no gRPC server, no threads)."""
from __future__ import annotations

import io
import json
import math
import threading
import time
import zipfile
from typing import Any

import pytest

from squall import Bolt, Spout, TopologyBuilder, drivers
from squall.daemon import packaging
from squall.daemon.nimbus import Nimbus
from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_info import NimbusReads, live_topology
from squall.daemon.nimbus_leader import Leadership, NotLeaderError
from squall.daemon.nimbus_schedule import Scheduling
from squall.daemon.nimbus_topologies import TopologyLifecycle
from squall.errors import ConfigError, NotAliveError, StateError, TopologyError
from squall.spi.state import LeaderElection
from squall.state.cluster_state import ClusterState


class Src(Spout):
    outputs = ["x"]

    def next_tuple(self) -> None:
        pass


def _topology_json() -> dict[str, Any]:
    b = TopologyBuilder()
    b.set_spout("s", Src, parallelism=2)
    return b.create_topology().to_json()


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("topo.py", "x = 1\n")
    return buf.getvalue()


class FakeElection(LeaderElection):
    """Leads for one term (until the test ends it); names ``leader`` as the first contender
    (``"?"``: the store cannot say)."""

    def __init__(self, leader: str = "", leading: bool = False) -> None:
        self.leader, self.leading, self.cancelled, self.terms = leader, leading, False, 0

    def run(self, func: Any) -> bool:
        if self.cancelled or self.terms:
            return False
        self.terms += 1
        self.leading = True
        func()
        return True

    def cancel(self) -> None:
        self.cancelled = True

    @property
    def is_leader(self) -> bool:
        return self.leading

    def contenders(self) -> list[str]:
        if self.leader == "?":
            raise StateError("store gone")
        return [self.leader] if self.leader else []


# -- the code store ------------------------------------------------------------------------------
def test_a_staged_package_is_installed_under_its_id_and_read_back(tmp_path):
    code = CodeStore(tmp_path / "nimbus", {"topology.workers": 3, "k": "daemon"})
    code.prepare()
    with code.staged({"k": "topology"}, _topology_json(), _zip()) as staged:
        assert (staged / packaging.CODE_DIR / "topo.py").is_file()
        code.install(staged, "t-1-1")
    assert not list((tmp_path / "nimbus" / "inbox").iterdir())
    assert code.missing(["t-1-1", "t-2-1"]) == ["t-2-1"]
    conf, topology = code.topology_of("t-1-1")
    assert conf["k"] == "topology" and conf["topology.workers"] == 3
    assert topology.components["s"].parallelism == 2
    assert code.package_file("t-1-1", packaging.CODE_FILE) == \
        code.directory("t-1-1") / packaging.CODE_FILE
    assert code.package_file("t-2-1", packaging.CODE_FILE) is None
    with pytest.raises(TopologyError, match="no package file"):
        code.package_file("t-1-1", "../../etc/passwd")


def test_a_rejected_staged_package_leaves_nothing_behind(tmp_path):
    code = CodeStore(tmp_path / "nimbus", {})
    code.prepare()
    with pytest.raises(TopologyError, match="not a valid zip"):
        with code.staged({}, _topology_json(), b"not a zip"):
            pass
    with pytest.raises(RuntimeError):
        with code.staged({}, _topology_json(), _zip()):
            raise RuntimeError("validation blew up")
    assert not list((tmp_path / "nimbus" / "inbox").iterdir())
    assert not list(code.stormdist.iterdir())


def test_what_a_crash_left_half_done_is_removed_at_start(tmp_path):
    # nimbus killed while validating a submit left inbox/<staged> for ever (and a standby
    # killed while downloading, stormdist/<id>.tmp)
    code = CodeStore(tmp_path / "nimbus", {})
    code.prepare()
    files = {packaging.CONF_FILE: b"{}", packaging.TOPOLOGY_FILE:
             json.dumps(_topology_json()).encode(), packaging.CODE_FILE: _zip()}
    code.install_downloaded("a-1-1", files.__getitem__)
    (tmp_path / "nimbus" / "inbox" / "staged-1").mkdir()
    (code.stormdist / "b-2-1.tmp").mkdir()
    again = CodeStore(tmp_path / "nimbus", {})
    again.prepare()
    assert not list((tmp_path / "nimbus" / "inbox").iterdir())
    assert [p.name for p in again.stormdist.iterdir()] == ["a-1-1"]
    assert again.missing(["a-1-1"]) == []


def test_the_counter_never_goes_back(tmp_path):
    code = CodeStore(tmp_path / "nimbus", {})
    code.prepare()
    assert code.next_counter([]) == 1
    assert code.next_counter(["wc-7-1000", "odd-name"]) == 8
    assert code.next_counter([]) == 9          # stored, even when ZooKeeper forgot


def test_forget_clean_and_downloads(tmp_path):
    code = CodeStore(tmp_path / "nimbus", {})
    code.prepare()
    files = {packaging.CONF_FILE: b"{}", packaging.TOPOLOGY_FILE:
             json.dumps(_topology_json()).encode(), packaging.CODE_FILE: _zip()}
    for tid in ("a-1-1", "b-2-1", "c-3-1"):
        code.install_downloaded(tid, files.__getitem__)
    assert code.missing(["a-1-1", "b-2-1", "c-3-1"]) == []
    assert code.topology_of("a-1-1") is not None
    (code.stormdist / "d-4-1.tmp").mkdir()             # a download in progress
    code.forget("a-1-1")
    code.clean({"b-2-1"})
    assert sorted(p.name for p in code.stormdist.iterdir()) == ["b-2-1", "d-4-1.tmp"]
    assert code.topology_of("a-1-1") is None and code.topology_of("c-3-1") is None


# -- leadership -------------------------------------------------------------------------------
def test_leadership_names_the_leader_and_refuses_writes_on_a_standby():
    standby = Leadership(FakeElection(leader="n1:6627"), "n2:6627")
    assert not standby.is_leader and standby.leader_address() == "n1:6627"
    with pytest.raises(NotLeaderError, match="the leader is n1:6627") as err:
        standby.require()
    assert err.value.leader == "n1:6627"
    assert Leadership(FakeElection(leader="?"), "n2:6627").leader_address() == ""
    Leadership(FakeElection(leading=True), "n1:6627").require()


def test_leadership_run_calls_on_lead_each_term_and_ends_when_cancelled():
    election = FakeElection()
    leadership = Leadership(election, "n1:6627")
    stop = threading.Event()
    terms = []

    def on_lead() -> None:
        terms.append(leadership.is_leader)
        election.leading = False               # the session is lost: the term ends

    leadership.run(stop, on_lead)              # one term, then run() says False: returns
    assert terms == [True]
    leadership.cancel()
    assert election.cancelled


class FailingElection(FakeElection):
    """Its store fails; the test is stopped from inside the failing call."""

    def __init__(self, stop: threading.Event) -> None:
        super().__init__()
        self.stop, self.calls = stop, 0

    def run(self, func: Any) -> bool:
        self.calls += 1
        self.stop.set()                            # so the retry wait returns at once
        raise StateError("no quorum")


def test_leadership_run_logs_a_failing_store_and_retries_until_stopped(caplog):
    stop = threading.Event()
    election = FailingElection(stop)
    Leadership(election, "n1:6627").run(stop, lambda: None)
    assert election.calls == 1
    assert "leader election failed: no quorum; retrying" in caplog.text


# -- reads and the lifecycle over the memory store ---------------------------------------------------
def _leader_parts(tmp_path, election, replication=None, **nimbus_conf):
    """A nimbus's leader parts on the memory store: (store, state, code, leadership,
    lifecycle); ``nimbus_conf`` adds to nimbus's conf."""
    conf = {"squall.state": "memory", "squall.scheduler": "even",
            "storm.local.dir": str(tmp_path), **nimbus_conf}
    store = drivers.driver("state", conf)
    store.start()
    state = ClusterState(store, conf)
    state.setup()
    code = CodeStore(tmp_path / "nimbus", conf)
    code.prepare()
    leadership = Leadership(election, "n2:6627")
    scheduling = Scheduling(conf, state, drivers.driver("scheduler", conf), code)
    lifecycle = TopologyLifecycle(conf, state, code, scheduling, leadership.require,
                                  lambda: None, replication)
    return store, state, code, leadership, lifecycle


@pytest.fixture
def parts(tmp_path):
    election = FakeElection(leader="n1:6627")
    store, state, code, leadership, lifecycle = _leader_parts(tmp_path, election)
    yield state, code, election, NimbusReads(state, code, leadership), lifecycle
    store.close()


def test_reads_answer_on_a_standby_and_send_missing_packages_to_the_leader(parts):
    state, code, election, reads, _ = parts
    state.set_storm("wc-1-1", {"name": "wc", "status": "active", "launch_time": 1})
    state.register_supervisor("s1", {"hostname": "h1", "ports": [6700, 6701],
                                     "uptime_secs": 5, "logviewer_port": 8000})
    state.set_assignment("wc-1-1", {"executor_node_port": {"[1, 1]": ["s1", 6701]}})
    summary = reads.cluster_summary()
    assert summary["leader"] == "n1:6627"
    assert summary["supervisors"] == [{"id": "s1", "hostname": "h1", "ports": [6700, 6701],
                                       "used_ports": [6701], "uptime_secs": 5,
                                       "logviewer_port": 8000}]
    assert [(t["name"], t["num_workers"], t["num_tasks"]) for t in summary["topologies"]] == \
        [("wc", 1, 0)]                           # no local package: no task count
    assert live_topology(state, "wc")[0] == "wc-1-1"
    with pytest.raises(NotAliveError, match="running: wc"):
        reads.topology_info("nope")
    with pytest.raises(NotLeaderError):
        reads.package_file("wc-1-1", packaging.CODE_FILE)
    election.leading = True
    with pytest.raises(NotAliveError, match="no package"):
        reads.package_file("wc-1-1", packaging.CODE_FILE)


def test_the_lifecycle_refuses_writes_on_a_standby(parts):
    state, _, election, _, lifecycle = parts
    state.set_storm("wc-1-1", {"name": "wc", "status": "active", "launch_time": 1})
    with pytest.raises(NotLeaderError):
        lifecycle.kill("wc")
    with pytest.raises(NotLeaderError):
        lifecycle.set_active("wc", False)
    election.leading = True
    lifecycle.set_active("wc", False)
    assert state.get_storm("wc-1-1")["status"] == "inactive"
    with pytest.raises(TopologyError, match="invalid topology name"):
        lifecycle.submit("no spaces", {}, _topology_json(), _zip())
    # a name its files cannot carry: refused at submit (one of 235 characters stopped the
    # supervisors launching any worker, another topology's too)
    with pytest.raises(TopologyError, match=r"invalid topology name bbbbbbbbbbbbbbbbbbbb\.\.\. "
                                            r"\(235 characters\): at most 128"):
        lifecycle.submit("b" * 235, {}, _topology_json(), _zip())
    with pytest.raises(TopologyError) as passed_the_name:     # it goes on to load the code
        lifecycle.submit("b" * 128, {}, _topology_json(), _zip())
    assert "cannot load component class" in str(passed_the_name.value)


def test_request_stop_makes_wait_return(tmp_path):
    nimbus = Nimbus({"storm.local.dir": str(tmp_path)})
    nimbus.request_stop()
    nimbus.wait()                                 # returns: nothing was started
    nimbus.stop()


class HeldReplication:
    """A Replication whose wait for other nimbuses lasts until the test releases it."""

    def __init__(self, state: Any = None, code: Any = None) -> None:
        self.waiting, self.release = threading.Event(), threading.Event()
        self.state, self.code = state, code
        #: at each publish: (the packages this nimbus holds, the topologies /storms names)
        self.published: list[tuple[list[str], list[str]]] = []

    def publish(self) -> None:
        if self.state is not None:
            self.published.append((self.code.packages(), self.state.topology_ids()))

    def wait_for(self, topology_id: str, conf: Any) -> int:
        self.waiting.set()
        self.release.wait(10)
        return 1


def test_a_submit_waiting_for_replication_says_so_and_one_killed_meanwhile_is_not_announced(
        tmp_path, monkeypatch, caplog):
    from squall.daemon import validate
    monkeypatch.setattr(validate, "check_in_subprocess", lambda directory: None)
    replication = HeldReplication()
    store, state, _, _, lifecycle = _leader_parts(
        tmp_path, FakeElection(leader="n1:6627", leading=True), replication)
    announced: list[str] = []
    monkeypatch.setattr("squall.plugin_manager.notify",
                        lambda hook, **kw: announced.append(kw.get("topology_id", "")))
    caplog.set_level("INFO", logger="squall.daemon.nimbus_topologies")
    done: list[str] = []
    submit = threading.Thread(target=lambda: done.append(lifecycle.submit(
        "wc", {"topology.min.replication.count": 2}, _topology_json(), _zip())))
    submit.start()
    try:
        assert replication.waiting.wait(10)
        (tid,) = state.topology_ids()
        assert state.get_storm(tid)["status_reason"] == (
            "waiting for its package to reach 2 nimbuses (topology.min.replication.count)")
        lifecycle.kill("wc", 0)
    finally:
        replication.release.set()
        submit.join(10)
        store.close()
    assert done == [tid] and announced == []
    assert "was killed before its package replicated" in caplog.text


def test_a_name_in_its_kill_wait_cannot_be_submitted_again(parts, monkeypatch):
    from squall.daemon import validate
    from squall.errors import AlreadyAliveError
    monkeypatch.setattr(validate, "check_in_subprocess", lambda directory: None)
    state, _, election, _, lifecycle = parts
    election.leading = True
    lifecycle.submit("wc", {}, _topology_json(), _zip())
    lifecycle.kill("wc", 30)
    with pytest.raises(AlreadyAliveError, match=r"topology 'wc' is being killed \(\d+ s of its "
                                                r"kill wait left\); submit it again once"):
        lifecycle.submit("wc", {}, _topology_json(), _zip())
    assert len(state.topology_ids()) == 1


def test_a_full_disk_at_submit_is_one_error_line_naming_the_local_dir(parts, monkeypatch,
                                                                       caplog):
    from pathlib import Path

    from squall.daemon import validate
    from squall.errors import SquallError
    monkeypatch.setattr(validate, "check_in_subprocess", lambda directory: None)
    state, code, election, _, lifecycle = parts
    election.leading = True

    def full(self: Path, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    caplog.set_level("ERROR", logger="squall")
    inbox = code.local_dir / "inbox"
    with pytest.raises(SquallError) as refused:
        lifecycle.submit("wc", {}, _topology_json(), _zip())
    assert str(refused.value) == (f"nimbus cannot write its storm.local.dir ({inbox}): "
                                  "No space left on device")
    assert [r.getMessage() for r in caplog.records] == [str(refused.value)]
    assert not caplog.records[0].exc_info
    # nothing half-submitted
    assert state.topology_ids() == [] and not list(inbox.iterdir())
    assert not list(code.stormdist.iterdir())


# -- kill and rebalance waits, topology.max.task.parallelism, the graph after a rebalance ---------
class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


def _two_components_json() -> dict[str, Any]:
    """Spout ``s`` (2 executors), bolt ``b`` (1 executor over 4 tasks)."""
    b = TopologyBuilder()
    b.set_spout("s", Src, parallelism=2)
    b.set_bolt("b", Sink, parallelism=1).shuffle_grouping("s").set_num_tasks(4)
    return b.create_topology().to_json()


@pytest.fixture
def leader(parts, monkeypatch):
    """``parts`` leading, with packages accepted without the validating subprocess."""
    from squall.daemon import validate
    monkeypatch.setattr(validate, "check_in_subprocess", lambda directory: None)
    parts[2].leading = True
    return parts


def test_a_pass_says_when_the_next_kill_or_rebalance_wait_ends(leader):
    state, _, _, _, lifecycle = leader
    lifecycle.submit("wc", {}, _topology_json(), _zip())
    lifecycle.submit("other", {}, _topology_json(), _zip())
    assert lifecycle.monitor_pass() is None                  # nothing waits
    before = time.monotonic()
    lifecycle.rebalance("wc", wait_secs=30)
    lifecycle.kill("other", 20)
    due = lifecycle.monitor_pass()                           # neither is due yet
    assert due is not None and before + 20 <= due <= time.monotonic() + 20
    assert {b["status"] for b in state.storms().values()} == {"rebalancing", "killed"}
    lifecycle.kill("other", 0)
    due = lifecycle.monitor_pass()                           # "other" is gone
    assert [b["name"] for b in state.storms().values()] == ["wc"]
    assert due is not None and before + 30 <= due <= time.monotonic() + 30


def test_a_monitor_pass_during_a_submit_keeps_the_new_package(leader, monkeypatch):
    """The package cleaning of a monitor pass waits for a submit under way: the package is
    in place before /storms names the topology, and was deleted when a pass came between."""
    state, code, _, _, lifecycle = leader
    install = code.install
    cleaner: list[threading.Thread] = []

    def install_then_clean(staged, tid):
        install(staged, tid)
        cleaner.append(threading.Thread(target=lifecycle.clean_packages))
        cleaner[0].start()
        cleaner[0].join(0.3)      # it runs now if nothing holds it back

    monkeypatch.setattr(code, "install", install_then_clean)
    tid = lifecycle.submit("wc", {}, _topology_json(), _zip())
    cleaner[0].join(10)
    assert not cleaner[0].is_alive()
    assert code.missing([tid]) == []


def test_the_kill_and_each_pass_drop_trident_records_whose_states_died_with_the_topology(
        leader):
    """Nimbus drops what Trident kept for a killed topology whose states all died with it,
    and what a worker still committing as it was killed wrote after that; a record of a
    state that outlives the topology (Redis) stays for the next run of that name."""
    state, _, _, _, lifecycle = leader

    def record(name, outlives):
        state.store.put(f"/trident/{name}/coordinators/s", json.dumps({
            "committed": 3, "topology_id": f"{name}-1-1", "streams": ["s"],
            "outlives": outlives}).encode())

    lifecycle.submit("wc", {}, _topology_json(), _zip())
    record("wc", False)
    record("redis", True)
    lifecycle.monitor_pass()
    assert state.trident_names() == ["redis", "wc"]          # "wc" runs
    lifecycle.kill("wc", 0)
    lifecycle.monitor_pass()
    assert state.trident_names() == ["redis"]
    record("wc", False)                                       # a late worker's commit
    lifecycle.monitor_pass()
    assert state.trident_names() == ["redis"]


def test_a_second_kill_replaces_the_wait_and_other_commands_say_it_is_being_killed(leader):
    state, _, _, reads, lifecycle = leader
    lifecycle.submit("wc", {}, _topology_json(), _zip())
    lifecycle.kill("wc", 60)
    being_killed = (r"^topology 'wc' is being killed \((59|60) s of its kill wait left\); only "
                    r"kill acts on it now \(kill --wait 0 ends the wait\)$")
    for command in (lambda: lifecycle.set_active("wc", True),
                    lambda: lifecycle.rebalance("wc", wait_secs=0),
                    lambda: lifecycle.set_log_levels("wc", {"ROOT": "DEBUG"}, 0)):
        with pytest.raises(NotAliveError, match=being_killed):
            command()
    # reads answer through the wait (the UI's page and `squall monitor` watch it drain)
    info = reads.topology_info("wc")
    assert info["name"] == "wc" and info["status"] == "killed"
    lifecycle.kill("wc", 30)                                 # Storm: a new wait, from now
    (tid,) = state.topology_ids()
    assert 29 <= state.get_storm(tid)["kill_time"] - time.time() <= 30
    lifecycle.kill("wc", 0)
    assert lifecycle.monitor_pass() is None and state.topology_ids() == []
    with pytest.raises(NotAliveError, match="no topology named 'wc' is running; running: none"):
        lifecycle.kill("wc", 0)


def test_a_pending_topology_killed_loses_its_pending_reason(leader):
    # `squall list` showed "killed ... (needs 1 more worker slots ...)" through the kill wait
    state, _, _, reads, lifecycle = leader
    lifecycle.submit("wc", {}, _topology_json(), _zip())
    (tid,) = state.topology_ids()
    state.update_storm(tid, status="pending", status_reason="needs 1 more worker slots")
    lifecycle.kill("wc", 30)
    assert state.get_storm(tid)["status_reason"] == ""
    (summary,) = reads.cluster_summary()["topologies"]
    assert (summary["status"], summary["status_reason"]) == ("killed", "")


@pytest.mark.parametrize("wait", [math.inf, float("1e309"), -math.inf, math.nan, -1.0, 1e300,
                                  86400.5])
def test_a_kill_or_rebalance_wait_that_never_ends_or_is_no_number_is_refused(leader, wait):
    # an infinite wait left the topology rebalancing (or killed, holding its slots) for
    # ever, 1e300 as good as one; NaN was taken for 0, a negative wait too: nimbus answers
    # every client the same (the CLI and the UI refuse more than a day too)
    state, _, _, _, lifecycle = leader
    tid = lifecycle.submit("wc", {}, _topology_json(), _zip())
    refused = (r"^the (kill|rebalance) wait must be a number of seconds from 0 to 86400 \(a "
               r"day\); got -?(inf|nan|1\.0|1e\+300|86400\.5)$")
    with pytest.raises(ConfigError, match=refused.replace("(kill|rebalance)", "rebalance")):
        lifecycle.rebalance("wc", wait_secs=wait, num_workers=1)
    with pytest.raises(ConfigError, match=refused.replace("(kill|rebalance)", "kill")):
        lifecycle.kill("wc", wait)
    base = state.get_storm(tid)
    assert base["status"] == "active" and not base.get("rebalance")
    lifecycle.kill("wc", 0)                              # the same commands with a wait: done
    assert lifecycle.monitor_pass() is None and state.topology_ids() == []


def test_an_unknown_name_lists_the_topologies_being_killed_apart(leader):
    _, _, _, reads, lifecycle = leader
    lifecycle.submit("wc", {}, _topology_json(), _zip())
    lifecycle.submit("other", {}, _topology_json(), _zip())
    lifecycle.kill("wc", 60)
    message = r"^no topology named 'nope' is running; running: other; being killed: wc$"
    for command in (lambda: lifecycle.kill("nope", 0), lambda: reads.topology_info("nope"),
                    lambda: lifecycle.rebalance("nope", wait_secs=0)):
        with pytest.raises(NotAliveError, match=message):
            command()
    lifecycle.kill("other", 60)
    with pytest.raises(NotAliveError, match=r"running: none; being killed: other, wc$"):
        lifecycle.set_active("nope", True)


def test_a_user_is_told_of_their_own_topologies_being_killed_only(parts):
    from squall.daemon.nimbus_access import TopologyAccess
    state = parts[0]
    access = TopologyAccess({"nimbus.authentication": "token", "nimbus.admins": ["root"]},
                            state)
    for tid, name, owner, status in (("a-1-1", "a", "alice", "active"),
                                     ("b-1-1", "b", "alice", "killed"),
                                     ("c-1-1", "c", "bob", "killed")):
        state.set_storm(tid, {"name": name, "status": status, "owner": owner,
                              "launch_time": 1})
    with pytest.raises(NotAliveError, match=r"running: a; being killed: b$"):
        access.check("alice", "nope", "kill")
    with pytest.raises(NotAliveError, match=r"running: none$"):
        access.check("carol", "nope", "kill")


def test_max_task_parallelism_caps_the_submitted_components_not_the_ackers(leader):
    state, code, _, _, lifecycle = leader
    tid = lifecycle.submit("wc", {"topology.max.task.parallelism": 1,
                                  "topology.acker.executors": 2}, _two_components_json(), _zip())
    topology = code.topology_of(tid)[1]
    assert {c: (s.parallelism, s.num_tasks) for c, s in topology.components.items()} == \
        {"s": (1, 1), "b": (1, 1), "__acker": (2, 2)}
    assert topology.components["b"].config["topology.tasks"] == 1
    assert state.get_storm(tid)["component_executors"] == {"__acker": 2, "b": 1, "s": 1}
    # a rebalance asking for more executors than that gets the cap (as Storm: executors
    # never outnumber the tasks)
    lifecycle.rebalance("wc", wait_secs=0, executors={"b": 3})
    lifecycle.monitor_pass()
    assert state.get_storm(tid)["component_executors"]["b"] == 1


def test_workers_beat_at_nimbuss_pace_unless_the_topology_sets_its_own(tmp_path, monkeypatch):
    # a worker's conf is its supervisor's under the topology's: without nimbus's beat in the
    # topology, a supervisor configured to beat slower than nimbus.task.timeout.secs would
    # have nimbus take its healthy workers for dead and move them, over and over
    from squall.daemon import validate
    monkeypatch.setattr(validate, "check_in_subprocess", lambda directory: None)
    store, _, code, _, lifecycle = _leader_parts(
        tmp_path, FakeElection(leading=True), **{"task.heartbeat.frequency.secs": 2,
                                                 "nimbus.task.timeout.secs": 6})
    def shipped(tid: str) -> Any:      # the topology's own conf, which its workers get
        return packaging.read_json(code.directory(tid) / packaging.CONF_FILE).get(
            "task.heartbeat.frequency.secs")

    try:
        assert shipped(lifecycle.submit("wc", {}, _topology_json(), _zip())) == 2
        own = lifecycle.submit("own", {"task.heartbeat.frequency.secs": 1}, _topology_json(),
                               _zip())
        assert shipped(own) == 1
    finally:
        store.close()


def test_the_graph_and_the_ui_show_the_executors_of_the_last_rebalance(leader):
    from squall.ui import views
    _, _, _, reads, lifecycle = leader
    lifecycle.submit("wc", {}, _two_components_json(), _zip())
    lifecycle.rebalance("wc", wait_secs=0, executors={"s": 1, "b": 3})
    lifecycle.monitor_pass()
    info = reads.topology_info("wc")
    assert {n["id"]: (n["executors"], n["tasks"]) for n in info["graph"]} == \
        {"s": (1, 2), "b": (3, 4)}
    shown = views.visualization(info, ":all-time")
    assert {c: v[":executors"] for c, v in shown.items()} == {"s": 1, "b": 3}
    page = views.topology_page(info, ":all-time", time.time())  # nothing reported yet
    assert {r["spoutId"] if "spoutId" in r else r["boltId"]: r["executors"]
            for r in page["spouts"] + page["bolts"]} == {"s": 1, "b": 3}


def test_topology_info_names_every_assigned_worker_and_squall_logs_reads_them(parts):
    # a worker that crashed before its first heartbeat has the log that says why: squall logs
    # (which asks nimbus, not ZooKeeper) lists it too
    from squall.cli.logs import worker_logs
    state, _, _, reads, _ = parts
    state.set_storm("wc-1-1", {"name": "wc", "status": "active", "launch_time": 1})
    state.register_supervisor("s1", {"hostname": "h1", "ports": [6700, 6701],
                                     "uptime_secs": 5, "logviewer_port": 8000})
    state.set_assignment("wc-1-1", {"executor_node_port": {"[1, 1]": ["s1", 6700],
                                                           "[2, 2]": ["s1", 6701]},
                                    "node_host": {"s1": "h1"}})
    state.write_worker_beat("wc-1-1", "s1", 6700, {"uptime_secs": 1, "executors": {}})
    info = reads.topology_info("wc")
    assert [w["port"] for w in info["workers"]] == [6700]            # the one that beats
    assert [(w["host"], w["port"], w["logviewer_port"]) for w in info["assigned_workers"]] \
        == [("h1", 6700, 8000), ("h1", 6701, 8000)]
    logs = worker_logs(info)
    assert [(w.host, w.port) for w in logs] == [("h1", 6700), ("h1", 6701)]
    assert logs[1].url == "http://h1:8000/log?topology=wc-1-1&port=6701&file=log"


def test_a_worker_that_died_of_a_components_error_is_the_status_reason(parts):
    """A worker crash loop is no healthy topology: ``squall list`` and the topology info say
    which component ended the newest worker, and how long ago."""
    state, _, _, reads, _ = parts
    state.set_storm("wc-1-1", {"name": "wc", "status": "active", "launch_time": 1})
    state.set_assignment("wc-1-1", {"executor_node_port": {"[1, 1]": ["s1", 6700]},
                                    "node_host": {"s1": "h1"}})
    state.write_worker_beat("wc-1-1", "s1", 6700, {"uptime_secs": 1, "executors": {}})
    state.report_error("wc-1-1", "split", {"component": "split", "task": 1,
                                           "error": "ValueError: x", "time_secs": time.time()})
    assert [t["status_reason"] for t in reads.cluster_summary()["topologies"]] == [""]
    last = "worker stopped: component 'split' (task 1) raised SystemExit: 2"
    state.report_error("wc-1-1", "split", {
        "component": "split", "task": 1, "error": f"Traceback ...\nSystemExit: 2\n{last}",
        "time_secs": int(time.time()) - 3, "host": "h1", "port": 6700, "fatal": True})
    (reason,) = [t["status_reason"] for t in reads.cluster_summary()["topologies"]]
    assert reason.startswith("a worker died ") and reason.endswith(f"(h1:6700): {last}"), reason
    assert reads.topology_info("wc")["status_reason"] == reason


def test_the_leader_says_it_holds_a_package_before_storms_names_its_topology(tmp_path,
                                                                             monkeypatch):
    # a standby seeing the topology first found no nimbus holding its package: one ERROR
    # line ("no live nimbus holds the package") a second before the leader's registration
    from squall.daemon import validate
    monkeypatch.setattr(validate, "check_in_subprocess", lambda directory: None)
    replication = HeldReplication()
    replication.release.set()
    store, state, code, _, lifecycle = _leader_parts(
        tmp_path, FakeElection(leader="n1:6627", leading=True), replication)
    replication.state, replication.code = state, code
    try:
        tid = lifecycle.submit("wc", {}, _topology_json(), _zip())
    finally:
        store.close()
    assert replication.published and replication.published[0] == ([tid], [])


@pytest.mark.parametrize("timeout", [math.inf, math.nan, -1.0])
def test_a_log_level_timeout_that_never_ends_or_is_no_number_is_refused(leader, timeout):
    # an infinite timeout was kept as a revert that never comes, NaN as one that never
    # compares due: every client (CLI, UI, a script's NimbusClient) gets the same refusal
    state, _, _, _, lifecycle = leader
    tid = lifecycle.submit("wc", {}, _topology_json(), _zip())
    with pytest.raises(ConfigError, match=r"^the timeout must be 0 \(none\) or a finite number"):
        lifecycle.set_log_levels("wc", {"ROOT": "DEBUG"}, timeout)
    assert not (state.get_log_config(tid) or {}).get("loggers")
    lifecycle.set_log_levels("wc", {"ROOT": "DEBUG"}, 30)
    assert state.get_log_config(tid)["loggers"]
