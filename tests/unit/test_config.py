"""squall.config: layers, file errors, overrides, validation, sample, plugin defaults."""
from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from squall import config
from squall.errors import ConfigError, PluginLoadError, PluginNotFoundError
from squall.hookspecs import hookimpl
from squall.plugin_manager import get_plugin_manager


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def home_file(home: Path, text: str) -> Path:
    return write(home / ".squall" / "squall.yaml", text)


# -- defaults ----------------------------------------------------------------------------------
def test_defaults_hold_storm_keys_and_are_a_fresh_copy():
    d = config.defaults()
    assert d["nimbus.port"] == 6627
    assert d["storm.zookeeper.root"] == "/squall"
    assert d["squall.serializer"] == "msgpack"
    d["supervisor.slots.ports"].append(1)
    d["nimbus.port"] = 1
    again = config.defaults()
    assert again["nimbus.port"] == 6627
    assert again["supervisor.slots.ports"] == [6700, 6701, 6702, 6703]


# -- precedence --------------------------------------------------------------------------------
def test_without_any_layer_load_config_gives_the_defaults(home):
    conf = config.load_config(env={}, home=home)
    assert conf == {**config.defaults(), config.OVERRIDES_KEY: {}}


def test_precedence_of_every_layer(tmp_path, home):
    keys = ["a.home", "a.file", "a.topo", "a.comp", "a.cli"]
    home_file(home, "".join(f"{k}: home\n" for k in keys))
    cfg = write(tmp_path / "c.yaml", "".join(f"{k}: file\n" for k in keys[1:]))
    conf = config.load_config(cfg, ["a.cli=cli"], env={}, home=home,
                              topology_conf={k: "topo" for k in keys[2:]})
    assert [conf[k] for k in keys] == ["home", "file", "topo", "topo", "cli"]
    comp = config.component_conf(conf, {"a.comp": "comp", "a.cli": "comp"})
    assert [comp[k] for k in keys] == ["home", "file", "topo", "comp", "cli"]
    # the topology conf itself is not changed by the component merge
    assert conf["a.comp"] == "topo"


def test_home_file_overrides_defaults(home):
    home_file(home, "topology.workers: 4\n")
    assert config.load_config(env={}, home=home)["topology.workers"] == 4


def test_squall_conf_env_is_used_when_no_config_file_is_given(tmp_path, home):
    home_file(home, "topology.workers: 4\nui.port: 1\n")
    env_file = write(tmp_path / "env.yaml", "topology.workers: 5\n")
    given = write(tmp_path / "given.yaml", "topology.workers: 6\n")
    env = {"SQUALL_CONF": str(env_file)}
    conf = config.load_config(env=env, home=home)
    assert (conf["topology.workers"], conf["ui.port"]) == (5, 1)
    assert config.load_config(given, env=env, home=home)["topology.workers"] == 6


def test_squall_conf_naming_a_missing_file_is_an_error(tmp_path, home):
    with pytest.raises(ConfigError, match="nope.yaml does not exist"):
        config.load_config(env={"SQUALL_CONF": str(tmp_path / "nope.yaml")}, home=home)


def test_overrides_are_remembered_for_the_component_merge(home):
    conf = config.load_config(overrides=[("k.v", 1), "topology.debug=true"], env={}, home=home)
    assert conf[config.OVERRIDES_KEY] == {"k.v": 1, "topology.debug": True}
    # a worker gets the conf through JSON and merges component config: overrides still win
    comp = config.component_conf(dict(conf), {"topology.debug": False, "k.v": 2, "own": 3})
    assert (comp["topology.debug"], comp["k.v"], comp["own"]) == (True, 1, 3)
    # explicit overrides replace the remembered ones
    comp = config.component_conf(conf, {"k.v": 2}, overrides={"k.v": 9})
    assert comp["k.v"] == 9


def test_overrides_accept_a_mapping(home):
    assert config.load_config(overrides={"x": 1}, env={}, home=home)["x"] == 1


def test_bad_override_item_is_rejected(home):
    with pytest.raises(ConfigError, match="expected 'key=value' or"):
        config.load_config(overrides=[42], env={}, home=home)


# -- override parsing --------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("topology.workers=3", ("topology.workers", 3)),
    ("x=true", ("x", True)),
    ("a=[1,2]", ("a", [1, 2])),
    ("s=hello", ("s", "hello")),
    ("f=0.5", ("f", 0.5)),
    ("q='3'", ("q", "3")),
    ("url=http://h:1/x?a=b", ("url", "http://h:1/x?a=b")),
    ("n=", ("n", None)),
    (" k = v ", ("k", "v")),
])
def test_parse_override(text, expected):
    assert config.parse_override(text) == expected


@pytest.mark.parametrize("text", ["novalue", "=3"])
def test_override_without_key_or_equals_is_an_error(text):
    with pytest.raises(ConfigError, match="expected key=value"):
        config.parse_override(text)


def test_override_with_malformed_yaml_value_is_an_error():
    with pytest.raises(ConfigError, match="not valid YAML"):
        config.parse_override("a=[1, 2")


# -- files -------------------------------------------------------------------------------------
def test_malformed_yaml_names_file_line_and_column(tmp_path):
    bad = write(tmp_path / "bad.yaml", "topology.workers: 2\nui.port: [1, 2\nx: 3\n")
    with pytest.raises(ConfigError) as info:
        config.read_yaml_file(bad)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{bad}:") and "malformed YAML" in msg
    line = int(msg.split(":")[1])
    assert line in (2, 3)


def test_malformed_config_file_fails_load_config(tmp_path, home):
    bad = write(tmp_path / "bad.yaml", "a: b: c\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:1:\d+: malformed YAML"):
        config.load_config(bad, env={}, home=home)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="missing.yaml does not exist"):
        config.read_yaml_file(tmp_path / "missing.yaml")


@pytest.mark.parametrize("text, match", [
    ("- a\n- b\n", "top level must be a mapping"),
    ("just a string\n", "top level must be a mapping"),
    ("1: x\n", "key 1 is a int"),
    ("a: 1\na: 2\n", "duplicate key 'a'"),
])
def test_file_shape_errors_name_the_file(tmp_path, text, match):
    path = write(tmp_path / "shape.yaml", text)
    with pytest.raises(ConfigError, match=match) as info:
        config.read_yaml_file(path)
    assert "shape.yaml" in str(info.value)


def test_empty_file_is_an_empty_config(tmp_path):
    assert config.read_yaml_file(write(tmp_path / "e.yaml", "# nothing\n")) == {}


# -- validation --------------------------------------------------------------------------------
def test_defaults_validate_cleanly():
    assert config.validate(config.defaults()) == []


@pytest.mark.parametrize("key, value, expected, given", [
    ("topology.workers", "3", "int", "str"),
    ("topology.workers", True, "int", "bool"),
    ("topology.workers", 2.5, "int", "float"),
    ("topology.debug", 1, "bool", "int"),
    ("nimbus.seeds", "localhost", "list", "str"),
    ("storm.zookeeper.root", None, "str", "null"),
    ("topology.max.spout.pending", "10", "int or null", "str"),
    ("topology.tick.tuple.freq.secs", "1s", "int or float or null", "str"),
    ("topology.acker.executors", 1.0, "int or null", "float"),
    ("storm.local.hostname", 5, "str or null", "int"),
])
def test_type_errors_name_key_expected_and_given(key, value, expected, given):
    with pytest.raises(ConfigError) as info:
        config.validate({key: value})
    assert str(info.value).startswith(f"config key {key!r} must be {expected}, got {given}")


@pytest.mark.parametrize("key, value", [
    ("topology.backpressure.high.watermark", 1),        # int for a float
    ("topology.max.spout.pending", None),
    ("topology.max.spout.pending", 100),
    ("topology.tick.tuple.freq.secs", 0.5),
    ("storm.local.hostname", "node1"),
    ("supervisor.cpu.slots", 3),
])
def test_values_of_the_right_type_pass(key, value):
    assert config.validate({key: value}) == []


@pytest.mark.parametrize("key", ["supervisor.cpu.slots", "supervisor.memory.slots",
                                 "supervisor.net.slots", "supervisor.disk.slots"])
@pytest.mark.parametrize("value", [1.5, 4.0, -1, True, "2"])
def test_supervisor_slots_must_be_whole_and_non_negative_as_the_supervisor_reads_them(key, value):
    from squall.scheduling.resources import default_supervisor_resources
    with pytest.raises(ConfigError) as info:
        config.validate({key: value})
    assert str(info.value) == f"{key} must be a non-negative integer or null, got {value!r}"
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError) as at_start:        # the supervisor says the same
        default_supervisor_resources({key: value})
    assert str(at_start.value) == str(info.value)


def test_unknown_key_in_a_known_namespace_warns_with_did_you_mean(caplog):
    with caplog.at_level(logging.WARNING, logger="squall.config"):
        warnings = config.validate({"topology.worker": 2, "my.own.key": 1})
    expected = "unknown config key 'topology.worker' (did you mean 'topology.workers'?)"
    assert warnings == [expected]
    assert expected in caplog.text


def test_a_misspelt_plugin_key_warns_beside_the_plugins_own_keys(caplog):
    # a plugin's keys make their namespace: "spark.source.colums" was left unread without a
    # word, and the spout emitted every column
    with caplog.at_level(logging.WARNING, logger="squall.config"):
        warnings = config.validate({"spark.source.colums": ["id"],
                                    "spark.spout.progress.intervl.secs": 2,
                                    "spark.source.columns": ["id"],
                                    "spark.sql.shuffle.partitions": 4})
    assert warnings == [
        "unknown config key 'spark.source.colums' (did you mean 'spark.source.columns'?)",
        "unknown config key 'spark.spout.progress.intervl.secs' (did you mean "
        "'spark.spout.progress.interval.secs'?)",
        "unknown config key 'spark.sql.shuffle.partitions'"]     # Spark's own: spark.conf
    with pytest.raises(ConfigError, match="'spark.source.columns' must be list or null"):
        config.validate({"spark.source.columns": "id"})


def test_a_components_own_config_is_checked_like_a_topologys(caplog):
    with pytest.raises(ConfigError, match="component 'count': config key "
                                          "'topology.tick.tuple.freq.secs' must be int or "
                                          "float or null, got str 'x'"):
        config.validate_component("count", {"topology.tick.tuple.freq.secs": "x"})
    with pytest.raises(ConfigError, match="component 'words': config key "
                                          "'topology.max.spout.pending' must be at least 1"):
        config.validate_component("words", {"topology.max.spout.pending": 0})
    with caplog.at_level(logging.WARNING, logger="squall.config"):
        warnings = config.validate_component("count", {"topology.tick.tupel.freq.secs": 1,
                                                       "trident.plan": {}, "mine": 1,
                                                       "topology.tasks": 4})
    expected = ("component 'count': unknown config key 'topology.tick.tupel.freq.secs' (did "
                "you mean 'topology.tick.tuple.freq.secs'?)")
    assert warnings == [expected] and expected in caplog.text


@pytest.mark.parametrize("key, value, words", [
    ("drpc.worker.threads", 0, "must be at least 1"),
    ("drpc.invocations.threads", -2, "must be at least 1"),
    ("drpc.request.timeout.secs", 0, "must be above 0"),
    ("topology.subprocess.timeout.secs", 0, "must be above 0"),
    ("nimbus.monitor.freq.secs", 0, "must be above 0"),
    ("supervisor.monitor.frequency.secs", -1, "must be above 0"),
])
def test_counts_and_durations_that_would_stop_a_part_are_refused(key, value, words):
    # they used to fall back to their defaults (`or 64`, `or 600`) without a word
    with pytest.raises(ConfigError, match=f"'{key}' {words}, got {value}"):
        config.validate({**config.defaults(), key: value})
    config.validate({**config.defaults(), key: 1})


@pytest.mark.parametrize("key, value, words", [
    ("supervisor.slots.ports", ["abc"], "must list port numbers from 1 to 65535, got 'abc'"),
    ("supervisor.slots.ports", [6700, 70000], "got 70000"),
    ("supervisor.slots.ports", [0], "got 0"),
    ("supervisor.slots.ports", [6700.5], "got 6700.5"),
    ("nimbus.port", 99999, "'nimbus.port' must be a port number from 0 to 65535"),
    ("drpc.http.port", -1, "'drpc.http.port' must be a port number"),
])
def test_ports_out_of_range_are_one_config_error(key, value, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        config.validate({key: value})
    config.validate({"supervisor.slots.ports": [6700, 65535], "ui.port": 0})


def test_warn_false_only_returns_the_warnings(caplog):
    with caplog.at_level(logging.WARNING, logger="squall.config"):
        warnings = config.validate({"squall.zzz.qqq": 1}, warn=False)
    assert warnings == ["unknown config key 'squall.zzz.qqq'"]
    assert caplog.text == ""


def test_unknown_driver_lists_the_available_names_and_a_hint():
    with pytest.raises(PluginNotFoundError) as info:
        config.validate({**config.defaults(), "squall.transport": "zmqq"})
    msg = str(info.value)
    assert "'zmqq'" in msg and "did you mean 'zmq'?" in msg
    assert "available: " in msg and "local" in msg and "grpc" in msg


def test_unknown_metrics_consumer_is_an_error():
    with pytest.raises(PluginNotFoundError, match="metrics_consumers named 'lgo'.*'log'"):
        config.validate({"topology.metrics.consumer.register": [{"class": "lgo"}]})


def test_malformed_consumer_registration_is_an_error():
    with pytest.raises(ConfigError, match="must be a name or a mapping with a 'class' key"):
        config.validate({"topology.metrics.consumer.register": [{"argument": 1}]})


# -- sample and dump ---------------------------------------------------------------------------
def test_sample_round_trips(tmp_path, home):
    text = config.sample()
    path = write(tmp_path / "sample.yaml", text)
    assert config.read_yaml_file(path) == config.defaults()
    conf = config.load_config(path, env={}, home=home)
    assert conf == {**config.defaults(), config.OVERRIDES_KEY: {}}
    assert config.validate(conf) == []
    assert "### Topology" in text and "# ms" in text


def test_dump_shows_values_and_changed_defaults(home):
    conf = config.load_config(overrides=["topology.workers=3"], env={}, home=home)
    text = config.dump(conf)
    assert "topology.workers: 3    # default: 1" in text
    assert "spark.master: local[*]\n" in text


# -- plugin defaults ---------------------------------------------------------------------------
class _DefaultsPlugin:
    @hookimpl
    def squall_add_defaults(self):
        return {"squall.transport.test.window": 7, "nimbus.port": 1}


class _BrokenPlugin:
    @hookimpl
    def squall_add_defaults(self):
        raise RuntimeError("boom")


@pytest.fixture
def registered():
    pm = get_plugin_manager()
    added = []

    def register(obj: object, name: str) -> None:
        pm.register(obj, name=name)
        added.append(obj)

    yield register
    for obj in added:
        pm.unregister(obj)


def test_plugin_defaults_become_known_keys(registered, tmp_path, home):
    registered(_DefaultsPlugin(), "test-defaults")
    d = config.defaults()
    assert d["squall.transport.test.window"] == 7
    assert d["nimbus.port"] == 6627        # a plugin cannot change squall's own defaults
    assert config.validate({"squall.transport.test.window": 8}) == []
    with pytest.raises(ConfigError, match="must be int, got str"):
        config.validate({"squall.transport.test.window": "8"})
    text = config.sample()
    assert "### Plugin test-defaults" in text
    path = write(tmp_path / "s.yaml", text)
    assert config.read_yaml_file(path) == d


def test_without_the_plugin_its_key_is_unknown():
    assert config.validate({"squall.transport.test.window": 8}) == [
        "unknown config key 'squall.transport.test.window'"]


def test_failing_plugin_hook_is_a_clear_error(registered):
    registered(_BrokenPlugin(), "test-broken")
    with pytest.raises(PluginLoadError, match="'test-broken' failed in squall_add_defaults"):
        config.defaults()


class _TypedPlugin:
    @hookimpl
    def squall_add_defaults(self):
        return {"squall.transport.test.cert": None, "squall.transport.test.window": 7}

    @hookimpl
    def squall_add_config_types(self):
        return {"squall.transport.test.cert": str}


def test_plugin_declares_the_types_of_its_null_default_keys(registered):
    registered(_TypedPlugin(), "test-typed")
    assert config.nullable_types()["squall.transport.test.cert"] == (str,)
    assert config.validate({"squall.transport.test.cert": "a.pem"}) == []
    assert config.validate({"squall.transport.test.cert": None}) == []
    with pytest.raises(ConfigError) as info:
        config.validate({"squall.transport.test.cert": 5})
    assert str(info.value) == ("config key 'squall.transport.test.cert' must be str or null, "
                               "got int 5")


def test_builtin_plugins_keys_are_typed_as_before():
    with pytest.raises(ConfigError, match="'squall.transport.zmq.curve.server.secret.key' must "
                                          "be str or null, got int"):
        config.validate({"squall.transport.zmq.curve.server.secret.key": 1})
    with pytest.raises(ConfigError, match="'squall.transport.grpc.tls.ca.file' must be str or "
                                          "null, got list"):
        config.validate({"squall.transport.grpc.tls.ca.file": []})
    with pytest.raises(ConfigError, match="'squall.transport.nng.send.buffer' must be int"):
        config.validate({"squall.transport.nng.send.buffer": "big"})
    with pytest.raises(ConfigError, match="'spark.source.retry.report.after' must be int"):
        config.validate({"spark.source.retry.report.after": 1.5})


@pytest.mark.parametrize("types, match", [
    ({"squall.transport.test.nope": str}, "names 'squall.transport.test.nope', which no "
                                          "squall_add_defaults returns"),
    ({"squall.transport.test.window": str}, "whose default 7 already gives its type"),
    ({"squall.transport.test.cert": "str"}, "expected a type or a tuple of types"),
])
def test_bad_type_declarations_are_config_errors(registered, types, match):
    class Bad(_TypedPlugin):
        @hookimpl
        def squall_add_config_types(self):
            return types

    registered(Bad(), "test-bad-types")
    with pytest.raises(ConfigError, match=match):
        config.validate({})


def test_a_plugin_cannot_retype_squall_keys(registered, caplog):
    class Retype:
        @hookimpl
        def squall_add_config_types(self):
            return {"topology.name": int}

    registered(Retype(), "test-retype")
    with caplog.at_level(logging.WARNING, logger="squall.config"):
        assert config.nullable_types()["topology.name"] == (str,)
    assert "may not change the type of 'topology.name'" in caplog.text
