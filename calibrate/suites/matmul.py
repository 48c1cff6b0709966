"""GEMM throughput over the shapes the cost models use, per dtype; TFLOP/s = 2·M·N·K / t.

For each hidden size h and token count m (decode batches up to prefill and training
micro-batches) it times a layer's GEMMs as the twin counts them — the attention output
projection (h→h), the fused gate+up (h→2i) and the down projection (i→h), with
i = 8h/3 as in Llama — and the weight-gradient GEMM of training (contracting over the m
tokens). The efficiency curve is fitted over FLOP per GEMM.

The right-hand (weight) matrix rotates through a working set larger than the last-level
cache, as a model's layers each bring their own weights: a GEMM timed on one hot matrix
runs from cache, and at small token counts (decode) that overstates the rate in a model.
"""

from __future__ import annotations

import itertools

from calibrate.suites import Spec, params, rank
from calibrate.timing import Budget, Clock, median_time

CPU_DTYPES = ("fp32", "bf16")
CUDA_DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp8")
# The dtype whose GEMMs give the profile's efficiency curves (every other dtype: its peak only).
PRIMARY_DTYPE = {"cpu": "fp32", "cuda": "bf16"}


# Bytes of weight matrices each GEMM rotates through: beyond the LLC of a server CPU
# (tens of MiB) and of a GPU's L2 (50-60 MiB on Hopper).
ROTATION_BYTES = {"cpu": 64 * 2**20, "cuda": 512 * 2**20}


def sizes(device: str, quick: bool) -> tuple[list[int], list[int]]:
    """(hidden sizes, token counts) of the sweep."""
    if device == "cpu":
        # hidden sizes on a 1.5-2x grid: a CPU BLAS blocks K and N in fixed tiles, so a GEMM's rate
        # at a given FLOP depends on where its dimensions fall between tiles; a coarse 2x grid
        # leaves the in-between widths (192, 384, 768) unmeasured
        return ([128, 192, 256, 384, 512, 768, 1024], [1, 8, 32, 128, 1024]) if quick else (
            [128, 192, 256, 384, 512, 768, 1024, 1536, 2048], [1, 4, 8, 16, 32, 64, 256, 1024, 2048])
    return ([1024, 4096, 8192], [1, 64, 512, 4096]) if quick else (
        [1024, 2048, 4096, 8192], [1, 16, 64, 256, 1024, 4096, 16384])


def shapes(h: int, m: int) -> list[tuple[str, int, int, int]]:
    """(name, M, K, N) of the GEMMs of one layer at ``m`` tokens."""
    i = (8 * h // 3 + 63) // 64 * 64
    return [("out", m, h, h), ("gate_up", m, h, 2 * i), ("down", m, i, h), ("wgrad", h, m, i)]


def torch_dtype(name: str):
    import torch

    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
            "fp16": torch.float16, "fp8": torch.float8_e4m3fn}[name]


def fp8_supported() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.get_device_capability(0) >= (8, 9)


def plan(device: str, quick: bool, budget: Budget, clock: Clock) -> list[Spec]:
    dtypes = CPU_DTYPES if device == "cpu" else tuple(d for d in CUDA_DTYPES if d != "fp8" or fp8_supported())
    hiddens, tokens = sizes(device, quick)
    if quick:
        return _quick(device, dtypes, hiddens, tokens, budget, clock)
    out = []
    for dtype in dtypes:
        for h in hiddens:
            for m in tokens:
                for name, mm, k, n in shapes(h, m):
                    if dtype == "fp8" and min(mm, k, n) < 16:
                        continue  # fp8 GEMMs need dimensions that are multiples of 16
                    out.append(_spec(device, dtype, name, mm, k, n, h, budget, clock))
    return out


def _quick(device, dtypes, hiddens, tokens, budget, clock) -> list[Spec]:
    """The quick sweep, what the profile needs first.

    The primary dtype (:data:`PRIMARY_DTYPE`) alone gives the efficiency curves: its grid's
    hidden sizes and token counts each at their ends and middle are needed (the by-tokens curve
    takes three token counts); the rest of its grid is optional, coarse to fine. Every other
    dtype gives only its ``peak_flops`` entry, the best rate measured: it is measured at the
    largest token count only (where GEMMs run at their best), its smallest GEMM needed, the others
    optional from the largest down, the dtypes taking turns, so that the item budget leaves out the
    GEMMs a dtype without native units would spend seconds on (bf16 on a CPU without bf16
    instructions: 0.4-2.8 GFLOP/s against fp32's 130 here).
    """
    primary = PRIMARY_DTYPE[device]
    r_h, r_m = rank(hiddens), rank(tokens)
    grid = sorted(((h, m) for h in hiddens for m in tokens),
                  key=lambda hm: (max(r_h[hm[0]], r_m[hm[1]]), r_h[hm[0]] + r_m[hm[1]], r_h[hm[0]]))
    needed, refine = [], []
    for h, m in grid:
        essential = r_h[h] < 3 and r_m[m] < 3
        for name, mm, k, n in shapes(h, m):
            (needed if essential else refine).append(_spec(device, primary, name, mm, k, n, h, budget, clock,
                                                           optional=not essential))
    peaks = []
    for dtype in dtypes:
        if dtype == primary:
            continue
        rows = sorted(((2.0 * mm * k * n, name, mm, k, n, h) for h in hiddens
                       for name, mm, k, n in shapes(h, tokens[-1]) if dtype != "fp8" or min(mm, k, n) >= 16))
        if rows:
            _, name, mm, k, n, h = rows[0]
            needed.append(_spec(device, dtype, name, mm, k, n, h, budget, clock))
            peaks.append([_spec(device, dtype, name, mm, k, n, h, budget, clock, optional=True)
                          for _, name, mm, k, n, h in reversed(rows[1:])])
    turns = [spec for turn in itertools.zip_longest(*peaks) for spec in turn if spec is not None]
    return needed + turns + refine


def _spec(device, dtype, name, mm, k, n, h, budget, clock, optional=False) -> Spec:
    return Spec(key=f"matmul/{dtype}/{name}/m={mm},k={k},n={n}", suite="matmul", op=name, dtype=dtype,
                size=2.0 * mm * k * n, params=params(m=mm, k=k, n=n, hidden=h),
                measure=_measure(device, dtype, mm, k, n, budget, clock), optional=optional)


def _measure(device, dtype, m, k, n, budget, clock):
    def run():
        import torch

        if device == "cuda" and dtype in ("tf32", "fp32"):
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        if dtype == "fp8":
            a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()  # column-major B
            one = torch.ones((), device=device)
            return median_time(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16), clock, budget)
        dt = torch_dtype(dtype)
        a = torch.randn(m, k, device=device, dtype=dt)
        count = max(2, -(-ROTATION_BYTES[device] // (k * n * a.element_size())))
        weights = [torch.randn(k, n, device=device, dtype=dt) for _ in range(count)]
        turn = iter(range(1 << 62))
        return median_time(lambda: torch.mm(a, weights[next(turn) % count]), clock, budget)

    return run
