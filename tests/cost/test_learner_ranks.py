"""The learner prices every rank of a step in one array pass (rank_compute_times and the
communication terms in _rank_times): held to the plain-Python reference, bit for bit."""

from dataclasses import replace

import numpy as np
import pytest

from twin.config.hardware import EfficiencyCurve
from twin.config.registry import builtin_scenarios
from twin.cost import moe
from twin.cost.collectives import Topology
from twin.cost.learner import (
    _rank_times,
    rank_compute_time,
    rank_compute_times,
    tensor_parallel_time,
    ulysses_time,
)
from twin.runner import plan as plan_of


def _loads(seed: int, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Rank loads across the efficiency curves' range: a few tokens to a few million."""
    rng = np.random.default_rng(seed)
    tokens = np.exp(rng.uniform(np.log(1.0), np.log(4e6), n)).round()
    pairs = tokens * rng.uniform(0.5, 1.0, n) * np.exp(rng.uniform(0.0, 8.0, n))
    return tokens, pairs


def _reference(plan, topo, tokens, pairs, kind):
    t = plan.placement.trainer
    return np.array([rank_compute_time(plan, n, p, kind, t.kernels) + ulysses_time(plan, topo, n, kind)
                     + tensor_parallel_time(plan, topo, n, kind) + moe.ep_all_to_all_time(plan, topo, n, kind)
                     + moe.cp_ring_time(plan, topo, n, p, kind) for n, p in zip(tokens.tolist(), pairs.tolist())])


def _every_curve(plan):
    """The plan on a GPU profile with every optional curve a calibration fits (token rows,
    head width, attention backward, element-wise classes), each a made-up but valid curve."""
    gpu = plan.gpu
    c, m = gpu.compute, gpu.memory
    bent = EfficiencyCurve(points=[(8.0, 0.05), (512.0, 0.6), (8192.0, 0.9)], source="test")
    compute = c.model_copy(update={
        "gemm_efficiency_by_tokens": bent,
        "attention_efficiency_by_head_dim": EfficiencyCurve(points=[(64.0, 0.7), (128.0, 1.0)], source="test"),
        "attention_backward_efficiency": c.gemm_efficiency.scaled(0.6, "test"),
    })
    memory = m.model_copy(update={
        "elementwise_efficiency": m.efficiency.scaled(0.8, "test"),
        "elementwise_classes": {"unary": m.efficiency.scaled(0.5, "test"), "rotary": m.efficiency.scaled(0.3, "test")},
    })
    return replace(plan, gpu=gpu.model_copy(update={"compute": compute, "memory": memory}))


@pytest.mark.parametrize("name", builtin_scenarios())
@pytest.mark.parametrize("kind", ["score", "train"])
def test_every_rank_at_once_is_the_reference_bit_for_bit(name, kind):
    plan = plan_of(name)
    tokens, pairs = _loads(len(name))
    fast = rank_compute_times(plan, tokens, pairs, kind, plan.placement.trainer.kernels)
    slow = [rank_compute_time(plan, n, p, kind, plan.placement.trainer.kernels)
            for n, p in zip(tokens.tolist(), pairs.tolist())]
    assert fast.tolist() == slow


@pytest.mark.parametrize("overrides", [
    {},
    {"placement.trainer.tp": 2, "placement.trainer.recompute": True},
    {"placement.trainer.sp": 2},
    {"placement.trainer.cp": 2},
    {"placement.trainer.pp": 2, "placement.trainer.tp": 2},
])
@pytest.mark.parametrize("kind", ["score", "train"])
def test_communication_inside_a_pass_is_the_reference_bit_for_bit(overrides, kind):
    plan = plan_of("grpo-8b-disaggregated", overrides)
    topo = Topology.of(plan.cluster)
    tokens, pairs = _loads(7)
    tokens[::5] = 0.0  # idle ranks compute nothing
    got = _rank_times(plan, topo, tokens, pairs, kind, None)
    busy = tokens > 0
    assert got[~busy].tolist() == [0.0] * int((~busy).sum())
    assert got[busy].tolist() == _reference(plan, topo, tokens[busy], pairs[busy], kind).tolist()


def test_moe_expert_parallel_ranks_are_the_reference_bit_for_bit():
    plan = plan_of("moe-30b-a3b-disaggregated", {"placement.trainer.ep": 2})
    topo = Topology.of(plan.cluster)
    tokens, pairs = _loads(11)
    for kind in ("score", "train"):
        assert (_rank_times(plan, topo, tokens, pairs, kind, None).tolist()
                == _reference(plan, topo, tokens, pairs, kind).tolist())


@pytest.mark.parametrize("name", ["grpo-8b-disaggregated", "qwen3.5-moe-async"])
def test_calibrated_curves_price_the_same_at_once_and_one_by_one(name):
    plan = _every_curve(plan_of(name))
    tokens, pairs = _loads(3)
    for kind in ("score", "train"):
        fast = rank_compute_times(plan, tokens, pairs, kind, plan.placement.trainer.kernels)
        slow = [rank_compute_time(plan, n, p, kind, plan.placement.trainer.kernels)
                for n, p in zip(tokens.tolist(), pairs.tolist())]
        assert fast.tolist() == slow
