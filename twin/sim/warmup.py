"""Compile the kernels a run needs before it starts: said, estimated, in parallel, with progress.

The first run after an install (or after an upgrade: :mod:`twin.jit` keys its cache folder by
the kernel sources) compiles the simulator's Numba kernels. Run in the simulation itself that
is tens of seconds of silence, one kernel after another on one core. :func:`prepare` instead
finds which of the run's kernels are not in the cache, says so with an estimate, compiles
them in forked processes (one per free core; each writes the cache) while showing how many
parts are done, and the run then loads them all from the cache.

Each part is a tiny workload through the same Python code the simulation runs (a pool of the
plan's own engines, its reward service, the learner's balancer), so it compiles exactly the
specialisations the run will ask for, and nothing it will not (the other batching kernel, for
one: :func:`twin.jit.by_batching`).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable

import numpy as np

from twin import jit
from twin.config.engines import ENGINE_KINDS
from twin.config.plan import Plan
from twin.engine import balance, drivers, reward_queue, router
from twin.engine.pool import EnginePool
from twin.sim.reward import RewardService

# CPU seconds each part took in a fresh process with an empty cache on the development machine
# (2 cores, grpo-7b-colocated, 2026-12-02: each of PARTS run alone, its process's CPU time;
# docs/performance.md). The estimate scales them to this machine's cores and load; the largest
# part bounds the wall time however many cores there are.
PART_SECONDS = {"advance": 27.6, "interrupt": 8.5, "small": 5.6}
# The same, run one after another in one process (the later parts reuse what the first compiled).
IN_ONE_PROCESS_SECONDS = {"advance": 26.3, "interrupt": 3.7, "small": 2.2}


def _pool(plan: Plan):
    pool = EnginePool.from_scenario(plan)
    pool.submit([0, 1], 8, 4, 0.0, group=2)
    return pool


def _advance(plan: Plan) -> None:
    # one process for both: advance_pool contains peek_engines' whole chain, so peek_engines
    # compiled after it costs little, and compiled elsewhere it would cost all of it again
    pool = _pool(plan)
    pool.next_event_time()
    pool.advance()


def _interrupt(plan: Plan) -> None:
    backend = _pool(plan)._backend  # the kernel alone: EnginePool.interrupt advances first
    backend.interrupt(0.0, True)
    backend.interrupt(0.0, False)


def _small(plan: Plan) -> None:
    router.least_loaded(np.zeros(2, np.int64), 3)
    balance.balance(np.array([3.0, 2.0, 1.0]), 2)
    RewardService(plan, np.random.default_rng(0)).score(np.zeros(2), np.full(2, 16, np.int64))


PARTS: dict[str, Callable[[Plan], None]] = {"advance": _advance, "interrupt": _interrupt, "small": _small}


def _kernels(name: str):
    """The cached entry points each part compiles (what :func:`missing` looks for)."""
    return {"advance": [drivers.advance_pool, drivers.peek_engines, drivers.submit_requests],
            "interrupt": [drivers.interrupt_engines, drivers.drop_returns],
            "small": [router.least_loaded, balance.balance_kernel, reward_queue.sandbox_queue_kernel]}[name]


def _static(plan: Plan) -> bool:
    return ENGINE_KINDS[plan.placement.rollout.engine].batching == "static"


def missing(plan: Plan) -> list[str]:
    """The parts of ``plan``'s kernels that are not in the cache yet (all where there is none)."""
    if jit.CACHE_DIR is None:
        return list(PARTS)
    flag = "bool" if _static(plan) else "none"  # the kernels' first argument: twin.jit.by_batching

    def accept(sig) -> bool:  # a driver kernel compiled for this batching; any other kernel
        return str(sig[0]) not in ("bool", "none") or str(sig[0]) == flag

    return [name for name in PARTS if not all(jit.is_cached(k, accept) for k in _kernels(name))]


def estimate_s(parts: list[str], processes: int = 1, cores: int | None = None,
               load: float | None = None) -> float:
    """Wall seconds to compile ``parts`` in ``processes`` processes on ``cores`` cores with
    ``load`` runnable processes already there (default: this machine's, ``os.getloadavg``)."""
    cores = cores or os.cpu_count() or 1
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    # each process gets a core's share: the cores split over the load and our own processes
    share = min(1.0, cores / max(1.0, load + processes))
    if processes == 1:
        return sum(IN_ONE_PROCESS_SECONDS[p] for p in parts) / share
    work = [PART_SECONDS[p] for p in parts]
    return max(max(work, default=0.0), sum(work) / processes) / share


def _run_part(args) -> str:
    name, plan = args
    try:
        PARTS[name](plan)
    except Exception:  # noqa: BLE001 - e.g. a study's base plan whose engines do not fit:
        pass  # the run compiles that part itself, and reports any real problem there
    return name


def prepare(plan: Plan, stream=None, processes: int | None = None) -> None:
    """Compile the kernels ``plan`` needs that the cache lacks, saying so on ``stream``
    (stderr) with an estimate and a line per part done. Silent when all are cached."""
    stream = stream or sys.stderr
    todo = missing(plan)
    if not todo:
        return
    if jit.CACHE_DIR is None:  # nothing to keep them in: the run compiles what it calls
        print(f"twin: compiling the simulator's kernels (~{math.ceil(estimate_s(todo))} s; no cache folder to keep "
              "them in, so every run compiles them)", file=stream, flush=True)
        return
    # Forked parts compile the helpers they share again (41.7 s of CPU in all against 32.2 in one
    # process), for a wall time of 27.6 s against 32.2 on two idle cores: on two cores, usually
    # shared, they compile in this process and leave the other core alone; with more, in parallel.
    cores = processes or max(1, min(len(todo), (os.cpu_count() or 1) - 1))
    print(f"twin: compiling the simulator's kernels, once for this version ({_guess(todo, cores)}; "
          f"{len(todo)} parts{f' on {cores} processes' if cores > 1 else ''}; `twin compile` does it ahead "
          "of time, e.g. at install)", file=stream, flush=True)
    start = time.monotonic()
    ordered = sorted(todo, key=lambda p: -PART_SECONDS[p])  # longest first: the least wall time
    if cores > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(cores) as pool:
            for done, name in enumerate(pool.imap_unordered(_run_part, [(p, plan) for p in ordered]), 1):
                _said(stream, done, len(ordered), name, start)
    else:
        for done, name in enumerate(ordered, 1):
            _run_part((name, plan))
            _said(stream, done, len(ordered), name, start)


def _guess(todo: list[str], processes: int) -> str:
    """The estimate as a range: idle cores, and this machine's load average (which counts every
    runnable process, so it overstates: at load 10.7 on 2 cores it said 173 s for 64 s)."""
    cores = os.cpu_count() or 1
    idle, loaded = (math.ceil(estimate_s(todo, processes, load=load)) for load in (0.0, None))
    where = f"{cores} idle core{'s' if cores > 1 else ''}"
    return f"~{idle} s on {where}" + (f", up to ~{loaded} s at this machine's load" if loaded > 1.5 * idle else "")


def _said(stream, done: int, total: int, name: str, start: float) -> None:
    print(f"twin: compiling kernels: {done} of {total} parts ({name}), {time.monotonic() - start:.0f} s "
          "elapsed", file=stream, flush=True)
