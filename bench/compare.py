"""Local word count of this tree against an earlier commit, in pairs, in one sitting.

    python -m bench.compare REF [--pairs 5] [--cases per-tuple-off per-tuple-on batch-off batch-on]

Checks REF out in a temporary git worktree and runs ``bench.wordcount.marginal`` alternately
with REF's code and this tree's, each run in a fresh process, so both see the same host load.
Prints the medians and the per-pair ratios (this tree / REF) of words per CPU second. On a
noisy shared host the paired ratios say more than two medians taken at different times.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {"per-tuple-off": (False, False), "per-tuple-on": (False, True),
         "batch-off": (True, False), "batch-on": (True, True)}
RUN = ("import json, sys\nfrom bench.wordcount import marginal\n"
       "print(json.dumps(marginal((20000, 120000), {batch}, {acking})))\n")


def _run(tree: Path, pythonpath: str, batch: bool, acking: bool) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    out = subprocess.run([sys.executable, "-c", RUN.format(batch=batch, acking=acking)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True)
    wall, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, cpu


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.compare")
    p.add_argument("ref", help="a git commit or branch to compare this tree against")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="squall-compare-") as tmp:
        old = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old), args.ref],
                       cwd=ROOT, check=True)
        try:
            shim = Path(tmp) / "path"
            shim.mkdir()
            (shim / "squall").symlink_to(old / "core")     # `import squall` -> REF's core/
            trees = {args.ref: (old, f"{shim}{os.pathsep}{old}"), "this tree": (ROOT, str(ROOT))}
            print(f"word count, marginal words/s, {args.pairs} pairs run alternately")
            for case in args.cases:
                batch, acking = CASES[case]
                runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
                for _ in range(args.pairs):
                    for name, (tree, path) in trees.items():
                        runs[name].append(_run(tree, path, batch, acking))
                ratios = [b[1] / a[1] for a, b in zip(runs[args.ref], runs["this tree"])]
                for name, got in runs.items():
                    print(f"  {case:<14} {name:<12} wall {statistics.median(r[0] for r in got):>12,.0f}"
                          f"  CPU {statistics.median(r[1] for r in got):>12,.0f}")
                print(f"  {case:<14} CPU ratio per pair (this tree / {args.ref}): "
                      + ", ".join(f"{r:.2f}" for r in ratios)
                      + f"; median {statistics.median(ratios):.2f}", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT,
                           check=False)


if __name__ == "__main__":
    main()
