"""Timing one operation: warm-up, repetitions, median.

On a GPU the device is synchronised around each sample and CUDA events time it; on a CPU
``time.perf_counter`` does. Operations far shorter than the clock's resolution or the
Python call around them are repeated ``inner`` times per sample, so a sample is always
long enough to time (the median is then divided by ``inner``).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


def cpu_clock() -> Callable[[], float]:
    """The CPU-side clock: ``time.perf_counter``, or with ``CALIBRATE_CPU_CLOCK=thread`` the
    calling thread's CPU time (``time.thread_time``). On a machine shared with other busy
    processes, wall time counts the time slices this process waits for a core; thread time
    does not. It is the work's time only when torch runs on that thread alone
    (``OMP_NUM_THREADS=1``), so set both, for calibration and probe alike."""
    return time.thread_time if os.environ.get("CALIBRATE_CPU_CLOCK") == "thread" else time.perf_counter

# A sample shorter than this is dominated by the timer's own cost (perf_counter, event record).
MIN_SAMPLE_S = 200e-6


@dataclass(frozen=True)
class Budget:
    """How long to spend timing one operation, and (quick sweeps) one suite.

    ``suite_s``: seconds per suite after which the runner measures none of its ``optional``
    specs (the ones a fit needs are measured whatever they cost); ``item_s``: an optional spec
    predicted to take longer than this is left out, the prediction being its size over the best
    rate measured so far for its suite, dtype and op, times ``calls``. None: no limit."""

    warmup: int = 2
    min_reps: int = 5
    max_reps: int = 50
    min_time_s: float = 0.1  # stop repeating once this much was timed (after min_reps)
    suite_s: tuple[tuple[str, float], ...] | None = None  # (suite, seconds) pairs
    item_s: float | None = None

    @property
    def calls(self) -> int:
        """Calls of one measurement at the least: warm-up, the first timed call, the repetitions."""
        return self.warmup + 1 + self.min_reps

    def suite_limit(self, suite: str) -> float | None:
        return dict(self.suite_s or ()).get(suite)


# Quick: about a minute on a 2-core CPU (docs/calibrate.md has the measured split). Per suite, the
# seconds its refinements may fill beyond what the fit needs; collectives take a fixed ~8 s apart.
QUICK = Budget(warmup=2, min_reps=5, max_reps=30, min_time_s=0.1,
               suite_s=(("matmul", 12.0), ("attention", 8.0), ("memory", 4.0), ("overhead", 6.0), ("host_copy", 6.0)),
               item_s=0.5)
FULL = Budget(warmup=3, min_reps=7, max_reps=100, min_time_s=0.25)


class Clock:
    """Wall time on a CPU; CUDA events on a GPU (device time, host launch included)."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        if self.cuda:
            import torch

            self._torch = torch

    def sync(self) -> None:
        if self.cuda:
            self._torch.cuda.synchronize()

    def time(self, fn: Callable[[], object], inner: int) -> float:
        """Seconds for ``inner`` back-to-back calls of ``fn``."""
        if self.cuda:
            start = self._torch.cuda.Event(enable_timing=True)
            end = self._torch.cuda.Event(enable_timing=True)
            self.sync()
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        clock = cpu_clock()
        t0 = clock()
        for _ in range(inner):
            fn()
        return clock() - t0


def median_time(fn: Callable[[], object], clock: Clock, budget: Budget = QUICK) -> tuple[float, int]:
    """Median seconds of one call of ``fn`` and the number of samples taken."""
    for _ in range(budget.warmup):
        fn()
    clock.sync()
    first = clock.time(fn, 1)
    inner = max(1, int(MIN_SAMPLE_S / max(first, 1e-9)) + 1) if first < MIN_SAMPLE_S else 1
    samples, spent = [], 0.0
    while len(samples) < budget.min_reps or (spent < budget.min_time_s and len(samples) < budget.max_reps):
        t = clock.time(fn, inner)
        samples.append(t / inner)
        spent += t
    return statistics.median(samples), len(samples)
