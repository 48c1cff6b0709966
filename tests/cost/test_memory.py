import pytest
from hypothesis import given, settings, strategies as st

from twin.runner import plan as plan_of
from twin.cost.memory import (max_sequence_tokens, resident_trainer_bytes, rollout_memory, trainer_activation_bytes,
                              trainer_memory, trainer_state_bytes)


def test_llama70b_zero3_on_64_gpus_holds_16_bytes_per_param_sharded():
    s = plan_of({"model": "llama-3.1-70b", "cluster": {"nodes": 8},
                       "placement": {"mode": "disaggregated", "rollout": {"gpus": 32, "tp": 8},
                                     "trainer": {"gpus": 64 - 32}}})
    s64 = plan_of({"model": "llama-3.1-70b", "cluster": {"nodes": 8}})
    state = trainer_state_bytes(s64.model, s64)
    # ZeRO-3: (2 + 2 + 12) bytes × 70.55 B params / 64 GPUs = 17.6 GB per GPU.
    assert sum(state.values()) == pytest.approx(16 * s64.model.total_params / 64)
    assert sum(state.values()) / 1e9 == pytest.approx(17.6, rel=0.01)
    assert trainer_memory(s64).fits
    assert sum(trainer_state_bytes(s.model, s).values()) == pytest.approx(16 * s.model.total_params / 32)


def test_zero_stages_shard_progressively():
    base = {"model": "llama-3.1-8b"}
    totals = [sum(trainer_state_bytes(m.model, m).values()) for m in
              (plan_of(base, [f"placement.trainer.zero_stage={z}"]) for z in range(4))]
    assert totals[0] > totals[1] > totals[2] > totals[3]
    assert totals[0] == pytest.approx(16 * 8.03e9, rel=0.01)


def test_big_model_on_one_gpu_does_not_fit():
    s = plan_of({"model": "llama-3.1-70b", "cluster": {"nodes": 1, "gpus_per_node": 1}})
    assert not rollout_memory(s).fits and not trainer_memory(s).fits


def test_kv_cache_is_what_the_engine_budget_leaves():
    s = plan_of({"model": "qwen2.5-7b", "placement": {"mode": "disaggregated"}})
    m = rollout_memory(s)
    assert m.used_bytes == pytest.approx(s.cluster.gpu.memory.capacity_bytes * 0.9)
    assert m.items["KV cache"] > 40e9


def test_a_colocated_engines_kv_is_its_budget_less_its_own_weights_the_trainer_state_lies_outside():
    # vLLM sizes its KV cache as gpu_memory_utilization × the GPU less its own weights and
    # activations; what the trainer keeps on the GPU only has to fit beside that budget.
    data = {"model": "qwen2.5-7b", "cluster": {"nodes": 1}, "placement": {"mode": "colocated",
            "rollout": {"gpu_memory_utilization": 0.6}, "trainer": {"zero_stage": 3}}}
    shared, alone = plan_of(data), plan_of(data, ["placement.mode=disaggregated"])
    cap = shared.cluster.gpu.memory.capacity_bytes
    resident = resident_trainer_bytes(shared)
    assert resident == pytest.approx(sum(trainer_state_bytes(shared.model, shared).values()))
    assert resident_trainer_bytes(alone) == 0.0
    m = rollout_memory(shared)
    assert m.fits and m.used_bytes == pytest.approx(cap * 0.6) and not any("trainer" in k for k in m.items)
    # offloaded state leaves the GPU: nothing resident
    offloaded = plan_of(data, ["placement.trainer.offload_params=true", "placement.trainer.offload_optimizer=true"])
    assert resident_trainer_bytes(offloaded) == 0.0


def test_an_engine_budget_the_resident_trainer_leaves_no_room_for_is_refused_with_the_fraction_that_fits():
    data = {"model": "qwen2.5-7b", "cluster": {"nodes": 1}, "placement": {"mode": "colocated",
            "rollout": {"gpu_memory_utilization": 0.9}, "trainer": {"zero_stage": 1}}}
    s = plan_of(data)
    cap, resident = s.cluster.gpu.memory.capacity_bytes, resident_trainer_bytes(s)
    assert 0.9 * cap + resident > cap  # 4 bytes a parameter of a 7.6B model, and 12 over 8 GPUs
    m = rollout_memory(s)
    assert not m.fits and "vLLM refuses to start" in m.problem
    assert f"at most {(cap - resident) / cap:.2f}" in m.fix
    assert rollout_memory(plan_of(data, [f"placement.rollout.gpu_memory_utilization={(cap - resident) / cap - 0.01:.3f}"])).fits
    unsharded = rollout_memory(plan_of(data, ["placement.trainer.zero_stage=0"]))  # 16 bytes a parameter: no fraction fits
    assert "offload the trainer's state" in unsharded.fix


def test_max_sequence_counts_turns_and_tool_replies():
    s = plan_of("agentic-search-4b")
    # prompt 400 + 7 turns × 2048 + 6 replies × 1550
    assert max_sequence_tokens(s) == 400 + 7 * 2048 + 6 * 1550


def test_a_1f1b_pipeline_keeps_a_whole_models_activations_on_its_first_stage():
    """Stage 0 holds pp micro-batches in flight, each through its 1/pp of the layers."""
    def acts(pp: int) -> float:
        s = plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 4},
                           "placement": {"trainer": {"pp": pp, "recompute": False}}})
        return trainer_activation_bytes(s.model, s)["activations (micro-batch)"]

    assert acts(4) == pytest.approx(acts(1))


def test_the_kv_cache_must_hold_a_sequence_in_whole_blocks():
    """A 600-token cache holds a 241-token sequence in 16-token blocks, not in one block of
    1024 (the engine would have no block at all: `twin run` raised a ValueError)."""
    fixed = {"prompt_tokens": {"kind": "fixed", "value": 141},
             "response_tokens": {"kind": "fixed", "value": 100, "max": 100}}

    def kv_tokens(block: int, util: float) -> tuple[float, bool]:
        s = plan_of({"model": "qwen2.5-7b", "workload": fixed,
                           "placement": {"rollout": {"block_size": block, "gpu_memory_utilization": util}}})
        m = rollout_memory(s)
        return m.items["KV cache"] / s.model.kv_bytes_per_token, m.fits

    lo, hi = 0.01, 0.9  # the utilisation that leaves ~600 tokens of KV cache
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if kv_tokens(16, mid)[0] < 600 else (lo, mid)
    tokens, fits = kv_tokens(16, hi)
    assert 600 <= tokens < 601 and fits
    assert not kv_tokens(1024, hi)[1]


DSV3_EP_LAYOUT = {"model": "deepseek-v3", "cluster": {"nodes": 32},
                  "placement": {"mode": "colocated", "rollout": {"tp": 8},
                                "trainer": {"tp": 1, "pp": 16, "ep": 16, "zero_stage": 1,
                                            "micro_batch_tokens": 4096}}}


def test_deepseek_v3_ep16_pp16_state_per_rank_matches_a_hand_count():
    """DeepSeek-V3 on 256 GPUs as NeMo-RL lays it out, [TP1, EP16, PP16], Megatron's
    distributed optimizer (ZeRO-1). Counted by hand from the config.json:
    h 7168, 61 layers of which 3 dense (FFN 18432) and 58 MoE (256 routed experts of width
    2048, 1 shared), MLA (q_lora 1536, kv_lora 512, 128 heads, nope 128, rope 64, v 128),
    vocabulary 129,280, untied.
      attention/layer: 7168·1536 + 1536·128·192 + 7168·576 + 512·128·256 + 128·128·7168
                       = 187,105,280;  × 61 = 11,413,422,080
      dense FFN: 3·7168·18432 = 396,361,728;  × 3 = 1,189,085,184
      one expert: 3·7168·2048 = 44,040,192
      routed experts: 58·256·44,040,192 = 653,908,770,816   (what EP shards)
      shared experts: 58·44,040,192 = 2,554,331,136;  routers: 58·256·7168 = 106,430,464
      embeddings + head: 2·129,280·7168 = 1,853,358,080
      total 671,025,397,760;  all but the routed experts: 17,116,626,944
    Per GPU: dense part / (tp·pp = 16) = 1,069,789,184; routed / (ep·pp = 256) = 2,554,331,136.
    dp = 256 / 16 = 16 (ZeRO over it for the dense part); expert-dp = 256 / (16·16) = 1.
      weights 2 B × 3,624,120,320 = 7,248,240,640 B (6.75 GiB), gradients the same (ZeRO-1);
      optimizer 12 B × (1,069,789,184 / 16 + 2,554,331,136 / 1) = 31,454,315,520 B (29.29 GiB).
    """
    plan = plan_of(DSV3_EP_LAYOUT)
    assert plan.trainer_dp == 16 and plan.trainer_expert_dp == 1
    state = trainer_state_bytes(plan.model, plan)
    assert state["weights (16-bit)"] == pytest.approx(7_248_240_640, rel=1e-9)
    assert state["gradients (16-bit)"] == pytest.approx(7_248_240_640, rel=1e-9)
    assert state["optimizer (fp32 master, m, v)"] == pytest.approx(31_454_315_520, rel=1e-9)
    assert trainer_memory(plan).fits  # 42.8 GiB of state + 4,096-token micro-batches on an 80 GB H100


def test_expert_state_shards_over_the_expert_data_parallel_ranks():
    """EP8 on 64 GPUs (pp 1): expert-dp 8; ZeRO-1 shards the experts' optimizer 8 ways, the
    rest 64 ways; without EP everything is one slice sharded 64 ways."""
    base = {"model": "qwen3-30b-a3b", "cluster": {"nodes": 8},
            "placement": {"trainer": {"zero_stage": 1}}}
    ep = plan_of(base, ["placement.trainer.ep=8"])
    flat = plan_of(base)
    arch = ep.model
    routed = 48 * 128 * 3 * 2048 * 768
    assert ep.trainer_expert_dp == 8
    opt = trainer_state_bytes(arch, ep)["optimizer (fp32 master, m, v)"]
    assert opt == pytest.approx(12 * ((arch.total_params - routed) / 64 + routed / 8 / 8))
    assert trainer_state_bytes(arch, flat)["optimizer (fp32 master, m, v)"] == pytest.approx(12 * arch.total_params / 64)


@settings(max_examples=25, deadline=None)
@given(nodes=st.sampled_from([2, 4, 8]), tp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2, 4]),
       ep=st.sampled_from([1, 2, 4, 8, 16]), zero=st.sampled_from([1, 3]))
def test_ep_layouts_hold_every_parameter_once_across_the_trainer(nodes, tp, pp, ep, zero):
    """Whatever the layout, ZeRO-3 holds each weight on exactly one GPU, and ZeRO-1 each
    optimizer state: summed over the trainer's GPUs, 2 and 12 bytes × the model's parameters."""
    gpus = 8 * nodes
    if gpus % (tp * pp) or (gpus // pp) % ep:
        return
    plan = plan_of({"model": "qwen3-30b-a3b", "cluster": {"nodes": nodes},
                    "placement": {"trainer": {"tp": tp, "pp": pp, "ep": ep, "zero_stage": zero}}})
    state = trainer_state_bytes(plan.model, plan)
    total = plan.model.total_params
    assert state["optimizer (fp32 master, m, v)"] * gpus == pytest.approx(12 * total)
    if zero == 3:
        assert state["weights (16-bit)"] * gpus == pytest.approx(2 * total)


def test_hybrid_sharding_holds_the_state_over_its_group_only():
    """verl fsdp_size 8 on 32 GPUs: each GPU holds 1/8 of the 16 bytes per parameter, not 1/32."""
    def state(size):
        p = plan_of({"model": "qwen2.5-7b", "cluster": {"nodes": 4}, "placement": {"trainer": {"shard_size": size}}})
        return sum(trainer_state_bytes(p.model, p).values())

    assert state(8) == pytest.approx(4 * state(None))
    assert state(8) == pytest.approx(16 * 7.6156e9 / 8, rel=1e-3)


def test_a_scoring_pass_with_a_larger_cap_can_set_the_trainer_peak():
    """verl's DAPO scripts score 92,160 tokens per GPU and update 61,440: without activations
    kept for a backward, the scoring pass's 16-bit logits are the larger peak."""
    p = plan_of({"model": "qwen2.5-7b", "framework": "verl", "placement": {"trainer": {
        "micro_batch_tokens": 61_440, "logprob_micro_batch_tokens": 92_160, "sp": 4}},
        "cluster": {"nodes": 4, "gpu": "h20"}})
    acts = trainer_activation_bytes(p.model, p)
    assert "logits (16-bit)" in acts and acts["logits (16-bit)"] == pytest.approx(2 * 152_064 * 92_160)


def test_a_remedy_suggests_only_the_offload_settings_not_on_already():
    """Issue 26 item 9: a remedy named offload_params/offload_optimizer that were on already."""
    from twin.cost.memory import memory_problem

    data = {"model": "qwen2.5-7b", "cluster": {"nodes": 1}, "placement": {"mode": "colocated",
            "rollout": {"gpu_memory_utilization": 0.9}, "trainer": {"zero_stage": 0, "offload_params": True}}}
    fix = rollout_memory(plan_of(data)).fix
    assert "offload the trainer's state (placement.trainer.offload_optimizer)" in fix and "offload_params" not in fix
    both = {"model": "llama-3.1-70b", "cluster": {"nodes": 1, "gpus_per_node": 1}, "placement": {
        "mode": "colocated", "trainer": {"offload_params": True, "offload_optimizer": True}}}
    err = memory_problem(plan_of(both))
    assert err.field == "placement.rollout" and "offload" not in err.allowed
    assert err.allowed == "raise placement.rollout.tp or gpu_memory_utilization, shorten responses"
    none = memory_problem(plan_of({**both, "placement": {"mode": "colocated"}}))
    assert "(placement.trainer.offload_params, placement.trainer.offload_optimizer)" in none.allowed
