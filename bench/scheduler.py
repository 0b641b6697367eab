"""Scheduler benchmark: how long one scheduling pass takes on a large cluster.

Run: ``.venv/bin/python -m bench.scheduler`` (15-20 s on 2 shared cores). Prints the headline
(1,000 supervisors x 4 slots, 50 topologies x 200 executors, median of 5 passes) for every
scheduler, then one topology's rebalance, then growth tables over cluster size and topology
size. A pass is what nimbus pays: building the :class:`Cluster` from plain values plus
``schedule()``; building the ``TopologyDetails`` is measured apart. "reschedule" is the
steady-state pass after one supervisor is lost (every other placement kept). "rebalance" is
the pass after one topology of the headline cluster is rebalanced to more or fewer workers
(``rebalanced=True``): the scheduler reshapes it with the fewest moves; the executors moved
are counted against the fewest possible. Not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from squall import drivers
from squall.scheduling.cluster import Cluster, Topologies, TopologyDetails
from squall.scheduling.resources import Resources
from squall.testing.contracts.scheduler import make_supervisors, make_topology

CAPACITY = Resources(cpu=63, memory=128, net=63, disk=2)   # a 32-core, 128 GiB machine
SCHEDULERS = ("even", "multidim")


def topologies(count: int, executors: int, workers: int) -> list[TopologyDetails]:
    spouts = max(1, executors // 5)
    bolts = executors - spouts
    return [make_topology(f"topo{i:03d}-{i}", {"spout": spouts, "split": bolts // 2,
                                                "count": bolts - bolts // 2}, workers,
                          resources={"count": Resources(1, 2, 1, 0)}, launch_time=i)
            for i in range(count)]


def timed(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(name: str, n_sups: int, tops: list[TopologyDetails], runs: int) -> dict[str, float]:
    scheduler = drivers.driver("scheduler", {"squall.scheduler": name})
    sups = make_supervisors(n_sups, ports=4, resources=CAPACITY)
    topo_set = Topologies(tops)

    def full() -> Cluster:
        cluster = Cluster(sups, None, topo_set)
        scheduler.schedule(topo_set, cluster)
        return cluster

    first = full()
    seconds = timed(full, runs)
    survivors = sups[1:]                     # the first supervisor is lost
    existing = first.assignments()

    def again() -> None:
        cluster = Cluster(survivors, existing, topo_set)
        scheduler.schedule(topo_set, cluster)

    return {"pass": seconds, "reschedule": timed(again, runs),
            "placed": sum(len(a) for a in first.assignments().values()),
            "workers": len(first.used_slots()),
            "pending": sum(1 for s in first.statuses().values() if s.status == "pending")}


def measure_rebalance(name: str, n_sups: int, tops: list[TopologyDetails], workers: int,
                      runs: int) -> dict[str, float]:
    """Rebalance the middle topology of ``tops`` (placed on ``n_sups`` supervisors) to
    ``workers`` workers; time the pass and count the executors that changed slot."""
    scheduler = drivers.driver("scheduler", {"squall.scheduler": name})
    sups = make_supervisors(n_sups, ports=4, resources=CAPACITY)
    topo_set = Topologies(tops)
    first = Cluster(sups, None, topo_set)
    scheduler.schedule(topo_set, first)
    existing = first.assignments()
    target = tops[len(tops) // 2]
    changed = TopologyDetails(target.id, target.name, target.conf, workers, target.executors,
                              target.component_resources, target.launch_time, rebalanced=True)
    reshaped = Topologies([changed if t.id == target.id else t for t in tops])

    def once() -> Cluster:
        cluster = Cluster(sups, existing, reshaped)
        scheduler.schedule(reshaped, cluster)
        return cluster

    after = once()
    before = existing[target.id]
    now = after.get_assignment(target.id)
    assert now is not None
    moved = sum(1 for e, slot in before.executor_to_slot.items() if now.slot_of(e) != slot)
    old_workers, n = len(before.slots()), len(target.executors)
    if workers >= old_workers:   # the new workers must hold their share, at least n // workers
        fewest = (workers - old_workers) * (n // workers)
    else:                        # the freed workers' executors, the lightest ones freed
        fewest = sum(sorted(len(before.executors_on(s)) for s in before.slots())
                     [:old_workers - workers])
    return {"pass": timed(once, runs), "moved": moved, "fewest": fewest,
            "workers": len(now.slots()),
            "pending": sum(1 for s in after.statuses().values() if s.status == "pending")}


def row(label: str, name: str, m: dict[str, float]) -> str:
    return (f"| {label} | {name} | {m['pass'] * 1000:.0f} | {m['reschedule'] * 1000:.0f} | "
            f"{m['workers']:.0f} | {m['placed']:.0f} | {m['pending']:.0f} |")


HEADER = ("| case | scheduler | pass ms | reschedule ms | workers | executors placed | pending |\n"
          "|---|---|---|---|---|---|---|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--growth-runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=20, help="num_workers per topology")
    args = parser.parse_args()

    start = time.perf_counter()
    tops = topologies(50, 200, args.workers)
    print(f"building 50 TopologyDetails x 200 executors: "
          f"{(time.perf_counter() - start) * 1000:.0f} ms")
    print(f"\nheadline: 1000 supervisors x 4 slots, 50 topologies x 200 executors, "
          f"{args.workers} workers each, median of {args.runs}\n{HEADER}")
    for name in SCHEDULERS:
        print(row("1000 sup, 50x200", name, measure(name, 1000, tops, args.runs)), flush=True)

    print(f"\nrebalance: one topology of the headline cluster from {args.workers} workers to "
          f"another count, median of {args.runs}\n"
          "| case | scheduler | pass ms | executors moved | fewest possible | workers | pending |"
          "\n|---|---|---|---|---|---|---|")
    for workers in (args.workers + args.workers // 2, args.workers // 2):
        for name in SCHEDULERS:
            m = measure_rebalance(name, 1000, tops, workers, args.runs)
            print(f"| {args.workers} -> {workers} workers | {name} | {m['pass'] * 1000:.0f} | "
                  f"{m['moved']:.0f} | {m['fewest']:.0f} | {m['workers']:.0f} | "
                  f"{m['pending']:.0f} |", flush=True)

    print(f"\ngrowth by supervisors (50 topologies x 200 executors), median of "
          f"{args.growth_runs}\n{HEADER}")
    for n in (100, 300, 1000, 3000):
        for name in SCHEDULERS:
            print(row(f"{n} sup", name, measure(name, n, tops, args.growth_runs)), flush=True)

    print(f"\ngrowth by executors per topology (1000 supervisors, 50 topologies, "
          f"executors / 10 workers each), median of {args.growth_runs}\n{HEADER}")
    for e in (50, 200, 800):
        sized = topologies(50, e, max(1, e // 10))
        for name in SCHEDULERS:
            print(row(f"50x{e}", name, measure(name, 1000, sized, args.growth_runs)), flush=True)


if __name__ == "__main__":
    main()
