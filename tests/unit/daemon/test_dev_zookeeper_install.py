"""Finding the ZooKeeper installation (no JVM started)."""
from __future__ import annotations

from pathlib import Path

import pytest
from squall.daemon import dev_zookeeper
from squall.errors import StateError


def test_a_missing_install_names_the_package(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))  # no lib/*.jar there
    monkeypatch.setattr(dev_zookeeper, "DEBIAN_JAR", str(tmp_path / "absent.jar"))
    with pytest.raises(StateError, match="apt-get install zookeeper"):
        dev_zookeeper.ensure_zookeeper_installed()


def test_zookeeper_home_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    for name in ("zookeeper-3.9.jar", "zookeeper-jute-3.9.jar"):
        (tmp_path / "lib" / name).write_bytes(b"")
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))
    monkeypatch.setattr(dev_zookeeper.shutil, "which", lambda name: "/usr/bin/java")
    classpath = dev_zookeeper.ensure_zookeeper_installed()
    assert classpath.split(":") == [str(tmp_path / "lib" / "zookeeper-3.9.jar"),
                                    str(tmp_path / "lib" / "zookeeper-jute-3.9.jar")]


def test_main_reports_a_missing_install_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))
    monkeypatch.setattr(dev_zookeeper, "DEBIAN_JAR", str(tmp_path / "absent.jar"))
    assert dev_zookeeper.main(["--port", "0", "--dir", str(tmp_path / "d")]) == 1
    err = capsys.readouterr().err
    assert "apt-get install zookeeper" in err and "Traceback" not in err
