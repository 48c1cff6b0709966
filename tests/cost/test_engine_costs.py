import pytest

from twin.runner import plan as plan_of
from twin.cost.engine import engine_costs
from twin.cost.memory import rollout_memory
from twin.errors import InputError
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


def _engine(model: str, nodes: int, **rollout):
    return plan_of({"model": model, "cluster": {"nodes": nodes},
                    "placement": {"mode": "disaggregated", "rollout": {"gpus": 8 * nodes // 2, **rollout},
                                  "trainer": {"gpus": 8 * nodes // 2}}})


def test_an_engine_across_nodes_pays_the_inter_node_link_for_its_all_reduces():
    """tp 16 on 8-GPU nodes: the same weights per GPU as two tp-8 halves would hold, but every
    all-reduce's ring crosses the network (Topology), so its share of an iteration grows."""
    in_node, across = engine_costs(_engine("llama-3.1-70b", 4, tp=8)), engine_costs(_engine("llama-3.1-70b", 4, tp=16))
    n = 256
    ar8 = in_node.comm_s[n] - in_node.elementwise_s[n]
    ar16 = across.comm_s[n] - across.elementwise_s[n]
    assert ar16 > 1.5 * ar8
    assert across.weights_s[n] == pytest.approx(in_node.weights_s[n] / 2, rel=0.01)


def test_tp_must_stay_in_a_node_or_span_whole_nodes():
    with pytest.raises(InputError) as exc:
        _engine("llama-3.1-70b", 6, tp=12)  # 24 rollout GPUs: two engines, each 1.5 nodes
    assert exc.value.field == "placement.rollout.tp"
    with pytest.raises(InputError):
        _engine("llama-3.1-70b", 4, tp=8, dp_attention=True)  # needs expert_parallel


def test_wide_ep_with_dp_attention_holds_the_mla_latent_once_per_gpu():
    """DeepSeek-V3 engines of 32 GPUs: under TP every GPU holds every token's MLA latent; with
    DP attention each GPU holds its own sequences' only, so the engine caches ~32x the tokens
    per byte (less the whole attention weights each GPU now keeps)."""
    common = {"gpu_memory_utilization": 0.85}
    tp = _engine("deepseek-v3", 8, tp=32, **common)
    wide = _engine("deepseek-v3", 8, tp=32, expert_parallel=True, dp_attention=True, **common)
    c_tp, c_wide = engine_costs(tp), engine_costs(wide)
    kv_tp = rollout_memory(tp).items["KV cache"]
    kv_wide = rollout_memory(wide).items["KV cache"]
    assert c_wide.kv_capacity_tokens / c_tp.kv_capacity_tokens == pytest.approx(32 * kv_wide / kv_tp, rel=0.01)
    assert rollout_memory(wide).items["weights"] > rollout_memory(tp).items["weights"]
    # every MoE layer dispatches and combines its tokens: all-to-all instead of all-reduce
    arch = wide.model
    assert c_wide.comm_s[256] > c_wide.elementwise_s[256]
    assert arch.moe_layers == 58


def test_pipeline_stages_split_weights_and_kv_per_gpu():
    one, two = _engine("llama-3.1-70b", 4, tp=8), _engine("llama-3.1-70b", 4, tp=8, pp=2)
    assert two.rollout_engines == one.rollout_engines // 2
    assert rollout_memory(two).items["weights"] == pytest.approx(rollout_memory(one).items["weights"] / 2)
    c1, c2 = engine_costs(one), engine_costs(two)
    assert c2.kv_capacity_tokens > 2 * c1.kv_capacity_tokens  # twice the GPUs, half the weights on each
    # a weight-bound decode step streams every stage's weights once per micro-batch: no faster
    assert c2.weights_s[64] >= c1.weights_s[64] * 0.99


def test_an_engine_across_trays_of_one_nvlink_domain_all_reduces_at_nvlink_rate():
    """tp 8 on GB200 trays of 4: inside the NVL72 domain its rings stay on NVLink, as a tp-8 engine
    on an 8-GPU HGX node does; on trays joined only by NICs every all-reduce crosses IB."""
    nvl72 = {"model": "llama-3.1-70b",
             "cluster": {"nodes": 18, "gpus_per_node": 4, "nvlink_domain_gpus": 72, "gpu": "gb200",
                         "host": "grace-tray-host", "intra_node_link": "nvlink5", "nics_per_node": 4},
             "placement": {"mode": "disaggregated", "rollout": {"gpus": 32, "tp": 8}, "trainer": {"gpus": 32}}}
    hgx = {**nvl72, "cluster": {"nodes": 8, "gpus_per_node": 8, "gpu": "gb200", "intra_node_link": "nvlink5"}}
    rack = engine_costs(plan_of(nvl72))
    trays = engine_costs(plan_of(nvl72, ["cluster.nvlink_domain_gpus=null"]))
    node = engine_costs(plan_of(hgx))
    n = 256
    assert rack.comm_s[n] == pytest.approx(node.comm_s[n])
    assert trays.comm_s[n] - trays.elementwise_s[n] > 3 * (rack.comm_s[n] - rack.elementwise_s[n])
