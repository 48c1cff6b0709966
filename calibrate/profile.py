"""Measurements -> profiles: plain dicts in the format of twin.config.hardware, and YAML.

The measuring path has no pydantic; the dicts are validated with the twin's own
``parse_profile`` when the twin is importable (``validate``), so a profile that is written
is one the twin loads.

Peaks: a GPU's datasheet peak is not known to the benchmark, and a CPU has none, so the
profile's ``peak_flops`` per dtype is the best rate measured for that dtype, and its
efficiency curves are relative to that best (at most 1 by construction). Likewise the
memory bandwidth is the best copy rate measured. Provenance and each ``source`` say so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from calibrate import fit
from calibrate.env import Target
from calibrate.errors import CalibrationError
from calibrate.outputs import write_profile
from calibrate.store import Row, Store
from calibrate.suites import parse_params
from calibrate.suites.matmul import PRIMARY_DTYPE

REQUIRED = ("matmul", "memory", "overhead")


def _provenance(target: Target, command: str, csv_name: str, not_measured: list[str] | None = None) -> dict:
    prov = {"source": "calibrated",
            "reference": f"{command}; raw measurements in {csv_name}. Peaks are the best rates measured "
                         "here (not a datasheet), efficiencies are relative to them.",
            "date": target.date, "device": target.device_name, "driver": target.driver,
            "torch": target.torch, "cuda": target.cuda, "nccl": target.nccl, "host": target.host,
            "not_measured": not_measured or None}
    return {k: v for k, v in prov.items() if v is not None}


def _sizes_rates(rows: list[Row]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([r.size for r in rows]), np.array([r.rate for r in rows])


def device_profile(target: Target, store: Store, command: str, csv_name: str,
                   not_measured: list[str] | None = None) -> dict:
    """A DeviceProfile mapping from the matmul, attention, memory and overhead rows (``not_measured``:
    what the calibration left out, calibrate.coverage, recorded in its provenance)."""
    missing = [s for s in REQUIRED if not store.select(s)]
    if missing:
        raise CalibrationError(f"cannot fit a device profile without the {', '.join(missing)} suite(s); "
                               "measure them (drop --only) or rerun to resume")
    compute = _compute(target, store)
    memory = _memory(target, store)
    prof = {"kind": target.kind, "name": target.name,
            "description": f"{target.device_name}, calibrated on {target.host} ({target.date})",
            "provenance": _provenance(target, command, csv_name, not_measured), "compute": compute, "memory": memory,
            "overhead": _overhead(store)}
    return prof


def _compute(target: Target, store: Store) -> dict:
    """The profile's compute section: peak rate per dtype, GEMM and attention efficiency curves."""
    primary = PRIMARY_DTYPE[target.device]
    peaks = {}
    for dtype in ("fp32", "tf32", "bf16", "fp16", "fp8"):
        rows = store.select("matmul", dtype=dtype)
        if rows:
            peaks[dtype] = float(f"{fit.peak_rate([r.rate for r in rows]):.4g}")
    mm = store.select("matmul", dtype=primary) or store.select("matmul")
    peak = peaks[mm[0].dtype]
    gemm, by_tokens, how = gemm_curves(mm, peak)
    others = ", ".join(f"{d} {p / 1e12:.3g}" for d, p in peaks.items())
    compute = {
        "peak_flops": peaks,
        "gemm_efficiency": {"points": [list(p) for p in gemm], "source": (
            f"{len(mm)} {mm[0].dtype} GEMMs of the cost models' shapes (attention output, fused gate+up, down, "
            f"weight gradient) over hidden sizes and token counts, median of repetitions; {how}. "
            "One curve for all dtypes.")},
        "source": f"best measured GEMM rate per dtype, TFLOP/s: {others}",
    }
    if by_tokens:
        compute["gemm_efficiency_by_tokens"] = {"points": [list(p) for p in by_tokens], "source": (
            f"{mm[0].dtype} forward GEMMs (attention output, gate+up, down: M tokens × K against a K×N weight "
            "rotating beyond the last-level cache) by token rows M: per M the median efficiency of the larger "
            "half by FLOP (where the fixed cost of a call is small), isotonic in M. A few-row GEMM is bound by "
            "streaming its weight (2M FLOP per weight element whatever K and N), so this limit depends on M "
            "alone.")}
    compute.update(_attention(store, peaks))
    return compute


def _attention(store: Store, peaks: dict) -> dict:
    """Attention efficiency curves (prefill, decode, backward, by head width), relative to the best
    GEMM rate of the calls' dtype; empty without attention rows."""
    compute = {}
    measured = [r for r in store.select("attention") if r.seconds > 0]
    forward = [r for r in measured if r.op != "backward"]
    prefill = [r for r in forward if r.op != "decode"]
    decode = [r for r in forward if r.op == "decode"]
    if not prefill:  # a store of decode calls alone: they make the one curve
        prefill, decode = decode, []
    backward = [r for r in measured if r.op == "backward"]
    if forward:
        dtype = forward[0].dtype
        by_width = attention_head_dim_curve(forward)
        how = "by FLOP per call"
        if by_width:
            how = "by FLOP per call after dividing each rate by attention_efficiency_by_head_dim at its heads' width"
        attn_peak = peaks.get(dtype, max(peaks.values()))
        attn = fit.efficiency_curve(*_width_free_rates(prefill, by_width), attn_peak)
        compute["attention_efficiency"] = {"points": [list(p) for p in attn], "source": (
            f"{len(prefill)} scaled_dot_product_attention calls (causal prefills), FLOP = 4·heads·head_dim per "
            f"(query, key) pair, {how}, relative to the best {dtype} GEMM rate")}
        if decode:
            compute["attention_decode_efficiency"] = {"points": [list(p) for p in fit.efficiency_curve(
                *_width_free_rates(decode, by_width), attn_peak)], "source": (
                f"{len(decode)} one-query scaled_dot_product_attention calls over a KV cache read cold (keys and "
                f"values rotating beyond the last-level cache), FLOP = 4·heads·head_dim per (query, key) pair, "
                f"{how}, relative to the best {dtype} GEMM rate")}
        if backward:
            compute["attention_backward_efficiency"] = {"points": [list(p) for p in fit.efficiency_curve(
                *_width_free_rates(backward, by_width), attn_peak)], "source": (
                f"{len(backward)} backwards of causal scaled_dot_product_attention prefills (gradients of q, k, v; "
                f"the forward's graph kept), FLOP = twice the forward's, {how}, relative to the best {dtype} "
                "GEMM rate")}
        if by_width:
            compute["attention_efficiency_by_head_dim"] = {"points": [list(p) for p in by_width], "source": (
                "the same attention calls at head widths "
                f"{', '.join(str(int(p[0])) for p in by_width)} with heads × head_dim fixed (same FLOP per call): "
                "per width the median, over the calls, of its rate over the best width's rate for that call; "
                "relative to the best width")}
    return compute


def _memory(target: Target, store: Store) -> dict:
    """The profile's memory section: capacity, copy bandwidth and element-wise curves."""
    copies = store.select("memory", op="copy")
    bandwidth = fit.peak_rate([r.rate for r in copies])
    mem_curve = fit.efficiency_curve(*_sizes_rates(copies), bandwidth, shape="unimodal")
    memory = {
        "capacity_bytes": float(f"{target.capacity_bytes:.4g}"),
        "bandwidth_bytes_per_s": float(f"{bandwidth:.4g}"),
        "efficiency": {"points": [list(p) for p in mem_curve], "source": (
            f"{len(copies)} device-to-device copies, size = bytes read + written; relative to the best "
            "copy rate; unimodal fit (small copies pay the call, mid sizes can run from cache, large ones "
            "from DRAM/HBM)")},
        "source": f"capacity: {'host RAM' if target.device == 'cpu' else 'torch total_memory'}; "
                  "bandwidth: best copy rate measured (bytes read + written per second)",
    }
    ew = [r for r in store.select("memory", op="elementwise") if r.seconds > 0]
    if ew:
        ew_curve = fit.efficiency_curve(*_sizes_rates(ew), bandwidth, shape="unimodal")
        memory["elementwise_efficiency"] = {"points": [list(p) for p in ew_curve], "source": (
            f"{len(ew)} element-wise multiplies (two inputs rotating beyond the last-level cache, fresh output), "
            "size = bytes read + written per call, relative to the best copy rate; unimodal fit")}
    classes = {}
    for cls in ("unary", "rotary", "softmax", "sample"):
        rows = [r for r in store.select("memory", op=f"elementwise_{cls}") if r.seconds > 0]
        if rows:
            classes[cls] = {"points": [list(p) for p in fit.efficiency_curve(*_sizes_rates(rows), bandwidth,
                                                                             shape="unimodal")],
                            "source": f"{len(rows)} {ELEMENTWISE_CLASS_WHAT[cls]}, inputs rotating beyond the "
                                      "last-level cache, size = bytes read + written per kernel, relative to the "
                                      "best copy rate; unimodal fit"}
    if classes:
        memory["elementwise_classes"] = classes
    return memory


ELEMENTWISE_CLASS_WHAT = {
    "unary": "SiLU calls (a transcendental unary kernel: read n, write n)",
    "softmax": "log-softmax calls over rows of 1024 (read n, write n)",
    "sample": "torch.multinomial calls over rows of 1024 probabilities (the sampler; counted as read n, write n)",
    "rotary": "eager rotary embeddings of 64-wide heads plus the copy back to token-major (8 kernels "
              "moving 11 elements per query element; time and bytes per kernel)",
}


def _width_free_rates(rows: list[Row], by_width) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and rates of attention calls, each rate divided by the head-width curve at its
    heads' width (unchanged without a curve)."""
    sizes, rates = _sizes_rates(rows)
    if by_width:
        widths = np.array([_head_dim(r) for r in rows])
        rates = rates / fit.interp_log([p[0] for p in by_width], [p[1] for p in by_width], widths)
    return sizes, rates


def _head_dim(row: Row) -> float:
    return parse_params(row.params).get("head_dim", 64.0)


def attention_head_dim_curve(rows: list[Row]) -> list[tuple[float, float]] | None:
    """``attention_efficiency_by_head_dim`` from attention calls measured at two or more head
    widths with the same FLOP: per call (op and FLOP) the rate of each width over the
    best width's; per width the median of those ratios, relative to the best width. None when
    only one width was measured."""
    calls: dict[tuple, dict[float, float]] = {}
    for r in rows:
        calls.setdefault((r.op, float(f"{r.size:.6g}")), {})[_head_dim(r)] = r.rate  # same call: same FLOP
    widths = sorted({w for c in calls.values() for w in c})
    if len(widths) < 2:
        return None
    ratios: dict[float, list[float]] = {w: [] for w in widths}
    for c in calls.values():
        if len(c) < 2:
            continue
        best = max(c.values())
        for w, rate in c.items():
            ratios[w].append(rate / best)
    med = np.array([float(np.median(ratios[w])) if ratios[w] else np.nan for w in widths])
    keep = ~np.isnan(med)
    if keep.sum() < 2:
        return None
    ws, med = np.array(widths)[keep], med[keep]
    return fit._rounded(ws, np.clip(med / med.max(), 1e-6, 1.0))


def _gemm_tokens(row: Row) -> float | None:
    """Token rows of a sweep GEMM: M of a forward GEMM; the contraction K of a weight gradient."""
    p = parse_params(row.params)
    return p.get("k") if row.op == "wgrad" else p.get("m")


def gemm_curves(rows: list[Row], peak: float, rounds: int = 6):
    """``(gemm_efficiency, gemm_efficiency_by_tokens or None, how)`` from measured GEMMs.

    With forward GEMMs at three or more token counts M, efficiency is fitted as a product
    ``f(FLOP) · g(M)`` by alternating the two fits: ``f`` pooled by FLOP and isotonic on the
    rates divided by ``g``; ``g`` per M the geometric mean of the efficiency over ``f`` of the
    larger half (by FLOP) of M's forward GEMMs, where ``f`` is flat and its interpolation
    error small; ``g`` isotonic in M and 1 at the largest M (``f`` carries the level). Reading
    ``g`` from the raw efficiency of each M's larger GEMMs instead confounds the two whenever
    small M comes with small FLOP (a grid of m, n, k gives it): on XLA's sm_90 table that put
    256-row GEMMs at 0.36 of 4096-row ones, where the joint fit finds 0.95 and matches the
    table within 5% (median).
    """
    sizes, rates = _sizes_rates(rows)
    forward = [i for i, r in enumerate(rows) if r.op != "wgrad" and r.seconds > 0 and _gemm_tokens(r)]
    ms = np.array(sorted({_gemm_tokens(rows[i]) for i in forward}))
    if len(ms) < 3:
        return (fit.efficiency_curve(sizes, rates, peak), None,
                "efficiency = rate / best rate, pooled by FLOP per GEMM, isotonic (non-decreasing)")
    tokens = np.array([_gemm_tokens(r) or 1e12 for r in rows])  # no rows recorded: not row-limited
    eff = np.minimum(rates / peak, 1.0)
    f_m, f_size = tokens[forward], sizes[forward]
    g = np.ones(len(ms))
    for _ in range(rounds):
        gemm = fit.efficiency_curve(sizes, rates / fit.interp_log(ms, g, tokens), peak)
        f = fit.interp_log([p[0] for p in gemm], [p[1] for p in gemm], sizes[forward])
        ratio = np.log(eff[forward] / f)
        g = np.exp([np.mean(_larger_half(ratio[f_m == m], f_size[f_m == m])) for m in ms])
        g = fit.isotonic_increasing(g, [int(np.sum(f_m == m)) for m in ms])
        g = np.clip(g / g[-1], 1e-6, 1.0)
    s, v = fit.simplify(ms, g, max_points=8, tolerance=0.01)
    by_tokens = fit._rounded(s, v)
    gemm = fit.efficiency_curve(sizes, rates / fit.interp_log(s, v, tokens), peak)
    how = ("efficiency = f(FLOP per GEMM) x gemm_efficiency_by_tokens(M), fitted jointly (alternating): f pooled by "
           "FLOP, isotonic (non-decreasing) - the fixed cost of a call; the token-rows curve the weight-streaming limit")
    return gemm, by_tokens, how


def _larger_half(values, sizes):
    """The values of the larger half of the calls by size."""
    order = np.argsort(sizes, kind="stable")
    return values[order[len(order) // 2:]]


def _overhead(store: Store) -> dict:
    iters = store.select("overhead", op="decode_iteration")
    kernel = store.select("overhead", op="kernel")
    if len(iters) < 2:
        raise CalibrationError("the overhead suite needs at least two decode-iteration points")
    layers = [r.size for r in iters]
    ops = parse_params(iters[0].params)["ops_per_layer"]
    per_iter, per_op = fit.overhead_fit(layers, [r.seconds for r in iters], ops)
    floor = f"; a bare tiny add_ takes {kernel[0].seconds * 1e6:.2f} us" if kernel else ""
    out = {"per_iteration_s": float(f"{per_iter:.4g}"), "per_kernel_s": float(f"{per_op:.4g}"),
           "source": (f"eager Llama-style decode iterations (static engine, batch 1, width 32, sampling and "
                      f"host read-back included) at {', '.join(str(int(x)) for x in layers)} layers; line fit "
                      f"t = per_iteration + layers·{int(ops)} ops·per_kernel, per_kernel being the cost of one "
                      f"dispatched ATen op inside a model{floor}. Graph-captured engines do not pay per_kernel "
                      "per decode op.")}
    hf = store.select("overhead", op="hf_generate_step")
    if len(hf) >= 2:  # transformers was installed: its generate step, the same kind of line
        step, per_layer = fit.overhead_fit([r.size for r in hf], [r.seconds for r in hf], 1.0)
        out["hf_generate_step_s"] = float(f"{step:.4g}")
        out["hf_generate_per_layer_s"] = float(f"{per_layer:.4g}")
        out["source"] += (f" transformers' generate (LlamaForCausalLM, sdpa, DynamicCache, do_sample, batch 1, width "
                          f"32): one decode step at {', '.join(str(int(r.size)) for r in hf)} layers, line fit "
                          "t = hf_generate_step + layers·hf_generate_per_layer.")
    return out


def link_profiles(target: Target, store: Store, command: str, csv_name: str,
                  not_measured: list[str] | None = None) -> list[dict]:
    """One LinkProfile per measured (backend, world size) of collectives (``not_measured``: the
    sweep's left-outs, calibrate.coverage.collectives_not_measured)."""
    groups: dict[tuple[str, int], list[Row]] = {}
    for r in store.select("collective"):
        if r.seconds > 0:
            p = parse_params(r.params)
            groups.setdefault((r.dtype, int(p["world"])), []).append(r)
    out = []
    for (backend, world), rows in sorted(groups.items()):
        best = fit.peak_rate([r.busbw for r in rows])
        curve = fit.efficiency_curve([r.size for r in rows], [r.busbw for r in rows], best)
        small = min((r for r in rows if r.op == "all_reduce"), key=lambda r: r.size, default=None)
        steps = 2 * (world - 1)
        latency = small.seconds / steps if small else 0.0
        ops = sorted({r.op for r in rows})
        out.append({
            "kind": "link", "name": f"{backend}-{target.name}-x{world}",
            "description": f"{backend} collectives over {world} ranks on {target.host}, as measured "
                           f"({', '.join(ops)})",
            "provenance": _provenance(target, command, csv_name, not_measured),
            "bandwidth_bytes_per_s": float(f"{best:.4g}"),
            "latency_s": float(f"{latency:.4g}"),
            "efficiency": {"points": [list(p) for p in curve], "source": (
                "nccl-tests bus bandwidth of all measured collectives by buffer bytes, relative to the best; "
                f"latency = smallest all-reduce time / {steps} ring steps")},
        })
    return out


def host_link_profile(target: Target, store: Store, command: str, csv_name: str,
                      not_measured: list[str] | None = None) -> dict | None:
    """The host<->device link from pinned copies (CUDA only; ``not_measured``: the sweep's left-outs)."""
    rows = [r for r in store.select("host_copy") if r.op.endswith("_pinned")]
    if not rows:
        return None
    best = fit.peak_rate([r.rate for r in rows])
    curve = fit.efficiency_curve([r.size for r in rows], [r.rate for r in rows], best)
    small = min(rows, key=lambda r: r.size)
    pageable = [r.rate for r in store.select("host_copy") if r.op.endswith("_pageable")]
    note = f"; pageable copies reach {max(pageable) / 1e9:.3g} GB/s" if pageable else ""
    return {"kind": "link", "name": f"{target.name}-host-link",
            "description": f"host<->device copies of {target.device_name} on {target.host}",
            "provenance": _provenance(target, command, csv_name, not_measured),
            "bandwidth_bytes_per_s": float(f"{best:.4g}"),
            "latency_s": float(f"{max(small.seconds - small.size / best, 0.0):.4g}"),
            "efficiency": {"points": [list(p) for p in curve],
                           "source": f"pinned h2d and d2h copies relative to the best{note}"}}


def validate(data: dict) -> None:
    """Check ``data`` with the twin's schema when the twin is importable."""
    try:
        from twin.config.hardware import parse_profile
    except ImportError:
        return
    parse_profile(data)


def write_yaml(path: Path, data: dict) -> None:
    """Validate, then write atomically (a failure never leaves half a profile)."""
    validate(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_profile(path, yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True))
