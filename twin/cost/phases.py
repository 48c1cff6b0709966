"""Analytic, tier-1 estimates of each phase of one RL step (lower bounds).

These use the cost models alone, no event simulation: the fast first tier of fidelity
that ``twin check`` prints. Each is a bound a real run cannot beat; the simulation (tier 2)
adds queueing, the long tail's interaction with batching, and the overlap of phases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.config.hardware import DTYPE_BYTES
from twin.config.plan import Plan
from twin.config.workload import sample_batch
from twin.cost import reward as reward_cost
from twin.cost.engine import EngineCosts, engine_costs
from twin.cost.learner import controller_time, forward_pass_time, update_time
from twin.cost.memory import engine_weight_bytes, offloaded_state_bytes, trainer_state_bytes
from twin.cost.weight_sync import weight_sync_cost


@dataclass(frozen=True)
class StepSample:
    """One step's trajectories drawn from the workload with the scenario's seed."""

    prompt: np.ndarray    # prompt plus tool replies (prefilled, not generated)
    response: np.ndarray  # generated tokens over all turns

    @property
    def sequence(self) -> np.ndarray:
        return self.prompt + self.response


def sample_step(plan: Plan, rng: np.random.Generator | None = None) -> StepSample:
    """The trajectories of one step, sampled as the simulation samples them."""
    batch = sample_batch(plan, plan.algorithm.prompts_per_step,
                         rng or np.random.default_rng(plan.run.seed))
    generated = batch.generated()
    return StepSample(batch.context() - generated, generated)


def generation_bound(costs: EngineCosts, engines: int, step: StepSample) -> dict[str, float]:
    """Two floors on rollout time: the longest trajectory decoded alone (the tail), and the
    total tokens at the engines' full-batch throughput (the bulk)."""
    longest = int(step.response.max())
    prompt = float(step.prompt.mean())
    tail = costs.prefill_time(int(prompt)) + longest * costs.decode_time(1, prompt + longest / 2)
    mean_ctx = float(step.prompt.mean() + step.response.mean() / 2)
    batch = int(min(costs.max_num_seqs, max(1, costs.kv_capacity_tokens // mean_ctx),
                    np.ceil(len(step.response) / engines)))
    per_token = costs.decode_time(batch, batch * mean_ctx) / batch
    bulk = float(step.response.sum()) * per_token / engines
    return {"tail": float(tail), "bulk": float(bulk)}


def learner_phases(plan: Plan, seqs: np.ndarray, priced_ranks: int | None = None,
                   minibatches: int | None = None) -> dict[str, float]:
    """Seconds of each learner phase for one step's sequences (prompt + response tokens).
    ``priced_ranks``: price only that many of the most loaded data-parallel ranks (a lower
    bound; None: all of them, as the simulation does). ``minibatches``: optimizer steps per
    epoch over ``seqs`` (default the algorithm's; a chunk of a step has its share)."""
    a = plan.algorithm
    shipped = controller_time(plan, len(seqs))  # each pass's data path, with the pass
    forward = forward_pass_time(plan, seqs, priced_ranks) + shipped + pass_offload_time(plan, "score")
    out: dict[str, float] = {}
    if a.old_logprob:
        out["old_logprob"] = forward
    if a.reference:
        out["reference"] = forward
    out["update_actor"] = update_time(plan, seqs, priced_ranks, minibatches) + shipped + pass_offload_time(plan, "train")
    if a.critic:  # the value model: same architecture, a forward for values and its own update
        out["critic"] = forward + out["update_actor"]
    return {k: float(v) for k, v in out.items()}


def pass_offload_time(plan: Plan, kind: str) -> float:
    """Seconds a learner pass on GPUs of the trainer's own spends moving offloaded state over the
    host link: verl's param/optimizer offload and Megatron's param/grad/optimizer offload load the
    state before each call and put it back after (verl fsdp_workers ``load_fsdp_model_to_gpu`` /
    ``offload_fsdp_model_to_cpu``, ``load_fsdp_optimizer``; not overlapped with the pass). A
    scoring pass moves the weights; the update also the gradients and the optimizer state.
    Colocated GPUs pay their offload in the switch instead (:func:`switch_time`)."""
    t = plan.placement.trainer
    if plan.mode.shares_gpus or not (t.offload_params or t.offload_optimizer):
        return 0.0
    state = trainer_state_bytes(plan.model, plan)
    moved = 0.0
    if t.offload_params:
        moved += state["weights (16-bit)"] + (state["gradients (16-bit)"] if kind == "train" else 0.0)
    if t.offload_optimizer and kind == "train":
        moved += state["optimizer (fp32 master, m, v)"]
    link = plan.host_link
    one_way = moved / (link.bandwidth_bytes_per_s * link.efficiency.at(moved)) + link.latency_s
    return 2 * one_way if moved else 0.0


def switch_time(plan: Plan) -> float:
    """Colocated mode, one direction: the engine sleeps (weights to the host, KV cache freed)
    or wakes (weights back), and offloaded trainer state moves the other way, over the
    GPU's host link."""
    arch, link = plan.model, plan.host_link
    engine_weights = engine_weight_bytes(arch, plan.placement.rollout) * DTYPE_BYTES[plan.rollout_dtype] / arch.bytes_per_param
    moved = engine_weights + offloaded_state_bytes(arch, plan)
    return moved / (link.bandwidth_bytes_per_s * link.efficiency.at(moved)) + link.latency_s


# `twin check` prices the learner's most loaded ranks only: exact up to this many data-parallel
# ranks holding data, a lower bound beyond, and as fast on 100k GPUs as on eight.
CHECK_PRICED_RANKS = 1024


def phase_estimates(plan: Plan, step: StepSample | None = None) -> dict[str, float]:
    """Lower bound of each phase of one step, seconds (``step``: the step's sample, if drawn)."""
    step = step if step is not None else sample_step(plan)
    gen = generation_bound(engine_costs(plan), plan.rollout_engines, step)
    out = {"generation": max(gen["tail"], gen["bulk"]), "reward": reward_cost.bound(plan, step.sequence)}
    out.update(learner_phases(plan, step.sequence, CHECK_PRICED_RANKS))
    if plan.mode.shares_gpus:
        out["switch"] = 2 * switch_time(plan)
    out["weight_sync"] = weight_sync_cost(plan).total_s
    return {k: float(v) for k, v in out.items()}


def reward_bound(plan: Plan, n: int) -> float:
    """Total reward work of one step's ``n`` samples spread perfectly over its servers."""
    return reward_cost.bound(plan, np.resize(sample_step(plan).sequence, n))


def step_estimate(plan: Plan, phases: dict[str, float]) -> float:
    """A step's lower bound from its phases, by deployment mode."""
    rollout = phases["generation"] + phases["reward"]
    train = sum(v for k, v in phases.items() if k not in ("generation", "reward", "weight_sync", "switch"))
    if plan.mode.serial(plan.algorithm.staleness):
        return rollout + train + phases["weight_sync"] + phases.get("switch", 0.0)
    return max(rollout, train + phases["weight_sync"])
