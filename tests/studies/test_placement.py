"""One rule splits GPUs into a rollout and a trainer pool for the verdict, planner and scaling."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from twin import runner
from twin.studies.placement import PoolSplit, engines_on_their_own_gpus
from twin.studies.scaling import scaled_overrides


def test_whole_engines_within_a_node_and_whole_nodes_beyond():
    assert PoolSplit(8, 2, 8, 1).unit == 2          # one node: engines
    assert PoolSplit(16, 2, 8, 1).unit == 8         # two nodes: whole nodes
    assert PoolSplit(32, 16, 8, 1).unit == 16       # an engine wider than a node is its own unit
    assert PoolSplit(16, 2, 8, 1).rollout_sizes() == [8]


def test_the_trainer_pool_is_what_its_layout_accepts():
    """cp and ep count: a trainer of tp 1, cp 2 takes even GPU counts only."""
    rule = PoolSplit(14, 1, 8, 2)
    assert rule.rollout_sizes() == [2, 4, 6, 8, 10, 12]
    assert all((14 - r) % 2 == 0 for r in rule.rollout_sizes())
    assert rule.nearest(0.5) == (8, 6) or rule.nearest(0.5) == (6, 8)


def test_scaling_a_context_parallel_trainer_proposes_a_split_validation_accepts():
    """The bug the three copies of the rule had drifted into: scaling forgot cp."""
    over = {"placement.trainer.cp": 2, "placement.rollout.tp": 1}
    scenario = runner.load("grpo-8b-disaggregated", over)
    for gpus in (8, 14, 30):
        split = scaled_overrides(scenario, gpus)
        runner.load("grpo-8b-disaggregated", {**over, **split})  # raises if validation refuses it


@given(free=st.integers(1, 300), engine=st.sampled_from([1, 2, 4, 8, 16]), node=st.sampled_from([4, 8]),
       multiple=st.sampled_from([1, 2, 4, 6, 8]), share=st.floats(0, 1))
def test_every_split_offered_is_whole_engines_and_a_valid_trainer(free, engine, node, multiple, share):
    rule = PoolSplit(free, engine, node, multiple)
    for r in rule.rollout_sizes():
        assert r % engine == 0 and r % rule.unit == 0 and rule.trainer_fits(free - r)
    near = rule.nearest(share)
    assert (near is None) == (not rule.rollout_sizes())
    if near:
        assert sum(near) == free and near[0] in rule.rollout_sizes()


def test_engines_alone_take_vllms_default_memory_fraction():
    assert engines_on_their_own_gpus("colocated", 0.5) == {"placement.rollout.gpu_memory_utilization": 0.9}
    assert engines_on_their_own_gpus("colocated", 0.95) == {}
    assert engines_on_their_own_gpus("async", 0.5) == {}
