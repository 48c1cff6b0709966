import math

import pytest
from hypothesis import given, strategies as st

from twin.cost import engine_modes
from twin.cost.engine import engine_costs
from twin.errors import InputError
from twin.runner import plan as plan_of

BASE = {"model": "llama-3.1-8b", "cluster": {"nodes": 1, "gpu": "h100-sxm"},
        "placement": {"mode": "disaggregated", "rollout": {"gpus": 1, "tp": 1}}}


def _decode(overrides, n, ctx=1000):
    return engine_costs(plan_of(BASE, overrides)).decode_time(n, n * ctx)


def test_eager_execution_floors_a_step_at_the_hosts_dispatch():
    """Without CUDA graphs a small batch waits for the host to launch every kernel; a large one
    is longer than that on the GPU anyway."""
    p = plan_of(BASE, ["placement.rollout.enforce_eager=true"])
    kernels = engine_modes.eager_kernels(p)
    assert kernels == 32 * engine_modes.EAGER_OPS_PER_LAYER + engine_modes.EAGER_FIXED_OPS
    host = p.gpu.overhead.per_iteration_s + kernels * engine_modes.EAGER_OP_S
    assert _decode(["placement.rollout.enforce_eager=true"], 1) == pytest.approx(host)
    assert _decode([], 1) < host
    assert _decode(["placement.rollout.enforce_eager=true"], 256) == pytest.approx(_decode([], 256))


def test_tensor_parallel_and_moe_layers_launch_more_kernels():
    dense = engine_modes.eager_kernels(plan_of(BASE))
    tp2 = engine_modes.eager_kernels(plan_of(BASE, ["placement.rollout.gpus=2", "placement.rollout.tp=2"]))
    moe = plan_of(BASE, ["model=qwen3-30b-a3b"])
    assert tp2 == dense + 2 * 32
    assert engine_modes.eager_kernels(moe) == 48 * (engine_modes.EAGER_OPS_PER_LAYER
                                                    + engine_modes.EAGER_OPS_PER_MOE_LAYER) + engine_modes.EAGER_FIXED_OPS


@given(st.floats(0.05, 0.95), st.integers(1, 8))
def test_tokens_per_verify_step_follow_the_acceptance_rate(alpha, k):
    p = plan_of(BASE, ["placement.rollout.speculative=eagle", f"placement.rollout.speculative_acceptance={alpha}",
                       f"placement.rollout.num_speculative_tokens={k}"])
    tau = engine_modes.accepted_per_step(p)
    assert tau == pytest.approx(sum(alpha ** i for i in range(k + 1)))
    assert 1.0 < tau < k + 1


def test_speculation_pays_at_small_batch_and_less_as_the_batch_grows():
    """A verify step of k + 1 tokens a sequence costs about one weight-bound decode step at small
    batch, so ~tau tokens come almost for the drafts' price; at large batch it is compute-bound,
    the gain shrinks, and long drafts of a weak drafter turn it into a loss."""
    spec = ["placement.rollout.speculative=eagle", "placement.rollout.speculative_acceptance=0.7"]
    gain = {n: _decode([], n) / _decode(spec, n) for n in (1, 64, 256)}
    tau = engine_modes.accepted_per_step(plan_of(BASE, spec))
    assert 1.5 < gain[1] < tau
    assert gain[1] > gain[64] > gain[256]
    weak = ["placement.rollout.speculative=eagle", "placement.rollout.speculative_acceptance=0.3",
            "placement.rollout.num_speculative_tokens=7"]
    assert _decode([], 256) / _decode(weak, 256) < 1.0


def test_mtp_defaults_to_deepseek_v3s_acceptance_and_a_draft_model_costs_more_than_a_head():
    mtp = plan_of(BASE, ["placement.rollout.speculative=mtp"])
    assert engine_modes.accepted_per_step(mtp) == pytest.approx(
        (1 - engine_modes.MTP_ACCEPTANCE ** 4) / (1 - engine_modes.MTP_ACCEPTANCE))
    head = ["placement.rollout.speculative=eagle", "placement.rollout.speculative_accepted_per_step=2.5"]
    draft = ["placement.rollout.speculative=draft_model", "placement.rollout.speculative_accepted_per_step=2.5",
             "placement.rollout.speculative_draft_model=qwen2.5-1.5b"]
    assert _decode(draft, 8) > _decode(head, 8)
    assert not math.isnan(_decode(draft, 8))


def test_eagle_and_draft_models_need_an_acceptance_figure():
    with pytest.raises(InputError) as exc:
        plan_of(BASE, ["placement.rollout.speculative=eagle"])
    assert "speculative_acceptance" in str(exc.value)
    with pytest.raises(InputError):
        plan_of(BASE, ["placement.rollout.speculative=draft_model", "placement.rollout.speculative_acceptance=0.6"])
