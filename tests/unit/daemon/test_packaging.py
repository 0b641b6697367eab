"""Code packages: target resolution errors, what goes into the zip, extraction, loading."""
from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import textwrap
import zipfile

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


def _extracted(tmp_path, code_dir, prefix=""):
    """``code_dir`` zipped and unpacked again, as a supervisor does."""
    (tmp_path / "code.zip").write_bytes(packaging.zip_code_dir(code_dir, prefix))
    return packaging.extract_code(tmp_path / "code.zip", tmp_path / "unpacked")


def test_permission_bits_travel_with_the_package_without_setuid_or_group_write(tmp_path):
    # a ShellBolt whose command is ./bin/tool runs on a cluster as under squall local
    root = tmp_path / "proj"
    tool = write(root / "bin" / "tool", "#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    write(root / "data.txt", "x").chmod(0o640)
    write(root / "suid").chmod(0o6777)
    out = _extracted(tmp_path, root)
    mode = {p.relative_to(out).as_posix(): p.stat().st_mode & 0o7777
            for p in out.rglob("*") if p.is_file()}
    assert mode == {"bin/tool": 0o755, "data.txt": 0o640, "suid": 0o755}


def test_an_entry_packed_without_unix_modes_is_unpacked_as_created(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("topo.py")
        info.create_system = 0                  # packed on Windows: no mode in it
        info.external_attr = 0x20               # MS-DOS archive bit
        zf.writestr(info, "x = 1\n")
    (tmp_path / "code.zip").write_bytes(buf.getvalue())
    out = packaging.extract_code(tmp_path / "code.zip", tmp_path / "unpacked")
    assert os.access(out / "topo.py", os.R_OK | os.W_OK)


def test_links_to_directories_are_followed_with_the_same_rules_and_a_loop_guard(
        tmp_path, caplog):
    write(tmp_path / "shared-data" / "words.txt", "red green\n")
    write(tmp_path / "shared-data" / "__pycache__" / "x.pyc", "x")
    write(tmp_path / "shared-lib" / "common" / "__init__.py", "PREFIX = 'c-'\n")
    root = tmp_path / "proj"
    write(root / "topo.py", "x = 1\n")
    (root / "data").symlink_to("../shared-data")
    (root / "common").symlink_to("../shared-lib/common")
    (root / "common2").symlink_to("../shared-lib/common")   # the same folder twice: both go
    (tmp_path / "shared-data" / "again").symlink_to("..")  # a loop back above the folder
    (root / "data" / "self").symlink_to(".")                # and one into itself
    with caplog.at_level("WARNING", logger="squall.daemon.packaging"):
        got = names(packaging.zip_code_dir(root))
    # "again" leads to tmp_path: its proj is on the way there, and is left out as a loop
    assert [n for n in got if not n.startswith("data/again/")] == [
        "common/__init__.py", "common2/__init__.py", "data/words.txt", "topo.py"]
    assert "data/again/proj" not in "".join(got) and "data/self/" not in "".join(got)
    assert "a loop of links" in caplog.text and str(root / "data" / "self") in caplog.text


def test_node_modules_is_shipped(tmp_path):
    # vendored dependencies of a Node multi-lang component, not a cache
    root = tmp_path / "proj"
    write(root / "topo.py", "x = 1\n")
    write(root / "node_modules" / "shout" / "index.js", "module.exports = 1;\n")
    assert names(packaging.zip_code_dir(root)) == ["node_modules/shout/index.js", "topo.py"]


def test_what_a_zip_cannot_hold_is_left_out_with_one_warning_each(tmp_path, caplog):
    # a FIFO would block the submit for ever, a socket and a name that is not UTF-8 raised
    root = tmp_path / "proj"
    write(root / "topo.py", "x = 1\n")
    os.mkfifo(root / "logpipe")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "dev.sock"))
        with open(os.fsencode(root) + b"/caf\xe9-notes.txt", "wb") as f:
            f.write(b"x")
        with caplog.at_level("WARNING", logger="squall.daemon.packaging"):
            assert names(packaging.zip_code_dir(root)) == ["topo.py"]
    finally:
        sock.close()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert any("logpipe" in ln and "not a regular file" in ln for ln in lines)
    assert any("dev.sock" in ln and "not a regular file" in ln for ln in lines)
    assert any("caf\\udce9-notes.txt" in ln and "not valid UTF-8" in ln for ln in lines)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_a_file_that_cannot_be_read_is_one_error(tmp_path):
    root = tmp_path / "proj"
    write(root / "topo.py", "x = 1\n")
    write(root / "secret.txt", "x").chmod(0)
    with pytest.raises(TopologyError, match="cannot package .*secret.txt: Permission denied"):
        packaging.zip_code_dir(root)


@pytest.mark.parametrize("entry", ["uuid.py", "platform/__init__.py"])
def test_a_module_named_like_the_standard_library_is_refused_at_submit_and_load(
        tmp_path, entry):
    # squall's own lazy imports (platform, uuid) would get it, in nimbus's check and workers
    module = entry.split("/")[0].removesuffix(".py")
    shown = entry.removesuffix("__init__.py")
    root = tmp_path / "proj"
    write(root / "topo.py", "x = 1\n")
    write(root / entry, "NAME = 'acme'\n")
    with pytest.raises(TopologyError, match=rf"^{shown} in {root} shadows the standard "
                                            rf"library module '{module}' .*; rename it$"):
        packaging.zip_code_dir(root)
    dist = tmp_path / "t-1-1"
    dist.mkdir()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("topo.py", "x = 1\n")
        zf.writestr(entry, "NAME = 'acme'\n")
    (dist / packaging.CODE_FILE).write_bytes(buf.getvalue())
    packaging.write_json(dist / packaging.CONF_FILE, {})
    packaging.write_json(dist / packaging.TOPOLOGY_FILE, {"components": {}})
    with pytest.raises(TopologyError, match=rf"^{shown} in the code package shadows"):
        packaging.load_topology(dist)
    assert str(dist / packaging.CODE_DIR) not in sys.path
    assert sys.modules[module].__file__ != str(dist / packaging.CODE_DIR / entry)


LOAD_THEN_USE_DRIVERS = """
import sys
from squall import config, drivers
from squall.daemon import packaging
packaging.load_topology(sys.argv[1])
conf = config.defaults()
for role in ("state", "serializer"):
    drivers.driver_class(role, conf)
import kazoo.client     # as the ZooKeeper store's start() does, in a worker
print(sorted(name for name, module in sys.modules.items()
             if getattr(module, "__file__", None) and sys.argv[1] in module.__file__))
"""


def test_squall_imports_its_plugins_and_drivers_before_the_code_goes_on_the_path(tmp_path):
    # a package's kazoo.py or msgpack.py must not stand in for the state store's or the
    # serializer's library in a worker (the msgpack serializer broke so, and the ZooKeeper
    # store, which imports kazoo when it starts)
    dist = tmp_path / "t-1-1"
    dist.mkdir()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in ("kazoo", "msgpack"):
            zf.writestr(f"{name}.py", "raise RuntimeError('the topology\\'s own module')\n")
    (dist / packaging.CODE_FILE).write_bytes(buf.getvalue())
    packaging.write_json(dist / packaging.CONF_FILE, {})
    packaging.write_json(dist / packaging.TOPOLOGY_FILE, {"components": {}})
    proc = subprocess.run([sys.executable, "-c", LOAD_THEN_USE_DRIVERS, str(dist)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_module_named_like_a_library_squall_uses_is_warned_of_at_submit(tmp_path, caplog):
    root = tmp_path / "proj"
    write(root / "topo.py", "x = 1\n")
    write(root / "kazoo.py", "NAME = 'acme'\n")
    with caplog.at_level("WARNING", logger="squall.daemon.package_imports"):
        assert names(packaging.zip_code_dir(root)) == ["kazoo.py", "topo.py"]
    assert f"kazoo.py in {root} has the name of the library 'kazoo' that squall uses" \
        in caplog.text


LOAD_THEN_BUILD_PLUGINS = """
import sys
from squall.daemon import packaging
from squall.plugin_manager import get_plugin_manager
packaging.load_topology(sys.argv[1])
print(sorted(name for name, _ in get_plugin_manager().list_name_plugin()))  # as configure()
"""


def test_a_third_party_plugins_imports_are_not_the_packages_modules(tmp_path):
    # an installed plugin that imports its own library (tinydep here) at load: a package
    # module of that name must not stand in for it in nimbus's check or a worker
    site = tmp_path / "site"
    write(site / "tinyplug-1.0.dist-info" / "METADATA",
          "Metadata-Version: 2.1\nName: tinyplug\nVersion: 1.0\n")
    write(site / "tinyplug-1.0.dist-info" / "entry_points.txt",
          "[squall.plugins]\ntinyplug = tinyplug_hooks\n")
    write(site / "tinyplug_hooks.py", "import tinydep\nassert tinydep.INSTALLED\n")
    write(site / "tinydep.py", "INSTALLED = True\n")
    dist = tmp_path / "t-1-1"
    dist.mkdir()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("tinydep.py", "raise RuntimeError('the topology\\'s own module')\n")
    (dist / packaging.CODE_FILE).write_bytes(buf.getvalue())
    packaging.write_json(dist / packaging.CONF_FILE, {})
    packaging.write_json(dist / packaging.TOPOLOGY_FILE, {"components": {}})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", LOAD_THEN_BUILD_PLUGINS, str(dist)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "tinyplug" in proc.stdout
