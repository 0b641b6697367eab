"""squall.drivers: names without imports, stevedore loading, errors, caching, refresh."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _fake_dist import fake_distribution
from squall import drivers
from squall.errors import PluginLoadError, PluginNotFoundError
from squall.transports.local import LocalTransport

GROUP = "squall.transports"


def test_names_entries_and_roles_of_the_builtin_drivers():
    assert {"local", "zmq", "nng", "grpc"} <= set(drivers.names(GROUP))
    assert drivers.names(GROUP) == sorted(drivers.names(GROUP))
    assert dict(drivers.entries(GROUP))["local"].startswith("squall ")
    assert set(drivers.ROLES) == {"transport", "serializer", "scheduler", "acker", "state",
                                  "state_provider"}
    assert {group for group, _ in drivers.ROLES.values()} <= set(drivers.GROUPS)


def test_checking_and_listing_import_no_plugin():
    code = ("import sys\n"
            "from squall import drivers, config\n"
            "for group in drivers.GROUPS:\n"
            "    drivers.entries(group)\n"
            "drivers.check('squall.transports', 'grpc')\n"
            "drivers.check('squall.metrics_consumers', 'spark')\n"
            "drivers.validate_conf({'squall.transport': 'nng', 'squall.scheduler': 'multidim'})\n"
            "config.validate(config.load_config(env={}))\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in\n"
            "               ('zmq', 'pynng', 'grpc', 'pyspark', 'pyarrow', 'kazoo', 'redis')\n"
            "               or m.startswith(('squall.plugins.transport_grpc.transport',\n"
            "                                'squall.plugins.transport_nng.transport',\n"
            "                                'squall.plugins.transport_zmq.transport',\n"
            "                                'squall.plugins.spark.sink')))\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def test_unknown_name_lists_the_available_names_with_a_hint():
    with pytest.raises(PluginNotFoundError) as info:
        drivers.load(GROUP, "lcoal")
    err = info.value
    assert (err.group, err.name) == (GROUP, "lcoal")
    assert "local" in err.available
    assert "did you mean 'local'?" in str(err)
    with pytest.raises(PluginNotFoundError, match="no squall.ackers named 'nope'"):
        drivers.driver("acker", {"squall.acker": "nope"})


def test_driver_and_driver_class_follow_the_role_key():
    conf = {"squall.transport": "local"}
    assert drivers.driver_class("transport", conf) is LocalTransport
    transport = drivers.driver("transport", conf)
    try:
        assert isinstance(transport, LocalTransport)
    finally:
        transport.close()


def test_a_loaded_driver_is_cached(monkeypatch: pytest.MonkeyPatch):
    first = drivers.load("squall.serializers", "json")
    built = []
    real = drivers._Driver

    def counting(*args, **kwargs):
        built.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(drivers, "_Driver", counting)
    assert drivers.load("squall.serializers", "json") is first
    assert built == []


@pytest.fixture
def plugins(tmp_path: Path):
    """A distribution with one good, one broken and one under-installed transport."""
    modules = {
        "fake_good": "class Good:\n    def __init__(self, conf):\n        self.conf = conf\n",
        "fake_broken": "raise RuntimeError('bug at import')\n",
        "fake_asserting": "assert False, 'plugin asserts at import'\n",
        "fake_needs_nng": "import pynng_is_missing\n",
        "fake_needs_extra": ("raise ModuleNotFoundError(\"No module named 'pynng'\", "
                             "name='pynng')\n"),
        # imports its library lazily, and says so
        "fake_lazy": "class Lazy:\n    squall_requires = ('json', 'lazy_lib_is_missing')\n",
    }
    eps = {GROUP: {"good": "fake_good:Good", "broken": "fake_broken:X",
                   "asserting": "fake_asserting:X", "bare": "fake_needs_nng:X",
                   "extra": "fake_needs_extra:X", "noattr": "fake_good:Missing",
                   "lazy": "fake_lazy:Lazy"}}
    with fake_distribution(tmp_path / "site", "squall-fake-plugins", eps, modules):
        yield


@pytest.mark.usefixtures("plugins")
def test_a_plugin_installed_at_run_time_is_found_after_refresh_and_loads():
    found = dict(drivers.entries(GROUP))
    assert found["good"] == "squall-fake-plugins 0.1"
    assert found["local"].startswith("squall ")
    cls = drivers.driver_class("transport", {"squall.transport": "good"})
    assert cls.__name__ == "Good"
    assert drivers.driver("transport", {"squall.transport": "good"}).conf == {
        "squall.transport": "good"}


@pytest.mark.usefixtures("plugins")
@pytest.mark.parametrize("name, match", [
    ("broken", r"squall.transports 'broken' failed to load: RuntimeError\('bug at import'\)"),
    ("asserting", "'asserting' failed to load: AssertionError"),
    ("noattr", "'noattr' failed to load: AttributeError"),
    ("bare", "'bare' could not be loaded: No module named 'pynng_is_missing'$"),
    ("extra", r"'extra' could not be loaded: .*; install it with: pip install 'squall\[nng\]'"),
    ("lazy", "'lazy' could not be loaded: No module named 'lazy_lib_is_missing'$"),
])
def test_a_broken_plugin_is_a_load_error_never_a_missing_one(name, match):
    drivers.check(GROUP, name)                         # it exists
    with pytest.raises(PluginLoadError, match=match) as info:
        drivers.load(GROUP, name)
    assert not isinstance(info.value, PluginNotFoundError)
    assert info.value.__cause__ is not None            # the original error is kept


def test_a_plugin_whose_lazily_imported_library_is_missing_names_its_extra(
        monkeypatch: pytest.MonkeyPatch):
    # the spark metrics consumer imports pyarrow when it first writes: it was loaded without
    # the extra, then failed on every metrics batch
    monkeypatch.setitem(sys.modules, "pyarrow", None)        # an install without squall[spark]
    drivers.refresh()
    try:
        with pytest.raises(PluginLoadError, match=(
                r"^squall.metrics_consumers 'spark' could not be loaded: No module named "
                r"'pyarrow'; install it with: pip install 'squall\[spark\]'$")):
            drivers.load("squall.metrics_consumers", "spark")
    finally:
        drivers.refresh()


def test_refresh_forgets_entry_points_of_a_directory_already_on_sys_path(tmp_path: Path):
    """stevedore's own cache memoizes a group per ``sys.path``: squall's index must not."""
    site = tmp_path / "site"
    builtin = set(drivers.names(GROUP))
    assert "late" not in builtin
    with fake_distribution(site, "squall-late", {GROUP: {"late": "fake_late:Late"}},
                           {"fake_late": "class Late:\n    pass\n"}):
        assert set(drivers.names(GROUP)) == builtin | {"late"}
        assert drivers.load(GROUP, "late").__name__ == "Late"
        # a second distribution appears in the same directory, with sys.path unchanged
        with fake_distribution(site, "squall-later", {GROUP: {"later": "fake_late:Late"}}):
            assert set(drivers.names(GROUP)) == builtin | {"late", "later"}
    assert set(drivers.names(GROUP)) == builtin
    with pytest.raises(PluginNotFoundError):
        drivers.load(GROUP, "late")


def test_load_all_loads_every_entry_point_of_a_group_by_name(tmp_path: Path):
    eps = {"squall.test_hooks": {"b": "fake_hooks_b", "a": "fake_hooks_a"}}
    with fake_distribution(tmp_path, "squall-fake-hooks", eps,
                           {"fake_hooks_a": "A = 1\n", "fake_hooks_b": "B = 2\n"}):
        loaded = drivers.load_all("squall.test_hooks")
    assert [name for name, _ in loaded] == ["a", "b"]
    assert (loaded[0][1].A, loaded[1][1].B) == (1, 2)
    assert drivers.load_all("squall.test_hooks") == []


def test_load_all_raises_on_a_broken_module(tmp_path: Path):
    eps = {"squall.test_hooks": {"ok": "fake_hooks_ok", "bad": "fake_hooks_bad"}}
    with fake_distribution(tmp_path, "squall-fake-hooks", eps,
                           {"fake_hooks_ok": "", "fake_hooks_bad": "import pyspark_not_here\n"}):
        with pytest.raises(PluginLoadError, match="'bad' could not be loaded"):
            drivers.load_all("squall.test_hooks")


def test_squalls_own_entry_point_wins_a_name_another_distribution_also_provides(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]):
    """A clash never depends on importlib.metadata's order: squall's own distribution wins,
    one warning names both distributions, once per process; ``squall plugins`` shows both."""
    from squall.cli import main as cli_main
    caplog.set_level("WARNING", logger="squall.drivers")
    eps = {GROUP: {"local": "fake_shadow:Other"}}
    with fake_distribution(tmp_path, "squall-shadow-test", eps,
                           {"fake_shadow": "class Other:\n    pass\n"}):
        assert drivers.load(GROUP, "local") is LocalTransport
        assert dict(drivers.entries(GROUP))["local"].startswith("squall ")
        assert ("local", "squall-shadow-test 0.1", "squall") in drivers.shadowed(GROUP)
        clashes = [r.getMessage() for r in caplog.records if "squall-shadow-test" in
                   r.getMessage()]
        assert clashes == ["squall.transports 'local' is provided by both squall and "
                           "squall-shadow-test: squall's is used, squall-shadow-test's is "
                           "ignored (shadowed)"]
        drivers.refresh()
        drivers.names(GROUP)
        assert len([r for r in caplog.records if "squall-shadow-test" in r.getMessage()]) == 1
        assert cli_main.main(["plugins"]) == 0
    out = capsys.readouterr().out
    local = [line.split() for line in out.splitlines() if line.split()[:1] == ["local"]]
    assert [line[1] for line in local] == ["squall", "squall-shadow-test"]
    assert "SHADOWED" not in local[0] and "SHADOWED" in local[1]


def test_between_two_other_distributions_the_first_by_name_wins(
        tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level("WARNING", logger="squall.drivers")
    group = "squall.test_clash"
    modules = {"fake_clash_a": "WHO = 'a'\n", "fake_clash_b": "WHO = 'b'\n"}
    # b is put on sys.path after a, so importlib.metadata finds b first
    with fake_distribution(tmp_path / "a", "squall-clash-a", {group: {"dup": "fake_clash_a"}},
                           modules), \
            fake_distribution(tmp_path / "b", "squall-clash-b", {group: {"dup": "fake_clash_b"}},
                              modules):
        assert drivers.load(group, "dup").WHO == "a"
        assert [(name, module.WHO) for name, module in drivers.load_all(group)] == [("dup", "a")]
        assert drivers.shadowed(group) == [("dup", "squall-clash-b 0.1", "squall-clash-a")]
    assert [r.getMessage() for r in caplog.records if "squall-clash" in r.getMessage()] == [
        "squall.test_clash 'dup' is provided by both squall-clash-a and squall-clash-b: "
        "squall-clash-a's is used, squall-clash-b's is ignored (shadowed)"]
