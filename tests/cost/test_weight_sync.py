from twin.cost.weight_sync import weight_sync_cost
from twin.runner import plan as plan_of


def test_broadcast_of_a_72b_model_is_dominated_by_the_gather_not_the_wire():
    s = plan_of({"model": "qwen2.5-72b", "cluster": {"nodes": 4},
                       "placement": {"mode": "disaggregated", "rollout": {"tp": 8}}})
    cost = weight_sync_cost(s)
    assert cost.method == "nccl_broadcast"
    assert cost.gather_convert_s > 5 * cost.wire_s
    assert cost.total_s > cost.gather_convert_s


def test_colocated_reshard_scales_with_model_size():
    small = weight_sync_cost(plan_of({"model": "qwen3-4b"}))
    big = weight_sync_cost(plan_of({"model": "qwen3-32b", "cluster": {"nodes": 2}}))
    assert small.method == "reshard"
    assert big.total_s > 4 * small.total_s


def test_a_slower_network_slows_only_the_wire():
    data = {"model": "qwen2.5-7b", "cluster": {"nodes": 2}, "placement": {"mode": "disaggregated"}}
    fast = weight_sync_cost(plan_of(data))
    slow = weight_sync_cost(plan_of(data, ["cluster.inter_node_link=ib-hdr200", "cluster.nics_per_node=1"]))
    assert slow.wire_s > fast.wire_s
    assert slow.gather_convert_s == fast.gather_convert_s


# ---- frontier-scale methods, bucketing, overheads, precision (issue 17) ----------------------
import pytest  # noqa: E402

from twin.config.model import ModelArch  # noqa: E402
from twin.config.registry import resolve_model  # noqa: E402
from twin.cost.weight_sync import _pipeline, routed_expert_params, tensor_count  # noqa: E402

DS = {"model": "deepseek-v3", "cluster": {"nodes": 9, "gpus_per_node": 32, "nics_per_node": 32},
      "placement": {"mode": "disaggregated", "rollout": {"gpus": 32, "tp": 32, "gpu_memory_utilization": 0.82},
                    "trainer": {"gpus": 256, "pp": 16}},
      "weight_sync": {"method": "nixl", "bucket_bytes": 4096 * 2**20}}
SEP = {"model": "qwen2.5-7b", "cluster": {"nodes": 2}, "placement": {"mode": "disaggregated"}}


def test_deepseek_v3_tensor_count_is_the_checkpoints_less_the_router_biases():
    # NeMo-RL's checkpoint-engine guide: each vLLM rank loads 45,395 tensors; the architecture has
    # no e_score_correction_bias (one per MoE layer: 58), so the count is 58 short (-0.13%).
    arch = ModelArch(**resolve_model("deepseek-v3", "model", None))
    assert tensor_count(arch) == 45_395 - 58
    assert tensor_count(arch, "engine") < tensor_count(arch) / 50


def test_deepseek_v3_destination_local_bytes_match_the_guides_69_95_gib():
    arch = ModelArch(**resolve_model("deepseek-v3", "model", None))
    experts = routed_expert_params(arch)
    local = (arch.total_params - experts + experts / 32) * arch.bytes_per_param / 2**30
    assert local == pytest.approx(69.95, rel=0.01)


def test_pipeline_of_one_bucket_is_serial_and_of_many_is_bound_by_the_slowest_stage():
    assert _pipeline([1.0, 2.0, 3.0], 1) == pytest.approx(6.0)
    assert _pipeline([1.0, 2.0, 3.0], 10_000) == pytest.approx(3.0, rel=1e-3)


def test_per_tensor_calls_cost_more_than_buckets_and_smaller_buckets_more_calls():
    times = [weight_sync_cost(plan_of(SEP, [f"weight_sync.bucket_bytes={b}"])).total_s
             for b in (0, 64 * 2**20, 512 * 2**20, 4 * 2**30)]
    assert times == sorted(times, reverse=True) and times[0] > times[1]


def test_pipelined_buckets_have_an_optimum_size():
    def t(bucket):
        return weight_sync_cost(plan_of(DS, [f"weight_sync.bucket_bytes={bucket}"])).total_s
    one_bucket = t(200 * 2**30)  # no overlap: pack, wire and load one after another
    assert t(4 * 2**30) < one_bucket
    assert t(2**20) > t(4 * 2**30)  # 1 MiB buckets: tens of thousands of calls


def test_nixl_overlaps_the_wire_under_loading_and_local_experts_beat_full():
    local = weight_sync_cost(plan_of(DS))
    assert local.total_s < local.gather_convert_s + local.wire_s + local.load_s
    full = weight_sync_cost(plan_of(DS, ["weight_sync.expert_transfer=full"]))
    assert full.wire_s > 10 * local.wire_s and full.total_s > 2.5 * local.total_s


def test_checkpoint_engine_loads_after_the_wire_and_nixl_is_faster():
    nixl = weight_sync_cost(plan_of(DS)).total_s
    ce = weight_sync_cost(plan_of(DS, ["weight_sync.method=checkpoint_engine"]))
    assert ce.total_s > ce.load_s and ce.total_s > nixl


@pytest.mark.parametrize("method", ["nccl_broadcast", "nccl_reshard", "nixl", "checkpoint_engine"])
def test_fp8_rollout_quantised_on_the_sender_sends_half_the_bytes(method):
    data = {**SEP, "weight_sync": {"method": method}}
    bf16 = weight_sync_cost(plan_of(data))
    fp8 = weight_sync_cost(plan_of(data, ["placement.rollout.dtype=fp8"]))
    assert bf16.convert_precision_s == 0 and fp8.convert_precision_s > 0
    assert fp8.wire_s < 0.6 * bf16.wire_s + 1e-4
    recv = weight_sync_cost(plan_of(data, ["placement.rollout.dtype=fp8", "weight_sync.quantise_on=receiver"]))
    assert recv.wire_s == pytest.approx(bf16.wire_s)


def test_delta_sync_sends_the_changed_fraction_with_indices_and_pays_a_compare():
    data = {**SEP, "weight_sync": {"method": "nccl_broadcast"}}
    full = weight_sync_cost(plan_of(data))
    delta = weight_sync_cost(plan_of(data, ["weight_sync.delta=true", "weight_sync.delta_density=0.01"]))
    # 1% of the weights, each bf16 value with a 4-byte index: 3% of the bytes
    assert delta.load_s == pytest.approx(full.load_s * 0.03)
    assert delta.convert_precision_s > 0 and delta.total_s < full.total_s


def test_default_sync_has_no_precision_pass():
    assert weight_sync_cost(plan_of({"model": "qwen3-4b"})).convert_precision_s == 0


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st


@settings(max_examples=25, deadline=None)
@given(method=st.sampled_from(["nccl_broadcast", "nccl_reshard", "checkpoint", "checkpoint_engine", "nixl"]),
       bucket=st.sampled_from([0, 2**20, 64 * 2**20, 2**30, 2**34]),
       rate=st.floats(1e9, 1e11), delta=st.booleans(), fp8=st.booleans())
def test_a_faster_receiver_never_slows_a_sync(method, bucket, rate, delta, fp8):
    sets = [f"weight_sync.method={method}", f"weight_sync.bucket_bytes={bucket}",
            f"weight_sync.delta={str(delta).lower()}"] + (["placement.rollout.dtype=fp8"] if fp8 else [])
    slow = weight_sync_cost(plan_of(SEP, sets + [f"weight_sync.staging_bytes_per_s={rate}"]))
    fast = weight_sync_cost(plan_of(SEP, sets + [f"weight_sync.staging_bytes_per_s={2 * rate}"]))
    assert 0 < fast.total_s <= slow.total_s + 1e-12
    assert fast.total_s < float("inf")


@pytest.mark.parametrize("method", ["nccl_broadcast", "nccl_reshard", "checkpoint_engine", "nixl"])
def test_methods_between_separate_pools_are_refused_when_the_pools_share_gpus(method):
    from twin.errors import InputError

    with pytest.raises(InputError, match="weight_sync.method"):
        plan_of({"model": "qwen3-4b"}, [f"weight_sync.method={method}"])


@pytest.mark.parametrize("bucket", [1e-300, 1.0, 1024.0])
def test_a_bucket_smaller_than_a_tensor_costs_one_call_per_tensor(bucket):
    """A tensor is never split across buckets: below a tensor's size every bucket size costs
    what no bucketing costs (one call per tensor), and a vanishing bucket does not overflow."""
    from twin.cost.weight_sync import _calls

    plan = plan_of("grpo-8b-disaggregated", [f"weight_sync.bucket_bytes={bucket}"])
    unbucketed = plan_of("grpo-8b-disaggregated", ["weight_sync.bucket_bytes=0"])
    tensors = tensor_count(plan.model)
    assert _calls(plan, 16e9, tensors) == tensors == _calls(unbucketed, 16e9, tensors)
    assert weight_sync_cost(plan).total_s == pytest.approx(weight_sync_cost(unbucketed).total_s)


# ---- NVLink domains larger than a node (issue 29) ------------------------------------------------
NVL72_SEP = {"model": "qwen3-32b",
             "cluster": {"nodes": 18, "gpus_per_node": 4, "nvlink_domain_gpus": 72, "gpu": "gb200",
                         "host": "grace-tray-host", "intra_node_link": "nvlink5", "nics_per_node": 4},
             "placement": {"mode": "disaggregated", "rollout": {"gpus": 32, "tp": 4}, "trainer": {"gpus": 32}}}


@pytest.mark.parametrize("method", ["nccl_broadcast", "nccl_reshard", "nixl"])
def test_pools_in_one_nvlink_domain_sync_over_nvlink_not_the_network(method):
    """Trainer and rollout pools on different trays of one NVL72 rack: their weights move over
    NVLink, as they do between two pools of one HGX node; trays joined only by NICs pay IB."""
    rack = plan_of(NVL72_SEP, [f"weight_sync.method={method}"])
    trays = plan_of(NVL72_SEP, [f"weight_sync.method={method}", "cluster.nvlink_domain_gpus=null"])
    fast, slow = weight_sync_cost(rack), weight_sync_cost(trays)
    assert slow.wire_s > 3 * fast.wire_s
    assert fast.load_s == slow.load_s


def test_host_link_copies_run_at_the_grace_c2c_rate():
    """checkpoint_engine's host-to-device copies over the GPU's host link: NVLink-C2C on GB200."""
    from twin.config.registry import resolve_profile

    c2c, pcie = (resolve_profile(n, ("link",), "l") for n in ("nvlink-c2c", "pcie5"))
    gb200 = plan_of(NVL72_SEP, ["weight_sync.method=checkpoint_engine"])
    b200 = plan_of(NVL72_SEP, ["weight_sync.method=checkpoint_engine", "cluster.gpu=b200"])
    assert gb200.host_link.name == "nvlink-c2c" and b200.host_link.name == "pcie5"
    ratio = (c2c.bandwidth_bytes_per_s * c2c.efficiency.best) / (pcie.bandwidth_bytes_per_s * pcie.efficiency.best)
    h2d_gb200 = weight_sync_cost(gb200).wire_s
    h2d_b200 = weight_sync_cost(b200).wire_s
    assert h2d_b200 > h2d_gb200 and ratio > 3

# ---- per tensor, per sender engine, per stage, point to point (issues 29, 30) -----------------
from twin.cost.collectives import Topology  # noqa: E402
from twin.cost.weight_sync import sender_engine, sender_gather_time  # noqa: E402

MOE = {"model": "qwen3-30b-a3b", "cluster": {"nodes": 4, "gpu": "h20"},
       "placement": {"mode": "disaggregated", "rollout": {"gpus": 16, "tp": 4},
                     "trainer": {"gpus": 16, "tp": 2, "ep": 8, "zero_stage": 1}},
       "weight_sync": {"method": "nccl_broadcast", "bucket_bytes": 0, "call_overhead_s": 0.0}}


def test_a_per_tensor_broadcast_pays_each_tensors_round():
    """~18.8K tensors of a fine-grained MoE, each gathered, broadcast and waited on: the rounds
    cost more than the bytes; bucketing the same bytes takes them out."""
    per_tensor = weight_sync_cost(plan_of(MOE))
    bucketed = weight_sync_cost(plan_of(MOE, ["weight_sync.bucket_bytes=1073741824"]))
    assert per_tensor.total_s > 3 * bucketed.total_s
    doubled = weight_sync_cost(plan_of(MOE, ["weight_sync.collective_overhead_s=0.001"]))
    halved = weight_sync_cost(plan_of(MOE, ["weight_sync.collective_overhead_s=0.0005"]))
    tensors = tensor_count(plan_of(MOE).model)
    # each tensor waits on its gather (tp or ep) and its broadcast: two rounds of the overhead
    assert doubled.total_s - halved.total_s == pytest.approx(2 * tensors * 0.0005, rel=1e-6)


def test_the_sender_engine_follows_the_trainers_layout():
    assert sender_engine(plan_of(MOE)) == "megatron"
    fsdp = dict(MOE, placement={**MOE["placement"], "trainer": {"gpus": 16}})
    assert sender_engine(plan_of(fsdp)) == "fsdp"
    assert sender_engine(plan_of(fsdp, ["weight_sync.sender=deepspeed"])) == "deepspeed"


def test_a_deepspeed_sender_gathers_over_every_rank_fsdp_over_its_shard_group():
    data = {"model": "qwen2.5-7b", "cluster": {"nodes": 4},
            "placement": {"mode": "disaggregated", "rollout": {"gpus": 8}, "trainer": {"gpus": 24, "shard_size": 8}}}
    fsdp, ds = plan_of(data), plan_of(data, ["weight_sync.sender=deepspeed"])
    topo = Topology.of(fsdp.cluster)
    n = tensor_count(fsdp.model)
    # within one node over NVLink against across three nodes: the cross-node gather is slower
    assert sender_gather_time(ds, topo, n) > sender_gather_time(fsdp, topo, n)


def test_pipeline_stages_sending_at_once_shorten_the_sync():
    data = {"model": "qwen2.5-72b", "cluster": {"nodes": 6},
            "placement": {"mode": "disaggregated", "rollout": {"gpus": 16, "tp": 8},
                          "trainer": {"gpus": 32, "tp": 4, "pp": 4, "zero_stage": 1}},
            "weight_sync": {"bucket_bytes": 0}}
    one = weight_sync_cost(plan_of(data))
    staged = weight_sync_cost(plan_of(data, ["weight_sync.senders=per_stage"]))
    assert staged.total_s < one.total_s
    assert staged.wire_s < one.wire_s  # a quarter of the broadcast rounds each, the stages at once


@settings(max_examples=15, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), full=st.booleans())
def test_point_to_point_moves_each_rollout_gpus_shard_once(tp, full):
    """Mooncake/NIXL-style p2p: no pack, no collective; a rollout GPU receives only what it keeps
    (local experts) and never more than every byte; its time is at least its wire and its load."""
    data = {"model": "qwen3-30b-a3b", "cluster": {"nodes": 4},
            "placement": {"mode": "disaggregated", "rollout": {"gpus": 16, "tp": tp}, "trainer": {"gpus": 16}},
            "weight_sync": {"method": "p2p", "expert_transfer": "full" if full else "local"}}
    cost = weight_sync_cost(plan_of(data))
    assert cost.gather_convert_s == 0.0 and cost.overhead_s == 0.0
    assert cost.total_s >= max(cost.wire_s, cost.load_s)
    assert cost.total_s <= cost.wire_s + cost.load_s + 1e-12


def test_p2p_is_refused_between_shared_gpus():
    from twin.errors import InputError

    with pytest.raises(InputError, match="weight_sync.method"):
        plan_of({"model": "qwen3-4b"}, ["weight_sync.method=p2p"])
