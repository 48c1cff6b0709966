"""What a reward service costs: its servers, each sample's service time, a step's lower bound.

Every kind (:mod:`twin.config.rewards`) is a pool of servers serving samples one at a time: a
rule function on the hosts' CPU cores, code sandboxes, a reward model or an LLM judge on
``placement.reward_model_gpus`` (one engine per ``tp`` GPUs). The simulation's reward queue
(:mod:`twin.sim.reward`) and the analytic bounds (:mod:`twin.cost.phases`) ask here.
"""

from __future__ import annotations

import numpy as np

from twin.config.plan import Plan
from twin.config.rewards import JudgeReward, ModelReward, RuleReward, SandboxReward
from twin.cost import transformer
from twin.cost.roofline import compute_time

# (service seconds per attempt [n, tries], failed per attempt [n, tries], timeout seconds)
Service = tuple[np.ndarray, np.ndarray, float]


def _no_failures(service: np.ndarray) -> Service:
    return service[:, None], np.zeros((len(service), 1), bool), np.inf


def servers(plan: Plan) -> int:
    """Samples the reward service scores at once."""
    r = plan.reward
    if isinstance(r, RuleReward):
        return plan.cluster.cpu_cores * plan.cluster.nodes
    if isinstance(r, SandboxReward):
        return r.workers
    return max(1, plan.reward_model_gpus // r.tp)


def service(plan: Plan, rng: np.random.Generator, context: np.ndarray) -> Service:
    """Each sample's service time per attempt, whether each attempt fails, and the timeout
    (``context``: each sample's tokens, which a model's forward pass reads)."""
    r = plan.reward
    if isinstance(r, RuleReward):
        return _no_failures(r.cpu_seconds.sample(rng, len(context)))
    if isinstance(r, SandboxReward):
        n, tries = len(context), 1 + r.max_retries
        seconds = r.latency_s.sample(rng, n * tries).reshape(n, tries)
        failed = rng.random((n, tries)) < r.failure_rate
        return seconds, failed, r.timeout_s
    # One forward pass scores a sample; a judge also decodes its verdict, one forward per
    # output token, batched over its engine.
    arch = r.model
    flops = np.array([transformer.logprob_flops(arch, [c]) for c in context])
    flops = flops + 2.0 * transformer.body_params(arch) * _verdict_tokens(r, rng, len(context))
    per_call = transformer.gemm_flops_per_call(arch, 8192) / r.tp
    return _no_failures(np.array([compute_time(f / r.tp, plan.gpu, arch.dtype, per_call) for f in flops]))


def bound(plan: Plan, sequences: np.ndarray) -> float:
    """A step's reward work over ``sequences`` spread perfectly over the servers, seconds."""
    r = plan.reward
    if isinstance(r, RuleReward):
        return len(sequences) * r.cpu_seconds.clipped_mean() / servers(plan)
    if isinstance(r, SandboxReward):
        per_sample = min(r.latency_s.clipped_mean(), r.timeout_s)
        return len(sequences) * per_sample / r.workers / (1 - r.failure_rate)
    arch = r.model
    flops = transformer.logprob_flops(arch, sequences)
    flops += 2.0 * transformer.body_params(arch) * _mean_verdict_tokens(r) * len(sequences)
    return compute_time(flops / plan.reward_model_gpus, plan.gpu, arch.dtype,
                        transformer.gemm_flops_per_call(arch, 8192))


def _verdict_tokens(r: ModelReward | JudgeReward, rng: np.random.Generator, n: int) -> np.ndarray | float:
    """Tokens each sample's verdict decodes (a reward model scores without decoding)."""
    return r.output_tokens.sample(rng, n) if isinstance(r, JudgeReward) else 0.0


def _mean_verdict_tokens(r: ModelReward | JudgeReward) -> float:
    return r.output_tokens.clipped_mean() if isinstance(r, JudgeReward) else 0.0
