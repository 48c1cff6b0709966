"""``twin compile``: compile the simulator's kernels ahead of the first run.

A fresh install compiles its Numba kernels on its first ``twin run`` (tens of seconds, once per
version and machine; :mod:`twin.sim.warmup`). This command does it now, for every batching a
scenario can ask for, so that an install script or a container image build pays it and every
run after it starts warm. The kernels land in the cache folder :mod:`twin.jit` chose.
"""

from __future__ import annotations

import argparse
import sys
import time

from twin import jit, runner
from twin.cli.common import Command
from twin.config.engines import ENGINE_KINDS
from twin.config.load import DEFAULT_SCENARIO
from twin.sim import warmup

# One plan per batching kernel (twin.jit.by_batching): the default scenario with the first engine
# kind of each batching. Every other choice of a scenario runs the same specialisations (a test
# runs every built-in after this command and finds nothing left to compile).
ONE_ENGINE_PER_BATCHING: dict[str, str] = {}
for _kind in ENGINE_KINDS.values():
    ONE_ENGINE_PER_BATCHING.setdefault(_kind.batching, _kind.name)


def _parser(sub) -> None:
    sub.add_parser("compile", help="compile the simulator's kernels now (else the first run does, once)",
                   formatter_class=argparse.RawDescriptionHelpFormatter,
                   description="Compile every kernel a run can ask for into the cache folder, so that the "
                   "first `twin run` after an install starts warm (it compiles its own kernels otherwise: "
                   "about 30 s of CPU once per version and machine). For install scripts and container "
                   "builds: pip install . && twin compile. Does nothing when all are cached.",
                   epilog="the cache folder: NUMBA_CACHE_DIR if set, else $XDG_CACHE_HOME/rltwin/numba or "
                   "~/.cache/rltwin/numba, in a subfolder keyed by the kernels' sources (twin.jit)")


def _compile(args) -> int:
    start = time.monotonic()
    plans = [runner.plan(DEFAULT_SCENARIO, {"placement.rollout.engine": engine})
             for engine in ONE_ENGINE_PER_BATCHING.values()]
    todo = [plan for plan in plans if warmup.missing(plan)]
    if jit.CACHE_DIR is None:
        print("twin: no writable cache folder (set NUMBA_CACHE_DIR or HOME): kernels cannot be kept, "
              "every run compiles its own", file=sys.stderr)
        return 1
    for plan in todo:
        warmup.prepare(plan, sys.stderr)
    done = "compiled" if todo else "already compiled"
    print(f"twin: every kernel {done} ({time.monotonic() - start:.0f} s); cache: {jit.CACHE_DIR}")
    return 0


COMMANDS = [Command("compile", _parser, _compile)]
