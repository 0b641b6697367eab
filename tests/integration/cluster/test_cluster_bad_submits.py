"""Bad topologies get one clear error at submit time and never affect nimbus."""
from __future__ import annotations

import json
import os
import textwrap

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

GOOD_COMPONENTS = """
    from squall import Bolt, Spout
    class S(Spout):
        outputs = ["x"]
        def next_tuple(self): pass
    class B(Bolt):
        def process(self, tup): pass
"""
BUILD = """
    from squall import TopologyBuilder
    {imports}
    b = TopologyBuilder()
    b.set_spout("s", S)
    b.set_bolt("b", B).shuffle_grouping("s")
    topology = b.create_topology()
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_bad_submits_give_clear_errors_and_nimbus_keeps_running(squall_cluster, tmp_path):
    c = squall_cluster
    nimbus = c.start_nimbus()
    c.wait(lambda: c.state.nimbuses(), 30, "nimbus did not register")

    # a syntax error in the user's file: named with file and line, found before upload
    bad = write(tmp_path / "syn" / "topo.py", "x = 1\ndef broken(:\n    pass\n")
    out = c.squall("submit", f"{bad}:topology", "--name", "syn", check=False)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"syntax error in {bad}, line 2" in out.stderr

    # a module the package does not contain (importable only on the submitting machine)
    write(tmp_path / "lib" / "helper_components.py", GOOD_COMPONENTS)
    topo = write(tmp_path / "app" / "topo.py",
                 BUILD.format(imports="from helper_components import B, S"))
    out = c.squall("submit", f"{topo}:topology", "--name", "missing", check=False,
                   env_extra={"PYTHONPATH": str(tmp_path / "lib")})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "helper_components" in out.stderr and "No module named" in out.stderr
    assert out.stderr.count("\n") == 1

    # a component class that is not a Spout (the description is edited by hand)
    good = write(tmp_path / "good" / "topo.py", GOOD_COMPONENTS + BUILD.format(imports=""))
    from squall.daemon.packaging import prepare_submission, zip_code_dir
    sub = prepare_submission(f"{good}:topology")
    desc = sub.topology.to_json()
    for comp in desc["components"]:
        if comp["id"] == "s":
            comp["ref"] = "topo:TopologyBuilder"
    from squall.errors import TopologyError
    client = c.client()
    with pytest.raises(TopologyError, match="is not a Spout subclass"):
        client.submit_topology("notacomponent", {}, desc, zip_code_dir(sub.code_dir))
    # a package that is not a zip at all
    with pytest.raises(TopologyError, match="not a valid zip"):
        client.submit_topology("notazip", {}, sub.topology.to_json(), b"garbage")

    # nimbus is unaffected: still running, nothing recorded, a good topology is accepted
    assert nimbus.alive()
    assert c.state.topology_ids() == []
    tid = client.submit_topology("good", {}, sub.topology.to_json(),
                                 zip_code_dir(sub.code_dir))
    assert tid.startswith("good-")
    assert c.listed() == {"good": "pending"} or c.listed() == {"good": "active"}
    client.close()
    assert json.loads(json.dumps(os.listdir(nimbus.local_dir / "nimbus" / "stormdist"))) == [tid]
