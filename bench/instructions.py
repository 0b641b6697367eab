"""Word count's cost in CPU instructions per word, counted by valgrind: a figure that does not
move with the host's load.

    python -m bench.instructions [--cases per-tuple-off ...] [--sizes 2000 12000]
                                 [-c KEY=VALUE ...] [--tree DIR]

Runs ``bench.wordcount``'s topology (one LocalCluster, every case in a fresh process) under
``valgrind --tool=callgrind`` for two numbers of sentences and prints the *marginal*
instructions per word between them, so start-up and shut-down cancel. Wall-clock rates on a
shared 2-core host swing by ±40 % from one run to the next; instruction counts repeat to
within about 1 %, which makes a 3 % change visible in one pair of runs. Instructions are not
time (a cache miss costs more than an add), so confirm a big change with ``bench.compare``.

``-c bench.parallelism=2`` (two split and two count tasks, so every emit chooses its task)
and ``-c topology.workers=2`` (two workers over the in-process ``local`` transport: tuples
for the other worker are serialized as between processes, without the network) are the
usual companions. ``--tree DIR`` measures another checkout's ``core/`` and ``plugins/`` (for
example a ``git worktree`` of an earlier commit) with this benchmark code.

``--cache`` has valgrind simulate the caches as well (``--cache-sim=yes``, the host's cache sizes)
and prints, beside the instructions, the first-level data misses (reads and writes), the
last-level data misses and the first-level instruction misses per word: where a change moves
how far the data is rather than how much code runs. The simulation is of one core, threads
run one at a time: it shows what the work itself misses, not what other processes evict.

Needs ``valgrind`` (Debian's package). Each case takes about a minute (two or three with
``--cache``). Each run is ``bench.wordcount.run_once``'s, which checks that every word was
counted (and every sentence acked) within its deadline; a run that fails or takes over
:data:`RUN_TIMEOUT` seconds, or a larger size that ran no more instructions, stops the
benchmark with one line. ``-c`` may not set what the cases set (``bench.wordcount.OWNED``).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.tree import ROOT, tree_env
from bench.wordcount import checked_run_args

CASES = {"per-tuple-off": (False, False), "per-tuple-on": (False, True),
         "batch-off": (True, False), "batch-on": (True, True)}
RUN = ("import json, sys\nfrom bench.wordcount import RunFailed, run_once\n"
       "try:\n"
       "    run_once(int(sys.argv[1]), {batch}, {acking}, conf=json.loads(sys.argv[2]))\n"
       "except (RunFailed, ValueError) as exc:\n"
       "    sys.exit(str(exc))\n")
#: seconds one run under valgrind may take
RUN_TIMEOUT = 1800
_COLLECTED = re.compile(r"Collected\s*:\s*([\d ]+)")


#: what ``--cache`` prints per word: a column title and the callgrind events summed into it
CACHE_COLUMNS = (("instructions", ("Ir",)), ("D1 misses", ("D1mr", "D1mw")),
                 ("LL misses", ("DLmr", "DLmw")), ("I1 misses", ("I1mr",)))
_EVENTS = re.compile(r"Events\s*:\s*(.+)")


def callgrind(code: str, args: list[str], tree: Path | None = None,
              cache: bool = False) -> dict[str, int]:
    """The events valgrind counted running ``python -c code *args`` (from the repository,
    ``PYTHONHASHSEED=0``), by callgrind's names: ``Ir`` the instructions; with ``cache``, the
    simulated caches' misses too."""
    # PYTHONHASHSEED: the same dict layouts in every run
    with tempfile.TemporaryDirectory(prefix="squall-instr-") as tmp, \
            tree_env(tree, PYTHONHASHSEED="0") as env:
        try:
            out = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/callgrind.out",
                 *(["--cache-sim=yes"] if cache else []), sys.executable, "-c", code, *args],
                env=env, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"a run took over {RUN_TIMEOUT} s (killed)") from None
    if out.returncode != 0:
        why = [line for line in out.stderr.strip().splitlines() if not line.startswith("==")]
        raise RuntimeError(f"a run failed: {(why or [f'exit status {out.returncode}'])[-1]}")
    events, found = _EVENTS.search(out.stderr), _COLLECTED.search(out.stderr)
    if events is None or found is None:
        raise RuntimeError(f"valgrind printed no counts:\n{out.stderr[-2000:]}")
    return dict(zip(events.group(1).split(), map(int, found.group(1).split())))


def count(sentences: int, batch: bool, acking: bool, conf: dict[str, Any],
          tree: Path | None, cache: bool = False) -> dict[str, int]:
    """The events of one word count run of ``sentences`` sentences (:func:`callgrind`)."""
    return callgrind(RUN.format(batch=batch, acking=acking), [str(sentences), json.dumps(conf)],
                     tree, cache)


def per_word(sizes: tuple[int, int], batch: bool, acking: bool, conf: dict[str, Any],
             tree: Path | None = None, cache: bool = False) -> dict[str, float]:
    """Marginal events per word between the two numbers of sentences (10 words each)."""
    small, big = sizes
    a = count(small, batch, acking, conf, tree, cache)
    b = count(big, batch, acking, conf, tree, cache)
    if b["Ir"] <= a["Ir"]:
        raise RuntimeError(f"{big:,} sentences ran no more instructions than {small:,} "
                           f"({b['Ir']:,} against {a['Ir']:,})")
    return {k: (b[k] - a[k]) / ((big - small) * 10) for k in b}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.instructions")
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    p.add_argument("--sizes", type=int, nargs=2, default=(2000, 12000))
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="topology config, a YAML value (repeatable)")
    p.add_argument("--tree", type=Path, help="measure this checkout's core/ and plugins/")
    p.add_argument("--cache", action="store_true",
                   help="simulate the caches too: data and instruction misses per word")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        p.error("valgrind is not installed (apt-get install valgrind)")
    conf = checked_run_args(p, args)
    tree = args.tree.resolve() if args.tree else None
    print(f"word count, instructions per word (callgrind), marginal between {args.sizes[0]:,} "
          f"and {args.sizes[1]:,} sentences; conf {conf or '{}'}"
          + (f"; tree {tree}" if tree else ""))
    if args.cache:
        print(f"  {'':<14} " + " ".join(f"{title:>12}" for title, _ in CACHE_COLUMNS))
    for name in args.cases:
        batch, acking = CASES[name]
        try:
            got = per_word(tuple(args.sizes), batch, acking, conf, tree, args.cache)
        except RuntimeError as exc:
            raise SystemExit(f"bench: {name}: {exc}") from None
        if args.cache:
            print(f"  {name:<14} " + " ".join(
                f"{sum(got[e] for e in events):>12,.2f}" for _, events in CACHE_COLUMNS),
                flush=True)
        else:
            print(f"  {name:<14} {got['Ir']:>9,.0f}", flush=True)


if __name__ == "__main__":
    main()
