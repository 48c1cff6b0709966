"""Benchmark: simulate 1,000 steps of a 1,024-GPU asynchronous GRPO run.

Prints, measured in one run: the wall time of the simulation, steps and trajectories
simulated per second, peak memory, and the time a fresh process takes to import rltwin and
simulate one small step (cached Numba kernels). Last line:
``steps_per_s=<n> trajectories_per_s=<n> peak_rss_mb=<n>``.

    python benchmarks/loop.py [--steps 1000] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import subprocess
import sys
import time

SCENARIO = {
    "name": "bench-async-1024",
    "model": "qwen2.5-7b",
    "cluster": {"nodes": 128, "gpus_per_node": 8, "gpu": "h100-sxm"},
    "placement": {"mode": "async", "rollout": {"gpus": 768, "tp": 1}, "trainer": {"gpus": 256}},
    "algorithm": {"name": "grpo", "prompts_per_step": 1024, "responses_per_prompt": 16,
                  "staleness": 2, "partial_rollout": True},
    "workload": {"response_tokens": {"kind": "lognormal", "median": 2000, "sigma": 0.9, "max": 32768}},
    "run": {"steps": 1000, "seed": 0},
}


def fresh_process_seconds() -> float:
    code = ("import twin; twin.simulate('grpo-8b-disaggregated', run__steps=1, "
            "algorithm__prompts_per_step=8)")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    args = parser.parse_args()

    import twin
    from twin.runner import plan as plan_of
    from twin.sim.loop import simulate

    fresh_process_seconds()  # make sure the Numba cache is warm
    first = fresh_process_seconds()
    scenario = plan_of(SCENARIO, {"run.steps": args.steps})
    simulate(plan_of(SCENARIO, {"run.steps": 2}))  # warm this process
    profiler = cProfile.Profile() if args.profile else None
    t = time.perf_counter()
    if profiler:
        profiler.enable()
    result = simulate(scenario)
    if profiler:
        profiler.disable()
    wall = time.perf_counter() - t
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    trajectories = result.counters["trajectories_generated"]
    print(f"scenario: {SCENARIO['name']}, {args.steps} steps, "
          f"{scenario.algorithm.trajectories_per_step} trajectories per step, rltwin {twin.__version__}")
    print(f"simulated {result.wall_s / 3600:.1f} h of training in {wall:.2f} s wall")
    print(f"fresh process (import + one small step, cached kernels): {first:.2f} s")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    print(f"steps_per_s={args.steps / wall:.1f} trajectories_per_s={trajectories / wall:.0f} "
          f"peak_rss_mb={peak_mb:.0f}")


if __name__ == "__main__":
    main()
