"""Code packages: target resolution errors, what goes into the zip, extraction, loading."""
from __future__ import annotations

import sys
import textwrap
import zipfile
import io

import pytest

from squall.daemon import packaging
from squall.errors import TopologyError

TOPO = """
from squall import Bolt, Spout, TopologyBuilder

class S(Spout):
    outputs = ["x"]

class B(Bolt):
    def process(self, tup):
        pass

def build():
    b = TopologyBuilder()
    b.set_spout("s", S)
    b.set_bolt("b", B).shuffle_grouping("s")
    return b.create_topology()

topology = build()
not_a_topology = 42

def raises():
    raise RuntimeError("no luck")
"""


def write(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    write(root / "mytopo.py", TOPO)
    write(root / "helpers" / "__init__.py")
    write(root / "data.txt", "kept")
    write(root / "__pycache__" / "mytopo.cpython-311.pyc", "x")
    write(root / "helpers" / "stale.pyc", "x")
    write(root / ".git" / "config", "x")
    write(root / ".env", "SECRET=1")
    write(root / ".venv" / "lib" / "big.py", "x")
    write(root / "venv" / "lib" / "big.py", "x")
    write(root / "env2" / "pyvenv.cfg", "home = /usr")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [m for m in sys.modules if m in ("mytopo", "pkgtopo", "pkgtopo.sub")]:
        del sys.modules[name]


def names(data: bytes) -> list[str]:
    return sorted(zipfile.ZipFile(io.BytesIO(data)).namelist())


def test_file_target_ships_its_directory_without_caches_venvs_or_hidden_files(project):
    sub = packaging.prepare_submission(f"{project / 'mytopo.py'}:topology")
    assert sub.code_dir == project and sub.prefix == "" and sub.default_name == "topology"
    assert set(sub.topology.components) == {"s", "b"}
    assert names(packaging.zip_code_dir(sub.code_dir)) == ["data.txt", "helpers/__init__.py",
                                                           "mytopo.py"]


def test_a_link_to_nothing_is_left_out_with_a_warning(project, caplog):
    (project / "gone.txt").symlink_to(project / "never-there.txt")
    with caplog.at_level("WARNING", logger="squall.daemon.packaging"):
        assert names(packaging.zip_code_dir(project)) == ["data.txt", "helpers/__init__.py",
                                                          "mytopo.py"]
    assert "not packaging" in caplog.text and "gone.txt" in caplog.text


def test_function_target_is_called(project):
    sub = packaging.prepare_submission(f"{project / 'mytopo.py'}:build")
    assert set(sub.topology.components) == {"s", "b"}


def test_dotted_module_ships_its_top_level_package_under_its_name(tmp_path, monkeypatch):
    pkg = tmp_path / "pkgroot" / "pkgtopo"
    write(pkg / "__init__.py")
    write(pkg / "sub.py", TOPO)
    monkeypatch.syspath_prepend(str(tmp_path / "pkgroot"))
    sub = packaging.prepare_submission("pkgtopo.sub:topology")
    assert sub.code_dir == pkg and sub.prefix == "pkgtopo"
    assert names(packaging.zip_code_dir(sub.code_dir, sub.prefix)) == [
        "pkgtopo/__init__.py", "pkgtopo/sub.py"]
    for name in ("pkgtopo", "pkgtopo.sub"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("target, message", [
    ("{root}/nofile.py:topology", "no such file"),
    ("no_such_module_xyz.mod:topology", "no module named 'no_such_module_xyz'"),
    ("{root}/mytopo.py:missing", "has no attribute 'missing'"),
    ("{root}/mytopo.py:not_a_topology", "not a topology"),
    ("{root}/mytopo.py:raises", "raised RuntimeError: no luck"),
    ("{root}/mytopo.py", "must look like"),
])
def test_bad_targets_give_one_clear_error(project, target, message):
    with pytest.raises(TopologyError, match=message):
        packaging.prepare_submission(target.format(root=project))


def test_syntax_error_names_file_and_line(tmp_path):
    bad = write(tmp_path / "broken_topo_mod.py", "x = 1\ny = (\n")
    with pytest.raises(TopologyError, match=rf"syntax error in {bad}, line \d"):
        packaging.prepare_submission(f"{bad}:topology")


def test_extract_and_load_resolve_classes_from_the_package(project, tmp_path):
    sub = packaging.prepare_submission(f"{project / 'mytopo.py'}:topology")
    dist = tmp_path / "stormdist" / "t-1-1"
    dist.mkdir(parents=True)
    (dist / packaging.CODE_FILE).write_bytes(packaging.zip_code_dir(sub.code_dir))
    packaging.write_json(dist / packaging.CONF_FILE, {"k": 1})
    packaging.write_json(dist / packaging.TOPOLOGY_FILE, sub.topology.to_json())
    assert packaging.has_package(dist)
    sys.modules.pop("mytopo", None)
    conf, topology = packaging.load_topology(dist)
    assert conf == {"k": 1}
    assert topology.components["s"].cls.__module__ == "mytopo"
    assert (dist / packaging.CODE_DIR / "mytopo.py").is_file()
    assert str(dist / packaging.CODE_DIR) in sys.path
    sys.path.remove(str(dist / packaging.CODE_DIR))


def test_extract_refuses_bad_zips_and_escaping_entries(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(TopologyError, match="not a valid zip"):
        packaging.extract_code(bad, tmp_path / "out")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../escape.py", "x")
    evil = tmp_path / "evil.zip"
    evil.write_bytes(buf.getvalue())
    with pytest.raises(TopologyError, match="escapes"):
        packaging.extract_code(evil, tmp_path / "out")
    assert not (tmp_path / "escape.py").exists()


def test_the_digests_recorded_at_download_find_what_changed_since(tmp_path):
    dist = tmp_path / "t-1-1"
    dist.mkdir()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("topo.py", "x = 1\n")
        zf.writestr("lib/util.py", "y = 2\n")
    (dist / packaging.CODE_FILE).write_bytes(buf.getvalue())
    packaging.write_json(dist / packaging.CONF_FILE, {"k": 1})
    packaging.write_json(dist / packaging.TOPOLOGY_FILE, {"components": {}})
    assert packaging.damaged_files(dist) == [packaging.DIGEST_FILE]     # none recorded
    packaging.extract_code(dist / packaging.CODE_FILE, dist / packaging.CODE_DIR)
    packaging.record_digests(dist)
    assert packaging.damaged_files(dist) == []
    # what the running workers add (their bytecode) is no damage
    write(dist / packaging.CODE_DIR / "__pycache__" / "topo.cpython-311.pyc", "x")
    assert packaging.damaged_files(dist) == []
    conf = dist / packaging.CONF_FILE
    conf.write_text(conf.read_text()[:4])
    (dist / packaging.CODE_DIR / "lib" / "util.py").unlink()
    assert packaging.damaged_files(dist) == ["code/lib/util.py", packaging.CONF_FILE]
    (dist / packaging.DIGEST_FILE).write_text("{trunc")
    assert packaging.damaged_files(dist) == [packaging.DIGEST_FILE]
