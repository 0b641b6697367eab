"""Local word count of this tree against an earlier commit, in pairs, in one sitting.

    python -m bench.compare REF [--pairs 5] [--cases per-tuple-off per-tuple-on batch-off batch-on]
                                [-c KEY=VALUE ...] [--ref-conf KEY=VALUE ...]

Checks REF out in a temporary git worktree and runs ``bench.wordcount.marginal`` alternately
with REF's code and this tree's, each run in a fresh process, so both see the same host load.
Prints the medians and the per-pair ratios (this tree / REF) of words per CPU second. On a
noisy shared host the paired ratios say more than two medians taken at different times.

REF ``.`` compares this tree with itself under two configurations: ``-c`` applies to "this
tree", ``--ref-conf`` to REF (e.g. ``python -m bench.compare . --ref-conf
worker.gc.thresholds=[700,10,10]``). Either conf goes to the cluster and the topology, and
neither may set what the cases set (``bench.wordcount.OWNED``).

Each run is ``bench.wordcount.marginal``'s: a warm-up run, then a pair whose counts are
checked. A run that fails, or takes over :data:`RUN_TIMEOUT` seconds, stops the comparison
with one line saying which tree and case.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.overrides import parse
from bench.tree import tree_env
from bench.wordcount import OWNED

ROOT = Path(__file__).resolve().parent.parent
CASES = {"per-tuple-off": (False, False), "per-tuple-on": (False, True),
         "batch-off": (True, False), "batch-on": (True, True)}
RUN = ("import json, sys\nfrom bench.wordcount import RunFailed, marginal\n"
       "kw = {{'conf': json.loads(sys.argv[1])}} if sys.argv[1] != '{{}}' else {{}}\n"
       "try:\n"
       "    print(json.dumps(marginal((20000, 120000), {batch}, {acking}, **kw)))\n"
       "except (RunFailed, ValueError) as exc:\n"
       "    sys.exit(str(exc))\n")
#: seconds one run (a fresh process: warm-up, then the pair) may take
RUN_TIMEOUT = 600


class CompareFailed(Exception):
    """A run gave no measurement; the message says why in one line."""


def _run(tree: Path, env: dict[str, str], batch: bool, acking: bool,
         conf: dict[str, Any]) -> tuple[float, float]:
    try:
        out = subprocess.run([sys.executable, "-c", RUN.format(batch=batch, acking=acking),
                              json.dumps(conf)], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CompareFailed(f"a run took over {RUN_TIMEOUT} s (killed)") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        raise CompareFailed(last)
    wall, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, cpu


def _conf(p: argparse.ArgumentParser, option: str, items: list[str]) -> dict[str, Any]:
    try:
        return parse(items, OWNED, option)
    except ValueError as exc:
        p.error(str(exc))


def _commit(ref: str) -> str | None:
    """``ref``'s commit in this repository, None if it names none."""
    out = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    return out.stdout.strip() if out.returncode == 0 else None


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.compare")
    p.add_argument("ref", help="a git commit or branch to compare this tree against "
                               "('.': this tree, under --ref-conf)")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="conf for this tree's runs (a YAML value; repeatable)")
    p.add_argument("--ref-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="conf for REF's runs (repeatable)")
    args = p.parse_args(argv)
    conf, ref_conf = _conf(p, "-c", args.conf), _conf(p, "--ref-conf", args.ref_conf)
    if args.ref != "." and _commit(args.ref) is None:
        p.error(f"{args.ref!r} names no commit of this repository")
    with tempfile.TemporaryDirectory(prefix="squall-compare-") as tmp:
        old = ROOT if args.ref == "." else Path(tmp) / "tree"
        if args.ref != ".":
            made = subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old),
                                   args.ref], cwd=ROOT, capture_output=True, text=True,
                                  timeout=300)
            if made.returncode != 0:
                raise SystemExit(f"bench: cannot check {args.ref} out: "
                                 + (made.stderr.strip().splitlines() or ["git failed"])[-1])
        try:
            with tree_env(None if args.ref == "." else old) as ref_env, \
                    tree_env(None) as this_env:
                trees = {args.ref: (old, ref_env, ref_conf), "this tree": (ROOT, this_env, conf)}
                _compare(trees, args.ref, args.pairs, args.cases)
        finally:
            if args.ref != ".":
                subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT,
                               check=False)


def _compare(trees: dict[str, tuple[Path, dict[str, str], dict[str, Any]]], ref: str,
             pairs: int, cases: list[str]) -> None:
    print(f"word count, marginal words/s, {pairs} pairs run alternately")
    for case in cases:
        batch, acking = CASES[case]
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(pairs):
            for name, (tree, env, c) in trees.items():
                try:
                    runs[name].append(_run(tree, env, batch, acking, c))
                except CompareFailed as exc:
                    raise SystemExit(f"bench: {case} on {name} failed: {exc}") from None
        ratios = [b[1] / a[1] for a, b in zip(runs[ref], runs["this tree"])]
        for name, got in runs.items():
            print(f"  {case:<14} {name:<12} wall {statistics.median(r[0] for r in got):>12,.0f}"
                  f"  CPU {statistics.median(r[1] for r in got):>12,.0f}")
        print(f"  {case:<14} CPU ratio per pair (this tree / {ref}): "
              + ", ".join(f"{r:.2f}" for r in ratios)
              + f"; median {statistics.median(ratios):.2f}", flush=True)


if __name__ == "__main__":
    main()
