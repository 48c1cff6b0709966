import numpy as np
import pytest

from twin.cost import moe
from twin.cost.collectives import Topology
from twin.cost.learner import rank_compute_time, update_time
from twin.errors import InputError
from twin.runner import plan as plan_of


def _moe(nodes: int = 2, **trainer):
    return plan_of({"model": "qwen3-30b-a3b", "cluster": {"nodes": nodes},
                    "placement": {"trainer": {"zero_stage": 1, "micro_batch_tokens": 4096, **trainer}}})


def test_all_to_all_off_node_shares_go_through_each_ranks_nic():
    """Inside a node every share rides NVLink; across two nodes half of each rank's bytes leave
    through its own NIC (not the node's eight rails at once, as a ring's crossing would)."""
    t = Topology.of(_moe().cluster)
    size = 1e9
    intra, inter = t.all_to_all_time(size, t.gpus(0, 8)), t.all_to_all_time(size, t.gpus(0, 16))
    nic = t.cluster.inter_node_link
    per_rank_nic = nic.bandwidth_bytes_per_s * nic.efficiency.best  # 8 NICs for 8 GPUs
    assert inter == pytest.approx(size / 2 / per_rank_nic, rel=0.01)
    assert inter > 4 * intra
    assert t.all_to_all_time(size, t.gpus(0, 1)) == 0.0


def test_ep_dispatch_and_combine_cost_more_once_the_group_leaves_the_node():
    topo_plan = {ep: _moe(ep=ep) for ep in (1, 8, 16)}
    tokens = 32768.0
    times = {ep: moe.ep_all_to_all_time(p, Topology.of(p.cluster), tokens, "train") for ep, p in topo_plan.items()}
    assert times[1] == 0.0
    assert times[16] > 2 * times[8] > 0
    # forward + recomputed forward + backward, two all-to-alls each, 48 MoE layers, 8 micro-batches
    p = topo_plan[8]
    t = Topology.of(p.cluster)
    sent = 4096 * 8 * 2048 * 2
    assert times[8] == pytest.approx(3 * 48 * 8 * 2 * t.all_to_all_time(sent, t.gpus(0, 8)))


def test_expert_gemms_pay_the_busiest_rank_and_the_grouped_gemm_rows():
    tokens = 32768.0
    one, ep8 = _moe(), _moe(ep=8)
    worse = _moe(ep=8, expert_load_imbalance=2.4)
    assert moe.expert_gemm_time(worse, tokens, "train") == pytest.approx(2 * moe.expert_gemm_time(ep8, tokens, "train"))
    # 8 of 128 experts: an expert's tile has 1/16 of the micro-batch's rows (x8 with EP8): at
    # 1,024-token micro-batches, 64 rows, which the profile's token-rows curve prices below the
    # dense GEMMs' 1,024 (the H100 profile's measured curve: 0.95 of the FLOP curve under 256 rows)
    small = _moe(micro_batch_tokens=1024)
    arch = small.model
    routed = 4 * 2 * moe.routed_active_params(arch) * tokens
    grouped = 2 * 1024 * 8 * 2048 * 768  # one grouped GEMM: every expert's rows of a micro-batch
    from twin.cost.roofline import compute_time
    at_full_rows = compute_time(routed, small.gpu, arch.dtype, grouped, 1024)
    assert moe.expert_gemm_time(small, tokens, "train") > at_full_rows
    assert moe.expert_gemm_time(small, tokens, "train") == pytest.approx(
        compute_time(routed, small.gpu, arch.dtype, grouped, 64))
    assert moe.expert_gemm_time(one, tokens, "train") > 0
    assert moe.expert_gemm_time(plan_of({"model": "qwen3-4b"}), tokens, "train") == 0.0


def test_context_parallel_splits_a_sequence_and_exposes_the_ring_only_when_attention_is_short():
    seqs = np.full(64, 16384.0)
    flat, cp2 = _moe(), _moe(cp=2)
    assert cp2.trainer_dp == flat.trainer_dp // 2
    assert update_time(cp2, seqs) == pytest.approx(update_time(flat, seqs), rel=0.35)
    topo = Topology.of(cp2.cluster)
    assert moe.cp_ring_time(flat, topo, 8192.0, 8192.0**2 / 2, "train") == 0.0
    short = moe.cp_ring_time(cp2, topo, 8192.0, 64 * 8192.0 / 2, "train")  # 64-token sequences
    long = moe.cp_ring_time(cp2, topo, 8192.0, 8192.0**2 / 2, "train")  # one 8K-token chunk
    assert short > long >= 0.0
    assert rank_compute_time(cp2, 8192.0, 8192.0**2 / 2, "train") > 0


@pytest.mark.parametrize("trainer, field", [
    ({"ep": 16}, "placement.trainer.ep"),  # 16 GPUs, pp 2: 8 per stage
    ({"ep": 3}, "placement.trainer.ep"),  # 128 experts
    ({"cp": 2, "sp": 2}, "placement.trainer.cp"),
])
def test_layouts_megatron_refuses_are_input_errors(trainer, field):
    with pytest.raises(InputError) as exc:
        plan_of({"model": "qwen3-30b-a3b", "cluster": {"nodes": 2},
                 "placement": {"trainer": {"pp": 2, **trainer}}})
    assert exc.value.field == field


def test_ep_needs_experts_and_may_span_a_stage_with_folding():
    with pytest.raises(InputError) as exc:
        plan_of({"model": "qwen3-4b", "cluster": {"nodes": 2}, "placement": {"trainer": {"ep": 2}}})
    assert exc.value.field == "placement.trainer.ep"
    # NeMo-RL's Qwen3-235B layout [TP2, CP2, EP16, PP8] on 128 GPUs: ep 16 > dp × cp = 8
    p = plan_of({"model": "qwen3-235b-a22b", "cluster": {"nodes": 16},
                 "placement": {"trainer": {"tp": 2, "cp": 2, "ep": 16, "pp": 8}}})
    assert (p.trainer_dp, p.trainer_expert_dp) == (4, 1)


def test_routing_copies_each_token_to_its_k_experts_and_back():
    """Permute and unpermute move (k + 1)·h values per token each way; under EP a second pair
    sorts the received tokens by local expert. A dense model has none of it."""
    tokens = 65_536.0
    alone, ep = _moe(), _moe(ep=8)
    r1, r8 = moe.routing_time(alone, tokens, "train"), moe.routing_time(ep, tokens, "train")
    assert 0 < r1 < r8 < 2.2 * r1
    assert moe.routing_time(plan_of({"model": "qwen2.5-7b"}), tokens, "train") == 0.0
    # a scoring pass runs one direction, training three with recomputation (forward twice, backward)
    recompute = _moe(recompute=True)
    assert moe.routing_time(recompute, tokens, "train") == pytest.approx(3 * moe.routing_time(recompute, tokens, "score"))


def test_routing_is_a_small_share_of_a_fine_grained_moe_layer():
    """Qwen3-30B-A3B, 64K tokens a GPU: the copies are memory-bound passes at a few TB/s, a few
    percent of the experts' and attention's compute."""
    p = _moe(ep=8)
    share = moe.routing_time(p, 65_536.0, "train") / rank_compute_time(p, 65_536.0, 65_536.0 * 2048, "train")
    assert 0.005 < share < 0.15
