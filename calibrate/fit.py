"""Fitting measurements into profile figures. Pure functions of NumPy arrays.

An efficiency curve is a handful of (size, efficiency) points with efficiency in (0, 1],
read by the twin with linear interpolation in log(size). It is fitted in four steps:

1. efficiencies = rate / peak, capped at 1 (a rate above the peak can only be noise);
2. measurements whose sizes are close (within a factor ``bin_factor``) are pooled into one
   point at their geometric-mean size with their median efficiency, so that the many GEMM
   shapes of about the same FLOP count give one figure, not a comb;
3. an isotonic fit (least squares under an order constraint, pool-adjacent-violators) makes
   the curve non-decreasing (compute: bigger operations amortise fixed costs better) or
   unimodal (memory on a CPU: small copies pay the call, mid sizes run from cache, large
   ones from DRAM, so the curve rises and then falls);
4. points the log-linear interpolation already reproduces within ``tolerance`` (relative)
   are dropped, leaving at most ``max_points``; the smallest size measured always stays, since the twin
   prices anything smaller at that call's time (a flat curve, such as a CPU sampler's near
   0.002, would otherwise keep one point at an arbitrary size and price a 4 KiB call like a
   1 MiB one).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Shape = Literal["increasing", "unimodal"]


def isotonic_increasing(y, w=None) -> np.ndarray:
    """Least-squares non-decreasing fit of ``y`` (weights ``w``), pool-adjacent-violators."""
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    means, weights, counts = [], [], []
    for yi, wi in zip(y, w):
        means.append(yi)
        weights.append(wi)
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            m2, w2, c2 = means.pop(), weights.pop(), counts.pop()
            m1, w1, c1 = means.pop(), weights.pop(), counts.pop()
            means.append((m1 * w1 + m2 * w2) / (w1 + w2))
            weights.append(w1 + w2)
            counts.append(c1 + c2)
    return np.repeat(means, counts)


def unimodal(y, w=None) -> np.ndarray:
    """Least-squares fit that is non-decreasing up to some point and non-increasing after it.

    Every split into a rising head and a falling tail is unimodal, so the best split wins.
    """
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    best, best_err = y, np.inf
    for split in range(1, len(y) + 1):
        head = isotonic_increasing(y[:split], w[:split])
        tail = isotonic_increasing(y[split:][::-1], w[split:][::-1])[::-1]
        fit = np.concatenate([head, tail])
        err = float((w * (fit - y) ** 2).sum())
        if err < best_err - 1e-15:
            best, best_err = fit, err
    return best


def pool_by_size(sizes, values, bin_factor: float = 1.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pool sorted measurements whose sizes lie within ``bin_factor`` of the bin's first size.

    Returns (geometric-mean size, median value, count) per bin, sizes increasing.
    """
    s = np.asarray(sizes, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(s, kind="stable")
    s, v = s[order], v[order]
    out_s, out_v, out_n = [], [], []
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] <= s[i] * bin_factor:
            j += 1
        out_s.append(float(np.exp(np.log(s[i: j + 1]).mean())))
        out_v.append(float(np.median(v[i: j + 1])))
        out_n.append(j - i + 1)
        i = j + 1
    return np.array(out_s), np.array(out_v), np.array(out_n, dtype=np.float64)


def interp_log(sizes, values, at) -> np.ndarray:
    """The twin's reading of a curve: linear in log(size), flat outside the points."""
    return np.interp(np.log(np.asarray(at, dtype=np.float64)), np.log(sizes), values)


def simplify(sizes, values, max_points: int = 8, tolerance: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """Drop points the others reproduce within ``tolerance`` (relative: a call's time is
    inversely proportional to its efficiency, so this bounds the error of a priced call, on a
    curve near 0.002 as on one near 0.8); then, while more than ``max_points`` remain, drop
    the one whose loss changes the curve least. The first point (the smallest size) is kept:
    below it the twin charges that call's time."""
    s = list(np.asarray(sizes, dtype=np.float64))
    v = list(np.asarray(values, dtype=np.float64))
    full_s, full_v = np.array(s), np.array(v)

    def error_without(i: int) -> float:
        ks = s[:i] + s[i + 1:]
        kv = v[:i] + v[i + 1:]
        return float((np.abs(interp_log(ks, kv, full_s) - full_v) / full_v).max())

    while len(s) > 1:
        errors = [error_without(i) for i in range(1, len(s))]
        i = 1 + int(np.argmin(errors))
        if errors[i - 1] > tolerance and len(s) <= max_points:
            break
        del s[i], v[i]
    return np.array(s), np.array(v)


def efficiency_curve(
    sizes,
    rates,
    peak: float,
    shape: Shape = "increasing",
    max_points: int = 8,
    bin_factor: float = 1.5,
    tolerance: float = 0.02,
) -> list[tuple[float, float]]:
    """(size, efficiency) points for a profile from measured (size, rate) pairs and a peak."""
    if peak <= 0 or len(sizes) == 0:
        raise ValueError("need a positive peak and at least one measurement")
    eff = np.minimum(np.asarray(rates, dtype=np.float64) / peak, 1.0)
    s, e, n = pool_by_size(sizes, eff, bin_factor)
    e = isotonic_increasing(e, n) if shape == "increasing" else unimodal(e, n)
    s, e = simplify(s, e, max_points, tolerance)
    return _rounded(s, np.clip(e, 1e-6, 1.0))


def _rounded(sizes, effs) -> list[tuple[float, float]]:
    """Four significant digits, sizes kept strictly increasing (the schema requires it)."""
    out: list[tuple[float, float]] = []
    for s, e in zip(sizes, effs):
        s = float(f"{s:.4g}")
        if out and s <= out[-1][0]:
            continue
        out.append((s, min(1.0, float(f"{e:.4g}"))))
    return out


def peak_rate(rates) -> float:
    """Peak of a device without a datasheet figure: the best rate measured.

    Efficiencies relative to it are then at most 1 by construction, and the profile says so.
    """
    r = np.asarray(rates, dtype=np.float64)
    if r.size == 0 or not np.isfinite(r).any():
        raise ValueError("no rates measured")
    return float(np.nanmax(r))


def line_fit(x, y) -> tuple[float, float]:
    """Least-squares intercept and slope of y = a + b·x."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if len(x) < 2 or np.ptp(x) == 0:
        return float(np.median(y)), 0.0
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b)


def overhead_fit(layers, seconds, kernels_per_layer: float) -> tuple[float, float]:
    """Per-iteration and per-kernel overhead from decoder iterations at negligible width.

    At a width where every kernel is pure dispatch, an iteration of ``L`` layers takes
    ``t = per_iteration + L · kernels_per_layer · per_kernel``; the intercept is the fixed
    cost of an iteration (embedding, head, sampling, bookkeeping), the slope divided by the
    kernels a layer launches is the cost of one kernel. Both are clipped at zero.
    """
    a, b = line_fit(layers, seconds)
    return max(a, 0.0), max(b, 0.0) / kernels_per_layer


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor (busbw = algbw × factor)."""
    if n <= 1:
        return 0.0
    return {"all_reduce": 2.0 * (n - 1) / n, "all_gather": (n - 1) / n,
            "reduce_scatter": (n - 1) / n, "broadcast": 1.0}[op]
