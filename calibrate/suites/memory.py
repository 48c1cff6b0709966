"""Memory bandwidth: a device-to-device copy, counted as bytes read + written per second.

The sweep runs from a few KiB (where the fixed cost of one call dominates) to well past
the last-level cache, so the profile's curve shows the small-size regime and, on a CPU,
the drop from cache to DRAM.

Element-wise kernels are measured apart (``op=elementwise``): a binary multiply into a
freshly allocated output, as an eager framework runs one, its two inputs rotating through a
working set beyond the last-level cache (as a model's activations come from memory, not
from the cache the previous kernel left warm); size = bytes read + written (3 × the tensor).
"""

from __future__ import annotations

from calibrate.suites import Spec, params
from calibrate.timing import Budget, Clock, median_time


def buffer_sizes(device: str, quick: bool) -> list[int]:
    kib, mib = 1024, 1024 * 1024
    if device == "cpu":
        return [16 * kib, 256 * kib, 4 * mib, 64 * mib, 256 * mib] if quick else [
            4 * kib, 16 * kib, 64 * kib, 256 * kib, mib, 4 * mib, 16 * mib, 64 * mib, 256 * mib, 1024 * mib]
    return [64 * kib, mib, 16 * mib, 256 * mib, 2048 * mib] if quick else [
        16 * kib, 64 * kib, 256 * kib, mib, 4 * mib, 16 * mib, 64 * mib, 256 * mib, 1024 * mib, 4096 * mib]


# Bytes of element-wise operands each measurement rotates through (beyond the LLC / L2).
ROTATION_BYTES = {"cpu": 64 * 2**20, "cuda": 512 * 2**20}


def elementwise_sizes(device: str, quick: bool) -> list[int]:
    kib, mib = 1024, 1024 * 1024
    if device == "cpu":
        return [4 * kib, 64 * kib, 512 * kib, 4 * mib, 16 * mib] if quick else [
            4 * kib, 16 * kib, 64 * kib, 256 * kib, mib, 4 * mib, 16 * mib, 64 * mib]
    return [16 * kib, 256 * kib, 4 * mib, 64 * mib, 256 * mib] if quick else [
        16 * kib, 64 * kib, 256 * kib, mib, 4 * mib, 16 * mib, 64 * mib, 256 * mib]


def plan(device: str, quick: bool, budget: Budget, clock: Clock) -> list[Spec]:
    out = []
    for nbytes in buffer_sizes(device, quick):
        out.append(Spec(key=f"memory/copy/bytes={nbytes}", suite="memory", op="copy", dtype="u8",
                        size=2.0 * nbytes, params=params(buffer_bytes=nbytes),
                        measure=_measure(device, nbytes, budget, clock)))
    for nbytes in elementwise_sizes(device, quick):
        out.append(Spec(key=f"memory/elementwise/bytes={nbytes}", suite="memory", op="elementwise",
                        dtype="fp32", size=3.0 * nbytes, params=params(tensor_bytes=nbytes),
                        measure=_elementwise(device, nbytes, budget, clock)))
    return out


def _elementwise(device, nbytes, budget, clock):
    def run():
        import torch

        n = max(1, nbytes // 4)
        count = max(2, -(-ROTATION_BYTES[device] // (2 * n * 4)))
        pairs = [torch.randn(2, n, device=device) for _ in range(count)]
        turn = iter(range(1 << 62))

        def once():
            a = pairs[next(turn) % count]
            return a[0] * a[1]

        return median_time(once, clock, budget)

    return run


def _measure(device, nbytes, budget, clock):
    def run():
        import torch

        src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
        dst = torch.empty_like(src)  # written once before timing, so pages are mapped
        dst.copy_(src)
        return median_time(lambda: dst.copy_(src), clock, budget)

    return run
