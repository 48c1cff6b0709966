"""Memory bandwidth: a device-to-device copy, counted as bytes read + written per second.

The sweep runs from a few KiB (where the fixed cost of one call dominates) to well past
the last-level cache, so the profile's curve shows the small-size regime and, on a CPU,
the drop from cache to DRAM.

Element-wise kernels are measured apart (``op=elementwise``): a binary multiply into a
freshly allocated output, as an eager framework runs one, its two inputs rotating through a
working set beyond the last-level cache (as a model's activations come from memory, not
from the cache the previous kernel left warm); size = bytes read + written (3 × the tensor).

Element-wise kernels are not all alike on a CPU, so three more classes are measured the same way
(inputs rotating beyond the cache, size = bytes read + written per kernel), one per class of
``twin.cost.transformer.layer_elementwise_classes``:

* ``elementwise_unary``: SiLU, a transcendental function (compute-bound on a CPU core), read n,
  write n;
* ``elementwise_softmax``: log-softmax over rows of 1024 (a vocabulary pass: max, exp-sum, log),
  read n, write n;
* ``elementwise_sample``: ``torch.multinomial`` over rows of 1024 probabilities (the sampler: one
  random draw per element, compute-bound on a CPU), counted as read n, write n;
* ``elementwise_rotary``: the eager rotary embedding of a query (rotate_half: four multiplies of
  half-width slices of a head-major view, a sub, an add and a ``cat``; 7 kernels moving 9n
  elements) followed by the copy of a head-major tensor back to token-major (1 kernel, 2n): the
  short-row, strided kernels of attention's surroundings; size and time are per kernel
  (bytes / 8 kernels, time / 8), heads of 64.
"""

from __future__ import annotations

from dataclasses import replace

from calibrate.suites import Spec, params, parse_params, rank
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
    for cls in ELEMENTWISE_CLASSES:
        for nbytes in elementwise_sizes(device, quick):
            out.append(Spec(key=f"memory/elementwise_{cls}/bytes={nbytes}", suite="memory", op=f"elementwise_{cls}",
                            dtype="fp32", size=CLASS_BYTES[cls] * nbytes, params=params(tensor_bytes=nbytes),
                            measure=_elementwise_class(device, cls, nbytes, budget, clock)))
    if not quick:
        return out
    # Quick: every copy (a few ms in all) and each element-wise curve at its two ends and middle size
    # are needed; the element-wise kernels' other sizes are optional, coarse to fine.
    r = rank(elementwise_sizes(device, quick))

    def order(spec):
        if spec.op == "copy":
            return False, -1
        level = r[int(parse_params(spec.params)["tensor_bytes"])]
        return level >= 3, level

    return [replace(s, optional=order(s)[0]) for s in sorted(out, key=order)]


ELEMENTWISE_CLASSES = ("unary", "softmax", "sample", "rotary")
# bytes read + written per kernel, per byte of the measured tensor
CLASS_BYTES = {"unary": 2.0, "softmax": 2.0, "sample": 2.0, "rotary": 11.0 / 8.0}
ROTARY_HEAD_DIM, ROTARY_HEADS, SOFTMAX_ROW = 64, 8, 1024


def _elementwise_class(device, cls, nbytes, budget, clock):
    """Median seconds of one kernel of class ``cls`` on a tensor of about ``nbytes``."""
    def run():
        import torch
        import torch.nn.functional as F

        n = max(1, nbytes // 4)
        if cls == "rotary":
            d, heads = ROTARY_HEAD_DIM, ROTARY_HEADS
            tokens = max(1, n // (heads * d))
            count = max(2, -(-ROTATION_BYTES[device] // (tokens * heads * d * 4)))
            xs = [torch.randn(1, tokens, heads, d, device=device) for _ in range(count)]
            angles = torch.rand(tokens, d // 2, device=device)
            cos, sin = angles.cos()[None, None], angles.sin()[None, None]
            turn = iter(range(1 << 62))

            def once():  # as calibrate.probe.model.rotate + the attention output copy
                x = xs[next(turn) % count].transpose(1, 2)
                x1, x2 = x[..., : d // 2], x[..., d // 2:]
                r = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
                return r.transpose(1, 2).reshape(1, tokens, heads * d)

            t, reps = median_time(once, clock, budget)
            return t / 8.0, reps  # 8 kernels
        rows_of = cls in ("softmax", "sample") and n >= SOFTMAX_ROW
        shape = (max(1, n // SOFTMAX_ROW), SOFTMAX_ROW) if rows_of else (n,)
        count = max(2, -(-ROTATION_BYTES[device] // (n * 4)))
        xs = [torch.randn(*shape, device=device) for _ in range(count)]
        if cls == "sample":  # probabilities, as the sampler gets them
            xs = [torch.softmax(x, dim=-1) for x in xs]
        gen = torch.Generator(device=device).manual_seed(0)
        fn = {"unary": F.silu, "softmax": lambda x: torch.log_softmax(x, dim=-1),
              "sample": lambda x: torch.multinomial(x, 1, generator=gen)}[cls]
        turn = iter(range(1 << 62))
        return median_time(lambda: fn(xs[next(turn) % count]), clock, budget)

    return run


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
