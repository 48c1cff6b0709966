"""Precision per role (placement.rollout.dtype / kv_dtype, placement.trainer.dtype)."""

import pytest

from twin.runner import plan as plan_of
from twin.cost.engine import engine_costs
from twin.cost.learner import rank_compute_time
from twin.cost.memory import rollout_memory

BASE = {"model": "qwen2.5-7b", "placement": {"mode": "disaggregated"}, "cluster": {"nodes": 2}}


def test_fp8_engine_weights_halve_the_bytes_a_step_reads_and_the_memory_they_take():
    bf16, fp8 = plan_of(BASE), plan_of(BASE, ["placement.rollout.dtype=fp8"])
    a, b = engine_costs(bf16), engine_costs(fp8)
    assert b.weights_s[1] == pytest.approx(a.weights_s[1] / 2, rel=0.05)
    assert rollout_memory(fp8).items["weights"] == pytest.approx(rollout_memory(bf16).items["weights"] / 2)
    # the KV cache keeps the model's dtype (vLLM auto): same bytes per token, more room for it
    assert b.kv_s_per_token == pytest.approx(a.kv_s_per_token, rel=0.05)
    assert b.kv_capacity_tokens > a.kv_capacity_tokens


def test_fp8_gemms_run_at_the_profiles_fp8_peak():
    a, b = engine_costs(plan_of(BASE)), engine_costs(plan_of(BASE, ["placement.rollout.dtype=fp8"]))
    n = len(a.linear_s) - 1
    assert b.linear_s[n] == pytest.approx(a.linear_s[n] * 989.0 / 1979.0, rel=1e-6)


def test_fp8_kv_cache_halves_kv_bytes():
    a = engine_costs(plan_of(BASE))
    b = engine_costs(plan_of(BASE, ["placement.rollout.kv_dtype=fp8"]))
    assert b.kv_s_per_token < 0.6 * a.kv_s_per_token
    assert b.kv_capacity_tokens > 1.9 * a.kv_capacity_tokens


def test_fp8_trainer_gemms_are_faster_and_defaults_change_nothing():
    bf16 = rank_compute_time(plan_of(BASE), 16384, 16384 * 8192, "train")
    same = rank_compute_time(plan_of(BASE, ["placement.trainer.dtype=bf16"]), 16384, 16384 * 8192, "train")
    fp8 = rank_compute_time(plan_of(BASE, ["placement.trainer.dtype=fp8"]), 16384, 16384 * 8192, "train")
    assert same == bf16 and fp8 < bf16


def test_fp8_engines_move_half_the_weights_when_colocated_engines_sleep_and_wake():
    from twin.cost.phases import switch_time

    col = {"model": "qwen2.5-7b", "placement": {"mode": "colocated"}}
    assert switch_time(plan_of(col, ["placement.rollout.dtype=fp8"])) < switch_time(plan_of(col))


def test_an_fp8_rollout_scenario_runs_end_to_end():
    from twin import runner

    data = {**BASE, "placement": {"mode": "disaggregated", "rollout": {"dtype": "fp8"}},
            "algorithm": {"prompts_per_step": 8, "responses_per_prompt": 2},
            "workload": {"prompt_tokens": {"kind": "fixed", "value": 64},
                         "response_tokens": {"kind": "fixed", "value": 64}}, "run": {"steps": 2}}
    fp8 = runner.run(data).to_dict()
    bf16 = runner.run({**data, "placement": {"mode": "disaggregated"}}).to_dict()
    assert fp8["counters"]["weight_sync_s"] < bf16["counters"]["weight_sync_s"]
    assert fp8["breakdown"]["generation"] < bf16["breakdown"]["generation"]
