"""A streamparse ``Topology`` class (its ``spec()`` DSL, streamparse 5 from PyPI) becomes the
same squall topology: components, parallelism, config, streams and every grouping; what squall
cannot run is one clear error."""
from __future__ import annotations

from typing import Any

import pytest
from streamparse import (
    Bolt, Grouping, JavaBolt, Spout, Stream, TicklessBatchingBolt, Topology,
)

from squall import TopologyError
from squall.api.target import load_target
from squall.multilang.streamparse import (
    StreamparseBolt, StreamparseShellBolt, StreamparseShellSpout, StreamparseSpout,
    from_streamparse,
)


class Words(Spout):
    outputs = [Stream(["word"]), Stream(["word", "why"], name="odd"),
               Stream(["word"], name="pick", direct=True)]


class Count(Bolt):
    outputs = ["word", "count"]


class Everything(Topology):
    config = {"topology.workers": 2, "my.key": "v"}
    words = Words.spec(par=2)
    by_field = Count.spec(inputs={words: Grouping.fields("word")}, par=3,
                          config={"k": 1})
    shuffled = Count.spec(inputs=[words])
    to_all = Count.spec(inputs={words["odd"]: Grouping.ALL})
    to_one = Count.spec(inputs={words: Grouping.GLOBAL})
    local = Count.spec(inputs={words: Grouping.LOCAL_OR_SHUFFLE, by_field: Grouping.NONE})
    direct = Count.spec(inputs={words["pick"]: Grouping.DIRECT})


def test_every_part_of_the_dsl_is_carried_over() -> None:
    t = from_streamparse(Everything)
    assert t.conf == {"topology.workers": 2, "my.key": "v"}
    c = t.components
    assert c["words"].cls is StreamparseSpout and c["words"].parallelism == 2
    assert {n: list(s.fields) for n, s in c["words"].streams.items()} == \
        {"default": ["word"], "odd": ["word", "why"], "pick": ["word"]}
    assert c["words"].streams["pick"].direct
    assert c["by_field"].cls is StreamparseBolt and c["by_field"].parallelism == 3
    assert c["by_field"].config["k"] == 1
    assert c["by_field"].config["squall.streamparse.class"] == f"{__name__}:Count"
    grouping = {cid: sorted((i.component, i.stream, i.grouping, tuple(i.fields))
                            for i in spec.inputs) for cid, spec in c.items() if spec.inputs}
    assert grouping == {
        "by_field": [("words", "default", "fields", ("word",))],
        "shuffled": [("words", "default", "shuffle", ())],
        "to_all": [("words", "odd", "all", ())],
        "to_one": [("words", "default", "global", ())],
        "local": [("by_field", "default", "none", ()),
                  ("words", "default", "local_or_shuffle", ())],
        "direct": [("words", "pick", "direct", ())],
    }


def test_shell_mode_runs_python_components_through_streamparse_run() -> None:
    class Shelled(Topology):
        config = {"squall.streamparse.mode": "shell"}
        words = Words.spec()
        count = Count.spec(inputs=[words])

    spec = from_streamparse(Shelled).components["count"]
    assert spec.cls is StreamparseShellBolt
    assert spec.config["squall.streamparse.command"][1:] == \
        ["-m", "streamparse.run", f"{__name__}.Count"]


def test_what_squall_cannot_run_is_one_clear_error() -> None:
    class WithJava(Topology):
        words = Words.spec()
        java = JavaBolt.spec(full_class_name="org.example.Bolt", args_list=[], inputs=[words],
                             outputs=["x"])

    with pytest.raises(TopologyError, match="'java' is a Java component"):
        from_streamparse(WithJava)

    class PerEnvironment(Topology):
        words = Words.spec(par={"prod": 4})

    with pytest.raises(TopologyError, match="'words': par must be an int"):
        from_streamparse(PerEnvironment)

    class BadMode(Topology):
        config = {"squall.streamparse.mode": "fast"}
        words = Words.spec()

    with pytest.raises(TopologyError, match="'in-process' or 'shell'"):
        from_streamparse(BadMode)


def test_a_target_may_name_a_streamparse_topology() -> None:
    t = load_target(f"{__name__}:Everything")
    assert sorted(t.components) == ["by_field", "direct", "local", "shuffled", "to_all",
                                    "to_one", "words"]


class Batcher(TicklessBatchingBolt):
    outputs = ["word", "n"]


def test_a_tickless_batching_bolt_runs_as_a_subprocess() -> None:
    """Its batcher thread acks and emits outside squall's loop: in-process it lost tuples and
    could kill the worker's loop."""
    class Tickless(Topology):
        words = Words.spec()
        batcher = Batcher.spec(inputs=[words])
        count = Count.spec(inputs=[batcher])

    c = from_streamparse(Tickless).components
    assert c["batcher"].cls is StreamparseShellBolt
    assert c["batcher"].config["squall.streamparse.command"][1:] == \
        ["-m", "streamparse.run", f"{__name__}.Batcher"]
    assert c["words"].cls is StreamparseSpout and c["count"].cls is StreamparseBolt


class Plain(Topology):
    words = Words.spec()
    count = Count.spec(inputs=[words])


class ShellPlain(Topology):
    config = {"squall.streamparse.mode": "shell"}
    words = Words.spec()
    count = Count.spec(inputs=[words])


def test_the_mode_may_be_given_with_c_or_in_a_config_file(tmp_path: Any) -> None:
    """``-c`` over the Topology's config over a config file, as squall's layers go; it was
    read from the Topology's config only, and a bad value given elsewhere passed."""
    from squall.config import load_config

    def classes(target: str, overrides: tuple[str, ...] = (), file: Any = None) -> set[type]:
        conf = load_config(file, overrides, home=tmp_path, env={})
        return {s.cls for s in load_target(f"{__name__}:{target}", conf).components.values()}

    shell = {StreamparseShellBolt, StreamparseShellSpout}
    assert classes("Plain") == {StreamparseBolt, StreamparseSpout}
    assert classes("Plain", ("squall.streamparse.mode=shell",)) == shell
    assert classes("ShellPlain") == shell
    assert classes("ShellPlain", ("squall.streamparse.mode=in-process",)) == \
        {StreamparseBolt, StreamparseSpout}
    yaml = tmp_path / "squall.yaml"
    yaml.write_text("squall.streamparse.mode: shell\n")
    assert classes("Plain", file=yaml) == shell
    with pytest.raises(TopologyError, match=r"squall.streamparse.mode \(in -c\) must be "
                                            r"'in-process' or 'shell', got 'bogus'"):
        classes("ShellPlain", ("squall.streamparse.mode=bogus",))
    yaml.write_text("squall.streamparse.mode: fast\n")
    with pytest.raises(TopologyError, match="'in-process' or 'shell', got 'fast'"):
        classes("Plain", file=yaml)


def test_a_mode_given_only_to_submit_topology_is_refused_not_ignored() -> None:
    """The mode is chosen when the class is converted: a LocalCluster given another one in
    its submit conf ran the components in the converted mode, saying nothing."""
    from squall import LocalCluster
    from squall.errors import NotAliveError
    from squall.multilang.streamparse import check_mode

    with LocalCluster() as cluster:
        with pytest.raises(TopologyError, match=r"squall.streamparse.mode is 'shell' in the "
                                                r"submitted conf but streamparse component "
                                                r"'(words|count)' was converted 'in-process'"):
            cluster.submit_topology("sp", {"squall.streamparse.mode": "shell"},
                                    from_streamparse(Plain))
        with pytest.raises(NotAliveError):                       # it started nothing
            cluster.get_topology_info("sp")
    # what converted it agrees with the conf it runs with: nothing to say
    check_mode(from_streamparse(ShellPlain), {"squall.streamparse.mode": "shell"})
    check_mode(from_streamparse(Plain), {"squall.streamparse.mode": "in-process"})
    check_mode(from_streamparse(Plain), {})


@pytest.mark.parametrize("target", [Plain, ShellPlain])
def test_the_keys_a_conversion_sets_raise_no_unknown_key_warning(target: Any) -> None:
    """Every component of every streamparse topology warned of its
    ``squall.streamparse.converted``, a key squall sets itself."""
    from squall.config import validate_component

    for cid, spec in from_streamparse(target).components.items():
        assert spec.config.get("squall.streamparse.converted")
        assert validate_component(cid, spec.config, warn=False) == []
