"""Word count's Python bytecodes per word, by function: which functions a change or a config
makes run more code, counted exactly.

    python -m bench.bytecodes [--cases per-tuple-off ...] [--sizes 1000 3000]
                              [-c KEY=VALUE ...] [--base KEY=VALUE ...] [--top 20] [--tree DIR]

Runs ``bench.wordcount``'s topology (one LocalCluster, each run in a fresh process,
``PYTHONHASHSEED=0``) with an opcode tracer on every thread (``sys.settrace`` and
``threading.settrace`` with ``f_trace_opcodes``) for two numbers of sentences, and prints the
*marginal* bytecodes per word between them by function (file, first line, qualified name),
so start-up and shut-down cancel. ``--base`` names config overrides for a second
configuration measured the same way (``--base topology.workers=1`` beside ``-c
topology.workers=2``): the functions are then listed by how much their count differs.

What ``bench.instructions`` counts as one figure for the whole process (the interpreter's
eval loop shows as a single function there) this splits by Python function. It counts
bytecodes, not machine instructions (one costs tens of instructions, more where it calls
into C), and nothing run in C (a dict lookup, msgpack, ``zip``) is seen except as the
bytecode that called it. The tracer slows the run about tenfold, so what runs by the clock
(timers, beats, the loop's idle waits, passes made smaller by waiting) reads higher per word
than it does untraced; what runs per tuple (the emit paths, the outbox, the receive side,
the bolts) counts exactly. No valgrind needed; a case takes under a minute.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.instructions import CASES
from bench.tree import ROOT, tree_env
from squall.config import parse_override

#: the traced run: ``python -c RUN sentences batch acking conf_json out_path``
RUN = """\
import collections, json, sys, threading
from bench.wordcount import run_once

counts = collections.Counter()

def by_opcode(frame, event, arg):
    if event == "opcode":
        counts[frame.f_code] += 1
    return by_opcode

def on_call(frame, event, arg):
    frame.f_trace_opcodes = True
    return by_opcode

threading.settrace(on_call)
sys.settrace(on_call)
run_once(int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3] == "1", conf=json.loads(sys.argv[4]))
sys.settrace(None)
threading.settrace(None)
out = collections.Counter()
for code, n in counts.items():
    name = getattr(code, "co_qualname", code.co_name)      # co_qualname: Python 3.11 on
    out[f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno} {name}"] += n
with open(sys.argv[5], "w", encoding="utf-8") as f:
    json.dump(out, f)
"""


def traced(sentences: int, batch: bool, acking: bool, conf: dict[str, Any],
           tree: Path | None) -> dict[str, int]:
    """Bytecodes run by each function in one word count of ``sentences`` sentences."""
    with tempfile.TemporaryDirectory(prefix="squall-bytecodes-") as tmp, \
            tree_env(tree, PYTHONHASHSEED="0") as env:
        out = Path(tmp) / "counts.json"
        subprocess.run([sys.executable, "-c", RUN, str(sentences), str(int(batch)),
                        str(int(acking)), json.dumps(conf), str(out)],
                       env=env, cwd=ROOT, check=True)
        return json.loads(out.read_text(encoding="utf-8"))


def per_word(sizes: tuple[int, int], batch: bool, acking: bool, conf: dict[str, Any],
             tree: Path | None) -> dict[str, float]:
    """Marginal bytecodes per word of each function between the two numbers of sentences."""
    small, big = sizes
    a = traced(small, batch, acking, conf, tree)
    b = traced(big, batch, acking, conf, tree)
    words = (big - small) * 10
    return {k: (b.get(k, 0) - a.get(k, 0)) / words for k in a.keys() | b.keys()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.bytecodes")
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=["per-tuple-off"])
    p.add_argument("--sizes", type=int, nargs=2, default=(1000, 3000))
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="topology config, a YAML value (repeatable)")
    p.add_argument("--base", action="append", default=[], metavar="KEY=VALUE",
                   help="overrides of -c for a second configuration to compare with "
                        "(repeatable)")
    p.add_argument("--top", type=int, default=20, help="functions listed per case")
    p.add_argument("--tree", type=Path, help="measure this checkout's core/ and plugins/")
    args = p.parse_args(argv)
    conf = dict(map(parse_override, args.conf))
    base = {**conf, **dict(map(parse_override, args.base))} if args.base else None
    tree = args.tree.resolve() if args.tree else None
    print(f"word count, Python bytecodes per word (opcode tracer), marginal between "
          f"{args.sizes[0]:,} and {args.sizes[1]:,} sentences; conf {conf or '{}'}"
          + (f"; base {base}" if base is not None else "")
          + (f"; tree {tree}" if tree else ""))
    for name in args.cases:
        batch, acking = CASES[name]
        got = per_word(tuple(args.sizes), batch, acking, conf, tree)
        if base is None:
            print(f"{name}: {sum(got.values()):,.1f} per word")
            for fn, n in sorted(got.items(), key=lambda kv: -kv[1])[:args.top]:
                print(f"  {n:9.2f}  {fn}")
            continue
        was = per_word(tuple(args.sizes), batch, acking, base, tree)
        total, total_was = sum(got.values()), sum(was.values())
        print(f"{name}: {total:,.1f} per word, base {total_was:,.1f} "
              f"({total - total_was:+,.1f})")
        print(f"  {'change':>9} {'this':>9} {'base':>9}  function")
        rows = sorted(got.keys() | was.keys(),
                      key=lambda fn: -abs(got.get(fn, 0.0) - was.get(fn, 0.0)))
        for fn in rows[:args.top]:
            now, before = got.get(fn, 0.0), was.get(fn, 0.0)
            print(f"  {now - before:+9.2f} {now:9.2f} {before:9.2f}  {fn}", flush=True)


if __name__ == "__main__":
    main()
