"""Scenarios the analysis tests share."""

import pytest


@pytest.fixture(scope="session")
def drift_async() -> dict:
    """Built-in-like (grpo-1.5b-async's shape on one node): a 7B model, 4 rollout + 4 trainer
    GPUs, one step of staleness, responses from a 500-token median growing 0.6% a step."""
    return {
        "name": "drift-async", "model": "qwen2.5-7b",
        "cluster": {"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm"},
        "placement": {"mode": "async", "rollout": {"gpus": 4, "tp": 1}, "trainer": {"gpus": 4}},
        "algorithm": {"name": "grpo", "prompts_per_step": 32, "responses_per_prompt": 8, "staleness": 1},
        "workload": {"response_tokens": {"kind": "lognormal", "median": 500, "sigma": 0.5, "max": 16384},
                     "schedule": {"growth": {"per_step": 0.006}}},
        "run": {"steps": 400, "seed": 0},
    }


@pytest.fixture(scope="session")
def preempting_report():
    """A 7B colocated run whose KV cache (30% of 4 GPUs) is too small for its 6,000-token
    median responses: engines preempt every step. Its report, simulated once."""
    from twin import runner

    return runner.run({
        "model": "qwen2.5-7b", "cluster": {"nodes": 1, "gpus_per_node": 4},
        "placement": {"mode": "colocated", "rollout": {"gpu_memory_utilization": 0.3, "max_num_seqs": 256},
                      "trainer": {"zero_stage": 3}},
        "algorithm": {"prompts_per_step": 32, "responses_per_prompt": 8},
        "workload": {"prompt_tokens": {"kind": "fixed", "value": 200},
                     "response_tokens": {"kind": "lognormal", "median": 6000, "sigma": 0.5, "max": 16384}},
        "run": {"steps": 2, "seed": 0},
    })
