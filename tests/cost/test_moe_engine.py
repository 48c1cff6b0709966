import numpy as np
import pytest
from hypothesis import given, strategies as st

from twin.cost import moe_engine, transformer
from twin.cost.engine import engine_costs
from twin.runner import plan as plan_of


def _plan(model="qwen3-30b-a3b", gpu="h100-sxm", tp=1, **rollout):
    return plan_of({"model": model, "cluster": {"nodes": 1, "gpu": gpu},
                    "placement": {"mode": "disaggregated", "rollout": {"gpus": tp, "tp": tp, **rollout}}})


# vLLM PR #24700, benchmarks/kernels/benchmark_moe.py on H100, Qwen3-30B-A3B fp8 tp1 ("Main"):
# fused_topk + fused_experts per MoE layer, microseconds, by batch
VLLM_QWEN3_FP8_H100 = {1: 44.54, 8: 129.77, 16: 185.40, 32: 238.37, 64: 262.73, 128: 273.72}


def test_a_layer_reproduces_vllms_fused_moe_benchmark_on_h100():
    """The block's per-layer time against the kernel benchmark it is priced from: six kernels at
    the profile's floor plus the touched experts streamed at the fused kernel's rate. (The
    block here has the router GEMM where the benchmark has silu_and_mul: one floor each.)"""
    p = _plan(dtype="fp8")
    layers = p.model.moe_layers
    for batch, measured_us in VLLM_QWEN3_FP8_H100.items():
        per_layer = moe_engine.fused_moe_s(p, np.array([float(batch)]), whole_experts=False)[0] / layers
        assert per_layer * 1e6 == pytest.approx(measured_us, rel=0.10), batch


def test_fixed_kernels_do_not_shrink_with_tensor_parallelism():
    one, four = _plan(tp=1), _plan(tp=4)
    n = np.array([1.0, 256.0])
    t1 = moe_engine.fused_moe_s(one, n, whole_experts=False)
    t4 = moe_engine.fused_moe_s(four, n, whole_experts=False)
    fixed = one.model.moe_layers * moe_engine.FUSED_MOE_KERNELS * one.gpu.overhead.per_kernel_s
    assert (t4 > t1 / 4).all()  # a quarter of the bytes, the same kernels, smaller slices streamed worse
    assert (t4 > fixed).all() and (t1 > fixed).all()
    assert t4[1] - fixed < (t1[1] - fixed) / 4 * 1.2


def test_a_dense_model_has_no_fused_moe_block():
    p = _plan(model="qwen2.5-7b")
    assert not moe_engine.fused_moe_s(p, np.arange(5.0), whole_experts=False).any()
    assert moe_engine.routed_active_params(p) == 0.0


def test_routed_bytes_are_the_touched_experts_of_the_weight_read():
    p = _plan()
    arch = p.model
    n = np.array([1.0, 64.0])
    routed = moe_engine.routed_bytes_read(p, n)
    assert routed[0] == pytest.approx(arch.moe_layers * 8 * arch.expert_params * 2)
    assert (routed < transformer.weight_bytes_read(arch, n)).all()


def test_engine_decode_prices_the_block_serially():
    """A MoE engine's decode step grows with the experts its batch touches; the routed experts
    are in comm (serial), not in the dense weight read."""
    p = _plan(tp=4)
    c = engine_costs(p)
    moe = moe_engine.fused_moe_s(p, np.arange(len(c.comm_s), dtype=float), whole_experts=False)
    assert c.comm_s[64] - c.elementwise_s[64] > moe[64]  # plus the TP all-reduces
    assert c.decode_time(64, 64_000) > c.decode_time(8, 8_000)
    dense = (transformer.weight_bytes_read(p.model, 64.0) - moe_engine.routed_bytes_read(p, 64.0)) / 4
    assert c.weights_s[64] * p.gpu.memory.bandwidth_bytes_per_s * 0.9 == pytest.approx(dense, rel=0.01)


@given(st.floats(1e5, 1e10), st.floats(1e5, 1e10))
def test_stream_efficiency_grows_with_the_slice_and_stays_within_the_measured(a, b):
    lo, hi = sorted((a, b))
    e_lo, e_hi = moe_engine.stream_efficiency(lo), moe_engine.stream_efficiency(hi)
    assert e_lo <= e_hi
    points = [e for _, e in moe_engine.STREAM_POINTS]
    assert min(points) <= e_lo <= max(points)
