import pytest

from twin.runner import plan as plan_of
from twin.cost.memory import (max_sequence_tokens, rollout_memory, trainer_activation_bytes, trainer_memory,
                              trainer_state_bytes)


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
