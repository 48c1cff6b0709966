"""Running planned measurements into the store: skip what is there, append as we go."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable

from calibrate.store import Row, Store
from calibrate.suites import Spec


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


def measure(specs: Iterable[Spec], store: Store, progress: Callable[[str], None] = stderr_progress) -> int:
    """Measure every spec whose key the store lacks; returns how many were measured.

    Each row reaches the CSV before the next measurement starts, so an exception or
    Ctrl-C (which propagate) loses at most the measurement in flight.
    """
    specs = list(specs)
    todo = [s for s in specs if s.key not in store]
    if len(todo) < len(specs):
        progress(f"resuming: {len(specs) - len(todo)} of {len(specs)} measurements already in {store.path}")
    t_start = time.perf_counter()
    for i, spec in enumerate(todo, 1):
        seconds, reps = spec.measure()
        row = Row(key=spec.key, suite=spec.suite, op=spec.op, dtype=spec.dtype, size=spec.size,
                  seconds=seconds, rate=spec.size / seconds if seconds > 0 else 0.0, busbw=0.0,
                  params=spec.params, reps=reps, device=store.device)
        store.append(row)
        progress(f"[{i}/{len(todo)} {time.perf_counter() - t_start:5.1f}s] {spec.suite} {spec.dtype} "
                 f"{spec.op} {spec.params}: {describe(row)}")
    return len(todo)
