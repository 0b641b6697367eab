"""What the UI asks nimbus, as a given user: the cluster, the topologies that user may see
(found by id or by name), and the actions on them.

Every method blocks on nimbus (gRPC, :class:`~squall.daemon.nimbus_client.NimbusClient`) and is
called from the web server's worker threads or the sampler thread. A topology the user may not
see is answered exactly as one that does not exist (NotAliveError), so that its name leaks
nothing. Owners are read from the topology info (``owner``) and remembered per topology id (a
topology's owner never changes).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from squall.errors import AuthorizationError, NotAliveError
from squall.ui.access import Clients, User
from squall.ui.history import History

__all__ = ["ClusterView"]


class ClusterView:
    """The cluster as users see it, through ``clients``; the sampler feeds ``history``."""

    def __init__(self, clients: Clients, history: History) -> None:
        self._clients = clients
        self._history = history
        self._owners: dict[str, str] = {}
        self._latest: dict[str, dict[str, Any]] = {}
        self._latest_cluster: Any = None
        self._sampled_at = 0.0          # when the newest sample was taken (0: none yet)
        self._sampling_fails = False    # whether the sampler's last try failed
        self._lock = threading.Lock()

    # -- reads ---------------------------------------------------------------------------------
    def cluster(self, user: User) -> tuple[Any, list[Any], dict[str, str]]:
        """``(ClusterInfo, the topology summaries user may see, their owners)``."""
        info = self._clients.for_user(user).cluster_info()
        owners = self._owners_of(user, info.topologies)
        visible = [t for t in info.topologies if user.sees(owners.get(t.id))]
        return info, visible, {t.id: owners.get(t.id, "") for t in visible}

    def drpc(self, user: User) -> list[dict[str, Any]]:
        """The functions the cluster's DRPC servers (``drpc.servers``) serve, asked with
        ``user``'s credentials; ``[]`` without DRPC servers."""
        return self._clients.drpc_functions(user)

    def topology(self, user: User, key: str) -> dict[str, Any]:
        """The nimbus topology info of the topology whose id or name is ``key``."""
        client = self._clients.for_user(user)
        name = key
        for t in client.cluster_info().topologies:
            if t.id == key:
                name = t.name
                break
        try:
            info = client.topology_info(name)
        except AuthorizationError:     # nimbus: it runs, and belongs to someone else
            raise NotAliveError(f"no topology named {key!r} is running") from None
        self._remember_owner(info)
        if not user.sees(info.get("owner")):
            raise NotAliveError(f"no topology named {key!r} is running")
        return info

    def history(self, user: User, key: str) -> dict[str, Any]:
        """Chart series of the topology ``key`` (see :meth:`History.series`)."""
        info = self.topology(user, key)
        kinds = {c: str(s.get("kind", "")) for c, s in (info.get("components") or {}).items()}
        return self._history.series(str(info.get("id")), kinds)

    def latest(self, user: User) -> tuple[Any, list[dict[str, Any]]]:
        """The newest sample (``(ClusterInfo or None, topology infos)``) of what ``user`` may
        see; what ``/metrics`` shows."""
        with self._lock:
            cluster, infos = self._latest_cluster, list(self._latest.values())
        return cluster, [i for i in infos if user.sees(i.get("owner"))]

    def freshness(self) -> tuple[bool, float]:
        """``(whether the sampler's last try got its sample from nimbus, when the newest
        sample was taken)``: 0 before the first one. While the first is False, :meth:`latest`
        still answers that newest sample."""
        with self._lock:
            return self._sampled_at > 0 and not self._sampling_fails, self._sampled_at

    # -- actions -------------------------------------------------------------------------------
    def act(self, user: User, key: str, action: str, wait: float | None = None) -> str:
        """Run ``action`` (activate, deactivate, kill) on the topology ``key``; returns its
        id. Raises what nimbus raises (NotAliveError, TopologyError ...)."""
        info = self.topology(user, key)
        name = str(info.get("name"))
        client = self._clients.for_user(user)
        if action == "activate":
            client.activate(name)
        elif action == "deactivate":
            client.deactivate(name)
        elif action == "kill":
            client.kill_topology(name, wait)
        else:
            raise ValueError(f"unknown action {action!r}")
        return str(info.get("id"))

    def rebalance(self, user: User, key: str, wait: float | None, workers: int | None,
                  executors: Mapping[str, int]) -> tuple[str, list[str]]:
        """Rebalance the topology ``key``; returns its id and what the request will not get,
        and why (``squall rebalance``'s notes: executors above a component's tasks, workers
        above the slots it may use). Raises what nimbus raises."""
        from squall.daemon.topology_requests import rebalance_caps
        info = self.topology(user, key)
        client = self._clients.for_user(user)
        notes = rebalance_caps(info, client.cluster_info(), workers, dict(executors))
        client.rebalance(str(info.get("name")), wait, workers, dict(executors) or None)
        return str(info.get("id")), notes

    def debug(self, user: User, key: str, component: str | None, enable: bool,
              sampling_pct: float) -> str:
        """Start or stop sampling emits of ``component`` (every component when None) of the
        topology ``key`` into its workers' events logs; returns its id."""
        info = self.topology(user, key)
        if component is not None and component not in (info.get("components") or {}):
            raise NotAliveError(f"topology {info.get('name')!r} has no component {component!r}")
        self._clients.for_user(user).debug(str(info.get("name")), component, enable,
                                           sampling_pct)
        return str(info.get("id"))

    def set_log_levels(self, user: User, key: str, levels: Mapping[str, str],
                       timeout_secs: float) -> str:
        """Set logger levels in every worker of the topology ``key`` for ``timeout_secs``
        (0: until reset); returns its id."""
        info = self.topology(user, key)
        self._clients.for_user(user).set_log_levels(str(info.get("name")), levels, timeout_secs)
        return str(info.get("id"))

    # -- the sampler ---------------------------------------------------------------------------
    def sample(self) -> None:
        """Record every topology's info in the history, with the UI's own credentials (called
        by the sampler thread every ``ui.sample.secs``; raises what nimbus raises, and
        :meth:`freshness` says so until a sample succeeds again)."""
        try:
            self._take_sample()
        except Exception:
            with self._lock:
                self._sampling_fails = True
            raise

    def _take_sample(self) -> None:
        client = self._clients.own
        cluster = client.cluster_info()
        infos: dict[str, dict[str, Any]] = {}
        now = time.time()
        for t in cluster.topologies:
            try:
                info = client.topology_info(t.name)
            except NotAliveError:       # killed between the two calls
                continue
            self._remember_owner(info)
            self._history.record(t.id, now, info)
            infos[t.id] = info
        self._history.keep(infos)
        with self._lock:
            self._latest, self._latest_cluster = infos, cluster
            self._sampled_at, self._sampling_fails = now, False
            for tid in [t for t in self._owners if t not in infos]:
                del self._owners[tid]

    # -- owners --------------------------------------------------------------------------------
    def _remember_owner(self, info: Mapping[str, Any]) -> None:
        with self._lock:
            self._owners[str(info.get("id"))] = str(info.get("owner") or "")

    def _owners_of(self, user: User, topologies: Any) -> dict[str, str]:
        with self._lock:
            known = dict(self._owners)
        if user.admin:
            return known
        client = self._clients.for_user(user)
        for t in topologies:
            if t.id not in known:
                try:
                    info = client.topology_info(t.name)
                except NotAliveError:
                    continue
                self._remember_owner(info)
                known[t.id] = str(info.get("owner") or "")
        return known
