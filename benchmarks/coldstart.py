"""Benchmark: the first `twin run` on a machine against a warm one.

Runs `python -m twin.cli run SCENARIO --no-verdict` in a fresh process with an empty Numba
cache folder (cold: the kernels compile), then the same command again with that folder
(warm: the kernels load from it), each ``--repeat`` times, alternating, so that both see the
same load on a shared machine. Prints each pair with the CPU seconds the process used (user +
system, children included: a figure the machine's load barely moves), then
``cold_s warm_s ratio`` (medians of wall time).
With ``--kernels`` it also prints, from one cold in-process run, each kernel's compile time.

    python benchmarks/coldstart.py [SCENARIO] [--repeat 2] [--verdict] [--kernels] [--compiled]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(scenario: str, cache: str, verdict: bool, command: list[str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `twin run` (or ``command``) in a fresh process."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "twin.cli",
               *(command or ["run", scenario, *([] if verdict else ["--no-verdict"])])]
    t, cpu = time.perf_counter(), _cpu_children()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, _cpu_children() - cpu


def kernel_compile_times(scenario: str) -> None:
    """One cold run in this process, timing every compilation Numba reports."""
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="rltwin-coldstart-")
    sys.path.insert(0, str(ROOT))
    from numba.core import event

    times: dict[str, float] = {}

    class Listener(event.Listener):
        def on_start(self, ev):
            self.started = getattr(self, "started", [])
            self.started.append(time.perf_counter())

        def on_end(self, ev):
            name = ev.data["dispatcher"].py_func.__qualname__
            times[name] = times.get(name, 0.0) + time.perf_counter() - self.started.pop()

    from twin import runner

    with event.install_listener("numba:compile", Listener()):
        t = time.perf_counter()
        runner.simulate(runner.prepare(scenario, []))
        total = time.perf_counter() - t
    # nested compilations count in their caller too: the top-level ones add up to the total
    for name, seconds in sorted(times.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds:7.2f} s  {name}")
    print(f"kernels={len(times)} simulate_s={total:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", nargs="?", default="grpo-7b-colocated")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--verdict", action="store_true", help="with the verdict (default: --no-verdict)")
    parser.add_argument("--kernels", action="store_true", help="print each kernel's compile time")
    parser.add_argument("--compiled", action="store_true",
                        help="run `twin compile` first, as the README's install command does (its time "
                        "is printed apart: install time, not the first run's)")
    args = parser.parse_args()
    if args.kernels:
        kernel_compile_times(args.scenario)
        return
    colds, warms, cpus = [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="rltwin-coldstart-") as cache:
            if args.compiled:
                compile_s, compile_cpu = timed_run(args.scenario, cache, False, ["compile"])
                print(f"twin compile {compile_s:.1f} s ({compile_cpu:.1f} s CPU)", flush=True)
            (cold_s, cold_cpu), (warm_s, warm_cpu) = (timed_run(args.scenario, cache, args.verdict)
                                                      for _ in range(2))
            colds.append(cold_s)
            warms.append(warm_s)
            cpus.append((cold_cpu, warm_cpu))
        print(f"cold {cold_s:.1f} s ({cold_cpu:.1f} s CPU)  warm {warm_s:.1f} s ({warm_cpu:.1f} s CPU)", flush=True)
    cold, warm = statistics.median(colds), statistics.median(warms)
    cold_cpu, warm_cpu = (statistics.median(c) for c in zip(*cpus))
    print(f"cold_s={cold:.1f} warm_s={warm:.1f} ratio={cold / warm:.1f} "
          f"cold_cpu_s={cold_cpu:.1f} warm_cpu_s={warm_cpu:.1f} cpu_ratio={cold_cpu / warm_cpu:.1f}")


if __name__ == "__main__":
    main()
