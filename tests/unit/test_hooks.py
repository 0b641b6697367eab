"""Every hookspec is called where squall.hookspecs says: a plugin module registered through
the ``squall.plugins`` entry-point group records each call (LocalCluster, config, CLI)."""
from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy
import pytest
from _fake_dist import fake_distribution
from squall import LocalCluster, Spout, TopologyBuilder, config, hookspecs
from squall.cli import main as cli_main
from squall.errors import ConfigError, PluginLoadError, TopologyError
from squall.plugin_manager import get_plugin_manager

CORE = Path(hookspecs.__file__).parent

PLUGIN = '''
from squall import ConfigError, TopologyError, hookimpl

CALLS = []


@hookimpl
def squall_add_defaults():
    CALLS.append(("add_defaults",))
    return {"squall.test.hooks.level": 3, "squall.test.hooks.token": None}


@hookimpl
def squall_add_config_types():
    CALLS.append(("add_config_types",))
    return {"squall.test.hooks.token": str}


@hookimpl
def squall_validate_config(conf):
    CALLS.append(("validate_config", conf.get("squall.test.hooks.level")))
    if (conf.get("squall.test.hooks.level") or 0) > 9:
        raise ConfigError("config key 'squall.test.hooks.level' must be from 0 to 9")


@hookimpl
def squall_configure(conf):
    CALLS.append(("configure", conf.get("squall.test.hooks.level")))
    conf["squall.test.hooks.configured"] = True


@hookimpl
def squall_validate_topology(topology, conf):
    CALLS.append(("validate_topology", conf["topology.name"]))
    if conf["topology.name"] == "refused":
        raise TopologyError("refused by the test plugin")


@hookimpl
def squall_topology_submitted(name, topology_id, conf):
    CALLS.append(("submitted", name, topology_id))


@hookimpl
def squall_topology_killed(name, topology_id):
    CALLS.append(("killed", name, topology_id))


@hookimpl
def squall_worker_start(topology_id, port, conf):
    CALLS.append(("worker_start", topology_id, port))


@hookimpl
def squall_worker_stopping(topology_id, port):
    CALLS.append(("worker_stopping", topology_id, port))


@hookimpl
def squall_worker_stop(topology_id, port):
    CALLS.append(("worker_stop", topology_id, port))


@hookimpl
def squall_add_commands(subparsers):
    CALLS.append(("add_commands",))
    p = subparsers.add_parser("hooks-test", help="a command added by the test plugin")
    p.set_defaults(func=lambda args, conf: CALLS.append(("command", conf["topology.workers"])))
'''


class Idle(Spout):
    outputs = ["x"]

    def next_tuple(self) -> None:
        pass


def _topology() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("idle", Idle)
    return builder.create_topology()


@contextmanager
def hook_plugin(root: Path, name: str, entry_points: dict[str, dict[str, str]],
                modules: dict[str, str]) -> Iterator[None]:
    """A plugin distribution installed (``fake_distribution``) with the plugin manager built
    again around it, on entry and on exit."""
    with fake_distribution(root, name, entry_points, modules):
        get_plugin_manager.cache_clear()
        try:
            yield
        finally:
            get_plugin_manager.cache_clear()


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[ModuleType]:
    """The test plugin, installed as a distribution; the plugin manager is rebuilt with it."""
    eps = {"squall.plugins": {"hooks_test": "squall_hooks_test_plugin"}}
    with hook_plugin(tmp_path / "site", "squall-hooks-test", eps,
                     {"squall_hooks_test_plugin": PLUGIN}):
        assert "hooks_test" in dict(get_plugin_manager().list_name_plugin())
        module = sys.modules["squall_hooks_test_plugin"]
        module.CALLS.clear()
        yield module


def calls(plugin: ModuleType, kind: str) -> list[tuple[Any, ...]]:
    return [c for c in plugin.CALLS if c[0] == kind]


def test_config_hooks_add_known_typed_keys(plugin: ModuleType) -> None:
    assert config.defaults()["squall.test.hooks.level"] == 3
    assert calls(plugin, "add_defaults")
    assert config.validate({"squall.test.hooks.token": "abc", "squall.test.hooks.level": 4}) == []
    assert calls(plugin, "add_config_types")
    with pytest.raises(ConfigError, match="'squall.test.hooks.token' must be str or null, got int"):
        config.validate({"squall.test.hooks.token": 5})
    with pytest.raises(ConfigError, match="'squall.test.hooks.level' must be int"):
        config.validate({"squall.test.hooks.level": "high"})
    # the plugin checks its own key's value, after its type was checked
    assert calls(plugin, "validate_config")[0] == ("validate_config", 4)
    assert ("validate_config", "high") not in calls(plugin, "validate_config")
    with pytest.raises(ConfigError, match="'squall.test.hooks.level' must be from 0 to 9"):
        config.validate({"squall.test.hooks.level": 10})
    assert "### Plugin hooks_test (squall_add_defaults)" in config.sample()


def test_a_components_own_config_goes_through_the_plugins_checks(plugin: ModuleType) -> None:
    """set_bolt(config=...) and add_config: the plugin refuses a value of its key there as it
    does in the submitted conf, and the error names the component."""
    with pytest.raises(ConfigError, match="component 'count': config key "
                       "'squall.test.hooks.level' must be from 0 to 9"):
        config.validate_component("count", {"squall.test.hooks.level": 10})
    assert config.validate_component("count", {"squall.test.hooks.level": 4}) == []
    assert ("validate_config", 4) in calls(plugin, "validate_config")

    builder = TopologyBuilder()
    builder.set_spout("idle", Idle).add_config("squall.test.hooks.level", 12)
    with pytest.raises(ConfigError, match="component 'idle': config key "
                       "'squall.test.hooks.level'"), LocalCluster() as cluster:
        cluster.submit_topology("refused-component", {}, builder.create_topology())


def test_local_cluster_calls_configure_validate_submitted_worker_and_killed(plugin: ModuleType) -> None:
    with LocalCluster({"squall.test.hooks.level": 7}) as cluster:
        assert calls(plugin, "configure") == [("configure", 7)]
        assert cluster.conf["squall.test.hooks.configured"] is True   # adjusted in place
        topology_id = cluster.submit_topology("hooked", {"topology.workers": 2}, _topology())
        assert calls(plugin, "validate_topology") == [("validate_topology", "hooked")]
        assert calls(plugin, "submitted") == [("submitted", "hooked", topology_id)]
        ports = sorted(w.port for w in cluster.workers("hooked"))
        assert sorted(calls(plugin, "worker_start")) == [("worker_start", topology_id, p)
                                                          for p in ports]
        assert not calls(plugin, "worker_stop")
        cluster.kill_topology("hooked")
        assert calls(plugin, "killed") == [("killed", "hooked", topology_id)]
        assert sorted(calls(plugin, "worker_stop")) == [("worker_stop", topology_id, p)
                                                         for p in ports]
        # each worker is told it is stopping before it is told it stopped
        told = [c for c in plugin.CALLS if c[0] in ("worker_stopping", "worker_stop")]
        for p in ports:
            assert [c[0] for c in told if c[2] == p] == ["worker_stopping", "worker_stop"]
        with pytest.raises(TopologyError, match="refused by the test plugin"):
            cluster.submit_topology("refused", {}, _topology())
        assert [c[1] for c in calls(plugin, "submitted")] == ["hooked"]
    assert len(calls(plugin, "configure")) == 1


def test_a_hookimpl_with_an_argument_no_spec_has_is_one_line_and_explains_missing_commands(
        plugin: ModuleType, tmp_path: Path, capsys: Any, caplog: Any) -> None:
    eps = {"squall.plugins": {"badarg": "squall_hooks_badarg"}}
    source = ("from squall import hookimpl\n\n\n@hookimpl\n"
              "def squall_validate_topology(topology, conf, extra):\n    pass\n")
    with hook_plugin(tmp_path / "bad", "squall-badarg", eps, {"squall_hooks_badarg": source}):
        with pytest.raises(PluginLoadError) as info:
            get_plugin_manager()
        why = str(info.value)
        assert "\n" not in why and why.startswith(
            "squall.plugins 'badarg' does not match squall's hookspecs: ") and "extra" in why
        # the healthy plugin's command is missing: the error says why
        with pytest.raises(SystemExit) as exited:
            cli_main.main(["hooks-test"])
        assert exited.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err == (f"squall: error: unknown command 'hooks-test' (plugin commands did "
                       f"not load: {why}) (see 'squall --help')")
        # `squall plugins` lists what loads and says why once (not a log line as well)
        caplog.clear()
        assert cli_main.main(["plugins"]) == 2
        out, err = capsys.readouterr()
        assert err.splitlines() == [f"squall: error: {why}"] and "squall_hooks" not in out
        assert "squall.transports" in out
        assert not [r for r in caplog.records if why in r.getMessage()]
        with pytest.raises(SystemExit):         # --help says why its list lacks them
            cli_main.main(["--help"])
        assert f"plugin commands did not load: {why}" in " ".join(
            capsys.readouterr().out.split())


def test_cli_commands_come_from_the_hook(plugin: ModuleType) -> None:
    assert cli_main.main(["hooks-test", "-c", "topology.workers=4"]) == 0
    assert calls(plugin, "add_commands") and calls(plugin, "command") == [("command", 4)]


class _FakeDaemon:
    built: list[_FakeDaemon] = []

    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf
        self.started = self.stopped = False
        _FakeDaemon.built.append(self)

    def start(self) -> None:
        self.started = True

    def wait(self) -> None:
        pass

    def stop(self) -> None:
        self.stopped = True


@pytest.mark.parametrize("command, module, cls", [
    ("nimbus", "squall.daemon.nimbus", "Nimbus"),
    ("supervisor", "squall.daemon.supervisor", "Supervisor"),
])
def test_daemons_are_built_with_the_configured_conf(plugin: ModuleType, monkeypatch, command,
                                                     module, cls, tmp_path: Path) -> None:
    pytest.importorskip("squall.cli.cluster")
    monkeypatch.chdir(tmp_path)          # the daemon's log goes under ./squall-local/logs
    __import__(module)
    monkeypatch.setattr(sys.modules[module], cls, _FakeDaemon)
    _FakeDaemon.built.clear()
    assert cli_main.main([command, "-c", "squall.test.hooks.level=5"]) == 0
    assert calls(plugin, "configure") == [("configure", 5)]
    [daemon] = _FakeDaemon.built
    assert daemon.conf["squall.test.hooks.configured"] is True and daemon.started


BROKEN = '''
from squall import hookimpl

BROKEN = {"configure": False}


@hookimpl
def squall_configure(conf):
    if BROKEN["configure"]:
        raise KeyError("broken.key")


@hookimpl
def squall_topology_killed(name, topology_id):
    raise AttributeError("killed bug")


@hookimpl
def squall_worker_stop(topology_id, port):
    raise AttributeError("worker stop bug")


@hookimpl
def squall_add_commands(subparsers):
    raise AttributeError("commands bug")
'''


def test_a_plugins_bug_in_a_hook_is_one_line_naming_it_and_stops_nothing(
        plugin: ModuleType, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    eps = {"squall.plugins": {"broken_test": "squall_hooks_broken_plugin"}}
    with hook_plugin(tmp_path / "broken", "squall-hooks-broken", eps,
                     {"squall_hooks_broken_plugin": BROKEN}):
        assert "broken_test" in dict(get_plugin_manager().list_name_plugin())
        broken = sys.modules["squall_hooks_broken_plugin"]
        with LocalCluster() as cluster:
            cluster.submit_topology("stopping", {"topology.workers": 2}, _topology())
            ports = sorted(w.port for w in cluster.workers("stopping"))
            cluster.kill_topology("stopping")
            assert cluster.topologies() == []
        # the other plugin is still told, and every worker stopped
        assert [c[1] for c in calls(plugin, "killed")] == ["stopping"]
        assert sorted(c[2] for c in calls(plugin, "worker_stop")) == ports
        assert "plugin 'broken_test' failed in squall_worker_stop: AttributeError: " \
            "worker stop bug" in caplog.text
        assert "plugin 'broken_test' failed in squall_topology_killed" in caplog.text
        # its commands are missing; squall's and the other plugin's are there
        parser = cli_main.build_parser()
        assert parser.parse_args(["hooks-test"]).command == "hooks-test"
        assert "plugin 'broken_test' failed in squall_add_commands" in caplog.text
        broken.BROKEN["configure"] = True
        with pytest.raises(PluginLoadError, match="plugin 'broken_test' failed in "
                                                  "squall_configure: KeyError"):
            LocalCluster()


def test_a_hook_module_not_matching_the_specs_fails_when_it_registers(tmp_path: Path) -> None:
    eps = {"squall.plugins": {"misspelt": "squall_hooks_misspelt"}}
    source = ("from squall import hookimpl\n\n\n@hookimpl\n"
              "def squall_configur(conf):\n    pass\n")
    with hook_plugin(tmp_path / "site", "squall-misspelt", eps, {"squall_hooks_misspelt": source}):
        with pytest.raises((PluginLoadError, pluggy.PluginValidationError),
                           match="squall_configur"):
            get_plugin_manager()


def test_every_hookspec_has_a_caller_in_squall() -> None:
    """A declared hook nobody calls is a promise broken: each spec is called somewhere in
    core/ (``.squall_x(`` on a hook relay, or by name for the config hooks)."""
    specs = [name for name in dir(hookspecs) if name.startswith("squall_")
             and hasattr(getattr(hookspecs, name), "squall_spec")]
    assert specs
    sources = "\n".join(p.read_text() for p in CORE.rglob("*.py")
                        if p.name not in ("hookspecs.py", "builtin_hooks.py"))
    for name in specs:
        assert re.search(rf"\.{name}\(|\"{name}\"", sources), f"{name} is never called"


MISBEHAVING = {
    # module -> its source: each plugin is installed on its own in the test below
    "import_fails": "raise RuntimeError('exploded at import')\n",
    "clashing_default": ("from squall import hookimpl\n\n\n@hookimpl\n"
                         "def squall_add_defaults():\n"
                         "    return {'squall.test.hooks.level': 'text'}\n"),
    "path_default": ("import pathlib\nfrom squall import hookimpl\n\n\n@hookimpl\n"
                     "def squall_add_defaults():\n    return {'odd.dir': pathlib.Path('/x')}\n"),
    "command_clash": ("from squall import hookimpl\n\n\n@hookimpl\n"
                      "def squall_add_commands(subparsers):\n"
                      "    subparsers.add_parser('plugins')\n"),
    "validator_bug": ("from squall import hookimpl\n\n\n@hookimpl\n"
                      "def squall_validate_topology(topology, conf):\n"
                      "    raise ValueError('validator bug')\n"),
    "config_check_bug": ("from squall import hookimpl\n\n\n@hookimpl\n"
                         "def squall_validate_config(conf):\n"
                         "    raise KeyError('config check bug')\n"),
    "worker_start_bug": ("from squall import hookimpl\n\n\n@hookimpl\n"
                         "def squall_worker_start(topology_id, port, conf):\n"
                         "    raise RuntimeError('worker start bug')\n"),
}

#: spout tasks closed (the worker_start_bug case: cleaned up though its worker never started)
CLOSED: list[int] = []


class Closing(Idle):
    def close(self) -> None:
        CLOSED.append(self.context.task_id)


@pytest.mark.parametrize("module", sorted(MISBEHAVING))
def test_a_misbehaving_plugin_is_one_line_naming_it(plugin: ModuleType, tmp_path: Path,
                                                    module: str, capsys: Any,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    eps = {"squall.plugins": {module: f"squall_misbehaving_{module}"}}
    with hook_plugin(tmp_path / module, f"squall-misbehaving-{module}", eps,
                     {f"squall_misbehaving_{module}": MISBEHAVING[module]}):
        if module == "import_fails":
            # squall plugins says which cannot load (after the error line, which every
            # command gives); squall's own commands still parse
            assert cli_main.main(["plugins"]) == 2
            out = capsys.readouterr().out
            assert f"{module}" in out and "UNAVAILABLE: fails to load: RuntimeError(" \
                "'exploded at import')" in out
            assert cli_main.build_parser().parse_args(["config"]).command == "config"
        elif module == "clashing_default":     # the test plugin gives the key an int
            with pytest.raises(ConfigError, match="both define 'squall.test.hooks.level', "
                               "with different defaults"):
                config.defaults()
        elif module == "path_default":
            with pytest.raises(ConfigError, match="plugin 'path_default': "
                               "squall_add_defaults gives 'odd.dir' a PosixPath"):
                config.defaults()
        elif module == "command_clash":
            parser = cli_main.build_parser()
            assert parser.parse_args(["plugins"]).command == "plugins"
            said = [r.getMessage() for r in caplog.records if "command_clash" in
                    r.getMessage()]
            assert said == ["plugin 'command_clash' failed in squall_add_commands: "
                            "ValueError: a command 'plugins' exists already"]
        elif module == "config_check_bug":
            with pytest.raises(PluginLoadError, match="plugin 'config_check_bug' failed "
                               "in squall_validate_config: KeyError"):
                config.validate({})
            with pytest.raises(PluginLoadError, match="component 'count': plugin "
                               "'config_check_bug' failed in squall_validate_config"):
                config.validate_component("count", {})
        elif module == "worker_start_bug":
            # it was a bare RuntimeError, and the built worker's components were never
            # cleaned up
            CLOSED.clear()
            builder = TopologyBuilder()
            builder.set_spout("idle", Closing)
            with pytest.raises(PluginLoadError, match="plugin 'worker_start_bug' failed "
                               "in squall_worker_start: RuntimeError"), LocalCluster() as c:
                c.submit_topology("started", {}, builder.create_topology())
            assert len(CLOSED) == 1
        else:
            with pytest.raises(PluginLoadError, match="plugin 'validator_bug' failed in "
                               "squall_validate_topology: ValueError"), LocalCluster() as c:
                c.submit_topology("checked", {}, _topology())
