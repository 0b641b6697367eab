"""The logs a killed topology left: where ``squall logs NAME`` finds them once nimbus no longer
knows NAME.

A supervisor keeps a killed topology's worker files for ``worker.log.cleanup.grace.secs`` and
its logviewer serves them (:mod:`squall.daemon.logviewer`). Nimbus names the supervisors and
their ``logviewer_port`` (``NimbusClient.cluster_info``); each logviewer's ``/list?name=NAME``
says which of them it still holds, under the same access rules as the files (a caller sees
only the topologies it may read). Called from the command's thread; blocks on each logviewer
for 10 s at most.
"""
from __future__ import annotations

import http.client
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: seconds a logviewer may take to list what it holds
LIST_TIMEOUT_SECS = 10.0


@dataclass(frozen=True, order=True)
class KeptLog:
    """One worker file a logviewer still holds: ``file`` (as the logviewer names it: ``log``,
    ``out``, ...) of ``topology_id``'s worker on ``host:port``, served at ``url``."""

    topology_id: str
    host: str
    port: int
    file: str
    url: str

    @property
    def label(self) -> str:
        return f"{self.host}:{self.port} {self.topology_id}"


def kept_logs(supervisors: Iterable[Any], name: str, files: Sequence[str] = ("log",),
              headers: Mapping[str, str] | None = None) -> list[KeptLog]:
    """The ``files`` kinds (``log``, ``out``, ``events``, ... as the logviewer names them) of
    every worker of topologies named ``name`` that the logviewers of ``supervisors``
    (nimbus's ``SupervisorSummary``: ``hostname``, ``logviewer_port``, 0 for none) still
    hold, oldest topology first, each worker's in the order of ``files``. A logviewer that
    cannot be asked is one line on stderr."""
    out: list[KeptLog] = []
    for sup in supervisors:
        host, lv_port = str(sup.hostname), int(sup.logviewer_port or 0)
        if not host or not lv_port:
            continue
        base = f"http://{host}:{lv_port}"
        try:
            listed = _listing(f"{base}/list?{urllib.parse.urlencode({'name': name})}",
                              headers)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            print(f"squall: {host}:{lv_port}: cannot ask its logviewer which logs it keeps: "
                  f"{_reason(exc)}", file=sys.stderr)
            continue
        for entry in listed:
            file = entry.get("file")
            if file not in files:
                continue
            tid, port = str(entry.get("topology")), int(entry.get("port") or 0)
            query = urllib.parse.urlencode({"topology": tid, "port": port, "file": file})
            out.append(KeptLog(tid, host, port, str(file), f"{base}/log?{query}"))
    return sorted(out, key=lambda k: (_launch_order(k.topology_id), k.topology_id, k.host,
                                      k.port, list(files).index(k.file), k.url))


def _listing(url: str, headers: Mapping[str, str] | None) -> list[dict[str, Any]]:
    request = urllib.request.Request(url, headers=dict(headers or {}))
    with urllib.request.urlopen(request, timeout=LIST_TIMEOUT_SECS) as reply:
        files = json.loads(reply.read()).get("files")
    if not isinstance(files, list):
        raise ValueError("not a listing of files")
    return [f for f in files if isinstance(f, dict)]


def _launch_order(topology_id: str) -> tuple[int, int]:
    """``(launch secs, counter)`` of an id ``NAME-<counter>-<secs>`` (0s for another)."""
    parts = topology_id.rsplit("-", 2)
    if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return 0, 0
    return int(parts[2]), int(parts[1])


def _reason(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        try:
            body = exc.read(512).decode("utf-8", errors="replace").strip()
        except (OSError, http.client.HTTPException):
            body = ""
        first = body.splitlines()[0] if body else ""
        return f"it answered {exc.code}{': ' + first if first else ''}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__


__all__ = ["KeptLog", "kept_logs"]
