"""ZooKeeper authentication and ACLs of the ``zookeeper`` store (API.md section 14).

With ``storm.zookeeper.auth.scheme: digest`` and ``storm.zookeeper.auth.payload:
"user:password"`` the store's kazoo clients authenticate as that identity and create every
node (the chroot root, the nodes of elections and locks included) with one ACL: all rights for
that identity, none for anyone else. :func:`check_closed` makes a store refuse a tree left
open by a run without authentication. kazoo is imported inside the functions.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from squall.errors import ConfigError, StateError

SCHEMES = ("digest",)


@dataclass(frozen=True)
class ZkAuth:
    """One ZooKeeper identity: ``scheme`` and ``payload`` (``user:password`` for digest)."""

    scheme: str
    payload: str

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> ZkAuth | None:
        """The identity the conf configures, or ``None`` without a scheme. ConfigError for
        an unknown scheme or a digest payload that is not ``user:password``."""
        scheme = conf.get("storm.zookeeper.auth.scheme")
        if scheme in (None, ""):
            return None
        if scheme not in SCHEMES:
            raise ConfigError(f"storm.zookeeper.auth.scheme must be one of {', '.join(SCHEMES)} "
                              f"(or null), got {scheme!r}")
        payload = conf.get("storm.zookeeper.auth.payload")
        user, sep, password = str(payload or "").partition(":")
        if not isinstance(payload, str) or not sep or not user or not password:
            raise ConfigError("storm.zookeeper.auth.payload must be \"user:password\" when "
                              "storm.zookeeper.auth.scheme is digest")
        return cls(str(scheme), payload)

    @property
    def user(self) -> str:
        return self.payload.partition(":")[0]

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``KazooClient``: authenticate, and give every node this
        identity's ACL (kazoo's ``default_acl`` also covers its lock and election recipes)."""
        return {"auth_data": [(self.scheme, self.payload)], "default_acl": self.acl()}

    def acl(self) -> list[Any]:
        """All rights for this identity, nothing for anyone else."""
        from kazoo.security import make_digest_acl
        user, _, password = self.payload.partition(":")
        return [make_digest_acl(user, password, all=True)]

    def check_closed(self, client: Any, root: str, timeout: float) -> None:
        """StateError when ``root`` (a path of ``client``) or one of its children grants
        rights to anyone but this identity: a tree created without authentication. Also
        StateError when this identity may not read the tree's ACLs (another password)."""
        from kazoo.exceptions import KazooException, NoAuthError, NoNodeError
        ours = {(a.id.scheme, a.id.id) for a in self.acl()}
        try:
            names = client.get_children_async(root).get(timeout=timeout)
        except NoNodeError:
            return
        except NoAuthError as exc:
            raise StateError(self._refusal(root)) from exc
        for path in [root] + [f"{root.rstrip('/')}/{name}" for name in sorted(names)]:
            try:
                acls, _stat = client.get_acls_async(path).get(timeout=timeout)
            except NoNodeError:
                continue
            except NoAuthError as exc:
                raise StateError(self._refusal(path)) from exc
            except KazooException as exc:
                raise StateError(f"cannot read the ACL of ZooKeeper node {path}: {exc!r}") from exc
            strangers = sorted(f"{a.id.scheme}:{a.id.id}" for a in acls
                               if (a.id.scheme, a.id.id) not in ours and a.perms)
            if strangers:
                raise StateError(
                    f"ZooKeeper node {path} is open to {', '.join(strangers)} although "
                    "storm.zookeeper.auth is on (created by a run without authentication?); "
                    "refusing to use it: delete the tree or choose another storm.zookeeper.root")

    def _refusal(self, path: str) -> str:
        return (f"ZooKeeper node {path} is not accessible to digest user {self.user!r} "
                "(check storm.zookeeper.auth.payload)")
