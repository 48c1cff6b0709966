"""Benchmark: `twin run` with its verdict on every built-in scenario, as a user runs it.

Each built-in runs as ``python -m twin.cli run NAME`` in a fresh process (imports, kernels
loaded from a warm Numba cache, the simulation, the verdict's re-simulations, the report),
``--repeat`` times; the median wall time and the CPU seconds of the process and its workers
(user + system: a figure a loaded machine barely moves) are printed per scenario. The goal is
2 s of wall time on an idle 2-core machine. Last line:
``builtins=N within_2s=K median_s=M max_s=X cpu_median_s=C``.

With ``--baseline TREE`` (another checkout of rltwin, e.g. a ``git worktree`` of an older
commit) each scenario runs in that tree and in this one alternately, so both see the same load
on a shared machine, and the last line adds ``cpu_ratio`` (baseline CPU over this tree's,
medians over the scenarios) and ``wall_ratio``.

Python writes no bytecode cache when ``PYTHONDONTWRITEBYTECODE`` is set (some sandboxes do);
then every import compiles rltwin's sources again. ``--bytecode`` unsets it for the runs (what
an installed package sees: pip writes the cache at install); the header says which.

    python benchmarks/verdict.py [NAMES...] [--repeat 1] [--bytecode] [--baseline TREE]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 2.0


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env(tree: Path, bytecode: bool) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed_run(name: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``twin run NAME`` in a fresh process."""
    t, cpu = time.perf_counter(), _cpu_children()
    subprocess.run([sys.executable, "-m", "twin.cli", "run", name], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, _cpu_children() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="built-ins to run (default: all)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--bytecode", action="store_true", help="let Python cache bytecode (unset PYTHONDONTWRITEBYTECODE)")
    parser.add_argument("--baseline", type=Path, metavar="TREE", help="also run each scenario in this checkout, alternately")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from twin.config.registry import builtin_scenarios

    names = args.names or builtin_scenarios()
    trees = {"this": _env(ROOT, args.bytecode)}
    if args.baseline is not None:
        trees = {"baseline": _env(args.baseline.resolve(), args.bytecode), **trees}
    print(f"{len(names)} built-ins, {args.repeat} run(s) each, load average {os.getloadavg()[0]:.1f}, "
          f"bytecode cache {'off' if trees['this'].get('PYTHONDONTWRITEBYTECODE') else 'on'}")
    for env in trees.values():  # every kernel compiled and cached before anything is timed
        for name in names:
            timed_run(name, env)
    figures: dict[str, tuple[list[float], list[float]]] = {tree: ([], []) for tree in trees}
    for name in names:
        runs: dict[str, list[tuple[float, float]]] = {tree: [] for tree in trees}
        for _ in range(args.repeat):
            for tree, env in trees.items():  # alternately: the same load for both
                runs[tree].append(timed_run(name, env))
        line = f"{name:28s}"
        for tree, got in runs.items():
            wall, cpu = statistics.median(r[0] for r in got), statistics.median(r[1] for r in got)
            figures[tree][0].append(wall)
            figures[tree][1].append(cpu)
            line += f"  {tree} wall {wall:6.2f} s cpu {cpu:6.2f} s"
        print(line + ("  ok" if figures["this"][0][-1] <= GOAL_S else ""), flush=True)
    walls, cpus = figures["this"]
    last = (f"builtins={len(names)} within_2s={sum(w <= GOAL_S for w in walls)} median_s={statistics.median(walls):.2f} "
            f"max_s={max(walls):.2f} cpu_median_s={statistics.median(cpus):.2f}")
    if "baseline" in figures:
        base_walls, base_cpus = figures["baseline"]
        last += (f" baseline_within_2s={sum(w <= GOAL_S for w in base_walls)}"
                 f" cpu_ratio={statistics.median(b / c for b, c in zip(base_cpus, cpus)):.2f}"
                 f" wall_ratio={statistics.median(b / w for b, w in zip(base_walls, walls)):.2f}")
    print(last)


if __name__ == "__main__":
    main()
