"""Roofline time on one device from a profile: compute and memory, each at its efficiency."""

from __future__ import annotations

import numpy as np

from twin.config.hardware import DeviceProfile


def compute_time(flops: float, profile: DeviceProfile, dtype: str, flops_per_call: float | None = None,
                 tokens: float | None = None) -> float:
    """Seconds for ``flops`` of matmul work; efficiency read at the size of one call and, when
    the profile has a token-rows curve and ``tokens`` is given, at the GEMMs' row count (a
    few-row GEMM is bound by streaming its weight; see ``Compute.gemm_efficiency_by_tokens``)."""
    if flops <= 0:
        return 0.0
    eff = profile.compute.gemm_eff(flops_per_call or flops, tokens)
    return flops / (profile.compute.peak(dtype) * eff)


def attention_time(flops: float, profile: DeviceProfile, dtype: str, head_dim: float | None = None,
                   decode: bool = False) -> float:
    """Seconds of ``flops`` of attention in one call (efficiency read at that call's size and,
    when the profile has a head-width curve and ``head_dim`` is given, at the heads' width;
    ``decode``: a one-query call over a KV cache, at the profile's decode curve when it has one)."""
    if flops <= 0:
        return 0.0
    return flops / (profile.compute.peak(dtype) * profile.compute.attention_eff(flops, head_dim, decode))


def attention_backward_time(forward_flops: float, profile: DeviceProfile, dtype: str,
                            head_dim: float | None = None) -> float:
    """Seconds of the backward of one attention call whose forward is ``forward_flops``: twice
    its FLOP at the profile's backward curve, or twice the forward's time without one."""
    if forward_flops <= 0:
        return 0.0
    eff = profile.compute.attention_backward_eff(2.0 * forward_flops, head_dim)
    if eff is None:
        return 2.0 * attention_time(forward_flops, profile, dtype, head_dim)
    return 2.0 * forward_flops / (profile.compute.peak(dtype) * eff)


def memory_time(nbytes: float, profile: DeviceProfile) -> float:
    """Seconds to stream ``nbytes`` through device memory (read or write)."""
    if nbytes <= 0:
        return 0.0
    return nbytes / (profile.memory.bandwidth_bytes_per_s * profile.memory.efficiency.at(nbytes))


def memory_rate(profile: DeviceProfile, nbytes: float) -> float:
    """Achieved bytes/s for transfers of about ``nbytes``."""
    return profile.memory.bandwidth_bytes_per_s * profile.memory.efficiency.at(nbytes)


def elementwise_time(nbytes: float, ops: float, profile: DeviceProfile) -> float:
    """Seconds of ``ops`` element-wise kernels moving ``nbytes`` (read + written) in all.

    Each kernel moves ``nbytes / ops`` on average and runs at the profile's element-wise
    bandwidth efficiency at that size (a calibrated curve includes the fixed cost of a call);
    no kernel is shorter than ``overhead.per_kernel_s``, so the time is at least
    ``ops · per_kernel_s`` (small models, small batches: launch-bound). Element-wise kernels
    run one after another and after the GEMMs that produce their inputs, so their time adds
    to the GEMMs' (it does not overlap with them in a roofline max).
    """
    if nbytes <= 0 or ops <= 0:
        return 0.0
    return ops * elementwise_op_time(nbytes / ops, profile)


def elementwise_op_time(nbytes: float, profile: DeviceProfile, cls: str = "binary") -> float:
    """Seconds of one element-wise kernel moving ``nbytes``: at the element-wise efficiency for
    its size, and never less than ``per_kernel_s`` nor, with a calibrated element-wise curve,
    than the smallest kernel measured took (below its smallest size a call's time is its fixed
    cost, not a rate: the curve is not extrapolated to ever faster tiny kernels). ``cls``: the
    kernel's class (``transformer.ELEMENTWISE_CLASSES``), read at the profile's curve for it
    (``Memory.elementwise_class_curve``: the binary curve when the profile has none)."""
    mem = profile.memory
    rate = mem.bandwidth_bytes_per_s
    curve = mem.elementwise_class_curve(cls)
    t = nbytes / (rate * curve.at(nbytes))
    if mem.elementwise_efficiency is not None:
        s0, e0 = curve.points[0]
        t = max(t, s0 / (rate * e0))
    return max(t, profile.overhead.per_kernel_s)


def elementwise_time_by_class(work: dict[str, tuple[float, float]], profile: DeviceProfile,
                              kernel_factor: float = 1.0, byte_divisor: float = 1.0) -> float:
    """Seconds of element-wise work split by kernel class ({class: (bytes, kernels)}, as
    ``transformer.elementwise_work_by_class``): with ``memory.elementwise_classes`` in the profile,
    each class's kernels at that class's curve (:func:`elementwise_op_time`); without, the whole
    as one average kernel (:func:`elementwise_time`, the behaviour of profiles without classes).
    ``kernel_factor`` multiplies the kernel count (e.g. micro-batches), ``byte_divisor`` divides
    the bytes (e.g. TP × PP shards)."""
    if profile.memory.elementwise_classes is None:
        nbytes = sum(b for b, _ in work.values()) / byte_divisor
        return elementwise_time(nbytes, sum(o for _, o in work.values()) * kernel_factor, profile)
    total = 0.0
    for cls, (nbytes, ops) in work.items():
        n, k = nbytes / byte_divisor, ops * kernel_factor
        if n > 0 and k > 0:
            total += k * elementwise_op_time(n / k, profile, cls)
    return total


# Array twins of the functions above, for pricing many loads at once (every learner rank of a
# step): each takes NumPy arrays of positive sizes and returns, element by element, exactly
# what its scalar sibling returns for that element (same operations in the same order; curves
# read by EfficiencyCurve.at_each). tests/cost/test_roofline.py holds them to their siblings
# bit for bit.


def compute_times(flops: np.ndarray, profile: DeviceProfile, dtype: str, flops_per_call: np.ndarray,
                  tokens: np.ndarray | None = None) -> np.ndarray:
    """:func:`compute_time` of each element (every ``flops`` > 0)."""
    c = profile.compute
    eff = c.gemm_efficiency.at_each(flops_per_call)
    if tokens is not None and c.gemm_efficiency_by_tokens is not None:
        eff *= c.gemm_efficiency_by_tokens.at_each(np.maximum(tokens, 1.0))
    return flops / (c.peak(dtype) * eff)


def _attention_eff(profile: DeviceProfile, curve, flops: np.ndarray, head_dim: float | None) -> np.ndarray:
    eff = curve.at_each(flops)
    by_head = profile.compute.attention_efficiency_by_head_dim
    if head_dim is not None and by_head is not None:
        eff *= by_head.at(float(head_dim))
    return eff


def attention_times(flops: np.ndarray, profile: DeviceProfile, dtype: str, head_dim: float | None = None) -> np.ndarray:
    """:func:`attention_time` (not decode) of each element (every ``flops`` > 0)."""
    c = profile.compute
    return flops / (c.peak(dtype) * _attention_eff(profile, c.attention_efficiency or c.gemm_efficiency, flops, head_dim))


def attention_backward_times(forward_flops: np.ndarray, profile: DeviceProfile, dtype: str,
                             head_dim: float | None = None) -> np.ndarray:
    """:func:`attention_backward_time` of each element (every ``forward_flops`` > 0)."""
    c = profile.compute
    if c.attention_backward_efficiency is None:
        return 2.0 * attention_times(forward_flops, profile, dtype, head_dim)
    eff = _attention_eff(profile, c.attention_backward_efficiency, 2.0 * forward_flops, head_dim)
    return 2.0 * forward_flops / (c.peak(dtype) * eff)


def elementwise_op_times(nbytes: np.ndarray, profile: DeviceProfile, cls: str = "binary") -> np.ndarray:
    """:func:`elementwise_op_time` of each element."""
    mem = profile.memory
    rate = mem.bandwidth_bytes_per_s
    curve = mem.elementwise_class_curve(cls)
    t = nbytes / (rate * curve.at_each(nbytes))
    if mem.elementwise_efficiency is not None:
        s0, e0 = curve.points[0]
        t = np.maximum(t, s0 / (rate * e0))
    return np.maximum(t, profile.overhead.per_kernel_s)


def elementwise_times_by_class(work: dict[str, tuple[np.ndarray, float]], profile: DeviceProfile,
                               kernel_factor: np.ndarray, byte_divisor: float = 1.0) -> np.ndarray:
    """:func:`elementwise_time_by_class` of each element: ``work`` {class: (bytes per element,
    kernels)} as ``transformer.elementwise_work_by_class`` gives it for an array of tokens
    (every element's bytes > 0), ``kernel_factor`` one per element."""
    if profile.memory.elementwise_classes is None:
        nbytes = sum(b for b, _ in work.values()) / byte_divisor
        ops = sum(o for _, o in work.values()) * kernel_factor
        return np.where((nbytes > 0) & (ops > 0), ops * elementwise_op_times(nbytes / ops, profile), 0.0)
    total = np.zeros(len(kernel_factor))
    for cls, (nbytes, ops) in work.items():
        n, k = nbytes / byte_divisor, ops * kernel_factor
        if ops > 0:  # a class's kernels per element are the same count for every element
            total += np.where(n > 0, k * elementwise_op_times(n / k, profile, cls), 0.0)
    return total
