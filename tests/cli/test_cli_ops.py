"""The command line's own behaviour: --version, python -m squall, did-you-mean on a mistyped
command, help on every argument, the extra to install when a dependency is missing (with
nothing written first), plugins marked unavailable, rebalance caps explained."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from squall.cli import cluster
from squall.cli.main import build_parser
from squall.daemon.topology_requests import rebalance_caps

SQUALL = [sys.executable, "-m", "squall"]
WORDCOUNT = str(Path(__file__).resolve().parents[2] / "examples" / "wordcount.py") + ":topology"


def run(*args: str, cwd: Path | None = None, code: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SQUALL_CONF"}
    command = [sys.executable, "-c", code, *args] if code else [*SQUALL, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd, env=env)


def test_version_and_python_dash_m() -> None:
    from importlib import metadata
    done = run("--version")
    assert done.returncode == 0 and done.stdout == f"squall {metadata.version('squall')}\n"
    assert "usage: squall" in run("--help").stdout


@pytest.mark.parametrize(("typed", "meant"), [("sumbit", "submit"), ("lsit", "list"),
                                              ("plugin", "plugins"), ("rebalanse", "rebalance")])
def test_a_mistyped_command_gets_a_did_you_mean(typed: str, meant: str) -> None:
    done = run(typed)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"squall: error: unknown command {typed!r} (did you mean {meant!r}?) "
                           "(see 'squall --help')\n")


def _arguments(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.Action]]:
    out = []
    for action in parser._actions:   # argparse exposes its actions only this way
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _arguments(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            out.append((path, action))
    return out


def test_every_argument_of_every_command_has_help() -> None:
    missing = [f"{path}: {a.dest}" for path, a in _arguments(build_parser(), "squall")
               if not a.help or a.help == argparse.SUPPRESS and a.dest not in (
                   "config", "verbose") and not a.dest.startswith("overrides")]
    assert missing == []


# a child interpreter in which the cluster extra's modules cannot be imported
WITHOUT_CLUSTER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('grpc', 'kazoo', 'zmq', 'google'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from squall.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", [["list"], ["submit", WORDCOUNT], ["ui"], ["nimbus"],
                                     ["supervisor"], ["logs", "t"], ["set-log-level", "t",
                                                                     "x=DEBUG"]])
def test_cluster_commands_without_the_cluster_extra_name_it(command: list[str],
                                                            tmp_path: Path) -> None:
    done = run(*command, cwd=tmp_path, code=WITHOUT_CLUSTER)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"squall: error: `squall {command[0]}` needs the 'cluster' extra (missing module "
        f"{done.stderr.split('missing module ')[1].split(')')[0]}); install it with: pip "
        "install 'squall[cluster]'")
    assert list(tmp_path.iterdir()) == []          # no ./squall-local/ (or anything) made


@pytest.mark.parametrize("module", ["starlette", "uvicorn"])
def test_ui_without_its_web_server_names_the_extra(module: str, tmp_path: Path) -> None:
    # squall[zookeeper,grpc] has kazoo and grpc but not the UI's web server: one line, not a
    # traceback from inside the started daemon
    code = WITHOUT_CLUSTER.replace("('grpc', 'kazoo', 'zmq', 'google')", f"({module!r},)")
    done = run("ui", "--port", "0", cwd=tmp_path, code=code)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"squall: error: `squall ui` needs the 'cluster' extra (missing module {module!r}); "
        "install it with: pip install 'squall[cluster]'"]
    assert list(tmp_path.iterdir()) == []          # nothing started, no log written


@pytest.mark.parametrize(("module", "extra"), [
    ("starlette.routing", "cluster"), ("uvicorn", "cluster"), ("kazoo", "cluster"),
    ("cryptography.x509", "security"), ("pynng", "nng"), ("pyarrow", "spark"),
    ("numpy", None)])
def test_a_missing_module_names_the_extra_that_installs_it(module: str,
                                                           extra: str | None) -> None:
    from squall.cli.plugins import missing_extra
    assert missing_extra(ModuleNotFoundError(f"No module named {module!r}",
                                             name=module)) == extra


def test_plugins_marks_what_cannot_load(tmp_path: Path) -> None:
    done = run("plugins", code=WITHOUT_CLUSTER)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    zmq = next(x for x in lines if x.split()[:1] == ["zmq"])
    assert "UNAVAILABLE: needs the 'zmq' module: pip install 'squall[zmq]'" in zmq
    local = next(x for x in lines if x.split()[:1] == ["local"])
    assert "UNAVAILABLE" not in local


def test_rebalance_caps_are_explained() -> None:
    info = {"components": {"split": {"tasks": 4}, "count": {"tasks": 8}},
            "workers": [{"worker": "s1:6700"}, {"worker": "s2:6700"}]}
    sup = types.SimpleNamespace
    state = sup(supervisors=[sup(ports=[6700, 6701], used_ports=[6700]),
                             sup(ports=[6700, 6701], used_ports=[6700, 6701])])
    notes = rebalance_caps(info, state, 5, {"split": 6, "count": 8})
    assert notes == [
        "split: 6 executors asked, it gets 4: it has 4 tasks (fixed at submit; raise them "
        "with set_num_tasks)",
        "5 workers asked, at most 3 can run: the cluster has 1 free slot and the topology "
        "holds 2"]
    assert rebalance_caps(info, state, 3, {"split": 4}) == []
    # right after another rebalance no executor has reported yet and a worker has not beaten:
    # the tasks come from the graph, the slots held from the assignment (the note was missed)
    moving = {"components": {}, "workers": [{"worker": "s1:6700"}],
              "assigned_workers": [{"worker": "s1:6700"}, {"worker": "s2:6700"}],
              "graph": [{"id": "split", "tasks": 4}, {"id": "count", "tasks": 8}]}
    assert rebalance_caps(moving, state, 5, {"split": 6, "count": 8}) == notes


@pytest.mark.parametrize("text", ["inf", "1e309", "Infinity", "nan"])
def test_a_wait_or_interval_that_never_ends_is_refused(text: str, capsys) -> None:
    # `kill -w inf` / `rebalance -w inf` left the topology in its transition for ever
    parser = build_parser()
    for args, option in ((["kill", "wc", "-w", text], "-w/--wait"),
                         (["rebalance", "wc", "--wait", text], "-w/--wait"),
                         (["monitor", "wc", "--interval", text], "--interval"),
                         (["set-log-level", "wc", "x=DEBUG", "--timeout", text], "--timeout")):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(args)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"argument {option}: expected a number of seconds, " \
            f"got {text!r}" in err, (args, err)


def test_uptime_text() -> None:
    assert [cluster.uptime_text(s) for s in (5, 75, 3725, 93784)] == [
        "5s", "1m 15s", "1h 2m", "1d 2h 3m"]


def test_flow_order_and_the_monitor_frame() -> None:
    import doctest

    from squall.cli.monitor import Rates, frame
    from squall.daemon import topology_flow
    assert doctest.testmod(topology_flow).failed == 0
    # a cycle does not hang it; a component after everything feeding it
    assert topology_flow.flow_order({"a": [], "b": ["a", "c"], "c": ["b"], "d": ["c"]}) == [
        "a", "b", "c", "d"]

    def info(emitted: int, executed: int, failed: int, at: float) -> dict:
        """Two workers; the first reports at ``at``, the second only at 100."""
        return {"name": "wc", "id": "wc-1-1", "status": "active", "num_workers": 2,
                "uptime_secs": 30, "flow": ["sentences", "split", "count", "__acker"],
                "workers": [{"worker": "s1:1", "time_secs": at},
                            {"worker": "s1:2", "time_secs": 100.0}],
                "components": {
                    "count": {"kind": "bolt", "executors": 2, "tasks": 4, "emitted": 0,
                              "executed": executed, "acked": executed, "failed": failed},
                    "split": {"kind": "bolt", "executors": 1, "tasks": 1,
                              "emitted": emitted, "executed": emitted // 5, "acked": 0,
                              "failed": 0},
                    "sentences": {"kind": "spout", "executors": 1, "tasks": 1,
                                  "emitted": emitted // 5, "executed": 0,
                                  "acked": emitted // 5, "failed": 0}},
                "executors": [
                    {"component": "count", "kind": "bolt", "executed": executed // 5,
                     "execute_latency_ms": 2.0, "queued": 3, "worker": "s1:1",
                     "executor": "[1, 1]", "acked": executed // 5, "failed": failed},
                    {"component": "count", "kind": "bolt", "executed": 3 * executed // 5,
                     "execute_latency_ms": 1.0, "queued": 4, "worker": "s1:2",
                     "executor": "[2, 2]"},
                    {"component": "split", "kind": "bolt", "emitted": emitted,
                     "worker": "s1:1", "executor": "[3, 3]"},
                    {"component": "sentences", "kind": "spout", "acked": 10,
                     "emitted": emitted // 5, "complete_latency_ms": 12.5, "queued": 0,
                     "pending": 17, "worker": "s1:1", "executor": "[4, 4]"}],
                "errors": {"count": [{"error": "Traceback ...\nValueError: old"},
                                     {"error": "Traceback ...\nValueError: bad word"}]}}
    rates = Rates()
    assert rates.update(info(1000, 500, 2, at=10.0), 0.0) == ({}, False)
    # read again before any worker reported: nothing new, no rates yet
    assert rates.update(info(1000, 500, 2, at=10.0), 1.0) == ({}, False)
    # the first worker reported 2 s later; the second has not reported again
    got, complete = rates.update(info(2000, 1000, 6, at=12.0), 3.0)
    assert not complete and got["split"][0] == 500.0 and got["count"][1] == 50.0
    text = frame(info(2000, 1000, 6, at=12.0), got)
    rows = [line.split() for line in text.splitlines()]
    table = {r[0]: r for r in rows[3:6]}
    assert [r[0] for r in rows[2:6]] == ["COMPONENT", "sentences", "split", "count"]
    # EMIT/s EXEC/s ACK/s FAIL/s LATENCY FAILED QUEUED PENDING
    assert table["count"][4:] == ["0.0", "50.0", "50.0", "2.0", "1.250", "6", "7", "-"]
    assert table["split"][4] == "500.0" and table["sentences"][8] == "12.500"
    assert table["sentences"][11] == "17"
    assert text.rstrip().endswith("count: ValueError: bad word")
    # a read between reports keeps the last rates (it showed zero, then twice the rate)
    assert rates.update(info(2000, 1000, 6, at=12.0), 4.0)[0] == got
    # just after a rebalance no worker has reported: each component keeps its row, with
    # the executors and tasks it will have and dashes for what is not known yet (the table
    # was empty)
    fresh = {**info(0, 0, 0, at=0.0), "components": {}, "executors": [], "workers": [],
             "graph": [{"id": "sentences", "kind": "spout", "executors": 1, "tasks": 1},
                       {"id": "split", "kind": "bolt", "executors": 3, "tasks": 4},
                       {"id": "count", "kind": "bolt", "executors": 2, "tasks": 4}]}
    rows = [line.split() for line in frame(fresh, {}).splitlines()]
    assert [r[:4] for r in rows[3:6]] == [["sentences", "spout", "1", "1"],
                                          ["split", "bolt", "3", "4"],
                                          ["count", "bolt", "2", "4"]]
    assert rows[4][4:] == ["-"] * 8


def test_the_monitor_ends_quietly_when_its_topology_is_killed(capsys) -> None:
    # it ended with "error: no topology named 'm' is running" and status 2
    from squall.cli.monitor import watch
    from squall.errors import NotAliveError
    info = {"name": "m", "id": "m-1-1", "status": "active", "components": {}, "executors": [],
            "workers": [], "flow": [], "graph": []}
    reads = [info, info, info]

    def read() -> dict[str, Any]:
        if not reads:
            raise NotAliveError("no topology named 'm' is running; running: none")
        return reads.pop()
    assert watch(read, 0.001, once=False, clear=False) == 0
    out, err = capsys.readouterr()
    assert out.count("m (m-1-1)  active") == 2 and err == "squall: the topology is gone\n"
    # gone before it showed anything: the command's one-line error, as for a wrong name
    reads[:] = [info]
    with pytest.raises(NotAliveError, match="no topology named 'm'"):
        watch(read, 0.001, once=True, clear=False)


def test_monitor_and_set_log_level_mistakes_are_one_line(tmp_path: Path) -> None:
    from squall.daemon.ports import free_port
    nowhere = ["-c", f"nimbus.seeds=[127.0.0.1:{free_port()}]"]
    for args, message in (
            (["monitor", "wc", "--interval", "0"],
             "argument --interval: must be more than 0 seconds"),
            (["set-log-level", "wc", "squall.worker"], "expected LOGGER=LEVEL"),
            (["set-log-level", "wc", "x=DEBUG", "--timeout", "-1"],
             "argument --timeout: must be 0 seconds or more"),
            # a negative wait was taken for "at once"; a negative tail for an offset, 0 for all
            (["kill", "wc", "--wait", "-30"], "argument -w/--wait: must be 0 seconds or more"),
            (["rebalance", "wc", "--wait", "nan"], "argument -w/--wait: expected a number"),
            # 1e300 was taken, and nimbus's messages printed a 300-digit wait
            (["kill", "wc", "--wait", "1e300"],
             "argument -w/--wait: must be at most 86400 seconds (a day)"),
            (["logs", "wc", "--tail", "-100"], "argument --tail: must be 0 bytes or more"),
            (["dev-zookeeper", "--port", "99999"], "argument --port: must be a port from 0"),
            (["ui", "--port", "-1"], "argument --port: must be a port from 0"),
            (["debug", "wc"], "one of the arguments --enable --disable --show is required"),
            (["monitor", "wc", "--once"], "no nimbus leader answered")):
        done = run(*nowhere, *args, cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == "", (args, done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr, (args, done.stderr)


def test_a_rebalance_count_beyond_what_nimbus_takes_is_one_line(tmp_path: Path) -> None:
    # 3000000000 workers was a Python traceback (protobuf's int32: Value out of range)
    from squall.daemon.ports import free_port
    nowhere = ["-c", f"nimbus.seeds=[127.0.0.1:{free_port()}]"]
    for args, message in (
            (["--workers", "3000000000"], "--workers must be from 1 to 2147483647, got "
                                          "3000000000"),
            (["--executors", "split=99999999999"], "bad --executors entry "
                                                   "'split=99999999999': expected COMPONENT=N "
                                                   "with N from 1 to 2147483647")):
        done = run(*nowhere, "rebalance", "wc", *args, cwd=tmp_path)
        assert done.returncode != 0 and done.stdout == "", (args, done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr, (args, done.stderr)


def test_a_bad_choice_of_an_option_names_the_option_not_a_command(capsys) -> None:
    from squall.cli.main import _Parser
    parser = _Parser(prog="squall x")
    parser.add_argument("--format", choices=["text", "json"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--format", "jsn"])
    assert capsys.readouterr().err == ("squall x: error: --format 'jsn' is not one of text, "
                                       "json (did you mean 'json'?) (see 'squall x --help')\n")


TYPO_TOPOLOGY = """
from squall import Spout, TopologyBuilder

class S(Spout):
    outputs = ["x"]
    def next_tuple(self):
        pass

b = TopologyBuilder()
b.set_spout("s", S, config={"topology.tick.tuple.freq.sec": 5})
topology = b.create_topology()
topology.conf["topology.max.spout.pendng"] = 10
"""


def submitted_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names ``cmd_submit`` submits under, to a stand-in for nimbus."""
    sent: list[str] = []

    class Nimbus:
        def submit_topology(self, name: str, conf: Any, topology: Any, code: Any) -> str:
            sent.append(name)
            return f"{name}-1"

        def close(self) -> None:
            pass
    monkeypatch.setattr(cluster, "_client", lambda conf: Nimbus())
    return sent


def test_submit_warns_of_the_topologys_mistyped_keys_where_the_user_sees_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "typotopo.py").write_text(TYPO_TOPOLOGY)
    sent = submitted_names(monkeypatch)
    args = argparse.Namespace(target=f"{tmp_path / 'typotopo.py'}:topology", name="typo")
    with caplog.at_level("WARNING", logger="squall.config"):
        assert cluster.cmd_submit(args, {}) == 0
    assert sent == ["typo"]
    assert "unknown config key 'topology.max.spout.pendng' (did you mean " \
           "'topology.max.spout.pending'?)" in caplog.text
    assert "component 's': unknown config key 'topology.tick.tuple.freq.sec'" in caplog.text


def test_submit_says_the_machines_keys_do_not_reach_the_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # -c worker.log.level reached the components' confs while the workers ran without it
    from squall import config
    (tmp_path / "typotopo.py").write_text(TYPO_TOPOLOGY)
    sent = submitted_names(monkeypatch)
    conf = config.load_config(None, ["worker.log.level=DEBUG", "topology.debug=true",
                                     "nimbus.seeds=[127.0.0.1]"], env={}, home="/nonexistent")
    args = argparse.Namespace(target=f"{tmp_path / 'typotopo.py'}:topology", name="m")
    assert cluster.cmd_submit(args, conf) == 0
    assert sent == ["m"]
    err = capsys.readouterr().err
    assert "warning: worker.log.level: the machines' keys" in err
    assert "topology.debug" not in err and "nimbus.seeds" not in err


STATEFUL_TOPOLOGY = """
from squall import Spout, StatefulBolt, TopologyBuilder

class S(Spout):
    outputs = ["w"]

class Keep(StatefulBolt):
    def init_state(self, state):
        self.state = state

    def process(self, tup):
        pass

b = TopologyBuilder()
b.set_spout("s", S)
b.set_bolt("counts", Keep).shuffle_grouping("s")
topology = b.create_topology()
"""


@pytest.mark.parametrize("provider, warned", [(None, True), ("redis", False)])
def test_submit_warns_that_memory_state_does_not_outlive_a_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        provider: str | None, warned: bool) -> None:
    # the default provider lost every stateful bolt's state at a rebalance, without a word
    from squall import config
    (tmp_path / "statetopo.py").write_text(STATEFUL_TOPOLOGY)
    submitted_names(monkeypatch)
    conf = config.load_config(None, [f"topology.state.provider={provider}"] if provider else [],
                              env={}, home="/nonexistent")
    args = argparse.Namespace(target=f"{tmp_path / 'statetopo.py'}:topology", name="st")
    assert cluster.cmd_submit(args, conf) == 0
    err = capsys.readouterr().err
    assert ("warning: stateful bolt(s) counts keep their state in their worker's memory" in err) \
        is warned, err


def test_an_empty_submit_name_goes_to_nimbus_as_given(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # "" is not a name: nimbus refuses it with the rule names follow (it was replaced by the
    # topology's default name, and submitted)
    (tmp_path / "typotopo.py").write_text(TYPO_TOPOLOGY)
    sent = submitted_names(monkeypatch)
    target = f"{tmp_path / 'typotopo.py'}:topology"
    cluster.cmd_submit(argparse.Namespace(target=target, name=""), {})
    cluster.cmd_submit(argparse.Namespace(target=target, name=None), {})
    assert sent == ["", "topology"]


@pytest.mark.parametrize("daemon", ["nimbus", "supervisor"])
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])     # SIGHUP: its terminal closed
def test_sigterm_or_sighup_stops_a_daemon_still_waiting_for_zookeeper(tmp_path: Path, daemon: str,
                                                                      sig: str) -> None:
    # it waited out storm.zookeeper.connection.timeout (15 s) before it stopped
    import signal
    import socket
    import time
    from squall.testing import wait_until
    with socket.socket() as s:              # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "c.yaml").write_text(
        f"storm.zookeeper.servers: [127.0.0.1]\nstorm.zookeeper.port: {port}\n"
        f"storm.local.dir: {tmp_path / 'local'}\nnimbus.port: 0\n"
        "storm.zookeeper.connection.timeout: 60\n")
    log = tmp_path / "out.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([*SQUALL, "--config", str(tmp_path / "c.yaml"), daemon],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "Connection refused" in log.read_text(), 30,
                   message=lambda: log.read_text())
        start = time.monotonic()
        proc.send_signal(getattr(signal, sig))
        rc = proc.wait(30)
        took = time.monotonic() - start
        assert rc == 0 and took < 10, (rc, took, log.read_text())
        assert f"{daemon}: stopped while starting" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_daemon_that_stops_by_itself_ends_its_command_with_why(tmp_path: Path) -> None:
    # a supervisor whose storm.local.dir another one took stops: `squall supervisor` exited 0
    from squall.errors import SquallError

    class Stopping:
        failure = ""

        def start(self) -> None:
            self.failure = "another supervisor took storm.local.dir"

        def wait(self) -> None:
            pass

        def request_stop(self) -> None:
            pass

        def stop(self) -> None:
            pass

    with pytest.raises(SquallError, match="^another supervisor took storm.local.dir$"):
        cluster._run_daemon(Stopping(), {"storm.local.dir": str(tmp_path)}, "supervisor")
