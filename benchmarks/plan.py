"""Benchmark of the capacity planner (a script, not a test).

Plans 1,000 candidates of the built-in grpo-8b-disaggregated on 64 GPUs: the planner's own
space at --max-staleness 2 (200 candidates: colocated, disaggregated at staleness 0..2,
async 1..2 with partial rollout off and on, engine tp 1..8, the splits) times five values of
algorithm.prompts_per_step (--vary), with run.steps 3 (below the successive-halving
threshold, so every candidate is simulated once at full steps) and the top 10 re-simulated
with two more seeds. Then:

* R: a sample of the same candidates run as one ``twin run --no-verdict FILE`` process each
  (what a shell loop over ``twin run`` costs: a process start, imports, kernels loaded from
  the cache), the mean per candidate extrapolated to all of them, over the planner's wall time;
* Q: the same plan on a local Ray with as many CPUs as the pool has workers (Ray's start and
  shutdown included: what a user pays), over the pool's wall time (``n/a`` without ray).
* where the planner's time goes: candidate generation and pruning in the parent (serial)
  against simulation in the pool, and with ``--profile N`` a cProfile of N candidates
  simulated in this process.

Usage: ``python benchmarks/plan.py [--workers W] [--sample 5] [--profile N] [--no-ray]``;
``--ray-scaling N`` (a plan of about N candidates on a local Ray of 1 CPU, then of W CPUs: the
speedup), ``--parent-cost N`` (the parent's serial generate and prune for about N
candidates, e.g. 100,000), ``--scale N`` (a plan of about N candidates on the pool: wall
time and the parent's peak memory) and ``--ray-driver N`` (N no-op tasks through the Ray
executor's window and all at once: the driver's own cost) each measure only that.
The last line is ``candidates=N wall_s=W candidates_per_s=C per_candidate_vs_cli=R
ray_local_vs_pool=Q``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout, uninstalled
from twin.config.overrides import apply_overrides  # noqa: E402
from twin.studies import planner  # noqa: E402
from twin.studies.goodput import WITHOUT_FAULTS  # noqa: E402

SCENARIO = "grpo-8b-disaggregated"
GPUS = 64
MAX_STALENESS = 2
VARY = ["algorithm.prompts_per_step=16,32,48,64,96"]
SET = {"run.steps": 3}


def _plan(executor: str, workers: int):
    return planner.plan_budget(SCENARIO, SET, gpus=GPUS, max_staleness=MAX_STALENESS, vary=VARY, top=10,
                               workers=workers, executor=executor)


def _timed_phases() -> dict[str, float]:
    """Wrap the planner's serial parent-side phases with timers (this script only)."""
    spent = {"generate": 0.0, "prune": 0.0}
    for name, key in (("_generate", "generate"), ("_prune_on", "prune")):
        real = getattr(planner, name)

        def timed(*args, _real=real, _key=key, **kwargs):
            t = time.perf_counter()
            try:
                return _real(*args, **kwargs)
            finally:
                spent[_key] += time.perf_counter() - t

        setattr(planner, name, timed)
    return spent


def _cli_per_candidate(result, sample: int) -> float:
    """Mean wall seconds of one `twin run --no-verdict FILE` process over ``sample`` ranked
    candidates (their scenario written out whole, as --out writes the best)."""
    _, base = planner._base(SCENARIO, SET)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for i, ranked in enumerate(result.ranked[:sample]):
            path = Path(folder) / f"c{i}.yaml"
            path.write_text(yaml.safe_dump(apply_overrides(base, ranked.candidate.overrides), sort_keys=False))
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "twin.cli", "run", str(path), "--no-verdict"], env=env,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
    print(f"twin run --no-verdict per candidate: {', '.join(f'{t:.2f}' for t in times)} s", flush=True)
    return sum(times) / len(times)


def _profile(n: int) -> None:
    """cProfile of ``n`` candidates simulated in this process (what one pool worker does)."""
    from twin import runner

    scenario, base = planner._base(SCENARIO, SET)
    cands = planner._generate(base, scenario, [{}], GPUS, MAX_STALENESS)
    feasible, _, _ = planner._prune(base, cands)
    # as the planner runs them: its default objective reads no goodput, so faults are off
    jobs = [apply_overrides(base, {**c.overrides, **WITHOUT_FAULTS}) for c in feasible[:: max(1, len(feasible) // n)][:n]]
    runner.report_data(jobs[0])  # kernels loaded before profiling
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    for job in jobs:
        runner.report_data(job)
    prof.disable()
    print(f"profile: {len(jobs)} candidates in-process, {(time.perf_counter() - t) / len(jobs) * 1000:.0f} ms each")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
    print(out.getvalue())


def _prompts_vary(candidates: int, step: int) -> list[str]:
    """A --vary of prompts_per_step (step, 2·step, …) giving about ``candidates`` with the space
    above (200 candidates per value)."""
    return [f"algorithm.prompts_per_step={','.join(str(step * (k + 1)) for k in range(max(1, candidates // 200)))}"]


def _ray_scaling(workers: int, candidates: int) -> None:
    """The same plan (``candidates`` of the space above: fewer --vary values) on a local Ray of
    1 CPU and of ``workers`` CPUs, Ray's start and shutdown included: throughput per CPU."""
    vary = _prompts_vary(candidates, 16)
    rates = {}
    for cpus in sorted({1, workers}):
        t = time.perf_counter()
        result = planner.plan_budget(SCENARIO, SET, gpus=GPUS, max_staleness=MAX_STALENESS, vary=vary, top=10,
                                     workers=cpus, executor="ray")
        wall = time.perf_counter() - t
        rates[cpus] = result.simulations / wall
        print(f"ray local, {cpus} CPU(s): {result.simulations} simulations in {wall:.1f} s, "
              f"{rates[cpus]:.1f}/s", flush=True)
    print(f"ray_scaling workers={workers} speedup={rates[workers] / rates[1]:.2f} (linear: {workers})")


def _scale(workers: int, candidates: int) -> None:
    """A plan of about ``candidates`` (the space above times more --vary values) on the local
    pool: its wall time and the parent's peak memory, which must not grow with the plan (a rung
    holds a score per candidate and the top reports only; scenarios are built as workers take them)."""
    vary = _prompts_vary(candidates, 8)
    t = time.perf_counter()
    result = planner.plan_budget(SCENARIO, SET, gpus=GPUS, max_staleness=MAX_STALENESS, vary=vary, top=10,
                                 workers=workers)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"scale candidates={result.candidates_total} simulations={result.simulations} wall_s={wall:.1f} "
          f"candidates_per_s={result.candidates_total / wall:.1f} parent_peak_rss_mb={peak:.0f}")


def _echo(data: dict) -> int:
    """A task that does nothing: what the driver's own bookkeeping costs per task."""
    return data["n"]


def _ray_driver(workers: int, tasks: int) -> None:
    """``tasks`` no-op tasks on a local Ray, through the executor's windowed ``imap`` and, in the
    same run, submitted all at once and waited for one at a time (the executor before the
    window): the driver's cost per task, which the window keeps flat as a plan grows."""
    import ray

    from twin.studies import executors

    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ex = executors.RayExecutor()
        jobs = [{"n": k} for k in range(tasks)]
        ex.map(jobs[:100], fn=_echo)  # workers started before timing
        t = time.perf_counter()
        assert ex.map(jobs, fn=_echo) == list(range(tasks))
        windowed = time.perf_counter() - t
        task = ray.remote(num_cpus=1)(_echo)
        t = time.perf_counter()
        pending = [task.remote(data) for data in jobs]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            ray.get(ready)
        all_at_once = time.perf_counter() - t
    finally:
        ray.shutdown()
    print(f"ray_driver tasks={tasks} windowed_s={windowed:.1f} all_at_once_s={all_at_once:.1f} "
          f"ratio={all_at_once / windowed:.2f}")


def _parent_cost(size: int) -> None:
    """What the planner's parent does alone for a space of about ``size`` candidates (generate
    and prune; no simulation): the serial part a cluster of any size cannot spread."""
    scenario, base = planner._base(SCENARIO, SET)
    per_combo = len(planner._generate(base, scenario, [{}], GPUS, MAX_STALENESS))
    values = max(1, size // per_combo)
    combos = [{"algorithm.prompts_per_step": 8 * (k + 1)} for k in range(values)]
    t = time.perf_counter()
    cands = planner._generate(base, scenario, combos, GPUS, MAX_STALENESS)
    generated = time.perf_counter() - t
    t = time.perf_counter()
    feasible, _, _ = planner._prune(base, cands)
    pruned = time.perf_counter() - t
    print(f"parent_cost candidates={len(cands)} generate_s={generated:.1f} prune_s={pruned:.1f} "
          f"feasible={len(feasible)} per_candidate_ms={(generated + pruned) / len(cands) * 1000:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--sample", type=int, default=5, help="candidates timed as twin run processes")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="also cProfile N candidates in-process")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray comparison")
    ap.add_argument("--ray-scaling", type=int, metavar="N", help="only: a plan of about N candidates on a local "
                    "Ray of 1 CPU and of --workers CPUs; prints the speedup")
    ap.add_argument("--parent-cost", type=int, metavar="N", help="only: the parent's generate and prune for "
                    "a space of about N candidates (e.g. 100000)")
    ap.add_argument("--scale", type=int, metavar="N", help="only: a plan of about N candidates on the pool; "
                    "prints its wall time and the parent's peak memory")
    ap.add_argument("--ray-driver", type=int, metavar="N", help="only: N no-op tasks through the Ray "
                    "executor's window and all at once; prints the driver's time for each")
    args = ap.parse_args()
    if args.ray_driver:
        _ray_driver(args.workers, args.ray_driver)
        return
    if args.scale:
        _scale(args.workers, args.scale)
        return
    if args.ray_scaling:
        _ray_scaling(args.workers, args.ray_scaling)
        return
    if args.parent_cost:
        _parent_cost(args.parent_cost)
        return

    if args.profile:
        _profile(args.profile)
    spent = _timed_phases()
    t = time.perf_counter()
    result = _plan("local", args.workers)
    wall = time.perf_counter() - t
    n = result.candidates_total
    print(f"pool ({args.workers} workers): {n} candidates ({result.evaluated} simulated, {result.pruned} pruned), "
          f"{result.simulations} simulations in {wall:.1f} s; parent: generate {spent['generate']:.1f} s, "
          f"prune {spent['prune']:.1f} s; simulations {wall - spent['generate'] - spent['prune']:.1f} s", flush=True)

    per_cli = _cli_per_candidate(result, args.sample)
    ratio_cli = per_cli * n / wall

    q = "n/a"
    if not args.no_ray:
        import importlib.util

        if importlib.util.find_spec("ray") is not None:
            t = time.perf_counter()
            remote = _plan("ray", args.workers)
            ray_wall = time.perf_counter() - t
            same = remote.to_json() == result.to_json()
            print(f"ray local ({args.workers} CPUs): {ray_wall:.1f} s, same JSON as the pool: {same}", flush=True)
            q = f"{ray_wall / wall:.2f}"

    print(f"candidates={n} wall_s={wall:.1f} candidates_per_s={n / wall:.1f} "
          f"per_candidate_vs_cli={ratio_cli:.1f} ray_local_vs_pool={q}")


if __name__ == "__main__":
    main()
