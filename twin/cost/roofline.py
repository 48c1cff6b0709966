"""Roofline time on one device from a profile: compute and memory, each at its efficiency."""

from __future__ import annotations

from twin.config.hardware import DeviceProfile


def compute_time(flops: float, profile: DeviceProfile, dtype: str, flops_per_call: float | None = None) -> float:
    """Seconds for ``flops`` of matmul work; efficiency read at the size of one call."""
    if flops <= 0:
        return 0.0
    eff = profile.compute.gemm_efficiency.at(flops_per_call or flops)
    return flops / (profile.compute.peak(dtype) * eff)


def attention_time(flops: float, profile: DeviceProfile, dtype: str) -> float:
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
