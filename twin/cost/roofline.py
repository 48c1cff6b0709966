"""Roofline time on one device from a profile: compute and memory, each at its efficiency."""

from __future__ import annotations

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


def attention_time(flops: float, profile: DeviceProfile, dtype: str) -> float:
    """Seconds of ``flops`` of attention in one call (efficiency read at that call's size)."""
    if flops <= 0:
        return 0.0
    curve = profile.compute.attention_efficiency or profile.compute.gemm_efficiency
    return flops / (profile.compute.peak(dtype) * curve.at(flops))


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


def elementwise_op_time(nbytes: float, profile: DeviceProfile) -> float:
    """Seconds of one element-wise kernel moving ``nbytes``: at the element-wise efficiency for
    its size, and never less than ``per_kernel_s`` nor, with a calibrated element-wise curve,
    than the smallest kernel measured took (below its smallest size a call's time is its fixed
    cost, not a rate: the curve is not extrapolated to ever faster tiny kernels)."""
    mem = profile.memory
    rate = mem.bandwidth_bytes_per_s
    t = nbytes / (rate * mem.elementwise_curve.at(nbytes))
    if mem.elementwise_efficiency is not None:
        s0, e0 = mem.elementwise_efficiency.points[0]
        t = max(t, s0 / (rate * e0))
    return max(t, profile.overhead.per_kernel_s)
