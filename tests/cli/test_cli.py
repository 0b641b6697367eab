"""The ``squall`` command as a user runs it: a subprocess, its exit status, stdout and stderr.

Covers ``squall demo``, ``squall local TARGET [--duration S]`` on every example, ``squall
plugins``, ``squall config [--sample]``, and how user mistakes are reported: one line on
stderr, a non-zero exit, never a traceback.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SQUALL = [sys.executable, "-m", "squall.cli.main"]
TIMEOUT = 60   # seconds; a hung command fails the test instead of hanging the suite

# words of examples/rolling_top_words.py (checked against the file below)
ROLLING_WORDS = {"storm", "squall", "gale", "breeze", "tempest", "cyclone", "zephyr", "monsoon",
                 "typhoon", "hurricane"}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of every run: an empty HOME (no ~/.squall/squall.yaml) and no SQUALL_CONF."""
    home = tmp_path_factory.mktemp("home")
    out = {k: v for k, v in os.environ.items() if k != "SQUALL_CONF"}
    out.update(HOME=str(home), PYTHONUNBUFFERED="1")
    return out


def run(env: dict[str, str], *args: str, cwd: Path = ROOT, extra_env: dict[str, str] | None = None,
        command: list[str] = SQUALL) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*command, *args], cwd=cwd, env={**env, **(extra_env or {})},
                          capture_output=True, text=True, timeout=TIMEOUT)
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both, f"squall {' '.join(args)} printed a traceback:\n{both}"
    return proc


def ok(env: dict[str, str], *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    proc = run(env, *args, **kw)  # type: ignore[arg-type]
    assert proc.returncode == 0, (f"squall {' '.join(args)} exited {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def stats_table(stdout: str) -> dict[str, dict[str, int]]:
    """``squall local``'s final table: component -> {emitted, executed, acked, failed}."""
    lines = stdout.splitlines()
    header = [i for i, line in enumerate(lines) if line.split()[:2] == ["component", "emitted"]]
    assert header, f"no statistics table in:\n{stdout}"
    table = {}
    for line in lines[header[0] + 1:]:
        parts = line.split()
        if len(parts) != 5:
            break
        table[parts[0]] = dict(zip(("emitted", "executed", "acked", "failed"),
                                   (int(p.replace(",", "")) for p in parts[1:])))
    return table


# -- help ------------------------------------------------------------------------------------------

def test_help_lists_the_user_commands(env):
    out = ok(env, "--help").stdout
    for command in ("demo", "local", "plugins", "config", "submit", "nimbus", "supervisor"):
        assert re.search(rf"^\s+{command}\b", out, re.M), f"{command} missing from:\n{out}"


def test_demo_and_local_help_document_duration(env):
    assert "--duration" in ok(env, "demo", "--help").stdout
    assert "--duration" in ok(env, "local", "--help").stdout


def test_installed_squall_script_runs(env):
    script = Path(sys.executable).with_name("squall")
    if not script.exists():
        pytest.skip(f"no squall script next to {sys.executable}")
    out = ok(env, "--help", command=[str(script)]).stdout
    assert out.startswith("usage: squall")


# -- squall demo -----------------------------------------------------------------------------------

def test_demo_runs_briefly_and_prints_top_words_and_rate(env):
    proc = ok(env, "demo", "--duration", "0.5")
    out = proc.stdout
    assert "word count on a LocalCluster for 0.5 s" in out
    top = out.split("top words:\n", 1)
    assert len(top) == 2, f"no 'top words:' section in:\n{out}"
    rows = [line.split() for line in top[1].splitlines()]
    ranked = [(r[0], int(r[1].replace(",", ""))) for r in rows if len(r) == 2]
    assert len(ranked) == 10, out
    # "the" is the demo sentences' most frequent word (7 of every 6 sentences)
    assert ranked[0][0] == "the" and ranked[0][1] > 0, out
    assert [n for _, n in ranked] == sorted((n for _, n in ranked), reverse=True)
    m = re.search(r"counted ([\d,]+) words in [\d.]+ s: ([\d,]+) words/s", out)
    assert m, f"no words/s figure in:\n{out}"
    assert int(m.group(1).replace(",", "")) > 0 and int(m.group(2).replace(",", "")) > 0


# -- squall local ----------------------------------------------------------------------------------

@pytest.mark.parametrize("attr", ["topology", "batch_topology"])
def test_local_runs_both_wordcount_forms(env, attr):
    # 30 sentences (10 of each of the 3 lines: 13 + 11 + 15 words) then the spout goes idle
    proc = ok(env, "-c", "wordcount.sentences=30", "local", f"examples/wordcount.py:{attr}",
              "--duration", "1.5")
    assert f"running '{attr}' locally for 1.5 s" in proc.stderr
    table = stats_table(proc.stdout)
    assert table["sentences"]["emitted"] == 30 and table["sentences"]["acked"] == 30
    assert table["split"]["executed"] == 30 and table["split"]["emitted"] == 390
    assert table["count"]["executed"] == 390 and table["count"]["acked"] == 390
    assert all(st["failed"] == 0 for st in table.values()), table


@pytest.mark.parametrize("ascii_env", [
    {"PYTHONIOENCODING": "ascii"},
    # the C locale without Python's UTF-8 mode: stdout is ASCII with surrogateescape
    {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}])
def test_a_stdout_that_cannot_encode_a_component_id_gets_it_escaped(env, tmp_path,
                                                                     ascii_env):
    # the table's non-ASCII id was a UnicodeEncodeError traceback (squall logs, monitor and
    # debug too, debug after it had acted)
    (tmp_path / "oddid.py").write_text(
        "from squall import Bolt, Spout, TopologyBuilder\n"
        "class S(Spout):\n"
        "    outputs = ['w']\n"
        "class B(Bolt):\n"
        "    def process(self, tup): pass\n"
        "b = TopologyBuilder()\n"
        "b.set_spout('s', S)\n"
        "b.set_bolt('compt\u00e9-\u6570', B).shuffle_grouping('s')\n"
        "topology = b.create_topology()\n", encoding="utf-8")
    proc = ok(env, "local", "oddid.py:topology", "--duration", "0.2", cwd=tmp_path,
              extra_env=ascii_env)
    assert "compt\\xe9-\\u6570" in stats_table(proc.stdout)


def test_local_overrides_after_the_subcommand_and_name(env, tmp_path):
    # an absolute TARGET from another directory; -c after the subcommand reaches the spout
    proc = ok(env, "local", str(EXAMPLES / "wordcount.py") + ":topology", "--name", "wc",
              "--duration", "1", "-c", "wordcount.sentences=3", cwd=tmp_path)
    assert "running 'wc' locally" in proc.stderr
    table = stats_table(proc.stdout)
    assert table["sentences"]["acked"] == 3 and table["count"]["executed"] == 39


def test_local_runs_exclamation(env):
    table = stats_table(ok(env, "local", "examples/exclamation.py:topology",
                           "--duration", "1").stdout)
    assert table["word"]["emitted"] > 0
    assert table["exclaim1"]["executed"] > 0 and table["exclaim2"]["executed"] > 0
    assert all(st["failed"] == 0 for st in table.values()), table


def test_local_runs_rolling_top_words_with_ticks(env):
    # the counters' window slides every 0.5 s (Storm's key overrides the example's 3 s)
    proc = ok(env, "-c", "topology.tick.tuple.freq.secs=0.5",
              "-c", "topology.bolts.sliding.interval.duration.ms=500", "local",
              "examples/rolling_top_words.py:topology", "--duration", "3")
    rankings = [line.split("top words: ", 1)[1].strip()
                for line in proc.stderr.splitlines() if "top words: " in line]
    ranked = [[(w, int(c)) for w, c in (item.split("=") for item in r.split(", "))]
              for r in rankings if r]
    assert ranked, f"no non-empty ranking within 3 s:\n{proc.stderr}"
    for ranking in ranked:
        assert 1 <= len(ranking) <= 5
        assert {w for w, _ in ranking} <= ROLLING_WORDS
        counts = [c for _, c in ranking]
        assert counts == sorted(counts, reverse=True) and counts[-1] > 0
    table = stats_table(proc.stdout)
    assert table["total"]["emitted"] >= 2 and table["report"]["executed"] >= 2


def test_rolling_words_constant_matches_the_example():
    spec = importlib.util.spec_from_file_location("squall_cli_test_rolling",
                                                  EXAMPLES / "rolling_top_words.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.WORDS) == ROLLING_WORDS


# -- squall plugins / config -----------------------------------------------------------------------

BUILTIN = {
    "squall.transports": {"local", "zmq", "nng", "grpc"},
    "squall.serializers": {"msgpack"},
    "squall.ackers": {"xor"},
    "squall.state_stores": {"memory", "zookeeper"},
    "squall.state_providers": {"memory", "redis"},
    "squall.schedulers": {"even", "multidim"},
    "squall.groupings": set(),
    "squall.metrics_consumers": set(),
    "squall.plugins": {"builtin"},
}


def test_plugins_lists_builtin_drivers_per_group(env):
    out = ok(env, "plugins").stdout
    groups: dict[str, dict[str, str]] = {}
    current = None
    columns = set()             # where the distribution column starts: one place for all
    for line in out.splitlines():
        if line and not line.startswith(" "):
            current = line.strip()
            groups[current] = {}
        elif line.strip() and line.strip() != "(none)":
            assert current is not None, out
            name, dist = line.split(None, 1)
            groups[current][name] = dist
            columns.add(line.index(dist))
    assert set(groups) == set(BUILTIN), out
    assert len(columns) == 1, out
    for group, names in BUILTIN.items():
        assert names <= set(groups[group]), f"{group}: {groups[group]}"
        for name in names:
            assert groups[group][name].startswith("squall "), (group, name, groups[group][name])


def test_config_sample_is_yaml_holding_every_default(env):
    sample = yaml.safe_load(ok(env, "config", "--sample").stdout)
    defaults = yaml.safe_load((ROOT / "core" / "defaults.yaml").read_text())
    assert isinstance(sample, dict) and defaults
    missing = set(defaults) - set(sample)
    assert not missing, f"config --sample lacks {sorted(missing)}"
    assert {k: sample[k] for k in defaults} == defaults


@pytest.mark.parametrize("where", ["before", "after"])
def test_config_shows_overrides_given_before_or_after_the_subcommand(env, where):
    args = (["-c", "topology.workers=3", "config"] if where == "before"
            else ["config", "-c", "topology.workers=3"])
    conf = yaml.safe_load(ok(env, *args).stdout)
    assert conf["topology.workers"] == 3 and conf["topology.acker.executors"] is None


def test_overrides_before_and_after_the_subcommand_all_count_the_later_winning(env):
    conf = yaml.safe_load(ok(env, "-c", "topology.workers=3", "-c", "topology.debug=true",
                             "config", "-c", "topology.debug=false", "-c",
                             "topology.max.spout.pending=7").stdout)
    assert conf["topology.workers"] == 3 and conf["topology.debug"] is False
    assert conf["topology.max.spout.pending"] == 7


def test_config_reads_squall_conf(env, tmp_path):
    file = tmp_path / "my.yaml"
    file.write_text("topology.message.timeout.secs: 7\n")
    conf = yaml.safe_load(ok(env, "config", extra_env={"SQUALL_CONF": str(file)}).stdout)
    assert conf["topology.message.timeout.secs"] == 7


def test_mistyped_key_warns_once_with_did_you_mean(env):
    # API §5: an unknown key in a known namespace is a warning (the command still runs)
    proc = ok(env, "-c", "topology.wrkers=2", "config")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "unknown config key 'topology.wrkers' (did you mean 'topology.workers'?)" in lines[0]
    assert yaml.safe_load(proc.stdout)["topology.wrkers"] == 2


def test_mistyped_key_warns_once_when_running_a_topology(env):
    # the command and LocalCluster both validate; the user still sees the warning once
    proc = ok(env, "-c", "topology.max.spout.pendng=10", "-c", "wordcount.sentences=3", "local",
              "examples/wordcount.py:topology", "--duration", "0.5")
    warnings = [line for line in proc.stderr.splitlines() if "unknown config key" in line]
    assert len(warnings) == 1, proc.stderr
    assert "(did you mean 'topology.max.spout.pending'?)" in warnings[0]
    assert stats_table(proc.stdout)["sentences"]["acked"] == 3


# -- user mistakes ---------------------------------------------------------------------------------

USER_FILES = {
    "notopo.py": "x = 1\n",
    "broken.py": "def f(:\n",
    "raises.py": "raise RuntimeError('no luck')\n",
    "badinit.py": (
        "from squall import Spout, TopologyBuilder\n"
        "class S(Spout):\n"
        "    outputs = ['w']\n"
        "    def initialize(self, conf, context):\n"
        "        raise ValueError('bad init')\n"
        "b = TopologyBuilder()\n"
        "b.set_spout('s', S)\n"
        "topology = b.create_topology()\n"),
    "exitinit.py": (
        "import sys\n"
        "from squall import Spout, TopologyBuilder\n"
        "class S(Spout):\n"
        "    outputs = ['w']\n"
        "    def initialize(self, conf, context):\n"
        "        sys.exit(5)\n"
        "b = TopologyBuilder()\n"
        "b.set_spout('s', S)\n"
        "topology = b.create_topology()\n"),
    "kbiinit.py": (
        "from squall import Spout, TopologyBuilder\n"
        "class S(Spout):\n"
        "    outputs = ['w']\n"
        "    def initialize(self, conf, context):\n"
        "        raise KeyboardInterrupt('from a component')\n"
        "b = TopologyBuilder()\n"
        "b.set_spout('s', S)\n"
        "topology = b.create_topology()\n"),
    "slowinit.py": (
        "import sys, time\n"
        "from squall import Spout, TopologyBuilder\n"
        "class S(Spout):\n"
        "    outputs = ['w']\n"
        "    def initialize(self, conf, context):\n"
        "        print('initializing', file=sys.stderr, flush=True)\n"
        "        time.sleep(60)\n"
        "b = TopologyBuilder()\n"
        "b.set_spout('s', S)\n"
        "topology = b.create_topology()\n"),
    "bad.yaml": "topology.workers: [1\n",
}
WC = str(EXAMPLES / "wordcount.py") + ":topology"

MISTAKES = [
    # (arguments, what the one stderr line must say)
    (["local", "nowhere/missing.py:topology"], "no such file: nowhere/missing.py"),
    (["local", "notopo.py:topology"], "notopo.py has no attribute 'topology'"),
    (["local", "notopo.py:x"], "notopo.py:x is a int, not a topology"),
    (["local", "notopo.py"], "must look like path/to/file.py:attr"),
    (["local", "no_such_module_xyz:topology"], "no module named 'no_such_module_xyz'"),
    (["local", "broken.py:topology"], "syntax error in"),
    (["local", "raises.py:topology"], "raised RuntimeError: no luck"),
    (["local", "badinit.py:topology", "--duration", "5"],
     "failed to start: ValueError: bad init"),
    # sys.exit() or a KeyboardInterrupt in a component's initialize: an error, not a silent
    # exit nor a Ctrl-C
    (["local", "exitinit.py:topology", "--duration", "5"],
     "failed to start: component 's' (task 1) raised SystemExit: 5"),
    (["local", "kbiinit.py:topology", "--duration", "5"],
     "failed to start: KeyboardInterrupt: from a component"),
    (["-c", "topology.workers=abc", "config"],
     "config key 'topology.workers' must be int, got str 'abc'"),
    (["local", WC, "--duration", "5", "-c", "topology.workers=abc"],
     "config key 'topology.workers' must be int"),
    (["-c", "topology.debug=maybe", "config"], "config key 'topology.debug' must be bool"),
    (["-c", "topology.workers", "config"], "bad override 'topology.workers': expected key=value"),
    (["-c", "squall.transport=zmqq", "plugins"],
     "no squall.transports named 'zmqq' (did you mean 'zmq'?); available: grpc, local, nng, zmq"),
    (["-c", "squall.transport=bogus", "local", WC, "--duration", "5"],
     "no squall.transports named 'bogus'"),
    (["-c", "squall.serializer=pickle", "config"], "no squall.serializers named 'pickle'"),
    (["frobnicate"], "unknown command 'frobnicate'"),
    (["local"], "the following arguments are required: target"),
    (["demo", "--duration", "abc"], "argument --duration: expected a number of seconds"),
    (["local", WC, "--duration", "0"], "argument --duration: must be more than 0 seconds"),
    (["config", "--bogus"], "unrecognized arguments: --bogus"),
    (["--config", "missing.yaml", "config"], "config file missing.yaml does not exist"),
    (["--config", "bad.yaml", "config"], "bad.yaml:2:1: malformed YAML"),
]


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user")
    for name, text in USER_FILES.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("args, message", MISTAKES,
                         ids=[" ".join(a).replace(str(EXAMPLES), "examples") for a, _ in MISTAKES])
def test_user_mistake_is_one_line_and_nonzero(env, user_dir, args, message):
    proc = run(env, *args, cwd=user_dir)
    assert proc.returncode != 0, f"exit 0 for {args}:\n{proc.stdout}{proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{proc.stderr}"
    assert re.match(r"squall( \w+)?: error: ", lines[0]), lines[0]
    assert message in lines[0], lines[0]
    assert proc.stdout == "", proc.stdout


def test_ctrl_c_while_a_component_initializes_stops_squall_local(env, user_dir):
    """The user's Ctrl-C is told from a KeyboardInterrupt a component raises: it stops."""
    import signal
    import time
    # as from a terminal: a job started in the background (a CI script's) inherits SIGINT
    # ignored, and Python leaves it so
    proc = subprocess.Popen([*SQUALL, "local", "slowinit.py:topology"], cwd=user_dir, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stderr is not None
        while "initializing" not in proc.stderr.readline():
            assert proc.poll() is None, "squall local ended before the component initialized"
        proc.send_signal(signal.SIGINT)
        start = time.monotonic()
        out, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 130 and time.monotonic() - start < 10, (proc.returncode, err)
        assert "error" not in err and "Traceback" not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_unknown_transport_in_squall_conf_is_reported_for_every_command(env, tmp_path):
    file = tmp_path / "conf.yaml"
    file.write_text("squall.transport: carrier-pigeon\n")
    for args in (["plugins"], ["config", "--sample"], ["local", WC, "--duration", "5"]):
        proc = run(env, *args, extra_env={"SQUALL_CONF": str(file)})
        assert proc.returncode != 0, args
        assert proc.stderr.strip().splitlines() == [
            "squall: error: no squall.transports named 'carrier-pigeon'; "
            "available: grpc, local, nng, zmq"], proc.stderr
