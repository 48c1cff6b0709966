import numpy as np
import pytest

from twin.cost.engine import engine_costs
from twin.cost.phases import generation_bound, learner_phases, phase_estimates, sample_step, step_estimate
from twin.runner import plan as plan_of


def test_generation_floor_stops_shrinking_with_more_engines():
    """The longest response decoded alone is a floor no number of GPUs removes."""
    s = plan_of("dapo-7b-h20-colocated")
    costs, step = engine_costs(s), sample_step(s)
    few = generation_bound(costs, 8, step)
    many = generation_bound(costs, 1024, step)
    assert many["tail"] == few["tail"]
    assert max(many.values()) == many["tail"] < max(few.values())


def test_step_sample_is_deterministic_and_respects_max():
    s = plan_of("agentic-search-4b")
    a, b = sample_step(s), sample_step(s)
    assert np.array_equal(a.response, b.response) and np.array_equal(a.prompt, b.prompt)
    assert len(a.response) == s.algorithm.trajectories_per_step


def test_colocated_step_is_the_sum_of_phases_and_async_the_max():
    colo = plan_of("grpo-7b-colocated")
    p = phase_estimates(colo)
    assert step_estimate(colo, p) == pytest.approx(sum(p.values()), rel=1e-12)
    asy = plan_of("grpo-1.5b-async")
    q = phase_estimates(asy)
    assert step_estimate(asy, q) < sum(q.values())


def test_offload_and_engine_sleep_move_over_c2c_on_grace_blackwell():
    """A colocated switch moves the engine's weights and the offloaded trainer state over the
    GPU's host link: NVLink-C2C (gb200) against PCIe 5 (b200), the bytes the same."""
    from twin.cost.phases import switch_time
    from twin.runner import plan as plan_of

    gb200 = plan_of("grpo-gb200-nvl72")
    b200 = plan_of("grpo-gb200-nvl72", ["cluster.gpu=b200"])
    c2c, pcie = gb200.host_link, b200.host_link
    assert (c2c.name, pcie.name) == ("nvlink-c2c", "pcie5")
    rate = lambda link: link.bandwidth_bytes_per_s * link.efficiency.best  # noqa: E731
    moved = (switch_time(gb200) - c2c.latency_s) * rate(c2c)
    assert (switch_time(b200) - pcie.latency_s) * rate(pcie) == pytest.approx(moved, rel=1e-9)
    assert switch_time(b200) / switch_time(gb200) == pytest.approx(rate(c2c) / rate(pcie), rel=1e-3)

def test_offload_on_a_trainer_pool_of_its_own_costs_each_pass_its_round_trip():
    """verl's param/optimizer offload on separate pools: every pass loads the state over the host
    link and puts it back; the update also moves gradients and optimizer state. Colocated GPUs
    pay it in the switch instead."""
    from twin.cost.memory import trainer_state_bytes
    from twin.cost.phases import pass_offload_time

    data = {"model": "qwen2.5-7b", "cluster": {"nodes": 2},
            "placement": {"mode": "disaggregated", "trainer": {"offload_params": True, "offload_optimizer": True}}}
    p = plan_of(data)
    state = trainer_state_bytes(p.model, p)
    link = p.host_link
    rate = link.bandwidth_bytes_per_s * link.efficiency.at(1e9)
    score, train = pass_offload_time(p, "score"), pass_offload_time(p, "train")
    assert score == pytest.approx(2 * (state["weights (16-bit)"] / rate + link.latency_s), rel=1e-6)
    assert train == pytest.approx(2 * (sum(state.values()) / rate + link.latency_s), rel=1e-6)
    seqs = np.full(256, 2048.0)
    with_offload = learner_phases(p, seqs)
    without = learner_phases(plan_of(data, ["placement.trainer.offload_params=false",
                                            "placement.trainer.offload_optimizer=false"]), seqs)
    assert with_offload["update_actor"] - without["update_actor"] == pytest.approx(train)
    assert pass_offload_time(plan_of({"model": "qwen2.5-7b", "placement": {"trainer": {"offload_params": True}}}),
                             "train") == 0.0
