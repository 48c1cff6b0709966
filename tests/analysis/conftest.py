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
