"""Benchmark: the first `twin run` on a machine against a warm one.

Runs `python -m twin.cli run SCENARIO --no-verdict` in a fresh process with an empty Numba
cache folder (cold: the kernels compile), then the same command again with that folder
(warm: the kernels load from it), each ``--repeat`` times, alternating, so that both see the
same load on a shared machine. Prints each pair, then ``cold_s warm_s ratio`` (medians).
With ``--kernels`` it also prints, from one cold in-process run, each kernel's compile time.

    python benchmarks/coldstart.py [SCENARIO] [--repeat 2] [--verdict] [--kernels]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_run(scenario: str, cache: str, verdict: bool) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "twin.cli", "run", scenario, *([] if verdict else ["--no-verdict"])]
    t = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


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
    args = parser.parse_args()
    if args.kernels:
        kernel_compile_times(args.scenario)
        return
    colds, warms = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="rltwin-coldstart-") as cache:
            colds.append(timed_run(args.scenario, cache, args.verdict))
            warms.append(timed_run(args.scenario, cache, args.verdict))
        print(f"cold {colds[-1]:.1f} s  warm {warms[-1]:.1f} s", flush=True)
    cold, warm = statistics.median(colds), statistics.median(warms)
    print(f"cold_s={cold:.1f} warm_s={warm:.1f} ratio={cold / warm:.1f}")


if __name__ == "__main__":
    main()
