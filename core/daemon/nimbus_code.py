"""Nimbus's code store: topology packages under ``storm.local.dir/nimbus/`` (API.md section 9).

``stormdist/<topology-id>/`` holds a topology's package (:data:`~squall.daemon.packaging.CONF_FILE`,
:data:`~squall.daemon.packaging.TOPOLOGY_FILE`, :data:`~squall.daemon.packaging.CODE_FILE`); a
submitted package is first written to ``inbox/<random>/`` and moved into place once accepted;
``counter`` holds the last topology counter handed out. A download from the leader goes to
``stormdist/<topology-id>.tmp/`` first. Topologies read back from disk are cached (they never
change) until :meth:`CodeStore.forget`.

Called from gRPC handler threads and the monitor thread; callers serialize writes of one
topology (nimbus's lock, or a standby's monitor thread). Blocks on the file system only; raises
:class:`~squall.errors.TopologyError` for an unreadable package or a bad file name, and a
:class:`~squall.errors.SquallError` naming the directory (logged as one line) when a submit's
package or the counter cannot be written (the disk full, read-only).
"""
from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from squall.api.topology import Topology
from squall.daemon import packaging
from squall.errors import SquallError, TopologyError

log = logging.getLogger(__name__)


class CodeStore:
    """The packages in ``local_dir`` (nimbus's ``storm.local.dir/nimbus``); ``conf`` is the
    daemon's conf, under the topology conf in :meth:`topology_of`."""

    def __init__(self, local_dir: Path, conf: Mapping[str, Any]) -> None:
        self.local_dir = local_dir
        self.stormdist = local_dir / "stormdist"
        self._inbox = local_dir / "inbox"
        self._conf = dict(conf)
        self._loaded: dict[str, tuple[dict[str, Any], Topology]] = {}
        #: topologies whose missing package was logged (once each)
        self._told_missing: set[str] = set()

    def prepare(self) -> None:
        """Create the directories (at start), emptied of what a previous life left half
        done: packages staged for a submit and downloads (a crash skips their clean-up)."""
        shutil.rmtree(self._inbox, ignore_errors=True)
        self.stormdist.mkdir(parents=True, exist_ok=True)
        packaging.remove_partial(self.stormdist)
        self._inbox.mkdir(parents=True, exist_ok=True)

    def directory(self, topology_id: str) -> Path:
        """Where ``topology_id``'s package lives (the assignment's ``code_dir``)."""
        return self.stormdist / topology_id

    def topology_of(self, topology_id: str) -> tuple[dict[str, Any], Topology] | None:
        """``(merged conf, Topology without resolved classes)`` from the local package; None
        (logged) when this nimbus has no package for it."""
        cached = self._loaded.get(topology_id)
        if cached is not None:
            return cached
        directory = self.directory(topology_id)
        if not packaging.has_package(directory):
            if topology_id not in self._told_missing:
                self._told_missing.add(topology_id)
                log.error("no local package for topology %s in %s", topology_id, directory)
            return None
        self._told_missing.discard(topology_id)
        tconf = packaging.read_json(directory / packaging.CONF_FILE)
        topology = Topology.from_json(packaging.read_json(directory / packaging.TOPOLOGY_FILE),
                                      resolve=False)
        loaded = self._loaded[topology_id] = ({**self._conf, **tconf}, topology)
        return loaded

    @contextmanager
    def staged(self, tconf: Mapping[str, Any], topology_json: Mapping[str, Any],
               code: bytes) -> Iterator[Path]:
        """A new inbox directory holding a submitted package with its code extracted (for
        validation); removed on exit unless :meth:`install` moved it. TopologyError when the
        code is not a valid zip, SquallError naming the inbox when it cannot be written."""
        inbox = self._inbox / uuid.uuid4().hex
        try:
            try:
                inbox.mkdir(parents=True)
                (inbox / packaging.CODE_FILE).write_bytes(code)
                packaging.write_json(inbox / packaging.CONF_FILE, dict(tconf))
                packaging.write_json(inbox / packaging.TOPOLOGY_FILE, dict(topology_json))
                packaging.extract_code(inbox / packaging.CODE_FILE, inbox / packaging.CODE_DIR)
            except OSError as exc:
                raise self._cannot_write(self._inbox, exc) from None
            yield inbox
        finally:
            shutil.rmtree(inbox, ignore_errors=True)

    def _cannot_write(self, directory: Path, exc: OSError) -> SquallError:
        """The error (logged once here) for a write to ``directory`` that failed: the disk
        full, read-only, the permissions wrong."""
        reason = exc.strerror or str(exc)
        log.error("nimbus cannot write its storm.local.dir (%s): %s", directory, reason)
        return SquallError(f"nimbus cannot write its storm.local.dir ({directory}): {reason}")

    def install(self, staged: Path, topology_id: str) -> None:
        """Move a :meth:`staged` package into place as ``topology_id``'s."""
        target = self.directory(topology_id)
        shutil.rmtree(target, ignore_errors=True)
        staged.rename(target)

    def next_counter(self, topology_ids: Iterable[str]) -> int:
        """The next topology counter: above the stored one and every ``name-N-time`` id in
        ``topology_ids`` (so a nimbus that lost its directory never reuses one); stored."""
        path = self.local_dir / "counter"
        try:
            counter = int(path.read_text())
        except (OSError, ValueError):
            counter = 0
        for tid in topology_ids:
            parts = tid.rsplit("-", 2)
            if len(parts) == 3 and parts[1].isdigit():
                counter = max(counter, int(parts[1]))
        counter += 1
        try:
            path.write_text(str(counter))
        except OSError as exc:
            raise self._cannot_write(self.local_dir, exc) from None
        return counter

    def forget(self, topology_id: str) -> None:
        """Delete ``topology_id``'s package (a killed topology)."""
        self._loaded.pop(topology_id, None)
        shutil.rmtree(self.directory(topology_id), ignore_errors=True)

    def clean(self, live: set[str]) -> None:
        """Delete every package whose topology is not in ``live`` (downloads in progress
        stay)."""
        for path in self.stormdist.iterdir():
            if path.name not in live and not path.name.endswith(".tmp"):
                shutil.rmtree(path, ignore_errors=True)
                self._loaded.pop(path.name, None)

    def packages(self) -> list[str]:
        """The topology ids this store holds a complete package for, sorted."""
        return sorted(p.name for p in self.stormdist.iterdir()
                      if not p.name.endswith(".tmp") and packaging.has_package(p))

    def missing(self, topology_ids: Iterable[str]) -> list[str]:
        """Those of ``topology_ids`` this store has no complete package for."""
        return [tid for tid in topology_ids if not packaging.has_package(self.directory(tid))]

    def install_downloaded(self, topology_id: str, fetch: Callable[[str], bytes]) -> None:
        """Store ``topology_id``'s package from ``fetch(file name)`` for every package file
        (a standby downloading from the leader); nothing is in place until all arrived."""
        tmp = self.stormdist / f"{topology_id}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for file in packaging.PACKAGE_FILES:
            (tmp / file).write_bytes(fetch(file))
        self.install(tmp, topology_id)

    def package_file(self, topology_id: str, file: str) -> Path | None:
        """The path of one package file, None when this store does not have it. TopologyError
        for a name that is not a package file."""
        if file not in packaging.PACKAGE_FILES or "/" in topology_id:
            raise TopologyError(f"no package file {file!r}")
        path = self.directory(topology_id) / file
        return path if path.is_file() else None
