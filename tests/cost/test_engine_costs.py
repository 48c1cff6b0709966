import pytest

from twin.runner import plan as plan_of
from twin.cost.engine import engine_costs
from twin.cost.roofline import memory_rate


def test_decode_at_batch_one_is_weight_bytes_over_hbm_bandwidth():
    """A 7B model at batch 1 on an H100 is memory-bound: ~15.2 GB / (3.35 TB/s × eff)."""
    s = plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 1, "gpu": "h100-sxm"}})
    costs = engine_costs(s)
    gpu = s.cluster.gpu
    # Every weight is read once, except the input embedding table (one row per token).
    read = s.model.weight_bytes - (s.model.vocab_size - 1) * s.model.hidden_size * 2
    weights_s = read / memory_rate(gpu, s.model.weight_bytes)
    t = costs.decode_time(1, 1)
    # plus the serial element-wise kernels, launch-bound at one token (per_kernel_s = 5 us):
    # 4 fused kernels + the KV-cache write per layer, embedding + final norm, softmax + sampler
    kernels = 5 * 28 + 2 + 2
    assert costs.elementwise_s[1] == pytest.approx(kernels * gpu.overhead.per_kernel_s)
    assert t == pytest.approx(weights_s + gpu.overhead.per_iteration_s + costs.elementwise_s[1], rel=0.02)
    assert 4.0e-3 < t < 7.0e-3  # 15.2 GB / 3.35 TB/s = 4.5 ms at full bandwidth


def test_iteration_time_grows_with_batch_and_context():
    costs = engine_costs(plan_of({"model": "qwen2.5-7b"}))
    assert costs.decode_time(64, 64_000) > costs.decode_time(1, 1_000)
    assert costs.decode_time(64, 640_000) > costs.decode_time(64, 64_000)
    # Large prefills are compute-bound: doubling tokens roughly doubles time.
    assert costs.prefill_time(8000) / costs.prefill_time(4000) == pytest.approx(2, rel=0.25)


def test_tensor_parallel_splits_weights_and_adds_all_reduces():
    s1 = plan_of({"model": "qwen2.5-7b"})
    s4 = plan_of({"model": "qwen2.5-7b"}, ["placement.rollout.tp=4"])
    c1, c4 = engine_costs(s1), engine_costs(s4)
    assert c4.weights_s[1] == pytest.approx(c1.weights_s[1] / 4, rel=0.01)
    # comm_s holds the serial terms: the TP all-reduces and the element-wise kernels
    assert c1.comm_s[1] == pytest.approx(c1.elementwise_s[1]) and c1.elementwise_s[1] > 0
    assert c4.comm_s[1] - c4.elementwise_s[1] > 0
    assert c4.kv_capacity_tokens > c1.kv_capacity_tokens


def test_kv_cache_read_adds_to_compute_bound_gemms():
    """GEMMs and attention are separate kernels on one stream: at a batch where the GEMMs are
    compute-bound, a decode iteration's KV-cache read still adds its own time."""
    costs = engine_costs(plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 1, "gpu": "h20"}}))
    n = 512
    assert costs.linear_s[n] > costs.weights_s[n]  # H20: 148 TFLOP/s for 4 TB/s
    context = n * 2_000
    read = costs.kv_s_per_token * context
    assert read > costs.attn_s_per_pair * (context + n)  # decode attention is memory-bound
    assert costs.decode_time(n, context) - costs.decode_time(n, 0) == pytest.approx(read, rel=1e-3)


def test_synchronous_scheduling_pays_the_hosts_step_every_iteration():
    """A synchronous engine's GPU waits for the host each step: the profile's synchronous_step_s
    (4 ms, vLLM RFC #6854) in place of the overlapped per_iteration_s, at any batch."""
    base = {"model": "qwen2.5-7b", "cluster": {"nodes": 1, "gpu": "h100-sxm"}}
    overlapped = engine_costs(plan_of(base))
    synchronous = engine_costs(plan_of(base, ["placement.rollout.scheduling=synchronous"]))
    o = plan_of(base).cluster.gpu.overhead
    assert o.synchronous_step_s == pytest.approx(4.0e-3) and o.per_iteration_s == pytest.approx(0.5e-3)
    for batch, context in [(1, 500), (256, 256 * 1000)]:
        gap = synchronous.decode_time(batch, context) - overlapped.decode_time(batch, context)
        assert gap == pytest.approx(o.synchronous_step_s - o.per_iteration_s)
