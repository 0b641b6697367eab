"""Topology code packages: what ``squall submit`` ships and what a worker runs from.

Submitting: :func:`prepare_submission` resolves ``TARGET`` (``path/to/file.py:attr`` or
``package.module:attr``, a Topology or a function returning one) with clear one-line errors,
and :func:`zip_code_dir` zips the code directory: the directory holding the file, or for a
dotted module the directory of its top-level package (stored under the package's name), or the
directory holding a top-level single-file module; for a file in a streamparse project's
``topologies/``, the project's ``src/`` too, at the package's root beside it (so ``bolts`` and
``spouts`` import in the worker as they did where it was submitted). Left out: ``__pycache__``, ``.venv`` /
``venv`` (and any directory holding a ``pyvenv.cfg``), hidden files and directories, ``*.pyc`` /
``*.pyo``, and with a warning line each what a zip cannot hold (see :func:`iter_code_files`).
Links are followed; each file keeps its permission bits. A module at the package's root
named like a standard-library module is refused
(:func:`~squall.api.target.check_no_stdlib_shadow`).

Storing and running: a topology's directory (``nimbus/stormdist/<id>/`` on nimbus,
``supervisor/stormdist/<id>/`` on a supervisor) holds :data:`CONF_FILE` (the topology conf),
:data:`TOPOLOGY_FILE` (``Topology.to_json()`` with its system components) and :data:`CODE_FILE`
(the zip); :func:`extract_code` unpacks the zip into :data:`CODE_DIR` next to them and
:func:`load_topology` imports squall's plugins and drivers, then puts that directory first on
``sys.path`` and resolves the component classes from it. Only JSON and a zip travel; nothing
is unpickled. A supervisor records what it downloaded in :data:`DIGEST_FILE`
(:func:`record_digests`) and, before it launches a worker, finds what changed on its disk
since (:func:`damaged_files`); nimbus records the package files it stores the same way.

Everything here blocks on the file system (and imports) only; raises :class:`~squall.errors.TopologyError`
for a bad target or package.
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import logging
import os
import shutil
import stat
import sys
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from squall.api.target import (
    check_no_stdlib_shadow,
    is_file_path,
    load_target,
    project_dirs,
    split_target,
)
from squall.daemon.package_imports import import_squall_first, warn_of_library_shadows
from squall.errors import SquallError, TopologyError

log = logging.getLogger(__name__)
CONF_FILE = "stormconf.json"
TOPOLOGY_FILE = "stormtopology.json"
CODE_FILE = "stormcode.zip"
CODE_DIR = "code"
PACKAGE_FILES = (CODE_FILE, CONF_FILE, TOPOLOGY_FILE)
#: a supervisor's record of its downloaded package: relative path -> sha256 of every package
#: file and of every file unpacked into :data:`CODE_DIR`
DIGEST_FILE = "digests.json"
#: left out wherever they are (with every hidden file and directory, and any directory
#: holding a ``pyvenv.cfg``): bytecode caches and virtual environments, rebuilt where they run
SKIP_DIRS = {"__pycache__", ".venv", "venv"}
SKIP_SUFFIXES = (".pyc", ".pyo")
#: refuse to build packages larger than this (a venv or data set in the code dir, usually)
MAX_PACKAGE_BYTES = 512 * 1024 * 1024


@dataclass
class Submission:
    """A loaded target: the topology and the directory to ship (zip entries are relative to
    ``code_dir``; ``prefix`` is prepended to each, e.g. a package's name)."""

    topology: Any
    code_dir: Path
    prefix: str
    default_name: str
    #: more directories whose files go at the package's root too (``project_dirs``)
    extra_dirs: tuple[Path, ...] = ()


def _code_location(path: str) -> tuple[Path, str]:
    """(directory to zip, arcname prefix) for the module part of a target."""
    if is_file_path(path):
        file = Path(path)
        if not file.is_file():
            raise TopologyError(f"no such file: {path}")
        return file.resolve().parent, ""
    top = path.split(".")[0]
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError) as exc:
        raise TopologyError(f"cannot import {path}: {exc}") from exc
    if spec is None:
        raise TopologyError(f"cannot import {path}: no module named {top!r}")
    if spec.submodule_search_locations:            # a package: ship it under its own name
        return Path(list(spec.submodule_search_locations)[0]).resolve(), top
    if spec.origin is None or not os.path.isfile(spec.origin):
        raise TopologyError(f"module {top!r} has no source file to ship")
    return Path(spec.origin).resolve().parent, ""


def prepare_submission(target: str, conf: Mapping[str, Any] | None = None) -> Submission:
    """Load ``target`` for ``conf`` and find its code directory (see the module
    docstring)."""
    path, attr = split_target(target)
    code_dir, prefix = _code_location(path)
    topology = load_target(target, conf)
    extra = tuple(project_dirs(Path(path))) if is_file_path(path) else ()
    return Submission(topology, code_dir, prefix, attr, extra)


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in SKIP_DIRS


def _shown(path: Path | str) -> str:
    """``path`` as a log line can print it (a name that is not valid UTF-8 escaped)."""
    text = str(path)
    return text if text.isprintable() and _encodable(text) else ascii(text)


def _encodable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def iter_code_files(code_dir: Path) -> Iterator[Path]:
    """Files of ``code_dir`` that go into the package, directory by directory in name order.

    Links are followed, to files and to directories alike (a directory reached again inside
    itself, a link loop, is left out with a warning). Left out with one warning line each:
    a link to nothing, anything that is not a regular file once links are followed (a
    socket, a FIFO, a device), a name that is not valid UTF-8 (a zip cannot hold it) and a
    directory that cannot be read. Blocks on the file system only."""
    yield from _walk(Path(code_dir), frozenset({os.path.realpath(code_dir)}))


def _walk(directory: Path, ancestors: frozenset[str]) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        log.warning("not packaging %s: it cannot be read (%s)", _shown(directory),
                    exc.strerror or exc)
        return
    subdirs = []
    for entry in entries:
        path = Path(entry.path)
        if _skipped(entry.name):
            continue
        if not _encodable(entry.name):
            log.warning("not packaging %s: its name is not valid UTF-8; rename it if the "
                        "topology needs it", _shown(path))
            continue
        try:
            st = path.stat()                        # follows links
        except OSError as exc:
            if path.is_symlink():                   # a link to nothing: nothing to ship
                log.warning("not packaging %s: it is a link to %s, which does not exist",
                            _shown(path), _shown(os.readlink(path)))
            else:
                log.warning("not packaging %s: %s", _shown(path), exc.strerror or exc)
            continue
        if stat.S_ISDIR(st.st_mode):
            subdirs.append(path)
        elif stat.S_ISREG(st.st_mode):
            if not entry.name.endswith(SKIP_SUFFIXES):
                yield path
        else:
            log.warning("not packaging %s: it is not a regular file (a socket, FIFO or "
                        "device)", _shown(path))
    for sub in subdirs:
        if (sub / "pyvenv.cfg").exists():           # a virtual environment by another name
            continue
        real = os.path.realpath(sub)
        if real in ancestors:
            log.warning("not packaging %s: it leads back to %s, a folder it is in (a loop "
                        "of links)", _shown(sub), _shown(real))
            continue
        yield from _walk(sub, ancestors | {real})


def zip_code_dir(code_dir: str | os.PathLike[str], prefix: str = "",
                 extra_dirs: tuple[Path, ...] = ()) -> bytes:
    """The zip of ``code_dir`` (entries under ``prefix/`` when given) and of each of
    ``extra_dirs`` at the root (where a name is taken already, the first one stays and the
    other is logged). Each file's permission bits go with it (an executable stays one).
    TopologyError when a module at the package's root is named like a standard-library one
    (:func:`~squall.api.target.check_no_stdlib_shadow`), when a file cannot be read, or past
    :data:`MAX_PACKAGE_BYTES`; a warning line for one named like a library squall uses
    (:func:`~squall.daemon.package_imports.warn_of_library_shadows`)."""
    code_dir = Path(code_dir)
    roots = ((code_dir, prefix), *((Path(d), "") for d in extra_dirs))
    for base, under in roots:
        if not under:
            check_no_stdlib_shadow(base)
            warn_of_library_shadows(base)
    buf = io.BytesIO()
    total = 0
    names: set[str] = set()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, strict_timestamps=False) as zf:
        for base, under in roots:
            for file in iter_code_files(base):
                rel = file.relative_to(base).as_posix()
                name = f"{under}/{rel}" if under else rel
                if name in names:
                    log.warning("not packaging %s: the package has a %s already", file, name)
                    continue
                names.add(name)
                try:
                    total += file.stat().st_size
                    if total > MAX_PACKAGE_BYTES:
                        raise TopologyError(f"the code directory {base} holds more than "
                                            f"{MAX_PACKAGE_BYTES // 2**20} MiB; move data out "
                                            f"of it")
                    zf.write(file, name)    # the mode goes in external_attr (extract_code)
                except OSError as exc:
                    raise TopologyError(f"cannot package {file}: "
                                        f"{exc.strerror or exc}") from exc
    return buf.getvalue()


def extract_code(zip_path: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Path:
    """Unpack a code zip into ``dest`` (replacing it); refuses entries escaping ``dest``."""
    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        with zipfile.ZipFile(zip_path) as zf:
            for info in zf.infolist():
                target = (tmp / info.filename).resolve()
                if not str(target).startswith(str(tmp.resolve()) + os.sep):
                    raise TopologyError(f"code package entry {info.filename!r} escapes its "
                                        "directory")
            for info in zf.infolist():
                path = zf.extract(info, tmp)
                mode = _permissions(info)
                if mode is not None:
                    os.chmod(path, mode)
    except zipfile.BadZipFile as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise TopologyError(f"the code package is not a valid zip file: {exc}") from exc
    except SquallError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return dest


def _permissions(info: zipfile.ZipInfo) -> int | None:
    """The permission bits to give a file unpacked from ``info``: those it was packed with
    (an executable stays one) without group or other write, always readable and writable by
    its owner, never setuid, setgid or sticky; None for a directory or an entry packed
    without Unix modes (left as created)."""
    mode = info.external_attr >> 16
    if (info.is_dir() or info.create_system != 3 or not mode & 0o777
            or stat.S_IFMT(mode) not in (0, stat.S_IFREG)):
        return None
    return (mode & 0o755) | 0o600


def remove_partial(directory: str | os.PathLike[str]) -> None:
    """Delete the ``*.tmp`` entries of ``directory`` (packages a process was writing when it
    died: called at its start, when it writes none); nothing when it does not exist."""
    directory = Path(directory)
    if not directory.is_dir():
        return
    for path in directory.glob("*.tmp"):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def write_json(path: str | os.PathLike[str], value: Any, *, private: bool = False) -> None:
    """Write JSON atomically (temp file + rename); ``private``: readable by the owner only
    (0600; a conf that may hold secrets)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(value, sort_keys=True))
    if private:
        os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def read_json(path: str | os.PathLike[str]) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TopologyError(f"cannot read {path}: {exc}") from exc


def has_package(directory: str | os.PathLike[str]) -> bool:
    return all((Path(directory) / f).is_file() for f in PACKAGE_FILES)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _recorded_files(directory: Path) -> list[str]:
    """The package files and every file under :data:`CODE_DIR`, relative to ``directory``."""
    code = directory / CODE_DIR
    return [*PACKAGE_FILES, *sorted(p.relative_to(directory).as_posix()
                                    for p in code.rglob("*") if p.is_file())]


def record_digests(directory: str | os.PathLike[str],
                   names: tuple[str, ...] | None = None) -> None:
    """Write :data:`DIGEST_FILE` in a package ``directory``: the digests of the files
    ``names`` (relative paths), by default of the package files and of every file of its
    unpacked code (right after a download). OSError when it cannot be read or written."""
    directory = Path(directory)
    recorded = _recorded_files(directory) if names is None else list(names)
    write_json(directory / DIGEST_FILE, {name: _sha256(directory / name) for name in recorded})


def damaged_files(directory: str | os.PathLike[str],
                  names: tuple[str, ...] | None = None) -> list[str]:
    """The files of a package ``directory`` that changed or went since
    :func:`record_digests` (relative paths, sorted; files added since do not count, such as
    ``__pycache__``); ``[DIGEST_FILE]`` when that record is missing or unreadable. ``names``:
    only those of the recorded files. Reads each file checked: call it when it matters
    (before a worker starts, before a file is sent), not on every pass."""
    directory = Path(directory)
    try:
        recorded = json.loads((directory / DIGEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [DIGEST_FILE]
    if not isinstance(recorded, dict):
        return [DIGEST_FILE]
    if names is not None:
        recorded = {name: recorded[name] for name in names if name in recorded}
    damaged = []
    for name, digest in sorted(recorded.items()):
        try:
            same = _sha256(directory / name) == digest
        except OSError:
            same = False
        if not same:
            damaged.append(name)
    return damaged


def load_topology(directory: str | os.PathLike[str]) -> tuple[dict[str, Any], Any]:
    """``(conf, Topology)`` from a stormdist directory, the code dir first on ``sys.path``
    (extracting the code if needed); TopologyError when a class cannot be loaded or a module
    at the package's root is named like a standard-library one.

    Before the code dir goes on ``sys.path``, squall imports what it runs the topology with
    (:func:`~squall.daemon.package_imports.import_squall_first`), so that a module of the
    package named like one of squall's libraries never stands in for it. Nimbus's check at
    submit (:mod:`squall.daemon.validate`) and each worker load a package through here
    alike."""
    from squall.api.topology import Topology

    directory = Path(directory)
    code = directory / CODE_DIR
    if not code.is_dir():
        extract_code(directory / CODE_FILE, code)
    conf = read_json(directory / CONF_FILE)
    check_no_stdlib_shadow(code, "the code package")
    import_squall_first(conf, code)
    if str(code) not in sys.path:
        sys.path.insert(0, str(code))
    importlib.invalidate_caches()
    topology = Topology.from_json(read_json(directory / TOPOLOGY_FILE))
    return conf, topology
