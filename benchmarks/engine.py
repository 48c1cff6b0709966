"""Benchmark of the rollout engine kernels (a script, not a test).

Measures, in one run:
* the first call's cost (Numba compile, or loading the on-disk cache when warm);
* kernel vs plain-Python reference on the same workload (same results, checked);
* one GRPO step's rollout: 16,384 trajectories with lognormal response lengths up to 32K
  tokens on 128 engines of the built-in scenario's EngineCosts (tp=1), and where its time goes;
* one agentic step (agentic-search-4b: 2,048 trajectories of 3–7 turns on 8 engines) with the
  tool calls held by the pool (one advance) and driven from outside, a window per tool return
  as the producer did before (same finishes, checked).

Usage: ``python benchmarks/engine.py [--quick]``. The last line is
``speedup=<ratio> step_rollout_ms=<ms> trajectories_per_s=<n> agentic_step_ms=<ms> agentic_ratio=<x>``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
from twin.cost.engine import engine_costs  # noqa: E402
from twin.engine import EnginePool  # noqa: E402
from twin.runner import plan as plan_of  # noqa: E402

PROMPT = 141
MAX_RESPONSE = 32768


def lognormal_lengths(n: int, seed: int, median: float = 3000, sigma: float = 1.0,
                      cap: int = MAX_RESPONSE) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(np.log(median), sigma, n), 1, cap).astype(np.int64)


def rollout(costs, engines: int, news: np.ndarray, backend: str = "kernel"):
    pool = EnginePool(costs, engines, backend=backend)
    pool.submit(np.arange(news.size), PROMPT, news, 0.0)
    return pool, pool.advance()


def agentic_step(seed: int = 0):
    """One step of agentic-search-4b's workload: the pool's plan and (ids, prompts, first
    turns, follow-ups as EnginePool.submit takes them)."""
    from twin.config.workload import sample_batch

    plan = plan_of("agentic-search-4b")
    a = plan.algorithm
    b = sample_batch(plan.scenario, a.prompts_per_step, np.random.default_rng(seed))
    later = np.ones(len(b.gen), bool)
    later[b.turn_start[:-1]] = False
    k = np.flatnonzero(later)
    follow = (np.diff(b.turn_start) - 1, b.tool_s[k - 1], b.reply[k - 1].astype(np.int64), b.gen[k].astype(np.int64))
    return plan, (np.arange(b.size), b.prompt.astype(np.int64), b.gen[b.turn_start[:-1]].astype(np.int64), follow)


def turns_in_pool(plan, work):
    pool = EnginePool.from_scenario(plan)
    ids, prompts, first, follow = work
    pool.submit(ids, prompts, first, 0.0, follow)
    events = pool.advance()
    return events.ids[events.left == 0], events.times[events.left == 0], 1


def turns_from_outside(plan, work):
    """The producer's old loop: a window ends at the first pending tool return and, while the
    engines work, one least tool latency after it starts; returns are submitted at its end."""
    pool = EnginePool.from_scenario(plan)
    ids, prompts, first, (count, tool, reply, new) = work
    start = np.r_[0, np.cumsum(count)[:-1]]
    turn, context = np.zeros(ids.size, np.int64), prompts.copy()
    gen = first.copy()
    gap = pool.min_tool_s
    pool.submit(ids, prompts, first, 0.0)
    back_t, back_id = np.zeros(0), np.zeros(0, np.int64)
    clock, windows, done = 0.0, 0, {}
    while pool.outstanding().sum() or back_t.size:
        end = back_t[0] if back_t.size else np.inf
        if pool.outstanding().sum():
            end = min(end, clock + gap)
        events = pool.advance(end)
        windows += 1
        i = events.ids
        context[i] += gen[i]
        more = turn[i] < count[i]
        row = start[i[more]] + turn[i[more]]
        context[i[more]] += reply[row]
        gen[i[more]] = new[row]
        turn[i[more]] += 1
        done.update(zip(i[~more].tolist(), events.times[~more].tolist()))
        t = np.r_[back_t, events.times[more] + tool[row]]
        order = np.argsort(t, kind="stable")
        back_t, back_id = t[order], np.r_[back_id, i[more]][order]
        clock = end if events.ids.size == 0 or pool.outstanding().sum() or back_t.size else events.times[-1]
        due = back_t <= clock
        if due.any():
            pool.submit(back_id[due], context[back_id[due]], gen[back_id[due]], clock)
            back_t, back_id = back_t[~due], back_id[~due]
    ids = np.array(list(done))
    return ids, np.array([done[i] for i in ids.tolist()]), windows


def timed(fn, repeats: int) -> tuple[float, object]:
    """Median wall seconds of ``repeats`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller reference workload")
    args = ap.parse_args()
    costs = engine_costs(plan_of(overrides={"placement.rollout.tp": 1}))

    t0 = time.perf_counter()
    rollout(costs, 2, np.array([5, 9]))
    print(f"first call (compile, or cache load when warm): {time.perf_counter() - t0:.2f} s")

    # kernel vs reference on one workload the reference can step through
    ref_engines, ref_n = (2, 64) if args.quick else (4, 256)
    news = lognormal_lengths(ref_n, seed=1, median=1500, cap=8192)
    t_ref, (ref_pool, ref_events) = timed(lambda: rollout(costs, ref_engines, news, "reference"), 1)
    t_ker, (ker_pool, ker_events) = timed(lambda: rollout(costs, ref_engines, news), 20)
    ref = dict(zip(ref_events.ids.tolist(), ref_events.times.tolist()))
    worst = max(abs(t / ref[i] - 1) for i, t in zip(ker_events.ids.tolist(), ker_events.times.tolist()))
    same_preemptions = np.array_equal(ref_pool.stats().preemptions, ker_pool.stats().preemptions)
    speedup = t_ref / t_ker
    print(f"parity workload: {ref_n} trajectories ({news.sum():,} tokens) on {ref_engines} engines: "
          f"reference {t_ref * 1e3:.0f} ms, kernel {t_ker * 1e3:.2f} ms, speedup {speedup:,.0f}x; "
          f"max relative difference {worst:.1e}, same preemptions: {same_preemptions}")

    # one GRPO step's rollout
    n, engines = 16_384, 128
    news = lognormal_lengths(n, seed=0)
    t_step, (pool, events) = timed(lambda: rollout(costs, engines, news), 15)
    stats = pool.stats()
    assert len(events) == n
    print(f"GRPO step: {n} trajectories, {news.sum():,} response tokens (max {news.max()}), "
          f"{engines} engines: {t_step * 1e3:.1f} ms wall; simulated makespan "
          f"{events.times.max():.1f} s, mean engine utilisation "
          f"{(stats.busy_s / events.times.max()).mean():.2f}, preemptions {stats.preemptions.sum()}, "
          f"wasted tokens {stats.wasted_tokens.sum():,}")

    # where the time goes
    pool = EnginePool(costs, engines)
    parts = {}
    t0 = time.perf_counter()
    pool.submit(np.arange(n), PROMPT, news, 0.0)
    parts["route + submit"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pool.advance()
    parts["advance (kernel + sort)"] = time.perf_counter() - t0
    print("breakdown: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in parts.items()))
    prof = cProfile.Profile()
    prof.enable()
    rollout(costs, engines, news)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(6)
    print("cProfile (tottime):\n" + "\n".join(
        line for line in out.getvalue().splitlines() if line.strip()[:1].isdigit() or "ncalls" in line))

    # one agentic step: tool calls held by the pool vs driven from outside
    plan, work = agentic_step()
    turns_in_pool(plan, work)  # compile the multi-turn path
    t_in, (ids_in, times_in, _) = timed(lambda: turns_in_pool(plan, work), 3)
    t_out, (ids_out, times_out, windows) = timed(lambda: turns_from_outside(plan, work), 1)
    out = dict(zip(ids_out.tolist(), times_out.tolist()))
    worst = max(abs(t / out[i] - 1) for i, t in zip(ids_in.tolist(), times_in.tolist()))
    ratio = t_out / t_in
    print(f"agentic step: {work[0].size} trajectories, {work[0].size + int(work[3][0].sum())} turns, "
          f"8 engines: tool calls in the pool {t_in * 1e3:.0f} ms, driven from outside "
          f"{t_out * 1e3:.0f} ms ({windows} windows), ratio {ratio:.1f}x; simulated makespan "
          f"{times_in.max():.1f} s, max relative difference {worst:.1e}")

    print(f"speedup={speedup:.0f} step_rollout_ms={t_step * 1e3:.1f} trajectories_per_s={n / t_step:.0f} "
          f"agentic_step_ms={t_in * 1e3:.0f} agentic_ratio={ratio:.1f}")


if __name__ == "__main__":
    main()
