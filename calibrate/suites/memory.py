"""Memory bandwidth: a device-to-device copy, counted as bytes read + written per second.

The sweep runs from a few KiB (where the fixed cost of one call dominates) to well past
the last-level cache, so the profile's curve shows the small-size regime and, on a CPU,
the drop from cache to DRAM.
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


def plan(device: str, quick: bool, budget: Budget, clock: Clock) -> list[Spec]:
    out = []
    for nbytes in buffer_sizes(device, quick):
        out.append(Spec(key=f"memory/copy/bytes={nbytes}", suite="memory", op="copy", dtype="u8",
                        size=2.0 * nbytes, params=params(buffer_bytes=nbytes),
                        measure=_measure(device, nbytes, budget, clock)))
    return out


def _measure(device, nbytes, budget, clock):
    def run():
        import torch

        src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
        dst = torch.empty_like(src)  # written once before timing, so pages are mapped
        dst.copy_(src)
        return median_time(lambda: dst.copy_(src), clock, budget)

    return run
