"""Nimbus's code store: topology packages under ``storm.local.dir/nimbus/`` (API.md section 9).

``stormdist/<topology-id>/`` holds a topology's package (:data:`~squall.daemon.packaging.CONF_FILE`,
:data:`~squall.daemon.packaging.TOPOLOGY_FILE`, :data:`~squall.daemon.packaging.CODE_FILE`); a
submitted package is first written to ``inbox/<random>/`` and moved into place once accepted;
``counter`` holds the last topology counter handed out. A download from another nimbus goes to
``stormdist/<topology-id>.tmp/`` first. Topologies read back from disk are cached (they never
change) until :meth:`CodeStore.forget`.

A package's directory also holds :data:`~squall.daemon.packaging.DIGEST_FILE`, the digests of
its files as stored (at submit, or after a download). A package whose files changed on this
disk since (checked at start-up and before a file is served) or whose conf or topology cannot
be read is *damaged*: one ERROR line names its file, :meth:`CodeStore.problem` says why (the
topology's status reason), it is not served nor published to the other nimbuses, and it is
replaced when one of them holds a good copy. A package stored by a release that kept no
digests is not checked.

Called from gRPC handler threads and the monitor thread; callers serialize writes of one
topology (nimbus's lock, or a standby's monitor thread). Blocks on the file system only; raises
:class:`~squall.errors.TopologyError` for a damaged package file asked for or a bad file name,
and a :class:`~squall.errors.SquallError` naming the directory (logged as one line) when a
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
        #: topology id -> why its conf or topology cannot be read (tried again at each read)
        self._unreadable: dict[str, str] = {}
        #: topology id -> why its package's files are not those stored (until replaced)
        self._damaged: dict[str, str] = {}
        #: a download could not be stored for lack of room (logged once until one is)
        self._told_unwritable = False

    def prepare(self) -> None:
        """Create the directories (at start), emptied of what a previous life left half
        done: packages staged for a submit and downloads (a crash skips their clean-up);
        then check every package against its digests (one ERROR line per damaged one)."""
        shutil.rmtree(self._inbox, ignore_errors=True)
        self.stormdist.mkdir(parents=True, exist_ok=True)
        packaging.remove_partial(self.stormdist)
        self._inbox.mkdir(parents=True, exist_ok=True)
        for topology_id in self.packages():
            self._check_digests(topology_id)

    def directory(self, topology_id: str) -> Path:
        """Where ``topology_id``'s package lives (the assignment's ``code_dir``)."""
        return self.stormdist / topology_id

    def topology_of(self, topology_id: str) -> tuple[dict[str, Any], Topology] | None:
        """``(merged conf, Topology without resolved classes)`` from the local package; None
        (logged once) when this nimbus has no package for it, or one whose conf or topology
        cannot be read (:meth:`problem` says why; read again at the next call). Never
        raises for one topology's files: every caller goes on with the others."""
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
        try:
            tconf = packaging.read_json(directory / packaging.CONF_FILE)
            topology = Topology.from_json(
                packaging.read_json(directory / packaging.TOPOLOGY_FILE), resolve=False)
            if not isinstance(tconf, dict):
                raise TopologyError(f"cannot read {directory / packaging.CONF_FILE}: "
                                    "it holds no JSON object")
        except (TopologyError, KeyError, TypeError, ValueError, AttributeError) as exc:
            why = str(exc) if isinstance(exc, TopologyError) else \
                f"cannot read {directory / packaging.TOPOLOGY_FILE}: {exc!r}"
            if self._unreadable.get(topology_id) != why and topology_id not in self._damaged:
                log.error("the package of topology %s on this nimbus is damaged: %s; the "
                          "topology is not scheduled while it is (kill it and submit it "
                          "again)", topology_id, why)
            self._unreadable[topology_id] = why
            return None
        if self._unreadable.pop(topology_id, None) is not None:
            log.info("the package of topology %s on this nimbus can be read again", topology_id)
        loaded = self._loaded[topology_id] = ({**self._conf, **tconf}, topology)
        return loaded

    def problem(self, topology_id: str) -> str:
        """Why this nimbus's package of ``topology_id`` cannot be used, as a status reason
        (``""``: nothing known against it). Reads nothing."""
        why = self._unreadable.get(topology_id) or self._damaged.get(topology_id)
        if not why:
            return ""
        return f"its package on nimbus is damaged ({why}); kill it and submit it again"

    def damaged(self) -> list[str]:
        """The topologies whose package here is known to be damaged, sorted."""
        return sorted({*self._unreadable, *self._damaged})

    def _check_digests(self, topology_id: str, files: tuple[str, ...] | None = None) -> str:
        """Check ``files`` (default: every recorded one) of ``topology_id``'s package against
        the digests stored with it; a change found is logged once and recorded as damage.
        Returns why it is damaged (``""``: it is not, or it was stored without digests)."""
        directory = self.directory(topology_id)
        if not (directory / packaging.DIGEST_FILE).is_file():
            return self._damaged.get(topology_id, "")    # stored by an earlier release
        changed = packaging.damaged_files(directory, files)
        if not changed:
            return self._damaged.get(topology_id, "")
        why = (f"{', '.join(str(directory / name) for name in changed)} changed since it "
               f"was stored")
        if topology_id not in self._damaged:
            log.error("the package of topology %s on this nimbus is damaged: %s; it is not "
                      "sent to supervisors or other nimbuses (kill the topology and submit "
                      "it again)", topology_id, why)
            self._damaged[topology_id] = why
        return self._damaged[topology_id]

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
                packaging.record_digests(inbox, packaging.PACKAGE_FILES)
                packaging.extract_code(inbox / packaging.CODE_FILE, inbox / packaging.CODE_DIR)
            except OSError as exc:
                raise self._cannot_write(self._inbox, exc) from None
            yield inbox
        finally:
            shutil.rmtree(inbox, ignore_errors=True)

    def _cannot_write(self, directory: Path, exc: OSError, *, told: bool = False
                      ) -> SquallError:
        """The error for a write to ``directory`` that failed: the disk full, read-only, the
        permissions wrong; logged here as one line unless ``told`` (said already)."""
        reason = exc.strerror or str(exc)
        error = SquallError(f"nimbus cannot write its storm.local.dir ({directory}): {reason}")
        if not told:
            log.error("%s", error)
        return error

    def install(self, staged: Path, topology_id: str) -> None:
        """Move a :meth:`staged` package into place as ``topology_id``'s."""
        target = self.directory(topology_id)
        shutil.rmtree(target, ignore_errors=True)
        staged.rename(target)
        self._forget_damage(topology_id)

    def _forget_damage(self, topology_id: str) -> None:
        self._loaded.pop(topology_id, None)
        self._unreadable.pop(topology_id, None)
        self._damaged.pop(topology_id, None)

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
        self._forget_damage(topology_id)
        shutil.rmtree(self.directory(topology_id), ignore_errors=True)

    def clean(self, live: set[str]) -> None:
        """Delete every package whose topology is not in ``live`` (downloads in progress
        stay)."""
        for path in self.stormdist.iterdir():
            if path.name not in live and not path.name.endswith(".tmp"):
                shutil.rmtree(path, ignore_errors=True)
                self._forget_damage(path.name)

    def packages(self) -> list[str]:
        """The topology ids this store holds a complete package for that is not known to be
        damaged (what it offers the other nimbuses), sorted."""
        damaged = set(self.damaged())
        return sorted(p.name for p in self.stormdist.iterdir()
                      if not p.name.endswith(".tmp") and p.name not in damaged
                      and packaging.has_package(p))

    def missing(self, topology_ids: Iterable[str]) -> list[str]:
        """Those of ``topology_ids`` this store has no complete package for."""
        return [tid for tid in topology_ids if not packaging.has_package(self.directory(tid))]

    def install_downloaded(self, topology_id: str, fetch: Callable[[str], bytes]) -> None:
        """Store ``topology_id``'s package from ``fetch(file name)`` for every package file
        (a nimbus downloading from another), with its digests; nothing is in place until all
        arrived, and a damaged copy held here is replaced. What ``fetch`` raises goes up as
        it is; a SquallError naming the directory when this store cannot write it (the disk
        full: logged once until a download is stored again; nothing is left behind)."""
        files = {file: fetch(file) for file in packaging.PACKAGE_FILES}
        tmp = self.stormdist / f"{topology_id}.tmp"
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            for file, data in files.items():
                (tmp / file).write_bytes(data)
            packaging.record_digests(tmp, packaging.PACKAGE_FILES)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            error = self._cannot_write(self.stormdist, exc, told=self._told_unwritable)
            self._told_unwritable = True
            raise error from None
        if self._told_unwritable:
            self._told_unwritable = False
            log.info("nimbus can write its storm.local.dir (%s) again", self.stormdist)
        self.install(tmp, topology_id)

    def package_file(self, topology_id: str, file: str) -> Path | None:
        """The path of one package file, None when this store does not have it. TopologyError
        for a name that is not a package file, and for a file of a damaged package (checked
        against its digest here: one file read, as the caller reads it to send it)."""
        if file not in packaging.PACKAGE_FILES or "/" in topology_id:
            raise TopologyError(f"no package file {file!r}")
        path = self.directory(topology_id) / file
        if not path.is_file():
            return None
        why = self._unreadable.get(topology_id) or self._check_digests(topology_id, (file,))
        if why:
            raise TopologyError(f"nimbus's copy of the package of topology {topology_id} is "
                                f"damaged ({why})")
        return path
