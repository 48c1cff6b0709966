"""Attention through scaled_dot_product_attention: prefill (causal, over batch and length),
its backward (training), and decode (one query per sequence over a KV cache, grouped-query
heads).

FLOP are counted as the twin counts them (4·heads·head_dim per (query, key) pair; a causal
sequence of s tokens has s(s+1)/2 pairs), so the measured rate is directly the one the
twin's attention term needs. Decode rows also record the KV bytes read. A backward row
times the gradients of q, k and v of one causal prefill call (the forward's graph kept, so
only the backward kernel is timed); its FLOP are counted as twice the forward's, as the
twin's learner counts them.

KV cache read cold: a decode call's keys and values rotate through a working set larger than
the last-level cache (as the matmul suite rotates weights), because in a model every layer
reads its own layer's cache once per iteration, long after anything touched it. Timed on one
hot cache, a small decode call ran 1.5-2.4x faster on this project's CPU than the same call
inside a decoder. Prefill and backward operands are the ones the layer has just produced, and
stay hot. The profile fits decode calls into a curve of their own
(``attention_decode_efficiency``).

Head width: SDPA's rate per FLOP falls with narrower heads (less work per element loaded), so
every case is also measured with heads of ``HEAD_DIMS`` at the same total width (heads ×
head_dim = 1024, so the FLOP per call is the same); the profile's
``attention_efficiency_by_head_dim`` is fitted from the ratios.
"""

from __future__ import annotations

from dataclasses import replace

from calibrate.suites import Spec, params, parse_params, rank
from calibrate.suites.matmul import ROTATION_BYTES
from calibrate.timing import Budget, Clock, median_time

HEADS, KV_HEADS, HEAD_DIM = 16, 4, 64
WIDTH = HEADS * HEAD_DIM  # query width kept across head widths
PER_PAIR = 4.0 * HEADS * HEAD_DIM  # FLOP per (query, key) pair, as the twin counts them
HEAD_DIMS = {"cpu": (32, 64, 128), "cuda": (64, 128)}


def cases(device: str, quick: bool):
    if device == "cpu":
        # (4, 32): a short prefill, as engines run when they admit a few prompts
        prefill = [(4, 32), (1, 128), (4, 128), (1, 512), (2, 1024)] if quick else [
            (4, 32), (1, 64), (4, 128), (1, 256), (4, 256), (1, 512), (4, 512), (1, 1024), (2, 2048)]
        # small decode calls (a few sequences over short contexts) are dominated by the call's fixed
        # cost; without them the curve would be extrapolated flat to ever faster tiny calls
        decode = [(1, 64), (4, 128), (1, 512), (16, 512), (16, 2048)] if quick else [
            (1, 64), (4, 128), (1, 256), (8, 256), (1, 2048), (16, 512), (16, 2048), (64, 2048)]
    else:
        prefill = [(1, 1024), (8, 2048), (4, 8192)] if quick else [
            (1, 512), (8, 512), (1, 2048), (8, 2048), (1, 8192), (4, 8192), (1, 32768)]
        decode = [(1, 4096), (64, 4096), (256, 8192)] if quick else [
            (1, 1024), (16, 1024), (64, 4096), (256, 4096), (256, 16384)]
    return prefill, decode


def plan(device: str, quick: bool, budget: Budget, clock: Clock) -> list[Spec]:
    dtype = "fp32" if device == "cpu" else "bf16"
    prefill, decode = cases(device, quick)
    out = []
    for d in HEAD_DIMS["cuda" if device.startswith("cuda") else "cpu"]:
        for b, s in prefill:
            out += _prefill(device, dtype, b, s, d, budget, clock)
        for b, kv in decode:
            out.append(_decode(device, dtype, b, kv, d, budget, clock))
    if not quick:
        return out
    # Quick: the fits need, at 64-wide heads, each list's two ends and middle (the curves' ends and
    # bend) and, at the other widths, the middle prefill (and its backward) and decode (the
    # by-head-width curve is a median of ratios over calls measured at several widths); the other
    # calls are optional, 64-wide first, coarse to fine.
    r_p, r_d = rank(prefill), rank(decode)

    def order(spec):
        p = parse_params(spec.params)
        case = (p["batch"], p["seq"]) if "seq" in p else (p["batch"], p["kv_len"])
        r = (r_p if "seq" in p else r_d)[tuple(int(x) for x in case)]
        other = p["head_dim"] != HEAD_DIM
        essential = r == 2 if other else r < 3
        return not essential, other, r

    return [replace(s, optional=order(s)[0]) for s in sorted(out, key=order)]


def _prefill(device, dtype, b, s, d, budget, clock) -> list[Spec]:
    """A causal prefill of ``b`` sequences of ``s`` tokens at heads ``d`` wide, and its backward."""
    heads, kv_heads = WIDTH // d, WIDTH // d // (HEADS // KV_HEADS)
    tag = "" if d == HEAD_DIM else f",d={d}"  # keys of 64-wide heads as before (resume)
    flop = PER_PAIR * b * s * (s + 1) / 2
    return [Spec(key=f"attention/{dtype}/prefill/b={b},s={s}{tag}", suite="attention", op="prefill",
                 dtype=dtype, size=flop, params=params(batch=b, seq=s, head_dim=d),
                 measure=_measure(device, dtype, b, s, s, budget, clock, heads, kv_heads, d)),
            Spec(key=f"attention/{dtype}/backward/b={b},s={s}{tag}", suite="attention", op="backward",
                 dtype=dtype, size=2 * flop, params=params(batch=b, seq=s, head_dim=d),
                 measure=_measure_backward(device, dtype, b, s, budget, clock, heads, kv_heads, d))]


def _decode(device, dtype, b, kv, d, budget, clock) -> Spec:
    """One query per sequence of ``b`` over a KV cache of ``kv`` positions, heads ``d`` wide."""
    heads, kv_heads = WIDTH // d, WIDTH // d // (HEADS // KV_HEADS)
    tag = "" if d == HEAD_DIM else f",d={d}"
    kv_bytes = 2 * b * kv_heads * kv * d * (4 if dtype == "fp32" else 2)
    return Spec(key=f"attention/{dtype}/decode/b={b},kv={kv}{tag}", suite="attention", op="decode",
                dtype=dtype, size=PER_PAIR * b * kv, params=params(batch=b, kv_len=kv, kv_bytes=kv_bytes, head_dim=d),
                measure=_measure(device, dtype, b, 1, kv, budget, clock, heads, kv_heads, d, cold_kv=True))


def _measure(device, dtype, b, q_len, kv_len, budget, clock, heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM,
             cold_kv=False):
    def run():
        import torch
        import torch.nn.functional as F

        dt = torch.float32 if dtype == "fp32" else torch.bfloat16
        q = torch.randn(b, heads, q_len, head_dim, device=device, dtype=dt)
        kv_bytes = 2 * b * kv_heads * kv_len * head_dim * q.element_size()
        count = max(2, -(-ROTATION_BYTES[device] // kv_bytes)) if cold_kv else 1
        caches = [(torch.randn(b, kv_heads, kv_len, head_dim, device=device, dtype=dt),
                   torch.randn(b, kv_heads, kv_len, head_dim, device=device, dtype=dt)) for _ in range(count)]
        turn = iter(range(1 << 62))
        causal = q_len > 1

        def call():
            k, v = caches[next(turn) % count]
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

        return median_time(call, clock, budget)

    return run


def _measure_backward(device, dtype, b, s, budget, clock, heads, kv_heads, head_dim):
    def run():
        import torch
        import torch.nn.functional as F

        dt = torch.float32 if dtype == "fp32" else torch.bfloat16
        q = torch.randn(b, heads, s, head_dim, device=device, dtype=dt, requires_grad=True)
        k = torch.randn(b, kv_heads, s, head_dim, device=device, dtype=dt, requires_grad=True)
        v = torch.randn_like(k, requires_grad=True)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        grad = torch.randn_like(out)
        return median_time(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True), clock, budget)

    return run
