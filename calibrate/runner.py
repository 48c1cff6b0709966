"""Running planned measurements into the store: skip what is there, append as we go, and (quick
sweeps) leave out the optional ones a suite's time budget has no room for."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from calibrate.store import Row, Store
from calibrate.suites import Spec
from calibrate.timing import Budget


def describe(row: Row) -> str:
    """'12.3 TFLOP/s (41.0 us)' or '44.2 GB/s (1.52 ms)'."""
    if row.suite in ("matmul", "attention"):
        rate = f"{row.rate / 1e12:.3g} TFLOP/s" if row.rate >= 1e11 else f"{row.rate / 1e9:.3g} GFLOP/s"
    elif row.suite == "overhead":
        rate = "dispatch"
    else:
        rate = f"{row.rate / 1e9:.3g} GB/s"
    t = row.seconds
    took = f"{t * 1e6:.1f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.2f} s"
    return f"{rate} ({took})"


def stderr_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class LeftOut:
    """An optional spec a quick sweep did not measure, and why: ``budget`` (its suite's time was
    spent) or ``item`` (predicted to take ``predicted_s``, over the budget's ``item_s``)."""

    spec: Spec
    why: str
    predicted_s: float | None = None


def predicted_seconds(spec: Spec, store: Store, budget: Budget) -> float | None:
    """The least a measurement of ``spec`` will take: ``budget.calls`` calls at the best rate measured
    so far for its suite, dtype and op (else its suite and dtype); None before any."""
    rows = [r for r in store.select(spec.suite, dtype=spec.dtype) if r.rate > 0]
    same_op = [r for r in rows if r.op == spec.op] or rows
    if not same_op:
        return None
    return budget.calls * spec.size / max(r.rate for r in same_op)


def measure(specs: Iterable[Spec], store: Store, progress: Callable[[str], None] = stderr_progress,
            budget: Budget | None = None, left_out: list[LeftOut] | None = None) -> int:
    """Measure every spec whose key the store lacks; returns how many were measured.

    With a ``budget`` that limits its suite (quick sweeps), an ``optional`` spec is measured only
    while the suite has spent less than ``budget.suite_limit(suite)`` seconds in this run and when
    it is not predicted to take longer than ``budget.item_s``; the others are appended to
    ``left_out``. Each row reaches the CSV before the next measurement starts, so an exception or
    Ctrl-C (which propagate) loses at most the measurement in flight.
    """
    specs = list(specs)
    todo = [s for s in specs if s.key not in store]
    if len(todo) < len(specs):
        progress(f"resuming: {len(specs) - len(todo)} of {len(specs)} measurements already in {store.path}")
    t_start = time.perf_counter()
    done = 0
    for spec in todo:
        skip = _skip(spec, store, budget, time.perf_counter() - t_start)
        if skip is not None:
            if left_out is not None:
                left_out.append(skip)
            continue
        seconds, reps = spec.measure()
        row = Row(key=spec.key, suite=spec.suite, op=spec.op, dtype=spec.dtype, size=spec.size,
                  seconds=seconds, rate=spec.size / seconds if seconds > 0 else 0.0, busbw=0.0,
                  params=spec.params, reps=reps, device=store.device)
        store.append(row)
        done += 1
        progress(f"[{done}/{len(todo)} {time.perf_counter() - t_start:5.1f}s] {spec.suite} {spec.dtype} "
                 f"{spec.op} {spec.params}: {describe(row)}")
    return done


def _skip(spec: Spec, store: Store, budget: Budget | None, spent: float) -> LeftOut | None:
    if not spec.optional or budget is None:
        return None
    limit = budget.suite_limit(spec.suite)
    if limit is not None and spent >= limit:
        return LeftOut(spec, "budget")
    if budget.item_s is not None:
        predicted = predicted_seconds(spec, store, budget)
        if predicted is not None and predicted > budget.item_s:
            return LeftOut(spec, "item", predicted)
    return None
