"""The load-aware shuffle grouping (the default ``shuffle``): locality scopes, weights that
follow load, and the conf that controls it."""
from __future__ import annotations

import itertools
from collections import Counter

import pytest

from squall.api.groupings import (
    EVERYWHERE, HOST_LOCAL, WORKER_LOCAL, LoadAwareShuffleGrouping, LoadMapping, ShuffleGrouping)
from squall.api.topology import Input
from squall.config import validate
from squall.errors import ConfigError
from squall.runtime.load import parse_report
from squall.runtime.routing import make_grouping


def grouping(targets: list[int], **kw: float) -> LoadAwareShuffleGrouping:
    g = LoadAwareShuffleGrouping(**kw)
    g.prepare(None, ("src", "default"), targets)
    return g


def picks(g: LoadAwareShuffleGrouping, n: int = 2000) -> Counter[int]:
    return Counter(g.choose_one(()) for _ in range(n))


def test_before_any_refresh_every_target_gets_an_equal_turn() -> None:
    g = grouping([3, 1, 2])
    assert picks(g, 300) == {1: 100, 2: 100, 3: 100}
    assert Counter(g.choose_many([()] * 30)) == {1: 10, 2: 10, 3: 10}
    assert g.choose_tasks(0, ()) in ([1], [2], [3])


def test_equal_loads_in_one_scope_are_plain_round_robin() -> None:
    g = grouping([1, 2, 3, 4])
    for _ in range(5):
        g.refresh_load(LoadMapping({1: 0.5, 2: 0.5, 3: 0.52, 4: 0.5}, dict.fromkeys(
            [1, 2, 3, 4], WORKER_LOCAL)))
    assert picks(g, 400) == {1: 100, 2: 100, 3: 100, 4: 100}


def test_a_loaded_target_loses_its_share_fast_and_wins_it_back_gradually() -> None:
    g = grouping([1, 2])
    scopes = {1: HOST_LOCAL, 2: HOST_LOCAL}
    for _ in range(10):
        g.refresh_load(LoadMapping({1: 0.9, 2: 0.1}, scopes))
    got = picks(g, 1000)
    assert got[1] <= 20 and got[1] + got[2] == 1000, got
    # the loads level out: task 1 regains its share a little per refresh, not all at once
    g.refresh_load(LoadMapping({1: 0.3, 2: 0.3}, scopes))
    assert g.shares[1] < 0.1
    for _ in range(60):
        g.refresh_load(LoadMapping({1: 0.3, 2: 0.3}, scopes))
    assert picks(g, 1000) == {1: 500, 2: 500}


def test_choices_follow_the_shares_spread_out() -> None:
    g = grouping([1, 2])
    scopes = {1: WORKER_LOCAL, 2: WORKER_LOCAL}
    for _ in range(4):
        g.refresh_load(LoadMapping({1: 0.0, 2: 0.6}, scopes))
    share = g.shares[2]
    assert 0.3 < share < 0.5
    got = picks(g, 1000)
    assert abs(got[2] - share * 1000) <= 2
    # spread: no long run of the same target
    longest = max(len(list(run)) for _, run in itertools.groupby(
        g.choose_one(()) for _ in range(1000)))
    assert longest <= 3


def test_stays_in_its_worker_until_that_worker_is_loaded_then_widens_and_comes_back() -> None:
    g = grouping([1, 2, 3], higher=0.8, lower=0.2)
    scopes = {1: WORKER_LOCAL, 2: HOST_LOCAL, 3: EVERYWHERE}
    g.refresh_load(LoadMapping({}, scopes))
    assert set(picks(g, 100)) == {1}
    g.refresh_load(LoadMapping({1: 0.5}, scopes))       # busy, but under the higher bound
    assert set(picks(g, 100)) == {1}
    g.refresh_load(LoadMapping({1: 0.95}, scopes))      # over it: the host's targets too
    assert g.scope == HOST_LOCAL and set(picks(g, 100)) == {1, 2}
    g.refresh_load(LoadMapping({1: 0.95, 2: 0.9}, scopes))   # the host is loaded: everything
    assert g.scope == EVERYWHERE and set(picks(g, 100)) == {1, 2, 3}
    g.refresh_load(LoadMapping({1: 0.5, 2: 0.5, 3: 0.0}, scopes))   # not yet back
    assert g.scope == EVERYWHERE
    g.refresh_load(LoadMapping({1: 0.1, 2: 0.1, 3: 0.0}, scopes))   # one step nearer at a time
    assert g.scope == HOST_LOCAL and set(picks(g, 100)) == {1, 2}
    g.refresh_load(LoadMapping({1: 0.1, 2: 0.1, 3: 0.0}, scopes))
    assert g.scope == WORKER_LOCAL and set(picks(g, 100)) == {1}


def test_widens_only_toward_targets_with_room() -> None:
    # targets as loaded as the near ones would add the cost of crossing, not capacity
    g = grouping([1, 2, 3], higher=0.8, lower=0.2)
    scopes = {1: WORKER_LOCAL, 2: HOST_LOCAL, 3: EVERYWHERE}
    for _ in range(3):
        g.refresh_load(LoadMapping({1: 1.0, 2: 0.95, 3: 1.0}, scopes))   # all overloaded
        assert g.scope == WORKER_LOCAL and set(picks(g, 100)) == {1}
    # the host's other targets are overloaded but everything past it has room on the whole
    # (0.95 and 0.1): past the host at once
    g.refresh_load(LoadMapping({1: 1.0, 2: 0.95, 3: 0.1}, scopes))
    assert g.scope == EVERYWHERE and set(picks(g, 100)) == {1, 2, 3}


def test_comes_back_once_the_farther_targets_are_overloaded_too() -> None:
    g = grouping([1, 2], higher=0.8, lower=0.2)
    scopes = {1: WORKER_LOCAL, 2: HOST_LOCAL}
    g.refresh_load(LoadMapping({1: 0.95, 2: 0.1}, scopes))
    assert g.scope == HOST_LOCAL
    g.refresh_load(LoadMapping({1: 1.0, 2: 0.7}, scopes))     # still some room there
    assert g.scope == HOST_LOCAL and set(picks(g, 100)) == {1, 2}
    g.refresh_load(LoadMapping({1: 1.0, 2: 0.9}, scopes))     # none: back in the worker
    assert g.scope == WORKER_LOCAL and set(picks(g, 100)) == {1}
    g.refresh_load(LoadMapping({1: 1.0, 2: 0.9}, scopes))     # and it stays there
    assert g.scope == WORKER_LOCAL
    g.refresh_load(LoadMapping({1: 1.0, 2: 0.5}, scopes))     # room again: out again
    assert g.scope == HOST_LOCAL


def test_targets_that_moved_away_are_not_chosen_from_a_scope_that_lost_them() -> None:
    g = grouping([1, 2])
    g.refresh_load(LoadMapping({}, {1: WORKER_LOCAL, 2: EVERYWHERE}))
    assert set(picks(g, 50)) == {1}
    # task 1 was reassigned to another host: the nearest scope is now everything
    g.refresh_load(LoadMapping({}, {1: EVERYWHERE, 2: EVERYWHERE}))
    assert set(picks(g, 50)) == {1, 2}


def test_shuffle_is_load_aware_unless_disabled_and_bounds_come_from_conf() -> None:
    inp = Input("src", "default", "shuffle")
    aware = make_grouping(inp, ["x"], {"topology.localityaware.higher.bound": 0.7,
                                       "topology.localityaware.lower.bound": 0.1})
    assert isinstance(aware, LoadAwareShuffleGrouping)
    assert (aware.higher, aware.lower) == (0.7, 0.1)
    plain = make_grouping(inp, ["x"], {"topology.disable.loadaware.messaging": True})
    assert type(plain) is ShuffleGrouping


@pytest.mark.parametrize("conf, message", [
    ({"topology.localityaware.higher.bound": 1.5}, "from 0 to 1"),
    ({"topology.localityaware.lower.bound": -0.1}, "from 0 to 1"),
    ({"topology.localityaware.lower.bound": 0.9,
      "topology.localityaware.higher.bound": 0.5}, "must not exceed"),
    ({"topology.localityaware.higher.bound": "high"}, "must be"),
])
def test_bad_bounds_are_one_clear_error(conf: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(conf, warn=False)


def test_a_load_report_is_checked_before_it_is_believed() -> None:
    assert parse_report([[4, 0.5], [7, 1]]) == {4: 0.5, 7: 1.0}
    assert parse_report([]) == {}
    for bad in ("x", None, {4: 0.5}, [[4]], [["4", 0.5]], [[4, 2.0]], [[4, -1]], [[4, True]],
                [[4.0, 0.5]], [[4, "0.5"]]):
        with pytest.raises(ValueError, match="load report"):
            parse_report(bad)
