"""Reward services priced per kind: servers, service times, a step's bound, what ×2 means."""

from __future__ import annotations

import numpy as np
import pytest

from twin.cost import reward as reward_cost
from twin.runner import plan

KINDS = [
    ({"kind": "rule", "cpu_seconds": {"kind": "fixed", "value": 0.5}}, "cluster.host_cpu_cores"),
    ({"kind": "sandbox", "workers": 8, "latency_s": {"kind": "fixed", "value": 1.0}}, "reward.workers"),
    ({"kind": "reward_model", "model": "qwen2.5-1.5b"}, "placement.reward_model_gpus"),
    ({"kind": "judge", "model": "qwen2.5-1.5b"}, "placement.reward_model_gpus"),
]


def _plan(reward: dict):
    over = {"reward": reward, "algorithm.prompts_per_step": 8}
    if reward["kind"] in ("reward_model", "judge"):
        over["placement.reward_model_gpus"] = 8
        over["cluster.nodes"] = 5
    return plan("grpo-7b-colocated", over)


@pytest.mark.parametrize("reward, doubled", KINDS)
def test_every_kind_serves_bounds_and_doubles(reward, doubled):
    p = _plan(reward)
    service, failed, timeout = reward_cost.service(p, np.random.default_rng(0), np.full(5, 1000.0))
    assert service.shape[0] == failed.shape[0] == 5 and (service >= 0).all() and timeout > 0
    assert reward_cost.bound(p, np.full(5, 1000.0)) >= 0
    assert doubled in p.reward.doubled(p) and doubled in p.reward.doubled(p.scenario)


def test_servers_are_cores_sandboxes_or_engines():
    rule = _plan(KINDS[0][0])
    assert reward_cost.servers(rule) == rule.cluster.cpu_cores * rule.cluster.nodes
    assert reward_cost.servers(_plan(KINDS[1][0])) == 8
    assert reward_cost.servers(_plan({**KINDS[2][0], "tp": 2})) == 4


def test_a_bound_is_the_work_spread_over_the_servers():
    rule = _plan(KINDS[0][0])
    n = 64
    assert reward_cost.bound(rule, np.full(n, 100.0)) == pytest.approx(n * 0.5 / reward_cost.servers(rule))
    sandbox = _plan({**KINDS[1][0], "failure_rate": 0.5})
    assert reward_cost.bound(sandbox, np.full(n, 100.0)) == pytest.approx(n * 1.0 / 8 / 0.5)


def test_a_judge_decodes_its_verdict_and_costs_more_than_a_reward_model():
    context = np.full(16, 2000.0)
    scored = reward_cost.service(_plan(KINDS[2][0]), np.random.default_rng(0), context)[0]
    judged = reward_cost.service(_plan(KINDS[3][0]), np.random.default_rng(0), context)[0]
    assert (judged > scored).all()
    assert reward_cost.bound(_plan(KINDS[3][0]), context) > reward_cost.bound(_plan(KINDS[2][0]), context)
