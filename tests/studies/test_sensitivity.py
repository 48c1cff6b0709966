import pytest

from twin.runner import plan as plan_of
from twin.studies.sensitivity import length_sensitivity

SMALL = {"model": "qwen2.5-1.5b", "cluster": {"nodes": 1, "gpus_per_node": 2, "gpu": "h100-sxm"},
         "placement": {"mode": "colocated", "rollout": {"gpu_memory_utilization": 0.6}}, "algorithm": {"prompts_per_step": 8, "responses_per_prompt": 4},
         "workload": {"response_tokens": {"kind": "lognormal", "median": 400, "sigma": 0.5, "max": 4000}},
         "run": {"steps": 1, "seed": 0}}


def test_the_step_follows_the_response_lengths():
    rows = length_sensitivity(SMALL)
    assert [r["factor"] for r in rows] == [0.5, 1.0, 2.0]
    assert rows[0]["median_tokens"] == pytest.approx(200, rel=0.05)
    assert rows[2]["median_tokens"] == pytest.approx(800, rel=0.05)
    steps = [r["step_time_s"] for r in rows]
    assert steps[0] < steps[1] < steps[2]


def test_lengths_are_assumed_unless_given():
    assert plan_of(SMALL).workload.lengths == "given"
    default = {k: v for k, v in SMALL.items() if k != "workload"}
    assert plan_of(default).workload.lengths == "assumed"
    assert plan_of(SMALL, ["workload.lengths=assumed"]).workload.lengths == "assumed"
