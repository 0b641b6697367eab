"""A shell component's ``command`` is an argv list: anything else (a string above all, which
would be run as one program named by all of it) is refused by ``create_topology()`` and at
submit with a TopologyError naming the component, not found by workers that crash-loop."""
from __future__ import annotations

import sys

import pytest

from squall import ShellBolt, ShellSpout, Spout, TopologyBuilder, TopologyError
from squall.plugin_manager import validate_topology


class Words(Spout):
    outputs = ["word"]

    def next_tuple(self) -> None:
        pass


def bolt_class(command: object) -> type[ShellBolt]:
    return type("Split", (ShellBolt,), {"command": command, "outputs": ["word"]})


def topology_with_bolt(command: object) -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("split", bolt_class(command)).shuffle_grouping("words")
    return b


@pytest.mark.parametrize("command", [
    "python3 split.py", [], (), None, ["python3", 3], {"python3": "split.py"}],
    ids=["string", "empty-list", "empty-tuple", "none", "not-all-strings", "dict"])
def test_create_topology_refuses_a_shell_bolt_whose_command_is_no_argv(command):
    with pytest.raises(TopologyError, match=r"component 'split': command must be a non-empty "
                                            r"list of strings"):
        topology_with_bolt(command).create_topology()


def test_create_topology_refuses_a_shell_spout_whose_command_is_a_string():
    b = TopologyBuilder()
    b.set_spout("sentences", type("Sentences", (ShellSpout,),
                                  {"command": "node sentences.js", "outputs": ["s"]}))
    with pytest.raises(TopologyError, match=r"component 'sentences': .*'node sentences\.js'"):
        b.create_topology()


def test_an_argv_list_or_tuple_and_a_command_of_its_own_are_accepted():
    topology_with_bolt([sys.executable, "split.py"]).create_topology()
    topology_with_bolt((sys.executable, "split.py")).create_topology()

    class Worked(ShellBolt):          # works its command out from the conf: not checked here
        outputs = ["word"]

        def shell_command(self, conf):
            return [sys.executable, str(conf["script"])]

    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("split", Worked).shuffle_grouping("words")
    b.create_topology()


def test_submit_refuses_a_shell_bolt_whose_command_became_a_string_after_the_build():
    cls = bolt_class([sys.executable, "split.py"])
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("split", cls).shuffle_grouping("words")
    topology = b.create_topology()
    cls.command = "python3 split.py"         # type: ignore[assignment]
    with pytest.raises(TopologyError, match="component 'split': command must be"):
        validate_topology(topology, {})
