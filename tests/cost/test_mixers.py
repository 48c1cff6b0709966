"""Token mixers beyond full attention (twin/cost/mixers.py): linear attention and Mamba2 keep a
fixed state per sequence, sliding windows stop growing at the window, DeepSeek sparse attention
reads only its top-k tokens; the engine, its memory and the trainer price each."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.config.model import ModelArch
from twin.config.model_catalog import lookup
from twin.cost import transformer
from twin.cost.engine import engine_costs
from twin.cost.learner import rank_compute_time
from twin.cost.memory import engine_kv_shards, kv_bytes_per_token, max_sequence_tokens, rollout_memory
from twin.cost.mixers import engine_mixers
from twin.cost.transformer import sequence_mixer_flops, windowed_pairs
from twin.runner import plan as plan_of


def scenario(model, tp=4, gpus=8, max_len=8192, **rollout) -> dict:
    return {
        "model": model,
        "cluster": {"nodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm"},
        "placement": {"mode": "disaggregated", "rollout": {"gpus": gpus, "tp": tp, **rollout},
                      "trainer": {"gpus": 8, "zero_stage": 3, "recompute": True}},
        "algorithm": {"prompts_per_step": 16, "responses_per_prompt": 4},
        "workload": {"prompt_tokens": {"kind": "fixed", "value": 256},
                     "response_tokens": {"kind": "fixed", "value": max_len - 256}},
    }


def as_full_attention(hub_id: str) -> ModelArch:
    """The same model with every mixer a full-attention layer (what the twin priced before)."""
    fields = lookup(hub_id).entry.arch.model_dump()
    for key in ("linear_attention", "sliding_window", "sparse_attention", "attention_layers"):
        fields.pop(key, None)
    return ModelArch(**fields)


QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"


def test_a_plain_transformer_is_priced_as_before():
    plan = plan_of(scenario("qwen2.5-7b"))
    arch, r = plan.model, plan.placement.rollout
    mix = engine_mixers(arch, r, max_sequence_tokens(plan), plan.kv_dtype, engine_kv_shards(arch, r))
    shards = engine_kv_shards(arch, r)
    assert mix.flops_per_pair == arch.attention_flops_per_token_pair / (r.tp * r.pp)
    assert mix.read_per_context_token == mix.stored_per_token == kv_bytes_per_token(plan) / shards
    assert (mix.flops_per_token, mix.read_per_sequence, mix.stored_per_sequence, mix.grows) == (0, 0, 0, False)
    assert "recurrent state and windows" not in rollout_memory(plan).items


def test_qwen3_next_decode_reads_a_quarter_of_the_kv_and_a_fixed_state():
    hybrid = plan_of(scenario(QWEN3_NEXT))
    full = plan_of(scenario(QWEN3_NEXT), {"model": as_full_attention(QWEN3_NEXT)})
    r = hybrid.placement.rollout
    mh = engine_mixers(hybrid.model, r, 8192, "bf16", engine_kv_shards(hybrid.model, r))
    mf = engine_mixers(full.model, r, 8192, "bf16", engine_kv_shards(full.model, r))
    # 12 of 48 layers attend over the context: a quarter of the FLOP per pair and KV per token
    assert mh.flops_per_pair == pytest.approx(mf.flops_per_pair / 4)
    assert mh.read_per_context_token == pytest.approx(mf.read_per_context_token / 4)
    assert mh.stored_per_token == pytest.approx(mf.stored_per_token / 4)
    # 36 Gated DeltaNet layers: 32 heads of 128×128 (bf16) and the conv's last 3 inputs, split by tp 4
    state = 36 * (32 * 128 * 128 * 2 + 3 * (2 * 16 * 128 + 32 * 128) * 2)
    assert hybrid.model.recurrent_state_bytes == state
    assert mh.stored_per_sequence == pytest.approx(state / 4) and mh.read_per_sequence == pytest.approx(2 * state / 4)
    # one decode step of 64 sequences at 8K context: the attention terms of the kernels' formula
    ch, cf = engine_costs(hybrid), engine_costs(full)
    ctx = 64 * 8192
    assert ch.kv_s_per_token * ctx == pytest.approx(cf.kv_s_per_token * ctx / 4)
    assert ch.attn_s_per_pair == pytest.approx(cf.attn_s_per_pair / 4)
    assert ch.decode_time(64, ctx) < cf.decode_time(64, ctx)


def test_the_engines_kv_capacity_in_tokens_grows_by_the_layers_that_keep_none():
    hybrid, full = plan_of(scenario(QWEN3_NEXT)), plan_of(scenario(QWEN3_NEXT), {"model": as_full_attention(QWEN3_NEXT)})
    mem = rollout_memory(hybrid)
    states = mem.items["recurrent state and windows"]
    r = hybrid.placement.rollout
    assert states == pytest.approx(r.max_num_seqs * engine_mixers(hybrid.model, r, 8192, "bf16", engine_kv_shards(hybrid.model, r)).stored_per_sequence)
    cap_h, cap_f = engine_costs(hybrid).kv_capacity_tokens, engine_costs(full).kv_capacity_tokens
    per_token = engine_mixers(hybrid.model, r, 8192, "bf16", engine_kv_shards(hybrid.model, r)).stored_per_token
    assert cap_h == int(mem.items["KV cache"] // per_token)
    assert cap_h > 3 * cap_f  # 4× fewer bytes a token, less the reserved states


def test_too_many_sequences_for_their_states_names_the_fix():
    plan = plan_of(scenario(QWEN3_NEXT, tp=4, gpus=8, max_len=32768, max_num_seqs=4096, gpu_memory_utilization=0.9))
    mem = rollout_memory(plan)
    assert not mem.fits and "recurrent state" in mem.problem
    assert mem.fix.startswith("lower placement.rollout.max_num_seqs to at most")


def test_mamba2_layers_keep_their_ssm_state_and_no_kv():
    a = lookup("nvidia/Nemotron-H-8B-Base-8K").entry.arch
    assert a.kv_bytes_per_token == 4 * 2 * 8 * 128 * 2  # the 4 attention layers only
    ssm = 128 * 64 * 128 * 4  # heads × head_dim × state, fp32 (mamba_ssm_cache_dtype)
    conv = 3 * (128 * 64 + 2 * 8 * 128) * 2
    assert a.recurrent_state_bytes == 24 * (ssm + conv)
    plan = plan_of(scenario("nvidia/Nemotron-H-8B-Base-8K", tp=1, gpus=8))
    mix = engine_mixers(a, plan.placement.rollout, 8192, "bf16", engine_kv_shards(a, plan.placement.rollout))
    assert mix.flops_per_token == pytest.approx(a.linear_flops_per_token)
    assert mix.read_per_sequence == pytest.approx(2 * a.recurrent_state_bytes)


def test_sliding_windows_cap_the_kv_at_the_window_where_it_binds():
    a = lookup("openai/gpt-oss-20b").entry.arch
    r = plan_of(scenario("openai/gpt-oss-20b", tp=1, gpus=8)).placement.rollout
    per_layer = 2 * 8 * 64 * 2
    binding = engine_mixers(a, r, 8192, "bf16", engine_kv_shards(a, r))
    assert binding.stored_per_token == 12 * per_layer  # the 12 full layers grow per token
    assert binding.stored_per_sequence == 128 * 12 * per_layer  # the 12 windowed ones hold 128 tokens
    assert binding.read_per_sequence == 128 * 12 * per_layer
    assert binding.flops_per_token == 12 * a.attention_layer_flops_per_pair * 128
    assert binding.flops_per_pair == 12 * a.attention_layer_flops_per_pair
    short = engine_mixers(a, r, 100, "bf16", engine_kv_shards(a, r))  # no sequence reaches the window: full attention
    assert short.stored_per_token == 24 * per_layer and short.stored_per_sequence == 0
    assert short.flops_per_pair == 24 * a.attention_layer_flops_per_pair and short.flops_per_token == 0


def test_mistral_7b_v01_windows_every_layer_and_still_has_a_capacity():
    plan = plan_of(scenario("mistralai/Mistral-7B-v0.1", tp=1, gpus=8, max_len=16384))
    mix = engine_mixers(plan.model, plan.placement.rollout, 16384, "bf16", engine_kv_shards(plan.model, plan.placement.rollout))
    assert mix.stored_per_token == 0 and mix.stored_per_sequence > 0
    costs = engine_costs(plan)
    r = plan.placement.rollout
    assert costs.kv_capacity_tokens == r.max_num_seqs * 16384  # every sequence it may run, whole


def test_sparse_attention_scores_every_token_but_attends_to_the_top_k():
    v32 = lookup("deepseek-ai/DeepSeek-V3.2").entry.arch
    v3 = lookup("deepseek-ai/DeepSeek-V3").entry.arch
    plan = plan_of(scenario("deepseek-ai/DeepSeek-V3.2", tp=8, gpus=8))
    r = plan.placement.rollout
    long, short = engine_mixers(v32, r, 32768, "bf16", engine_kv_shards(v32, r)), engine_mixers(v32, r, 1024, "bf16", engine_kv_shards(v32, r))
    # a context token: its latent (512 + 64) and index key (128) stay cached; a step reads only the
    # index keys of the context, and the latents of the 2,048 picked tokens per sequence
    assert long.stored_per_token == 61 * (576 + 128) * 2
    assert long.read_per_context_token == pytest.approx(61 * 128 * 2)
    assert long.read_per_sequence == 2048 * 61 * 576 * 2
    assert long.flops_per_pair == pytest.approx(61 * 2 * 64 * 128 / 8)
    assert long.flops_per_token == pytest.approx(61 * v3.attention_layer_flops_per_pair * 2048 / 8)
    # sequences shorter than the top-k: MLA over everything, plus the indexer
    assert short.flops_per_pair == pytest.approx((v3.attention_flops_per_token_pair + 61 * 2 * 64 * 128) / 8)
    assert short.read_per_context_token == short.stored_per_token and short.read_per_sequence == 0


def test_mtp_layers_are_counted_apart_and_shown():
    from twin.analysis.check import check_report, render_check

    v3 = lookup("deepseek-ai/DeepSeek-V3").entry.arch
    assert v3.total_params == ModelArch(**__import__("twin.config.registry", fromlist=["x"]).resolve_model(
        "deepseek-v3", "model")).total_params  # the preset's count, MTP apart
    layer = v3.attention_params + 256 * (v3.expert_params + v3.hidden_size) + v3.shared_expert_params
    assert v3.mtp_params == layer + 2 * 7168 * 7168
    plan = plan_of(scenario("Qwen/Qwen3.5-35B-A3B", tp=2, gpus=8))
    text = render_check(plan, check_report(plan))
    assert "1 multi-token-prediction layer" in text and "state per sequence" in text


@given(st.lists(st.integers(1, 5000), min_size=1, max_size=8), st.integers(1, 6000))
def test_windowed_pairs_are_bounded_by_the_causal_pairs(lengths, window):
    capped = windowed_pairs(lengths, window)
    assert capped <= transformer.causal_pairs(lengths) + 1e-6
    assert capped <= sum(lengths) * window + 1e-6
    if window >= max(lengths):
        assert capped == transformer.causal_pairs(lengths)
    # brute force: each query at position p (1-based) reaches min(p, window) keys
    assert capped == sum(min(p, window) for s in lengths for p in range(1, s + 1))


def test_training_flops_price_windows_and_recurrences_per_token():
    a = lookup("openai/gpt-oss-20b").entry.arch
    full = as_full_attention("openai/gpt-oss-20b")
    seqs = [8192, 4096]
    extra = sequence_mixer_flops(a, seqs)
    assert extra == 12 * a.attention_layer_flops_per_pair * windowed_pairs(seqs, 128)
    assert transformer.training_flops(a, seqs, False) < transformer.training_flops(full, seqs, False)
    plain = lookup("Qwen/Qwen3-8B").entry.arch
    assert sequence_mixer_flops(plain, seqs) == 0.0
    hybrid = lookup(QWEN3_NEXT).entry.arch
    assert sequence_mixer_flops(hybrid, seqs) == pytest.approx(hybrid.linear_flops_per_token * sum(seqs))


def test_a_hybrid_trains_faster_than_itself_as_full_attention_at_long_lengths():
    hybrid = plan_of(scenario(QWEN3_NEXT))
    full = plan_of(scenario(QWEN3_NEXT), {"model": as_full_attention(QWEN3_NEXT)})
    tokens, pairs = 32768.0, 32768.0 * 32769 / 2
    th = rank_compute_time(hybrid, tokens, pairs, "train")
    tf = rank_compute_time(full, tokens, pairs, "train")
    assert th < tf
    assert np.isfinite(th) and th > 0
