"""Multi-dimensional resources: the immutable :class:`Resources` value and its defaults.

Every quantity is counted in *slots*, JStorm's unit: ``cpu``, ``memory`` (one slot is
1024 MiB), ``net`` and ``disk``. A supervisor advertises how many slots of each dimension it
has (:func:`default_supervisor_resources`); an executor needs the slots its component asked
for with ``set_resources(cpu=, memory_mb=, net=, disk=)`` (:func:`component_resources`).

Plain values with no locking: safe to share between threads.

>>> need = Resources(cpu=2, memory=1)
>>> need.fits_in(Resources(cpu=1, memory=4, net=1))
False
>>> need.shortfall(Resources(cpu=1, memory=4, net=1))
{'cpu': 1}
>>> Resources.from_request(cpu=1, memory_mb=1500).memory
2
"""
from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from squall.errors import ConfigError

__all__ = [
    "DIMENSIONS", "MEMORY_SLOT_MB", "REQUEST_KEYS", "SUPERVISOR_SLOT_KEYS", "ZERO", "Resources",
    "COMPONENT_RESOURCE_KEYS", "check_request", "check_supervisor_slots", "component_conf",
    "component_resources",
    "default_supervisor_resources", "disk_dir_count",
]

log = logging.getLogger(__name__)

#: The dimensions, in the order they are compared and reported.
DIMENSIONS: tuple[str, ...] = ("cpu", "memory", "net", "disk")
#: One memory slot, in MiB.
MEMORY_SLOT_MB = 1024


@dataclass(frozen=True, slots=True)
class Resources:
    """An immutable amount of cpu, memory, net and disk slots (non-negative ints normally).

    Arithmetic returns new values; ``a - b`` may go negative (callers test with
    :meth:`fits_in` first). Hashable and ordered field by field.
    """

    cpu: int = 0
    memory: int = 0
    net: int = 0
    disk: int = 0

    @classmethod
    def from_request(cls, cpu: float | None = None, memory_mb: float | None = None,
                     net: float | None = None, disk: float | None = None) -> Resources:
        """Slots for a ``set_resources`` request: fractions round up, memory to 1024 MiB slots.

        ``None`` counts as 0. Raises :class:`ConfigError` for a value :func:`check_request`
        rejects.
        """
        check_request({"cpu": cpu, "memory_mb": memory_mb, "net": net, "disk": disk})
        values = {"cpu": cpu, "memory": memory_mb, "net": net, "disk": disk}
        slots = {}
        for dim, value in values.items():
            if value is None:
                slots[dim] = 0
                continue
            slots[dim] = math.ceil(value / MEMORY_SLOT_MB) if dim == "memory" else math.ceil(value)
        return cls(**slots)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Resources:
        """The inverse of :meth:`as_dict`; missing dimensions are 0, unknown keys ignored."""
        data = data or {}
        try:
            return cls(**{dim: int(data.get(dim) or 0) for dim in DIMENSIONS})
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"bad resources {dict(data)!r}: {exc}") from exc

    def as_dict(self) -> dict[str, int]:
        """``{"cpu": n, "memory": n, "net": n, "disk": n}`` (JSON-ready, slots)."""
        return {dim: getattr(self, dim) for dim in DIMENSIONS}

    @property
    def memory_mb(self) -> int:
        """The memory slots expressed in MiB."""
        return self.memory * MEMORY_SLOT_MB

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpu + other.cpu, self.memory + other.memory,
                         self.net + other.net, self.disk + other.disk)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.cpu - other.cpu, self.memory - other.memory,
                         self.net - other.net, self.disk - other.disk)

    def __mul__(self, n: int) -> Resources:
        return Resources(self.cpu * n, self.memory * n, self.net * n, self.disk * n)

    def fits_in(self, available: Resources) -> bool:
        """True when no dimension of ``self`` exceeds that of ``available``."""
        return (self.cpu <= available.cpu and self.memory <= available.memory
                and self.net <= available.net and self.disk <= available.disk)

    def shortfall(self, available: Resources) -> dict[str, int]:
        """``{dimension: missing slots}`` for every dimension where ``self`` exceeds ``available``."""
        out = {}
        for dim in DIMENSIONS:
            missing = getattr(self, dim) - getattr(available, dim)
            if missing > 0:
                out[dim] = missing
        return out

    def is_zero(self) -> bool:
        return not (self.cpu or self.memory or self.net or self.disk)

    def __str__(self) -> str:
        return f"cpu={self.cpu} memory={self.memory} net={self.net} disk={self.disk}"


ZERO = Resources()

#: The keyword arguments of ``set_resources`` (and the keys of a component's ``resources``).
REQUEST_KEYS: tuple[str, ...] = ("cpu", "memory_mb", "net", "disk")
#: The most one executor may ask for in one dimension (cpu / net / disk slots, memory MiB).
MAX_REQUEST = 2 ** 40


def check_request(resources: Mapping[str, Any]) -> None:
    """Check a ``set_resources`` request: keys among :data:`REQUEST_KEYS`, each value ``None``
    or a finite, non-negative int or float (not a bool) below :data:`MAX_REQUEST`. Raises
    :class:`ConfigError` with one line naming the first bad key or value.

    >>> check_request({"cpu": True})
    Traceback (most recent call last):
    ...
    squall.errors.ConfigError: resource cpu must be a non-negative number, got True
    """
    for key, value in resources.items():
        if key not in REQUEST_KEYS:
            raise ConfigError(f"unknown resource {key!r}; resources are "
                              f"{', '.join(REQUEST_KEYS)}")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise ConfigError(f"resource {key} must be a non-negative number, got {value!r}")
        if value >= MAX_REQUEST:
            raise ConfigError(f"resource {key} is too large: {value!r}")


#: the topology conf keys giving what an executor needs where ``set_resources`` is silent; a
#: component's own config may set them too (it overrides the topology conf, as for any key)
COMPONENT_RESOURCE_KEYS: tuple[str, ...] = (
    "topology.component.cpu.slots", "topology.component.memory.mb",
    "topology.component.net.slots", "topology.component.disk.slots")


def component_conf(conf: Mapping[str, Any], component_config: Mapping[str, Any] | None,
                   ) -> Mapping[str, Any]:
    """``conf`` with the :data:`COMPONENT_RESOURCE_KEYS` a component's own config sets."""
    own = {k: component_config[k] for k in COMPONENT_RESOURCE_KEYS
           if component_config and k in component_config}
    return {**conf, **own} if own else conf


def component_resources(conf: Mapping[str, Any], cpu: float | None = None,
                        memory_mb: float | None = None, net: float | None = None,
                        disk: float | None = None) -> Resources:
    """What one executor of a component needs: its ``set_resources`` values, each missing one
    taken from ``conf`` (``topology.component.cpu.slots``, ``.memory.mb``, ``.net.slots``,
    ``.disk.slots``; defaults 1, 1024, 1, 0): the topology conf, or
    :func:`component_conf` for a component whose config sets some of them."""
    def pick(value: float | None, key: str, default: float) -> float:
        if value is not None:
            return value
        configured = conf.get(key)
        return default if configured is None else configured

    return Resources.from_request(
        cpu=pick(cpu, "topology.component.cpu.slots", 1),
        memory_mb=pick(memory_mb, "topology.component.memory.mb", 1024),
        net=pick(net, "topology.component.net.slots", 1),
        disk=pick(disk, "topology.component.disk.slots", 0),
    )


def _physical_memory_mb() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024))
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a small machine
        log.warning("cannot read the physical memory size; assuming 4096 MiB")
        return 4096


#: The supervisor keys that override its advertised capacity (null: derived from the machine).
SUPERVISOR_SLOT_KEYS: tuple[str, ...] = tuple(f"supervisor.{dim}.slots" for dim in DIMENSIONS)


def check_supervisor_slots(conf: Mapping[str, Any]) -> None:
    """Check the :data:`SUPERVISOR_SLOT_KEYS` of ``conf``: each null or a non-negative int
    (not a bool, not a fraction). Raises :class:`ConfigError` with one line naming the first
    bad key; config validation and the supervisor use the same check.

    >>> check_supervisor_slots({"supervisor.cpu.slots": 1.5})
    Traceback (most recent call last):
    ...
    squall.errors.ConfigError: supervisor.cpu.slots must be a non-negative integer or null, got 1.5
    """
    for key in SUPERVISOR_SLOT_KEYS:
        value = conf.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{key} must be a non-negative integer or null, got {value!r}")


def disk_dir_count(dirs: Any) -> int:
    """How many distinct directories ``supervisor.disk.dirs`` names: each entry expanded
    (``~``) and made absolute and normal, so ``/d1``, ``/d1/`` and ``/x/../d1`` count once;
    empty entries are ignored."""
    return len({os.path.abspath(os.path.expanduser(str(d))) for d in dirs or () if str(d).strip()})


def default_supervisor_resources(conf: Mapping[str, Any]) -> dict[str, int]:
    """The slots a supervisor advertises in ``/supervisors/<id>`` under ``resources``.

    Called once by the supervisor daemon at start-up (any thread; reads ``/proc``-level
    facts only, never blocks). Each ``supervisor.<dim>.slots`` key that is set wins; unset
    (null) ones default as in JStorm: cpu = cores x 2 - 1, memory = physical memory / 1024 MiB,
    net = min(cpu, memory), disk = one per distinct ``supervisor.disk.dirs`` directory
    (:func:`disk_dir_count`). Raises :class:`ConfigError` for a setting
    :func:`check_supervisor_slots` rejects.
    """
    check_supervisor_slots(conf)
    cpu = conf.get("supervisor.cpu.slots")
    if cpu is None:
        cpu = max(1, (os.cpu_count() or 1) * 2 - 1)
    memory = conf.get("supervisor.memory.slots")
    if memory is None:
        memory = max(1, _physical_memory_mb() // MEMORY_SLOT_MB)
    net = conf.get("supervisor.net.slots")
    if net is None:
        net = min(cpu, memory)
    disk = conf.get("supervisor.disk.slots")
    if disk is None:
        disk = disk_dir_count(conf.get("supervisor.disk.dirs"))
    return {"cpu": cpu, "memory": memory, "net": net, "disk": disk}
