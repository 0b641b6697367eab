"""The credentials workers authenticate each other with (``squall.transport.tls: true``).

Where they come from:

- ``squall.tls.ca`` / ``.cert`` / ``.key`` in the conf of every supervisor (and so of its
  workers): the operator's own PEM files, used as they are (the same files then also make
  the worker a TLS client of nimbus and DRPC, as for any process);
- otherwise generated once per cluster by the first nimbus that starts
  (:func:`ensure_cluster_credentials`): a CA, and one worker certificate with its key signed
  by it (the CA's key is discarded). The bundle lives in the cluster state at
  :data:`CREDENTIALS_PATH`, which needs ZooKeeper authentication (``storm.zookeeper.auth``) so
  that only the cluster's daemons can read it. A supervisor copies it into each worker's
  directory (``workers/<id>/tls/``, files 0600, :func:`install_for_worker`) before it starts
  the worker, which points keys of their own at them (:data:`GENERATED_KEYS`,
  :func:`worker_conf`). Only the transports read those keys (:func:`transport_file`): they do
  not make the worker a TLS client of nimbus or DRPC, which serve plaintext unless
  ``squall.tls.cert`` / ``.key`` are set on them.

The zmq transport derives its CURVE keypair from the TLS private key (:func:`curve_seed`),
so every worker holding the cluster's key has the cluster's CURVE key and nobody else does.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from squall.errors import ConfigError, StateError
from squall.security.settings import TLS_KEYS

log = logging.getLogger(__name__)

#: cluster-state node holding the generated bundle (JSON: ``ca``, ``cert``, ``key`` PEM text)
CREDENTIALS_PATH = "/credentials/transport"
#: subdirectory of a worker's directory holding its copy
WORKER_TLS_DIR = "tls"
#: the worker conf's keys naming its copy of the generated bundle: for the transports only
GENERATED_KEYS = ("squall.transport.tls.ca", "squall.transport.tls.cert",
                  "squall.transport.tls.key")
_FILES = dict(zip(GENERATED_KEYS, ("ca.crt", "worker.crt", "worker.key")))

__all__ = ["CREDENTIALS_PATH", "GENERATED_KEYS", "curve_seed", "enabled",
           "ensure_cluster_credentials", "generated", "install_for_worker", "transport_file",
           "worker_conf"]


def enabled(conf: Mapping[str, Any]) -> bool:
    """``squall.transport.tls``."""
    return bool(conf.get("squall.transport.tls"))


def generated(conf: Mapping[str, Any]) -> bool:
    """Whether this cluster's transport credentials are generated (TLS on, no ``squall.tls.*``
    files given)."""
    return enabled(conf) and not all(conf.get(k) for k in TLS_KEYS)


def ensure_cluster_credentials(conf: Mapping[str, Any], store: Any) -> None:
    """Nimbus, at start: make the cluster's bundle unless it exists (or files are given).
    ConfigError when it would be generated without ZooKeeper authentication."""
    if not generated(conf):
        return
    if not conf.get("storm.zookeeper.auth.scheme"):
        raise ConfigError("squall.transport.tls without squall.tls.ca/cert/key keeps generated "
                          "credentials in ZooKeeper: set storm.zookeeper.auth.scheme and "
                          ".payload so that only the cluster can read them (or give the files)")
    if store.get(CREDENTIALS_PATH) is not None:
        return
    from squall.security import certs
    ca = certs.make_ca("squall cluster CA")
    worker = certs.issue(ca, "squall-worker", hosts=("localhost", "127.0.0.1"))
    bundle = json.dumps({"ca": ca.cert.decode(), "cert": worker.cert.decode(),
                         "key": worker.key.decode()}).encode()
    try:
        store.create(CREDENTIALS_PATH, bundle)
        log.info("generated the cluster's transport credentials")
    except StateError:
        if store.get(CREDENTIALS_PATH) is None:   # not a concurrent nimbus: a real failure
            raise


def install_for_worker(conf: Mapping[str, Any], store: Any, worker_dir: Path) -> None:
    """Supervisor, before starting a worker: copy the cluster's generated bundle into the
    worker's ``tls/`` directory (0700, files 0600). Nothing when credentials are not generated.
    StateError when the bundle is missing (nimbus has not made it yet)."""
    if not generated(conf):
        return
    data = store.get(CREDENTIALS_PATH)
    if data is None:
        raise StateError(f"no transport credentials at {CREDENTIALS_PATH} yet (nimbus makes "
                         "them at start when squall.transport.tls is on)")
    bundle = json.loads(data)
    from squall.security.certs import write_private
    directory = worker_dir / WORKER_TLS_DIR
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for key, name in _FILES.items():
        write_private(directory / name, str(bundle[key.rsplit(".", 1)[1]]).encode())


def worker_conf(conf: Mapping[str, Any], worker_dir: Path) -> dict[str, str]:
    """The :data:`GENERATED_KEYS` a worker adds to its conf: the files its supervisor installed
    when credentials are generated, else nothing. ConfigError when they are missing."""
    if not generated(conf):
        return {}
    out = {key: str(worker_dir / WORKER_TLS_DIR / name) for key, name in _FILES.items()}
    missing = [p for p in out.values() if not Path(p).is_file()]
    if missing:
        raise ConfigError(f"squall.transport.tls is on but this worker has no credentials "
                          f"({', '.join(missing)} missing)")
    return out


def transport_file(conf: Mapping[str, Any], part: str) -> str | None:
    """The path of a transport's ``part`` (``ca``, ``cert`` or ``key``) under
    ``squall.transport.tls``: the generated credentials' copy this worker got
    (``squall.transport.tls.<part>``), else the operator's ``squall.tls.<part>``; ``None``
    when neither is set."""
    path = conf.get(f"squall.transport.tls.{part}") or conf.get(f"squall.tls.{part}")
    return str(path) if path else None


def curve_seed(conf: Mapping[str, Any]) -> bytes:
    """32 bytes derived from the transport's key file (:func:`transport_file`), the zmq
    transport's CURVE secret key: the same for every holder of that key. ConfigError when the
    key is not set or unreadable."""
    path = transport_file(conf, "key")
    if not path:
        raise ConfigError("squall.transport.tls needs squall.tls.key (or generated cluster "
                          "credentials) for the zmq transport's CURVE keys")
    try:
        material = Path(str(path)).read_bytes()
    except OSError as exc:
        raise ConfigError(f"the transport's key: cannot read {path}: {exc.strerror or exc}"
                          ) from exc
    return hashlib.sha256(b"squall-zmq-curve\0" + material).digest()
