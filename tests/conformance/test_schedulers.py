"""Every installed scheduler, and one installed by a third-party distribution, passes the
scheduler contract (squall.testing.contracts.scheduler)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from _install import installed_distribution
from squall import Scheduler, drivers
from squall.testing.contracts.scheduler import SchedulerContract

HERE = Path(__file__).parent
GROUP = "squall.schedulers"
#: the built-in schedulers, which also promise the fewest moves on rebalance
BUILTIN = ("even", "multidim")


def _contract_for(name: str) -> type:
    cls = drivers.load(GROUP, name)

    def scheduler_factory(self: Any, conf: Mapping[str, Any]) -> Scheduler:
        return drivers.driver("scheduler", {**conf, "squall.scheduler": name})

    return type(f"TestScheduler_{name}", (SchedulerContract,), {
        "resource_aware": bool(getattr(cls, "resource_aware", False)),
        "reshapes_on_rebalance": name in BUILTIN,
        "scheduler_factory": scheduler_factory,
    })


# One contract class per scheduler installed when the tests are collected (even, multidim, ...).
for _name in drivers.names(GROUP):
    globals()[f"TestScheduler_{_name}"] = _contract_for(_name)


def test_builtin_schedulers_are_registered() -> None:
    assert set(BUILTIN) <= set(drivers.names(GROUP))
    for name in BUILTIN:
        assert issubclass(drivers.load(GROUP, name), Scheduler)


@pytest.fixture(scope="module")
def firstfit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The ``firstfit`` scheduler from tests/conformance/thirdparty_scheduler, pip-installed
    into the venv for this module and uninstalled afterwards."""
    with installed_distribution(HERE / "thirdparty_scheduler", tmp_path_factory.mktemp("ff"),
                                "squall-test-firstfit-scheduler"):
        yield "firstfit"


class TestThirdPartyScheduler(SchedulerContract):
    """The contract run against a scheduler that squall has never heard of."""

    @pytest.fixture(autouse=True)
    def _installed(self, firstfit: str) -> None:
        self.name = firstfit

    def scheduler_factory(self, conf: Mapping[str, Any]) -> Scheduler:
        return drivers.driver("scheduler", {**conf, "squall.scheduler": self.name})

    def test_it_is_listed_with_its_distribution(self) -> None:
        assert dict(drivers.entries(GROUP))["firstfit"].startswith("squall-test-firstfit-scheduler")
        drivers.validate_conf({"squall.scheduler": "firstfit"})
