"""Host<->device copies, pinned and pageable host memory (CUDA only: a CPU has no such link).

These set the cost of optimizer and parameter offload; the fitted link profile has the
best pinned rate as its bandwidth.
"""

from __future__ import annotations

from calibrate.suites import Spec, params
from calibrate.timing import Budget, Clock, median_time


def plan(device: str, quick: bool, budget: Budget, clock: Clock) -> list[Spec]:
    if device != "cuda":
        return []
    mib = 1024 * 1024
    sizes = [mib, 64 * mib, 1024 * mib] if quick else [64 * 1024, mib, 16 * mib, 256 * mib, 1024 * mib]
    out = []
    for pinned in (True, False):
        for direction in ("h2d", "d2h"):
            for nbytes in sizes:
                op = f"{direction}_{'pinned' if pinned else 'pageable'}"
                out.append(Spec(key=f"host_copy/{op}/bytes={nbytes}", suite="host_copy", op=op, dtype="u8",
                                size=float(nbytes), params=params(bytes=nbytes),
                                measure=_measure(direction, pinned, nbytes, budget, clock)))
    return out


def _measure(direction, pinned, nbytes, budget, clock):
    def run():
        import torch

        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
        dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        if direction == "h2d":
            return median_time(lambda: dev.copy_(host, non_blocking=pinned), clock, budget)
        return median_time(lambda: host.copy_(dev, non_blocking=pinned), clock, budget)

    return run
