"""``squall demo``: word count on a LocalCluster with a live view, then the result.

``squall demo --duration S`` runs for S seconds (default 8); ``--duration 1`` is a quick check.
"""
from __future__ import annotations

import collections
import sys
import threading
import time
from typing import Any

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.api.topology import Topology

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "a stream of tuples flows through spouts and bolts",
    "every tuple is acked or replayed by the spout",
    "the acker xors edge ids until the tree is complete",
    "fields grouping sends the same word to the same task",
    "nimbus assigns executors and supervisors start workers",
]

_counts: collections.Counter[str] = collections.Counter()
_lock = threading.Lock()


class DemoSentences(Spout):
    """Cycles through a few sentences, each tracked by the acker."""
    outputs = ["sentence"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.emit([SENTENCES[self.i % len(SENTENCES)]], tup_id=self.i)
        self.i += 1


class DemoSplit(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup.values[0].split():
            self.emit([word])


class DemoCount(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.since_flush = 0

    def process(self, tup: Any) -> None:
        self.counts[tup.values[0]] += 1
        self.since_flush += 1
        if self.since_flush >= 5000:
            self.flush()

    def flush(self) -> None:
        with _lock:
            _counts.update(self.counts)
        self.counts.clear()
        self.since_flush = 0

    def cleanup(self) -> None:
        self.flush()


def demo_topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("sentences", DemoSentences)
    b.set_bolt("split", DemoSplit).shuffle_grouping("sentences")
    b.set_bolt("count", DemoCount, parallelism=2).fields_grouping("split", ["word"])
    return b.create_topology()


def _bar(rate: float, top: float, width: int = 24) -> str:
    n = int(width * rate / top) if top else 0
    return "#" * n + "." * (width - n)


def run_demo(conf: dict[str, Any], duration: float = 8.0, out: Any = None) -> int:
    out = out or sys.stdout
    live = out.isatty() if hasattr(out, "isatty") else False
    _counts.clear()
    topo_conf = {"topology.max.spout.pending": 2000, **conf.get("squall.cli.overrides", {})}
    print(f"squall demo: word count on a LocalCluster for {duration:g} s "
          "(sentences -> split -> count by word, acking on)", file=out)
    with LocalCluster(conf) as cluster:
        cluster.submit_topology("demo", topo_conf, demo_topology())
        start = last_t = time.monotonic()
        last: dict[str, int] = {}
        words_start = None
        while time.monotonic() - start < duration:
            time.sleep(0.5)
            now = time.monotonic()
            info = cluster.get_topology_info("demo")["components"]
            done = {c: s["executed"] if s["kind"] != "spout" else s["acked"]
                    for c, s in info.items()}
            rates = {c: (done[c] - last.get(c, 0)) / (now - last_t) for c in done}
            last, last_t = done, now
            if words_start is None:
                words_start = (now, done.get("count", 0))
            top = max(rates.values() or [1])
            lines = [f"  {c:<10} {_bar(r, top)} {r:>12,.0f} tuples/s"
                     for c, r in sorted(rates.items()) if not c.startswith("__")]
            acked = info.get("sentences", {}).get("acked", 0)
            header = f"t={now - start:4.1f}s  sentences acked: {acked:,}"
            if live:
                out.write("\x1b[2K" + header + "\n" + "\n".join(lines) + "\n")
                out.write(f"\x1b[{len(lines) + 1}A")
            else:
                out.write(header + "  " + "  ".join(
                    f"{c}={r:,.0f}/s" for c, r in sorted(rates.items())
                    if not c.startswith("__")) + "\n")
            out.flush()
        end = time.monotonic()
        info = cluster.get_topology_info("demo")["components"]
        words = info["count"]["executed"]
        failed = info["sentences"]["failed"]
    if live:
        out.write("\n" * (len(info) + 1))
    t0, w0 = words_start or (start, 0)
    if end - t0 < 0.25:   # too short a run to leave the first half second out of the rate
        t0, w0 = start, 0
    rate = (words - w0) / max(end - t0, 1e-9)
    print("\ntop words:", file=out)
    for word, n in _counts.most_common(10):
        print(f"  {word:<12} {n:>10,}", file=out)
    print(f"\ncounted {words:,} words in {end - start:.1f} s: {rate:,.0f} words/s "
          f"(acking on, {failed} failed)", file=out)
    return 0
